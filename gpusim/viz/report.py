"""Everything `gpusim viz` writes, and the self-contained HTML report that bundles it.

OUTDIR/
  report.html            summary table, plots (inline SVG / base64 PNG), source view per result
  timeline.json          Perfetto trace of the recorded timelines (only when a run recorded one)
  plots/*.png, *.svg     the same plots as files
"""

from __future__ import annotations

import base64
import re
from datetime import datetime, timezone
from html import escape
from pathlib import Path
from string import Template

from gpusim.timing.provenance import config_differences
from gpusim.timing.results import SimResult
from gpusim.viz import plots
from gpusim.measure.compare import compare
from gpusim.viz.load import labels, load_with_measured, reason_colour
from gpusim.viz.perfetto import TIME_UNIT, write_trace
from gpusim.viz.source import SOURCE_CSS, source_table_html


def write_report(results: list[SimResult | str | Path], outdir: str | Path, pool=None, rendered=None) -> Path:
    """Write report.html, timeline.json and the plots into `outdir`; returns the report's path.
    `pool`: an executor whose workers render the per-result figures; `rendered`: per result, the
    figures already made by `result_figures` (`figure_files`), or None to make them here."""
    return write_outputs(results, outdir, pool=pool, rendered=rendered)["report"]


def figure_files(i: int, result: SimResult, n_results: int, outdir: str | Path, bucket: float | None = None) -> dict:
    """Render result i's figures where the report of `n_results` results (written into `outdir`)
    expects them; pass the returned files to `write_report(..., rendered=...)`."""
    formats = ("svg",) if n_results > COMPACT_ABOVE else ("png", "svg")
    return result_figures(result, Path(outdir) / "plots", slug(i, result), formats, bucket)


def write_outputs(results: list[SimResult | str | Path], outdir: str | Path, names: list[str] | None = None,
                  bucket: float | None = None, measured: list[dict | None] | None = None, pool=None,
                  rendered: list[dict | None] | None = None) -> dict:
    """Write every view of `results` (SimResults or result JSON paths) into `outdir`. `measured`:
    per result, its Nsight Compute block (`gpusim run --ncu`), shown beside the simulated values;
    by default the `measured` block of each result file.
    Returns {"report": Path, "timeline": Path | None, "plots": [Path, ...]}."""
    pairs = [(r, None) if isinstance(r, SimResult) else load_with_measured(r) for r in results]
    results = [r for r, _ in pairs]
    measured = list(measured) if measured is not None else [m for _, m in pairs]
    names = names or labels(results)
    outdir = Path(outdir)
    plot_dir = outdir / "plots"
    outdir.mkdir(parents=True, exist_ok=True)
    trace = write_trace(results, outdir / "timeline.json", names)
    if trace is None and (outdir / "timeline.json").exists():
        (outdir / "timeline.json").unlink()  # a stale trace from an earlier run would mislead

    written = plots.save(plots.stall_breakdown(results, names), plot_dir, "stall_breakdown")
    breakdown = _svg_of(written[-1])
    # many results: keep report.html small (issue 15: < 3 MB) -- per-result figures as files the page
    # loads, the hottest source lines inline and each full source view in source/<result>.html
    compact = len(results) > COMPACT_ABOVE
    # a compact page loads each per-result figure from its SVG file: no PNG twin (half the rendering,
    # which was most of a cached `python run_sim.py`)
    per_result = ("svg",) if compact else ("png", "svg")
    stems = [slug(i, r) for i, r in enumerate(results)]
    done = list(rendered) if rendered is not None else [None] * len(results)
    todo = [i for i, files in enumerate(done) if files is None]
    jobs = [(results[i], plot_dir, stems[i], per_result, bucket) for i in todo]
    # each result's figures are independent: a caller's worker pool renders them side by side
    made = list(pool.map(result_figures, *zip(*jobs))) if pool is not None and jobs else \
        [result_figures(*job) for job in jobs]
    for i, files in zip(todo, made):
        done[i] = files
    rendered = [{k: [Path(p) for p in v] for k, v in files.items()} for files in done]
    sections = []
    for i, (result, name, stem, files) in enumerate(zip(results, names, stems, rendered)):
        figures = {}
        for paths in files.values():
            written += paths
        if "utilisation" in files:
            figures["utilisation"] = _img(files["utilisation"][-1], outdir, "utilisation") if compact \
                else _svg_of(files["utilisation"][-1])
        if "timeline" in files:
            figures["timeline"] = _data_uri(files["timeline"][-1])
        hot = files["hot"][-1]
        figures["hot"] = _img(hot, outdir, "hottest instructions") if compact else _svg_of(hot)
        if compact:
            full = outdir / "source" / f"{stem}.html"
            full.parent.mkdir(parents=True, exist_ok=True)
            full.write_text(SOURCE_PAGE.substitute(css=CSS + SOURCE_CSS, title=escape(name),
                                                   table=source_table_html(result)))
            written.append(full)
            figures["source_link"] = full.relative_to(outdir).as_posix()
        sections.append(_result_section(i, result, name, figures, measured[i]))

    differences = config_differences(results) if len(results) > 1 else []
    page = PAGE.substitute(
        css=CSS + SOURCE_CSS, title=escape("gpusim report: " + ", ".join(names)),
        generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        summary=_summary_table(results, names, measured) + _differences_table(results, names, differences),
        breakdown=breakdown,
        perfetto=_perfetto_help(trace, results, names), sections="\n".join(sections))
    report = outdir / "report.html"
    report.write_text(page)
    return {"report": report, "timeline": trace, "plots": written, "differences": differences}


def result_figures(result: SimResult, plot_dir: Path, stem: str, formats: tuple[str, ...],
                    bucket: float | None) -> dict[str, list[Path]]:
    """Render one result's figures into `plot_dir` (utilisation and timeline where the result has a
    timeline, the hottest instructions always); {kind: its files, the one the page uses last}."""
    files = {}
    util = plots.issue_utilisation(result, bucket)
    if util is not None:
        files["utilisation"] = plots.save(util, plot_dir, f"{stem}_utilisation", formats=formats)
    timeline = plots.timeline_figure(result)
    if timeline is not None:
        files["timeline"] = plots.save(timeline, plot_dir, f"{stem}_timeline", formats=("png",))
    files["hot"] = plots.save(plots.hot_instructions(result), plot_dir, f"{stem}_hot_instructions", formats=formats)
    return files


def _differences_table(results: list[SimResult], names: list[str], differences: list[dict]) -> str:
    """What the compared runs were computed from, where it differs (config fields, overrides, mode, code)."""
    if len(results) < 2:
        return ""
    missing = [n for r, n in zip(results, names) if not r.provenance]
    note = (f'<p class="hint">No provenance recorded in {escape(", ".join(missing))} (written by an older '
            'gpusim): its config is unknown.</p>' if missing else "")
    if not differences:
        return note + '<h3>Config differences</h3><p class="hint">None: the runs share config, mode and code.</p>'
    head = "".join(f"<th>{escape(n)}</th>" for n in names)
    rows = "".join(f"<tr><td><code>{escape(d['field'])}</code></td>"
                   + "".join(f"<td>{escape(str(v))}</td>" for v in d["values"]) + "</tr>" for d in differences)
    return (note + f'<h3>Config differences</h3><table class="summary"><thead><tr><th>field</th>{head}</tr>'
            f'</thead><tbody>{rows}</tbody></table>')


COMPACT_ABOVE = 4  # results; above this report.html links its figures and full source views
COMPACT_SOURCE_LINES = 25  # hottest lines shown inline in a compact report


def _img(path: Path, outdir: Path, alt: str) -> str:
    """An <img> of a saved plot, by its path relative to the report (loaded by the browser)."""
    return f'<img class="fig" alt="{escape(alt)}" src="{escape(path.relative_to(outdir).as_posix())}">'


def _svg_of(path: Path) -> str:
    """A saved SVG file as an inline <svg> element."""
    text = path.read_text()
    return text[text.index("<svg"):]


def _data_uri(path: Path) -> str:
    """A saved PNG file as a base64 data: URI."""
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def slug(i: int, r: SimResult) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{i}_{r.workload or r.kernel}_{r.card}_{r.size}")


def _top3(r: SimResult) -> str:
    return "<br>".join(f'<span class="swatch" style="background:{reason_colour(k)}"></span>{escape(k)} {v:.1%}'
                       for k, v in r.top_stalls(3))


def _summary_table(results: list[SimResult], names: list[str], measured: list[dict | None]) -> str:
    head = ("result", "arch", "mode", "cycles", "time", "IPC / SM", "top 3 stalls (of warp-cycles)",
            "shared bank conflicts", "DRAM bytes") + (("vs Nsight Compute",) if any(measured) else ())
    rows = []
    for i, (r, name) in enumerate(zip(results, names)):
        extra = ""
        if any(measured):
            extra = f"<td>{_baseline_brief(r, measured[i])}</td>"
        conflicts = f'{r.shared.get("bank_conflicts", 0):,} of {r.shared.get("wavefronts", 0):,} wavefronts'
        rows.append(f'<tr><td><a href="#result-{i}">{escape(name)}</a></td><td>{escape(r.arch)}</td>'
                    f'<td>{escape(r.mode)}</td><td class="num">{r.cycles:,.0f}</td>'
                    f'<td class="num">{r.time_s * 1e6:,.2f} µs</td><td class="num">{r.ipc:.2f}</td>'
                    f'<td>{_top3(r)}</td><td class="num">{conflicts}</td>'
                    f'<td class="num">{r.memory.get("dram_bytes", 0):,}</td>{extra}</tr>')
    return (f'<table class="summary"><thead><tr>{"".join(f"<th>{h}</th>" for h in head)}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


def _counters(r: SimResult) -> str:
    """Key/value table of a result's configuration and counters."""
    occ = r.occupancy
    items = [("kernel", r.kernel), ("clock", f"{r.clock_mhz:.0f} MHz"),
             ("warp-instructions", f"{r.warp_instructions:,}"),
             ("SMs used / CTAs / waves", f"{r.sms_used} / {r.ctas} / {r.waves:.3f}"),
             ("occupancy", f'{occ.get("ctas_per_sm")} CTAs, {occ.get("warps_per_sm")} warps per SM '
                           f'(limited by {occ.get("limiter")})'),
             ("shared", ", ".join(f"{k} {v:,}" for k, v in r.shared.items())),
             ("registers", ", ".join(f"{k} {v:,}" for k, v in r.registers.items())),
             ("memory", ", ".join(f"{k} {v:,}" for k, v in r.memory.items())),
             ("pipe utilisation", ", ".join(f"{k} {v:.1%}" for k, v in r.pipe_utilisation.items()))]
    if r.sampling:
        items.append(("sampling", ", ".join(f"{k} {v}" for k, v in r.sampling.items() if k != "what")))
    items += [("note", n) for n in r.notes]
    return '<table class="kv">' + "".join(f"<tr><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>"
                                          for k, v in items) + "</table>"


def _sim_dict(r: SimResult) -> dict:
    return {"cycles": r.cycles, "clock_mhz": r.clock_mhz, "warp_instructions": r.warp_instructions,
            "memory": r.memory, "shared": r.shared, "stalls": r.stalls}


def _fmt(v) -> str:
    if v is None:
        return "n/a"
    return f"{v:,.0f}" if abs(v) >= 100 or float(v).is_integer() else f"{v:,.3g}"


def _baseline_brief(r: SimResult, m: dict | None) -> str:
    if not m:
        return "&mdash;"
    c = compare(_sim_dict(r), m)
    cyc = next(x for x in c["counters"] if x["name"] == "cycles")
    parts = []
    if cyc["error_pct"] is not None:
        parts.append(f"cycles {cyc['error_pct']:+.1f}%")
    if c["stall_distance"] is not None:
        parts.append(f"stall distance {c['stall_distance']:.2f}")
    t = c["top_reason"]
    if t["measured"]:
        parts.append(f"top stall {escape(t['simulated'] or '-')} / {escape(t['measured'])}")
    return "<br>".join(parts)


def _measured_section(r: SimResult, m: dict) -> str:
    """Nsight Compute's baseline view: each counter and stall fraction, simulated beside measured."""
    c = compare(_sim_dict(r), m)
    rows = []
    for x in c["counters"]:
        if x["simulated"] is None and x["measured"] is None:
            continue
        diff = "n/a" if x["error_pct"] is None else f"{x['error_pct']:+.1f}%"
        rows.append(f'<tr><td>{escape(x["name"])}</td><td class="num">{_fmt(x["simulated"])}</td>'
                    f'<td class="num">{_fmt(x["measured"])}</td><td class="num">{diff}</td></tr>')
    stall_rows = []
    for x in c["stalls"]:
        s, me = x["simulated"], x["measured"]
        if s < 0.0005 and (me or 0) < 0.0005:
            continue
        bars = (f'<div class="bar" style="width:{100 * s:.1f}%;background:{reason_colour(x["reason"])}"></div>'
                f'<div class="bar meas" style="width:{100 * (me or 0):.1f}%"></div>')
        only = {"simulated": " (gpusim only)", "measured": " (Nsight only)"}.get(x["only"] or "", "")
        meas = "n/a" if me is None else f"{me:.1%}"
        stall_rows.append(f'<tr><td><span class="swatch" style="background:{reason_colour(x["reason"])}"></span>'
                          f'{escape(x["reason"])}{only}</td><td class="num">{s:.1%}</td>'
                          f'<td class="num">{meas}</td><td class="bars">{bars}</td></tr>')
    t = c["top_reason"]
    dist = "n/a" if c["stall_distance"] is None else f"{c['stall_distance']:.3f}"
    where = (f'launch ID {escape(str(m.get("id")))} of <code>{escape(str(m.get("source")))}</code>: '
             f'{escape(str(m.get("kernel")))}, grid {escape(str(m.get("grid")))}, block {escape(str(m.get("block")))}')
    return (f'<h3>Measured (Nsight Compute) beside simulated</h3><p class="hint">{where}. Nsight Compute flushes '
            'the caches before the launch it profiles (compare with a cold-L2 run, the default '
            '<code>memory.l2.initial=cold</code>). Difference = (simulated &minus; measured) / measured; n/a: one '
            'side does not count it.</p>'
            '<table class="summary baseline"><thead><tr><th>counter</th><th>simulated</th><th>measured</th>'
            f'<th>difference</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
            f'<p class="hint">Stall fractions of resident warp-cycles (upper bar simulated, lower bar measured). '
            f'Stall distance (half the L1 distance of the two mixes) {dist}; top reason simulated '
            f'<strong>{escape(t["simulated"] or "-")}</strong>, measured <strong>{escape(t["measured"] or "-")}'
            '</strong>.</p><table class="summary baseline"><thead><tr><th>reason</th><th>simulated</th>'
            f'<th>measured</th><th></th></tr></thead><tbody>{"".join(stall_rows)}</tbody></table>')


def _result_section(i: int, r: SimResult, name: str, figures: dict, measured: dict | None = None) -> str:
    parts = [f'<section id="result-{i}"><h2>{escape(name)}</h2>', _counters(r)]
    if measured:
        parts.append(_measured_section(r, measured))
    if "utilisation" in figures:
        parts.append(f'<h3>Issue-slot utilisation</h3><div class="fig">{figures["utilisation"]}</div>')
    if "timeline" in figures:
        parts.append(f'<h3>Timeline of the recorded warps</h3><img class="fig" alt="timeline" '
                     f'src="{figures["timeline"]}">')
    else:
        parts.append('<p class="hint">No timeline recorded: run <code>gpusim run ... --timeline-ctas 0,1 '
                     '--json R.json</code> to get the utilisation plot and the Perfetto trace.</p>')
    parts.append(f'<h3>Hottest instructions</h3><div class="fig">{figures["hot"]}</div>')
    if "source_link" in figures:
        parts.append(f'<h3>Source view: the {COMPACT_SOURCE_LINES} hottest of {len(r.stalls_per_pc):,} SASS lines '
                     f'(<a href="{escape(figures["source_link"])}">all lines</a>)</h3>'
                     f'<div class="scroll">{source_table_html(r, max_lines=COMPACT_SOURCE_LINES)}</div></section>')
        return "\n".join(parts)
    parts.append(f'<h3>Source view ({len(r.stalls_per_pc):,} SASS lines executed or stalled)</h3>'
                 '<p class="hint">Stall cycles are warp-cycles charged to the instruction a warp was waiting '
                 'to issue; share is of all stall cycles; shading follows the hottest line.</p>'
                 f'<div class="scroll">{source_table_html(r)}</div></section>')
    return "\n".join(parts)


def _perfetto_help(trace: Path | None, results: list[SimResult], names: list[str]) -> str:
    if trace is None:
        return ('<p>No result recorded a timeline, so no <code>timeline.json</code> was written. Re-run with '
                '<code>gpusim run WORKLOAD --gpu CARD --size N --timeline-ctas 0,1 --json R.json</code>.</p>')
    recorded = ", ".join(escape(n) for r, n in zip(results, names) if r.timeline)
    return (f'<p><a href="{escape(trace.name)}">{escape(trace.name)}</a> holds the timeline of {recorded}. '
            'Open <a href="https://ui.perfetto.dev" target="_blank">ui.perfetto.dev</a>, choose '
            '<em>Open trace file</em> and pick it (the file is read in the browser, not uploaded). '
            'Each SM is a process; in it, one track per warp scheduler shows every issue slot, named by the '
            'issued SASS instruction, and one track per warp shows its stall slices named by reason '
            '(<code>barrier</code> = waiting at BAR.SYNC, <code>issue</code> = runs of issued cycles). '
            f'<strong>Time: {TIME_UNIT}</strong>, so 1 ms on the Perfetto ruler is 1000 cycles.</p>')


CSS = """
body { font-family: system-ui, -apple-system, Segoe UI, Roboto, sans-serif; margin: 24px auto; max-width: 1200px;
       color: #222; padding: 0 16px; }
h1 { font-size: 22px; } h2 { font-size: 18px; border-bottom: 2px solid #ddd; margin-top: 36px; }
h3 { font-size: 15px; margin-top: 22px; }
table.summary, table.kv { border-collapse: collapse; font-size: 13px; }
table.summary th, table.summary td { border: 1px solid #ddd; padding: 4px 8px; vertical-align: top; }
table.summary th { background: #f0f0f0; }
table.kv th { text-align: left; padding: 2px 12px 2px 0; color: #555; font-weight: 600; vertical-align: top; }
table.kv td { padding: 2px 0; font-size: 12px; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.fig svg, img.fig { max-width: 100%; height: auto; }
.fig svg text { white-space: pre; }
.scroll { max-height: 640px; overflow: auto; border: 1px solid #ddd; }
.hint { color: #555; font-size: 13px; }
code { background: #f4f4f4; padding: 0 3px; }
td.bars { width: 240px; } .bar { height: 6px; margin: 1px 0; } .bar.meas { background: #555; }
"""

SOURCE_PAGE = Template("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>$title: source view</title>
<style>$css</style></head>
<body><h1>$title: source view</h1>
<p class="hint">Stall cycles are warp-cycles charged to the instruction a warp was waiting to issue; share is of
all stall cycles; shading follows the hottest line.</p>
$table
</body></html>
""")

PAGE = Template("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>$title</title>
<style>$css</style></head>
<body>
<h1>$title</h1>
<p class="hint">Written by <code>gpusim viz</code> on $generated. Stall reasons use Nsight Compute's names;
fractions are of resident warp-cycles (<code>selected</code> = cycles that issued).</p>
<h2>Summary</h2>
$summary
<h2>Stall breakdown</h2>
<div class="fig">$breakdown</div>
<h2>Timeline in Perfetto</h2>
$perfetto
$sections
</body></html>
""")
