"""Per-instruction stall view, like Nsight Compute's source page: the SASS listing (from
`stalls_per_pc`) with executed count, stall cycles, a bar of the reasons and the top three reasons."""

from __future__ import annotations

from html import escape

from gpusim.timing.results import SimResult
from gpusim.timing.stalls import REASONS
from gpusim.viz.load import reason_colour


def source_rows(result: SimResult) -> list[dict]:
    """One dict per instruction that was executed or stalled, in address order."""
    total = sum(v for p in result.stalls_per_pc for k, v in p.stalls.items() if k != "selected") or 1.0
    rows = []
    for p in sorted(result.stalls_per_pc, key=lambda p: p.address):
        stalls = {k: v for k, v in p.stalls.items() if k != "selected" and v > 0}
        cycles = sum(stalls.values())
        rows.append({"address": p.address, "text": p.text, "executed": p.executed, "stall_cycles": cycles,
                     "share": cycles / total, "per_exec": cycles / p.executed if p.executed else 0.0,
                     "reasons": dict(sorted(stalls.items(), key=lambda kv: -kv[1]))})
    return rows


def source_table_html(result: SimResult, max_lines: int | None = None) -> str:
    """The listing as an HTML <table> (hot lines shaded); `max_lines` keeps only the hottest lines."""
    rows = source_rows(result)
    if max_lines is not None:
        keep = {r["address"] for r in sorted(rows, key=lambda r: -r["stall_cycles"])[:max_lines]}
        rows = [r for r in rows if r["address"] in keep]
    peak = max((r["stall_cycles"] for r in rows), default=0.0) or 1.0
    out = ['<table class="source"><thead><tr><th>address</th><th>SASS</th><th>executed</th>'
           '<th>stall cycles</th><th>share</th><th>cycles / exec</th><th>reasons</th>'
           '<th>top reasons</th></tr></thead><tbody>']
    for r in rows:
        heat = r["stall_cycles"] / peak
        shade = f' style="background: rgba(214, 39, 40, {0.35 * heat:.3f})"' if heat > 0.02 else ""
        top = ", ".join(f'{_swatch(k)}{escape(k)} {v / r["stall_cycles"]:.0%}'
                        for k, v in list(r["reasons"].items())[:3])
        out.append(f'<tr{shade}><td class="num">{r["address"]:05x}</td><td class="sass">{escape(r["text"])}</td>'
                   f'<td class="num">{r["executed"]:,}</td><td class="num">{r["stall_cycles"]:,.0f}</td>'
                   f'<td class="num">{r["share"]:.1%}</td><td class="num">{r["per_exec"]:.1f}</td>'
                   f'<td>{_bar(r["reasons"], peak)}</td><td class="top">{top}</td></tr>')
    out.append("</tbody></table>")
    return "\n".join(out)


def _swatch(reason: str) -> str:
    return f'<span class="swatch" style="background:{reason_colour(reason)}"></span>'


def _bar(reasons: dict[str, float], peak: float, width_px: int = 140) -> str:
    """A small stacked bar: the line's stall cycles by reason, scaled to the hottest line."""
    spans = "".join(f'<span title="{escape(k)} {v:,.0f}" style="width:{width_px * v / peak:.1f}px;'
                    f'background:{reason_colour(k)}"></span>'
                    for k, v in sorted(reasons.items(), key=lambda kv: REASONS.index(kv[0]) if kv[0] in REASONS else 99))
    return f'<div class="bar" style="width:{width_px}px">{spans}</div>'


SOURCE_CSS = """
table.source { border-collapse: collapse; font-size: 12px; width: 100%; }
table.source th { position: sticky; top: 0; background: #f0f0f0; text-align: left; padding: 3px 6px; }
table.source td { padding: 1px 6px; border-bottom: 1px solid #eee; white-space: nowrap; }
table.source td.sass { font-family: ui-monospace, Menlo, Consolas, monospace; }
table.source td.num { text-align: right; font-variant-numeric: tabular-nums; font-family: ui-monospace, monospace; }
table.source td.top { font-size: 11px; color: #333; }
.bar { display: flex; height: 10px; background: #fafafa; }
.bar span { display: block; height: 10px; }
.swatch { display: inline-block; width: 9px; height: 9px; margin: 0 3px 0 6px; vertical-align: middle; }
"""
