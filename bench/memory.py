"""Peak memory of detailed mode on every suite kernel at its largest size (issue 16: <= 2 GB).

Each workload runs in a fresh process on a card of its architecture (h100 for sm_90 code, else
gtx970, else k40), at its largest size, in detailed mode (streamed: `gpusim/timing/compiled/stream.py`).
Most of these runs take far longer than a benchmark can wait (a 4096^3 naive SGEMM is about 13 G
warp-instructions), so each runs for `--seconds` of emulation and timing (default 90) and is then
stopped. What the probe shows of the run is its steady state: the arena holds about a slice of
records per resident warp and the records of the next wave, the emulator the groups of CTAs under
way; neither grows with the run's length. What does grow: the L2's LRU tables fill up to the L2's
capacity (on the H100 within the first minute of the AA^T kernels at 16384, 104 MB when full),
and the arena's per-warp entries (two 32-bit positions and a flag) fill as the run passes the grid,
given back behind the oldest CTA still running (`Arena.release`).

The output check then runs as it would at the end of the run, on the run's own state: the device
memory the run wrote (outputs only partly computed: the CTAs not run still hold their poison) and
the launch's inputs (views of that memory), through `emu.run.check` with the whole grid's emulation
(`EmulatorStream.checked_run`), after the run's engine, arena and emulators are gone, as they are
when a real run checks. A partial run's outputs are garbage, so the check's verdict means nothing
here (it fails): what is measured is its memory, which does not depend on the values (every block
of the reference is computed and compared; a failed check also makes again its first wrong block).
Three figures: the peak of the run (inputs, emulation, timing), the peak while checking (RSS
sampled every 5 ms during the check: what the run left in memory plus the check's own), and the
process's peak over both. Where detailed mode runs in two processes (`compiled/producer.py`; a
column says how many), the run's and overall peaks add the emulating child's peak resident set (an
upper bound: the pages the two share, device memory and what the child inherited at the fork, are
counted twice), and a fourth figure, the peak proportional set size of the two together (shared
pages once), is sampled every 20 ms from the launching process. A run that finishes within the time is a whole run, checked as usual
(its figures say so). Results go to bench/results/memory.json (a rerun skips the cases there) and
are printed as a table.

    python bench/memory.py [--seconds 90] [--only sgemm_maxas_64,...] [--size N]
    python bench/memory.py --one WORKLOAD CARD N SECONDS        (one case, JSON on stdout)
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "memory.json"


class _Enough(Exception):
    pass


def _rss_mb() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 >> 20


def one(name: str, card: str, n: int, seconds: float) -> dict:
    from gpusim.config import load_gpu
    from gpusim.emu import run as R
    from gpusim.timing import driver as D
    from gpusim.timing.compiled import producer as P
    from gpusim.timing.compiled import stream as S
    from gpusim.workloads import find_workload

    cfg, wl = load_gpu(card), find_workload(name)
    t0 = time.perf_counter()
    real_init, real_add, real_build = S.EmulatorStream.__init__, S.Arena.add, R.build_launch
    seen = {"records": 0}

    def init(self, *args, **kwargs):
        seen["stream"] = self
        real_init(self, *args, **kwargs)

    def add(self, segments, st=None, queue_from=None):  # (in this process, whichever makes the slices)
        if time.perf_counter() - t0 > seconds:
            raise _Enough
        seen["records"] += sum(int(seg.counts.sum()) for seg in segments)
        return real_add(self, segments, st, queue_from)

    def build_launch(*args, **kwargs):
        seen["launch"] = out = real_build(*args, **kwargs)
        return out

    S.EmulatorStream.__init__, S.Arena.add = init, add
    R.build_launch = build_launch

    def peak():  # (with two processes, the emulating child's too, once ended: an upper bound, see bench/speed.py)
        return round(sum(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
                     / 1024)

    finished = True
    try:
        emu, inputs, r = D.time_streamed(wl, cfg, n)
    except _Enough:
        finished = False
    run_peak, run_s = peak(), time.perf_counter() - t0
    if not finished:  # the run's state, as a finished run leaves it for the check
        stream = seen.pop("stream")
        emu, inputs = stream.checked_run(), seen.pop("launch")[3]
        stream.emus.clear()
        stream.carry.clear()
        del stream
    records = seen.pop("records")
    seen.clear()
    gc.collect()
    sampled = {"peak": _rss_mb(), "stop": False}

    def sample():
        while not sampled["stop"]:
            sampled["peak"] = max(sampled["peak"], _rss_mb())
            time.sleep(0.005)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    t1 = time.perf_counter()
    report = R.check(wl, emu, inputs, n)
    sampled["stop"] = True
    watcher.join()
    return {"workload": name, "card": card, "n": n, "processes": P.processes(), "finished": finished,
            "run_s": round(run_s, 1),
            "check_s": round(time.perf_counter() - t1, 1), "records": records, "run_peak_mb": run_peak,
            "check_peak_mb": max(sampled["peak"], _rss_mb()), "peak_mb": peak(),
            "check_passed": all(c["passed"] for c in report.values())}


def _pss_mb(pid: int) -> float:
    """Proportional set size of a process and its descendants (pages shared between them counted
    once in all), MB; 0 for those gone."""
    total = 0.0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            total += next(int(line.split()[1]) for line in f if line.startswith("Pss:")) / 1024
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                total += sum(_pss_mb(int(c)) for c in f.read().split())
    except (OSError, StopIteration, ValueError):
        pass
    return total


def _run_sampled(cmd: list[str]) -> tuple[int, str, str, int]:
    """Run `cmd`; (exit code, stdout, stderr, peak PSS of it and its children in MB, sampled every
    20 ms from here: the two processes of a detailed run together, their shared pages once)."""
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        out: dict = {}
        reader = threading.Thread(target=lambda: out.update(zip(("stdout", "stderr"), proc.communicate())))
        reader.start()
        peak = 0.0
        while reader.is_alive():
            peak = max(peak, _pss_mb(proc.pid))
            time.sleep(0.02)
        reader.join()
    return proc.returncode, out["stdout"], out["stderr"], round(peak)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=90)
    ap.add_argument("--only", default=None)
    ap.add_argument("--size", type=int, default=None, help="this size instead of each workload's largest")
    ap.add_argument("--one", nargs=4, metavar=("WORKLOAD", "CARD", "N", "SECONDS"))
    args = ap.parse_args()
    if args.one:
        name, card, n, s = args.one
        print(json.dumps(one(name, card, int(n), float(s))))
        return
    from rich.console import Console
    from rich.table import Table

    from gpusim.workloads import list_workloads

    from gpusim.timing.compiled.producer import processes as processes_of

    processes = processes_of()
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    only = set(args.only.split(",")) if args.only else None
    for wl in list_workloads():
        if not wl.is_suite or (only and wl.name not in only):
            continue
        card = "h100" if "sm_90" in wl.archs else ("gtx970" if "sm_52" in wl.archs else "k40")
        n = args.size or max(wl.sizes)
        key = f"{wl.name}:{card}:{n}" + (":2" if processes == 2 else "")  # (two processes: a case of its own)
        if key in results:
            continue
        code, stdout, stderr, pss = _run_sampled([sys.executable, __file__, "--one", wl.name, card, str(n),
                                                  str(args.seconds)])
        if code:
            raise SystemExit(f"{key} failed:\n{stderr[-2000:]}")
        results[key] = {**json.loads(stdout.strip().splitlines()[-1]), "pss_peak_mb": pss}
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(results, indent=1))
        print(f"{key}: {results[key]['peak_mb']} MB", flush=True)
    t = Table(title="detailed mode (streamed): peak memory per suite kernel at its largest size, with the output check")
    for col in ("workload", "card", "n", "processes", "whole run", "run s", "records made", "peak MB: run",
                "while checking", "check s", "overall", "PSS peak MB"):
        t.add_column(col, justify="right")
    for r in results.values():
        t.add_row(r["workload"], r["card"], str(r["n"]), str(r.get("processes", 1)),
                  "yes" if r["finished"] else "no (probe)", f"{r['run_s']:g}",
                  f"{r['records']:,}", f"{r['run_peak_mb']:,}", f"{r['check_peak_mb']:,}", f"{r['check_s']:g}",
                  f"{r['peak_mb']:,}", f"{r['pss_peak_mb']:,}" if "pss_peak_mb" in r else "-")
    console = Console(width=170, record=True)
    console.print(t)
    (RESULTS.parent / "memory_table.txt").write_text(console.export_text())


if __name__ == "__main__":
    main()
