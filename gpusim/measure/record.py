"""One JSON record per (workload, size), the summary CSV, and the end-of-run table.

Record fields: workload, size, kernel {name, demangled, mangled, cubin, attributes}, launch {grid,
block, dynamic_shared_bytes}, flops (+ source), check {max_rel_err, passed, tolerance, ...}, timing
{reps, warmup, median_ms, min_ms, max_ms, p10_ms, p90_ms, mean_ms, span_mean_ms, all_ms, gflops},
clocks {sm_mhz, mem_mhz, temp_c, power_w: {min, median, max}}, ncu {metrics {name: {value, unit}},
kernel, commands, rejected, error}, env {...}, commands {nvcc, ncu}, error, skipped. Fields that were
not measured are null, so a reader can tell "not run" from "zero".
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
import math
import statistics
from pathlib import Path

from gpusim.measure.backend import CupyDevice

SCHEMA = 1
REQUIRED = {"schema": int, "workload": str, "size": int, "kernel": dict, "launch": dict, "check": (dict, type(None)),
            "timing": (dict, type(None)), "clocks": (dict, type(None)), "ncu": (dict, type(None)), "env": dict,
            "commands": dict, "error": (str, type(None)), "skipped": (str, type(None))}
TIMING_KEYS = ("reps", "median_ms", "min_ms", "max_ms", "p10_ms", "p90_ms", "all_ms")
SUMMARY_COLUMNS = ("workload", "size", "status", "passed", "max_rel_err", "median_ms", "min_ms", "p10_ms", "p90_ms",
                   "reps", "gflops", "sm_mhz_median", "ncu_gpc_cycles", "ncu_time_ns", "ncu_error", "error")


def record_path(out_dir: Path, workload: str, size: int) -> Path:
    return Path(out_dir) / f"{workload}__n{size}.json"


def percentile(sorted_vals: list[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default) of an already sorted list."""
    if not sorted_vals:
        return math.nan
    pos = (len(sorted_vals) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


HOST_PACED = "CUDA event pair per launch, launches back to back after warm-ups, same buffers (warm L2)"
QUEUED = (f"{HOST_PACED}, enqueued in batches of {CupyDevice.QUEUE_BATCH} behind a blocking kernel (queued: the "
          "host does not pace them)")


def timing_stats(all_ms: list[float], span_ms: float | None, warmup: int, flops: float | None,
                 queued: bool = False) -> dict:
    """Order statistics of per-launch times (ms) and GFLOP/s at the median; `queued`: how they were
    timed (gpusim.measure.backend)."""
    s = sorted(all_ms)
    med = statistics.median(s)
    return {"reps": len(s), "warmup": warmup, "median_ms": med, "min_ms": s[0], "max_ms": s[-1],
            "p10_ms": percentile(s, 10), "p90_ms": percentile(s, 90), "mean_ms": statistics.fmean(s),
            "span_mean_ms": span_ms / len(s) if span_ms else None,
            "gflops": flops / (med * 1e-3) / 1e9 if flops and med > 0 else None,
            "method": QUEUED if queued else HOST_PACED, "queued": bool(queued),
            "all_ms": [round(x, 6) for x in all_ms]}


def new_record(workload: str, size: int, env: dict) -> dict:
    return {"schema": SCHEMA, "workload": workload, "size": size, "kernel": {}, "launch": {}, "flops": None,
            "flops_source": None, "check": None, "timing": None, "clocks": None, "ncu": None, "env": env,
            "commands": {"nvcc": None, "ncu": []}, "error": None, "skipped": None,
            "measured_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}


def validate(rec: dict) -> list[str]:
    """Problems with a record's structure (empty list if it is well formed)."""
    problems = []
    for key, typ in REQUIRED.items():
        if key not in rec:
            problems.append(f"missing '{key}'")
        elif not isinstance(rec[key], typ):
            problems.append(f"'{key}' has type {type(rec[key]).__name__}")
    t = rec.get("timing")
    if isinstance(t, dict):
        problems += [f"timing lacks '{k}'" for k in TIMING_KEYS if k not in t]
        if t.get("all_ms") is not None and len(t["all_ms"]) != t.get("reps"):
            problems.append("timing.reps differs from len(all_ms)")
        if isinstance(t.get("min_ms"), float) and not t["min_ms"] <= t["median_ms"] <= t["max_ms"]:
            problems.append("timing min <= median <= max does not hold")
    c = rec.get("check")
    if isinstance(c, dict):
        problems += [f"check lacks '{k}'" for k in ("max_rel_err", "passed", "tolerance") if k not in c]
    if not rec.get("error") and not rec.get("skipped"):
        if not rec.get("kernel", {}).get("mangled"):
            problems.append("kernel.mangled missing on a successful run")
    try:
        json.dumps(rec, allow_nan=False)
    except ValueError as exc:
        problems.append(f"not strict JSON: {exc}")
    return problems


def _clean(x):
    """NaN/inf -> their names, so the file is strict JSON."""
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def write_record(out_dir: Path, rec: dict) -> Path:
    rec = _clean(rec)
    rec["problems"] = validate({k: v for k, v in rec.items() if k != "problems"}) or None
    path = record_path(out_dir, rec["workload"], rec["size"])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(rec, indent=1))
    tmp.replace(path)
    return path


def summary_row(rec: dict) -> dict:
    t, c, k = rec.get("timing") or {}, rec.get("check") or {}, rec.get("clocks") or {}
    metrics = (rec.get("ncu") or {}).get("metrics") or {}
    def metric(name):
        v = metrics.get(name)
        return v.get("value") if isinstance(v, dict) else None
    status = "skipped" if rec.get("skipped") else "error" if rec.get("error") else "ok"
    return {"workload": rec["workload"], "size": rec["size"], "status": status,
            "passed": c.get("passed"), "max_rel_err": c.get("max_rel_err"), "median_ms": t.get("median_ms"),
            "min_ms": t.get("min_ms"), "p10_ms": t.get("p10_ms"), "p90_ms": t.get("p90_ms"), "reps": t.get("reps"),
            "gflops": t.get("gflops"), "sm_mhz_median": ((k.get("sm_mhz") or {}).get("median")),
            "ncu_gpc_cycles": metric("gpc__cycles_elapsed.max"), "ncu_time_ns": metric("gpu__time_duration.sum"),
            "ncu_error": (rec.get("ncu") or {}).get("error"), "error": rec.get("error") or rec.get("skipped")}


def write_summary(out_dir: Path, records: list[dict]) -> Path:
    path = Path(out_dir) / "summary.csv"
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=SUMMARY_COLUMNS)
        w.writeheader()
        for rec in records:
            w.writerow(summary_row(rec))
    return path


def _fmt(v, spec: str) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "NO"
    try:
        return format(v, spec)
    except (TypeError, ValueError):
        return str(v)


def table(records: list[dict]) -> str:
    """A compact fixed-width table, one line per run (the remote tool returns only the output's tail)."""
    head = f"{'workload':<28} {'n':>6} {'ok':>4} {'relerr':>8} {'med ms':>10} {'p10':>9} {'p90':>9} {'GFLOP/s':>9} " \
           f"{'MHz':>5} {'ncu cyc':>11}  note"
    lines = [head]
    for rec in records:
        r = summary_row(rec)
        note = (r["error"] or r["ncu_error"] or "")[:60]
        lines.append(f"{r['workload'][:28]:<28} {r['size']:>6} {_fmt(r['passed'], ''):>4} {_fmt(r['max_rel_err'], '.1e'):>8} "
                     f"{_fmt(r['median_ms'], '.4f'):>10} {_fmt(r['p10_ms'], '.4f'):>9} {_fmt(r['p90_ms'], '.4f'):>9} "
                     f"{_fmt(r['gflops'], '.1f'):>9} {_fmt(r['sm_mhz_median'], '.0f'):>5} "
                     f"{_fmt(r['ncu_gpc_cycles'], 'd'):>11}  {note}")
    return "\n".join(lines)
