"""The recorded timeline as Chrome/Perfetto trace-event JSON (open it at https://ui.perfetto.dev).

Layout: one process per SM; in it one track per warp scheduler (sub-partition) with a slice per
issue slot, named by the SASS text of the issued instruction, and one track per warp with its
stall slices named by reason (consecutive slices of one reason merged; issue runs named `issue`).

Time unit: the trace format counts microseconds; here **1 trace microsecond = 1 SM cycle**, so the
Perfetto ruler reads cycles directly ("1 ms" on screen = 1000 cycles). Converting with the clock
instead would squeeze a cycle into well under a nanosecond, below the trace format's resolution.
"""

from __future__ import annotations

import json
from pathlib import Path

from gpusim.timing.results import SimResult
from gpusim.viz.load import instruction_index, label

TIME_UNIT = "1 trace microsecond = 1 SM cycle"
WARP_TID_BASE = 1000  # scheduler tracks are tids 0..3, warp tracks 1000 + warp id
PID_STRIDE = 1000  # pid = 1 + result number * PID_STRIDE + SM index
EPS = 1e-6


def to_trace_events(result: SimResult, number: int = 0, name: str | None = None) -> dict:
    """Trace-event JSON of one result's timeline (empty when the run recorded none).
    `number` separates the processes of several results in one file; `name` labels them."""
    events = _events(result, number, name or label(result)) if result.timeline else []
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"time_unit": TIME_UNIT, "clock_mhz": result.clock_mhz, "result": name or label(result)}}


def merge_traces(results: list[SimResult], names: list[str] | None = None) -> dict:
    """One trace holding the timelines of several results (results without a timeline are left out)."""
    names = names or [label(r) for r in results]
    events, recorded = [], []
    for i, (r, n) in enumerate(zip(results, names)):
        if r.timeline:
            events += _events(r, i, n)
            recorded.append({"result": n, "clock_mhz": r.clock_mhz, "events": len(r.timeline)})
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"time_unit": TIME_UNIT, "results": recorded}}


def write_trace(results: list[SimResult], path: str | Path, names: list[str] | None = None) -> Path | None:
    """Write `merge_traces(...)` to `path`; None (and no file) when no result recorded a timeline."""
    trace = merge_traces(results, names)
    if not trace["traceEvents"]:
        return None
    path = Path(path)
    path.write_text(json.dumps(trace, separators=(",", ":")))
    return path


def _events(result: SimResult, number: int, name: str) -> list[dict]:
    reasons = result.timeline_reasons
    selected = reasons.index("selected")
    sass = instruction_index(result)
    timeline = sorted(result.timeline, key=lambda e: (e[0], e[2], e[3]))
    events = _metadata(timeline, number, name, result.clock_mhz, selected)

    def pc_args(pc: int) -> dict:
        address, text = sass.get(pc, (None, f"pc index {pc}"))
        return {"pc": f"0x{address:04x}" if address is not None else None, "sass": text}

    # scheduler tracks: every issue slot, unmerged
    for sm, sp, warp, start, cycles, reason, pc in timeline:
        if reason == selected:
            events.append({"ph": "X", "name": pc_args(pc)["sass"], "cat": "issue", "ts": start, "dur": cycles,
                           "pid": _pid(number, sm), "tid": sp, "args": {"pc": pc_args(pc)["pc"], "warp": warp}})
    # warp tracks: runs of one reason merged
    for sm, sp, warp, start, cycles, reason, pc, merged in _merge_runs(timeline):
        kind = "issue" if reason == selected else reasons[reason]
        first = pc_args(pc)
        events.append({"ph": "X", "name": kind, "cat": "issue_run" if reason == selected else "stall",
                       "ts": start, "dur": cycles, "pid": _pid(number, sm), "tid": WARP_TID_BASE + warp,
                       "args": {"slices": merged, "first_pc": first["pc"], "first_sass": first["sass"]}
                       if reason == selected else {"slices": merged, **first}})
    return events


def _merge_runs(timeline: list[list]):
    """Consecutive slices of one warp with the same reason, joined: (sm, sp, warp, start, cycles,
    reason, pc of the first slice, number of slices). `timeline` is sorted by sm, warp, start."""
    run = None
    for sm, sp, warp, start, cycles, reason, pc in timeline:
        if run and run[0] == sm and run[2] == warp and run[5] == reason and start <= run[3] + run[4] + EPS:
            run[4] = round(max(run[4], start + cycles - run[3]), 2)
            run[7] += 1
            continue
        if run:
            yield tuple(run)
        run = [sm, sp, warp, start, cycles, reason, pc, 1]
    if run:
        yield tuple(run)


def _pid(number: int, sm: int) -> int:
    return 1 + number * PID_STRIDE + sm


def _metadata(timeline: list[list], number: int, name: str, clock_mhz: float, selected: int) -> list[dict]:
    """process_name/thread_name ("M") events naming the SM processes and their tracks."""
    sms = sorted({e[0] for e in timeline})
    schedulers = sorted({(e[0], e[1]) for e in timeline if e[5] == selected})
    warps = sorted({(e[0], e[2], e[1]) for e in timeline})
    out = []
    for sm in sms:
        pid = _pid(number, sm)
        out.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                    "args": {"name": f"SM {sm} · {name}"}})
        out.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
        out.append({"ph": "M", "name": "process_labels", "pid": pid, "tid": 0,
                    "args": {"labels": f"{TIME_UNIT} (clock {clock_mhz:.0f} MHz)"}})
    for sm, sp in schedulers:
        out.append({"ph": "M", "name": "thread_name", "pid": _pid(number, sm), "tid": sp,
                    "args": {"name": f"scheduler {sp} · issue slots"}})
        out.append({"ph": "M", "name": "thread_sort_index", "pid": _pid(number, sm), "tid": sp,
                    "args": {"sort_index": sp}})
    for sm, warp, sp in warps:
        tid = WARP_TID_BASE + warp
        out.append({"ph": "M", "name": "thread_name", "pid": _pid(number, sm), "tid": tid,
                    "args": {"name": f"warp {warp} (scheduler {sp}) · stalls"}})
        out.append({"ph": "M", "name": "thread_sort_index", "pid": _pid(number, sm), "tid": tid,
                    "args": {"sort_index": tid}})
    return out
