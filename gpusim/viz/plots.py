"""Matplotlib figures of timing results (no pyplot: figures are built directly and saved with Agg).

- `stall_breakdown(results)`: one stacked bar per result, warp-cycles per stall reason as fractions;
- `issue_utilisation(result)`: issue slots used per scheduler over time, from the timeline;
- `timeline_figure(result)`: the timeline drawn as tracks per warp with coloured slices;
- `hot_instructions(result)`: the hottest SASS lines with their stall cycles by reason.
`save(fig, outdir, stem)` writes PNG and SVG; `svg_inline` and `png_data_uri` embed them in HTML.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path

import numpy as np
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from gpusim.timing.results import SimResult
from gpusim.timing.stalls import REASONS
from gpusim.viz.load import label, reason_colour

STYLE = {"svg.fonttype": "none", "font.size": 9, "axes.spines.top": False, "axes.spines.right": False}


def stall_breakdown(results: list[SimResult], names: list[str] | None = None) -> Figure:
    """Stacked bars: the fraction of resident warp-cycles spent in each reason, one bar per result."""
    names = names or [label(r) for r in results]
    used = [r for r in REASONS if any(res.stalls.get(r, 0) > 0 for res in results)]
    fractions = np.array([[res.stalls.get(r, 0.0) / (sum(res.stalls.values()) or 1.0) for r in used]
                          for res in results]).reshape(len(results), len(used))
    with rc_context(STYLE):
        fig = Figure(figsize=(max(6.0, 1.2 * len(results) + 4.5), 4.2), layout="constrained")
        ax = fig.add_subplot()
        bottom = np.zeros(len(results))
        for j, reason in enumerate(used):
            ax.bar(range(len(results)), fractions[:, j], bottom=bottom, width=0.6,
                   color=reason_colour(reason), label=reason, edgecolor="white", linewidth=0.5)
            bottom += fractions[:, j]
        ax.set_xticks(range(len(results)), [n.replace(" · ", "\n") for n in names])
        ax.set_ylim(0, 1)
        ax.set_ylabel("fraction of warp-cycles")
        ax.set_title("Where the warp-cycles went (stall reasons, Nsight Compute names)")
        handles, legend_labels = ax.get_legend_handles_labels()
        ax.legend(handles[::-1], legend_labels[::-1], loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    return fig


def _selected_starts(result: SimResult) -> dict[tuple[int, int], np.ndarray]:
    selected = result.timeline_reasons.index("selected")
    out: dict[tuple[int, int], list[float]] = {}
    for sm, sp, _warp, start, _cycles, reason, _pc in result.timeline or []:
        if reason == selected:
            out.setdefault((sm, sp), []).append(start)
    return {k: np.asarray(v) for k, v in sorted(out.items())}


def issue_utilisation(result: SimResult, bucket: float | None = None, max_lines: int = 16) -> Figure | None:
    """Issued slots per `bucket` cycles / bucket size, one line per scheduler (None without a timeline).
    Only the recorded warps count, so with some CTAs recorded this is their share of the slots."""
    if not result.timeline:
        return None
    starts = _selected_starts(result)
    first = min(e[3] for e in result.timeline)
    last = max(e[3] + e[4] for e in result.timeline)
    bucket = bucket or max(1.0, float(np.ceil((last - first) / 120)))
    edges = np.arange(first, last + bucket, bucket)
    with rc_context(STYLE):
        fig = Figure(figsize=(9, 3.4), layout="constrained")
        ax = fig.add_subplot()
        series = {k: np.histogram(v, edges)[0] / bucket for k, v in starts.items()}
        for (sm, sp), y in list(series.items())[:max_lines]:
            ax.step(edges[:-1], y, where="post", linewidth=1, label=f"SM {sm} sched {sp}")
        if len(series) > 1:
            ax.step(edges[:-1], np.mean(list(series.values()), axis=0), where="post", color="black",
                    linewidth=2, label="mean")
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("cycle")
        ax.set_ylabel(f"issue slots used (per {bucket:g} cycles)")
        ax.set_title(f"Issue-slot utilisation per warp scheduler · {label(result)}")
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, fontsize=8)
    return fig


def timeline_figure(result: SimResult, max_warps: int = 32,
                    cycles: tuple[float, float] | None = None) -> Figure | None:
    """One track per recorded warp (grouped by SM), slices coloured by reason (None without a timeline);
    `cycles` = (first, last) zooms in on part of the recorded window."""
    if not result.timeline:
        return None
    names = result.timeline_reasons
    lo, hi = cycles or (-np.inf, np.inf)
    events = [e for e in result.timeline if e[3] < hi and e[3] + e[4] > lo]
    tracks = sorted({(e[0], e[2]) for e in events})[:max_warps]
    row = {t: i for i, t in enumerate(tracks)}
    bars: dict[tuple[int, int], list[tuple[float, float]]] = {}  # (track row, reason) -> (start, width)
    for sm, _sp, warp, start, length, reason, _pc in events:
        if (sm, warp) in row:
            bars.setdefault((row[(sm, warp)], reason), []).append((start, length))
    with rc_context(STYLE):
        fig = Figure(figsize=(11, 1.2 + 0.32 * len(tracks)), layout="constrained")
        ax = fig.add_subplot()
        for (y, reason), spans in bars.items():
            ax.broken_barh(spans, (y - 0.4, 0.8), facecolors=reason_colour(names[reason]), linewidth=0)
        ax.set_yticks(range(len(tracks)), [f"SM {sm} warp {w}" for sm, w in tracks])
        ax.invert_yaxis()
        if cycles:
            ax.set_xlim(*cycles)
        ax.set_xlabel("cycle")
        ax.set_title(f"Timeline of the recorded warps · {label(result)}")
        used = sorted({r for _, r in bars})
        fig.legend([Patch(color=reason_colour(names[r])) for r in used], [names[r] for r in used],
                   loc="outside lower center", ncols=min(7, len(used)), frameon=False, fontsize=8)
    return fig


def hot_instructions(result: SimResult, n: int = 40) -> Figure:
    """The `n` SASS lines with the most stall cycles, a horizontal bar per line split by reason."""
    rows = sorted(result.stalls_per_pc, key=lambda p: -_stall_cycles(p.stalls))[:n]
    reasons = [r for r in REASONS if r != "selected" and any(p.stalls.get(r, 0) for p in rows)]
    with rc_context(STYLE):
        fig = Figure(figsize=(11, 1.0 + 0.24 * max(len(rows), 1)), layout="constrained")
        ax = fig.add_subplot()
        left = np.zeros(len(rows))
        for reason in reasons:
            width = np.array([p.stalls.get(reason, 0.0) for p in rows])
            ax.barh(range(len(rows)), width, left=left, color=reason_colour(reason), label=reason, height=0.75)
            left += width
        ax.set_yticks(range(len(rows)), [f"{p.address:05x}  {p.text[:44]:<44} ×{p.executed:<6,}" for p in rows],
                      fontfamily="monospace", fontsize=7.5)
        ax.invert_yaxis()
        ax.margins(y=0.01)
        ax.set_xlabel("stall warp-cycles while this was the warp's next instruction  (×N: warp-instructions executed)")
        ax.set_title(f"Hottest {len(rows)} instructions by stall cycles · {label(result)}")
        ax.legend(loc="lower right", frameon=False, fontsize=8)
    return fig


def _stall_cycles(stalls: dict[str, float]) -> float:
    return sum(v for k, v in stalls.items() if k != "selected")


def issue_slice_count(result: SimResult) -> int:
    """Issue slots recorded in the timeline (the number of issue slices in the Perfetto trace)."""
    return sum(len(v) for v in _selected_starts(result).values())


# ---- saving and embedding ----

def save(fig: Figure, outdir: str | Path, stem: str, formats: tuple[str, ...] = ("png", "svg")) -> list[Path]:
    """Write the figure as OUTDIR/STEM.png and .svg; returns the paths."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        path = outdir / f"{stem}.{fmt}"
        with rc_context(STYLE):
            fig.savefig(path, dpi=130 if fmt == "png" else None)
        paths.append(path)
    return paths


def svg_inline(fig: Figure) -> str:
    """The figure as an <svg> element to paste into HTML (no XML prologue)."""
    buf = io.StringIO()
    with rc_context(STYLE):
        fig.savefig(buf, format="svg")
    text = buf.getvalue()
    return text[text.index("<svg"):]


def png_data_uri(fig: Figure, dpi: int = 110) -> str:
    """The figure as a data: URI (base64 PNG) for an <img> tag."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


__all__ = ["stall_breakdown", "issue_utilisation", "timeline_figure", "hot_instructions", "issue_slice_count",
           "save", "svg_inline", "png_data_uri"]
