"""A study's outputs: the tidy table (CSV + Parquet), plots of the metric against each axis, summary.md.

Table: one row per point. Columns: study, workload, size, card, arch, one column per axis (named by
its dotted path; the card's own value where an axis skips a card), status, the headline numbers
(cycles, time_s, ipc, ...), top_stall (largest non-issue reason) and stall_<reason> (fraction of
all resident warp-cycles, `selected` included, so each row's stall_* sum to 1), shared and register
counters, pipe_<pipe> utilisation, derived metrics, <metric>_rel with a baseline, error, key.

Plots (``plots/<column>_vs_<axis>.png``): x = the axis' values (as categories, in the file's order),
one line per workload (and size); the other axes become facets when they have at most 4 value
combinations, otherwise they are averaged (the title says so); several cards are always facets
(each with its own axis values). With a baseline the y axis is the metric relative to it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from gpusim.study.spec import HONOUR_AXIS, Study, eval_expression

MAX_FACET_COMBOS = 4


def _stall_columns():
    from gpusim.timing.stalls import REASONS

    return [f"stall_{r}" for r in REASONS]


def _row(study: Study, p, rec: dict) -> dict:
    from gpusim.timing.stalls import REASONS

    row: dict[str, Any] = {"study": study.spec.name, "workload": p.workload, "size": p.size, "card": p.card,
                           "arch": p.arch}
    for a in study.axis_names:
        row[a] = p.coords.get(a)
    row["status"] = rec.get("status", "error")
    r = rec.get("result") or {}
    if r:
        stalls = r.get("stalls", {})
        total = sum(stalls.values()) or 1.0
        waiting = {k: v for k, v in stalls.items() if k != "selected" and v > 0}
        top = max(waiting, key=waiting.get) if waiting else None
        occ, sh, rg, mem = r.get("occupancy", {}), r.get("shared", {}), r.get("registers", {}), r.get("memory", {})
        row.update(cycles=r["cycles"], time_s=r["time_s"], ipc=r["ipc"], warp_instructions=r["warp_instructions"],
                   sms_used=r["sms_used"], ctas=r["ctas"], waves=r["waves"], clock_mhz=r["clock_mhz"],
                   ctas_per_sm=occ.get("ctas_per_sm"), warps_per_sm=occ.get("warps_per_sm"),
                   occupancy_limiter=occ.get("limiter"),
                   top_stall=top, top_stall_fraction=(waiting[top] / total) if top else 0.0)
        for reason in REASONS:
            row[f"stall_{reason}"] = stalls.get(reason, 0.0) / total
        row.update(shared_accesses=sh.get("accesses"), shared_wavefronts=sh.get("wavefronts"),
                   shared_conflicts=sh.get("bank_conflicts"), reg_conflict_cycles=rg.get("bank_conflict_cycles"),
                   reuse_hits=rg.get("reuse_hits"), l1_hits=mem.get("l1_hits"), l1_misses=mem.get("l1_misses"),
                   l2_hits=mem.get("l2_hits"), l2_misses=mem.get("l2_misses"), l2_bytes=mem.get("l2_bytes"),
                   dram_bytes=mem.get("dram_bytes"))
        for pipe, u in sorted(r.get("pipe_utilisation", {}).items()):
            row[f"pipe_{pipe}"] = u
        for name, expr in study.spec.derived.items():
            try:
                row[name] = float(eval_expression(expr, row))
            except (ArithmeticError, ValueError, TypeError):
                row[name] = math.nan
    row["error"] = rec.get("error")
    row["key"] = p.key
    row["wall_s"] = rec.get("wall_s")
    return row


def _freeze(v) -> str:
    return json.dumps(v, sort_keys=True, default=str)


def build_table(study: Study, records: list[dict]):
    """The tidy pandas DataFrame of a study (one row per point, in the study's order)."""
    import pandas as pd

    rows = [_row(study, p, rec) for p, rec in zip(study.points, records)]
    df = pd.DataFrame(rows)
    metric = study.spec.metric
    for col in ["cycles", "time_s", "ipc", metric, *study.spec.derived, *_stall_columns()]:
        if col not in df.columns:
            df[col] = math.nan
    if study.spec.baseline:
        base = study.spec.baseline
        index = {}
        for i, p in enumerate(study.points):
            index[(p.workload, p.size, p.card, _freeze(p.coords))] = i
        rel = []
        for i, p in enumerate(study.points):
            coords = dict(p.coords)
            coords.update({a: v for a, v in base.items() if a in coords})
            j = index.get((p.workload, p.size, p.card, _freeze(coords)))
            num, den = df.at[i, metric], (df.at[j, metric] if j is not None else math.nan)
            rel.append(num / den if den and not _isnan(den) and not _isnan(num) else math.nan)
        df[f"{metric}_rel"] = rel
    for a in study.axis_names:  # one Python type per axis column (Parquet needs it)
        types = {type(v) for v in df[a] if v is not None}
        if len(types) > 1:
            df[a] = [None if v is None else str(v) for v in df[a]]
    return df


def _isnan(x) -> bool:
    try:
        return math.isnan(float(x))
    except (TypeError, ValueError):
        return True


def _short(axis: str) -> str:
    return axis.split(".")[-1] if axis != HONOUR_AXIS else "control_codes"


def _label(v) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    return "config" if v is None else str(v)


def _ordered_values(study: Study, axis: str, points) -> list:
    seen: list = []
    keys: set[str] = set()
    for p in points:
        v = p.coords.get(axis)
        k = _freeze(v)
        if k not in keys:
            keys.add(k)
            seen.append(v)
    return seen


def plot_axes(study: Study) -> list[str]:
    return [a for a in study.axis_names if len(_ordered_values(study, a, study.points)) > 1]


def make_plots(study: Study, df, plot_dir: Path) -> list[Path]:
    """One PNG per (plotted column, axis). Returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plot_dir.mkdir(parents=True, exist_ok=True)
    for old in plot_dir.glob("*.png"):  # plots of an earlier version of the study
        old.unlink()
    spec = study.spec
    ok = [i for i in range(len(df)) if df.at[i, "status"] == "ok"]
    if not ok:
        return []
    cards = spec.cards
    multi_size = any(len(spec.sizes_of(w)) > 1 for w in spec.workloads)
    series_keys = [(w, s) for w in spec.workloads for s in spec.sizes_of(w)]
    cmap = plt.get_cmap("tab10" if len(series_keys) <= 10 else "tab20")
    colours = {k: cmap(i % cmap.N) for i, k in enumerate(series_keys)}
    columns = []
    if spec.baseline:
        columns.append((f"{spec.metric}_rel", f"{spec.metric} relative to "
                        + ", ".join(f"{_short(a)}={_label(v)}" for a, v in spec.baseline.items())))
    else:
        columns.append((spec.metric, spec.metric))
    columns += [(c, c) for c in spec.plots if c != spec.metric]
    files = []
    for axis in plot_axes(study):
        others = [a for a in plot_axes(study) if a != axis]
        combos = 1
        for a in others:
            combos *= len(_ordered_values(study, a, study.points))
        facet_axes = others if combos <= MAX_FACET_COMBOS else []
        averaged = [a for a in others if a not in facet_axes]
        facets: list[tuple[dict, list[int]]] = []
        facet_index: dict[str, int] = {}
        for i, p in enumerate(study.points):
            fk = {"card": p.card} if len(cards) > 1 else {}
            fk.update({a: p.coords.get(a) for a in facet_axes})
            k = _freeze(fk)
            if k not in facet_index:
                facet_index[k] = len(facets)
                facets.append((fk, []))
            facets[facet_index[k]][1].append(i)
        for col, ylabel in columns:
            n = len(facets)
            ncols = min(n, 4 if n != 4 else 2) if n > 1 else 1
            nrows = math.ceil(n / ncols)
            fig, axs = plt.subplots(nrows, ncols, figsize=(4.2 * ncols + 2.2, 3.4 * nrows + 0.8), squeeze=False,
                                    sharey=bool(spec.baseline) or col.endswith("_rel"))
            handles: dict[str, Any] = {}
            for fi, (fk, idxs) in enumerate(facets):
                ax = axs[fi // ncols][fi % ncols]
                pts = [study.points[i] for i in idxs]
                xs = _ordered_values(study, axis, pts)
                yall = []
                for (w, s) in series_keys:
                    ys = []
                    for xv in xs:
                        vals = [float(df.at[i, col]) for i in idxs
                                if study.points[i].workload == w and study.points[i].size == s
                                and _freeze(study.points[i].coords.get(axis)) == _freeze(xv)
                                and df.at[i, "status"] == "ok" and not _isnan(df.at[i, col])]
                        ys.append(sum(vals) / len(vals) if vals else math.nan)
                    if all(_isnan(y) for y in ys):
                        continue
                    yall += [y for y in ys if not _isnan(y)]
                    label = f"{w} n={s}" if multi_size else w
                    (line,) = ax.plot(range(len(xs)), ys, marker="o", color=colours[(w, s)], label=label)
                    handles.setdefault(label, line)
                ax.set_xticks(range(len(xs)), [_label(x) for x in xs])
                ax.set_xlim(-0.35, len(xs) - 0.65)
                ax.set_xlabel(_short(axis))
                if fi % ncols == 0:
                    ax.set_ylabel(ylabel if len(ylabel) < 40 else ylabel.replace(" relative", "\nrelative"))
                if col.endswith("_rel"):
                    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
                elif yall and min(yall) > 0 and max(yall) / min(yall) > 8:
                    ax.set_yscale("log")
                elif yall and min(yall) == 0 and max(yall) > 0:
                    pos = [y for y in yall if y > 0]
                    if max(pos) / min(pos) > 8:
                        ax.set_yscale("symlog", linthresh=max(1.0, min(pos) / 2))
                title = ", ".join(f"{_short(k) if k != 'card' else 'card'}={_label(v)}" for k, v in fk.items())
                if title:
                    ax.set_title(title, fontsize=10)
                ax.grid(True, alpha=0.3)
            for fi in range(len(facets), nrows * ncols):
                axs[fi // ncols][fi % ncols].set_visible(False)
            head = f"{spec.name}: {col} vs {axis}"
            if averaged:
                head += f" (mean over {', '.join(_short(a) for a in averaged)})"
            fig.suptitle(head, fontsize=11)
            fig.legend(list(handles.values()), list(handles.keys()), loc="center left", bbox_to_anchor=(1.0, 0.5),
                       fontsize=9, frameon=False)
            fig.tight_layout()
            path = plot_dir / f"{col}_vs_{axis.replace('.', '_')}.png"
            fig.savefig(path, dpi=110, bbox_inches="tight")
            plt.close(fig)
            files.append(path)
    return files


def _fmt(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, float):
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _md_table(header: list[str], rows: list[list]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(_fmt(c) if not isinstance(c, str) else c for c in r) + " |" for r in rows]
    return "\n".join(out)


def summary_markdown(outcome, plot_files: list[Path]) -> str:
    study, df = outcome.study, outcome.table
    spec = study.spec
    metric = spec.metric
    n_ok = int((df["status"] == "ok").sum())
    lines = [f"# Study `{spec.name}`", "", spec.description.strip(), "",
             f"- source: `{study.source}`; base: {', '.join(spec.cards)}; mode: {spec.mode}",
             f"- workloads: {', '.join(f'{w} (n={chr(44).join(map(str, spec.sizes_of(w)))})' for w in spec.workloads)}",
             "- axes: " + ("; ".join(f"`{a}` = {_axis_desc(spec, a)}" for a in study.axis_names) or "none"),
             f"- points: {len(df)} ({n_ok} ok, {len(df) - n_ok} failed); computed this run: {len(outcome.computed)}, "
             f"from cache: {len(outcome.cached)}; executor: {outcome.executor}; wall time {outcome.wall_s:.1f} s; "
             f"model code fingerprint {outcome.code_fingerprint}",
             f"- compute time of all points (sum over workers, cached ones included): "
             f"{float(df['wall_s'].fillna(0).sum()):.0f} s", ""]
    ycol = f"{metric}_rel" if spec.baseline else metric
    lines += [f"## {metric}" + (f" (and relative to {_baseline_desc(spec)})" if spec.baseline else ""), ""]
    combos = []
    for p in study.points:
        c = {a: p.coords.get(a) for a in plot_axes(study)}
        if c not in combos:
            combos.append(c)
    header = ["workload", "n"] + (["card"] if len(spec.cards) > 1 else []) + \
             [", ".join(f"{_short(a)}={_label(v)}" for a, v in c.items()) or metric for c in combos]
    rows = []
    for w in spec.workloads:
        for s in spec.sizes_of(w):
            for card in spec.cards:
                row = [w, s] + ([card] if len(spec.cards) > 1 else [])
                any_val = False
                for c in combos:
                    sel = [i for i, p in enumerate(study.points) if p.workload == w and p.size == s and p.card == card
                           and all(_freeze(p.coords.get(a)) == _freeze(v) for a, v in c.items())]
                    vals = [df.at[i, metric] for i in sel if df.at[i, "status"] == "ok"]
                    if not sel:
                        row.append("n/a")
                        continue
                    if not vals:
                        row.append("failed")
                        continue
                    any_val = True
                    v = sum(float(x) for x in vals) / len(vals)
                    cell = _fmt(v)
                    if spec.baseline:
                        rel = [df.at[i, ycol] for i in sel if not _isnan(df.at[i, ycol])]
                        if rel:
                            cell += f" ({sum(rel) / len(rel):.3g}x)"
                    row.append(cell)
                if any_val or len(spec.cards) == 1:
                    rows.append(row)
    lines += [_md_table(header, rows), ""]
    ok_df = df[df["status"] == "ok"]
    if len(ok_df):
        lines += ["## Top stall reason per point", ""]
        hdr = ["workload", "n", "card"] + [_short(a) for a in study.axis_names] + [metric, "top stall", "share",
                                                                                  "shared conflicts",
                                                                                  "reg-conflict cycles"]
        body = []
        for _, r in ok_df.iterrows():
            body.append([r["workload"], int(r["size"]), r["card"]] + [_label(r[a]) for a in study.axis_names]
                        + [r[metric], str(r["top_stall"]), f"{r['top_stall_fraction']:.1%}",
                           r["shared_conflicts"], r["reg_conflict_cycles"]])
        lines += [_md_table(hdr, body), ""]
    if plot_files:
        lines += ["## Plots", ""]
        lines += [f"![{f.stem}](plots/{f.name})" for f in plot_files]
        lines.append("")
    fails = outcome.failures
    lines += ["## Failures", ""]
    if fails:
        for f in fails:
            coords = ", ".join(f"{_short(a)}={_label(v)}" for a, v in f["coords"].items())
            lines.append(f"- {f['workload']} n={f['size']} on {f['card']} ({coords}): {f['error']}")
    else:
        lines.append("none")
    lines.append("")
    return "\n".join(lines)


def _axis_desc(spec, axis: str) -> str:
    if axis == HONOUR_AXIS:
        return ", ".join(_label(v) for v in spec.honour_control_codes)
    vals = spec.axes[axis]
    if isinstance(vals, dict):
        return "; ".join(f"{card}: {', '.join(_label(v) for v in vs)}" for card, vs in vals.items())
    return ", ".join(_label(v) for v in vals)


def _baseline_desc(spec) -> str:
    return ", ".join(f"{_short(a)}={_label(v)}" for a, v in spec.baseline.items())


def write_outputs(outcome) -> dict[str, str]:
    """results.csv, results.parquet, plots/*.png, summary.md, failures.json, study.json in outcome.out_dir."""
    out = outcome.out_dir
    out.mkdir(parents=True, exist_ok=True)
    df = outcome.table
    files = {}
    df.to_csv(out / "results.csv", index=False)
    files["csv"] = str(out / "results.csv")
    try:
        df.to_parquet(out / "results.parquet", index=False)
        files["parquet"] = str(out / "results.parquet")
    except ImportError:
        files["parquet"] = "not written: pip install pyarrow"
    plot_files = make_plots(outcome.study, df, out / "plots")
    files["plots"] = [str(p) for p in plot_files]
    (out / "summary.md").write_text(summary_markdown(outcome, plot_files))
    files["summary"] = str(out / "summary.md")
    (out / "failures.json").write_text(json.dumps(outcome.failures, indent=1, default=str))
    files["failures"] = str(out / "failures.json")
    meta = {"study": outcome.study.spec.model_dump(), "source": outcome.study.source, "points": len(df),
            "failed": len(outcome.failures), "computed": len(outcome.computed), "cached": len(outcome.cached),
            "executor": outcome.executor, "wall_s": round(outcome.wall_s, 2),
            "code_fingerprint": outcome.code_fingerprint,
            "point_seconds": round(float(df["wall_s"].fillna(0).sum()), 1)}
    (out / "study.json").write_text(json.dumps(meta, indent=1, default=str))
    files["meta"] = str(out / "study.json")
    return files
