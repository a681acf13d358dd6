"""Peak memory of detailed mode on every suite kernel at its largest size (issue 16: <= 2 GB).

Each workload runs in a fresh process on a card of its architecture (h100 for sm_90 code, else
gtx970, else k40), at its largest size, in detailed mode (streamed: `gpusim/timing/compiled/stream.py`).
Most of these runs take far longer than a benchmark can wait (a 4096^3 naive SGEMM is about 13 G
warp-instructions), so each runs for `--seconds` of emulation and timing (default 90) and then
computes the numpy references the output check needs (the check's own memory). Two peaks are
printed: the run's (inputs, emulation, timing) and with the check (its float64 references; for
outputs of a GiB, as the AA^T kernels at 16384 have, the check dominates). What the probe
shows is the steady state: the arena holds about a slice of records per resident warp (and at most
`FREE_RECORDS` beyond), the emulator a wave of CTAs; neither grows with the run's length. A run that
finishes within the time is a whole run (its figures say so). Results go to
bench/results/memory.json (a rerun skips the cases there) and are printed as a table.

    python bench/memory.py [--seconds 90] [--only sgemm_maxas_64,...] [--size N]
    python bench/memory.py --one WORKLOAD CARD N SECONDS        (one case, JSON on stdout)
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "memory.json"


class _Enough(Exception):
    pass


def one(name: str, card: str, n: int, seconds: float) -> dict:
    from gpusim.config import load_gpu
    from gpusim.emu.run import verify
    from gpusim.timing import driver as D
    from gpusim.timing.compiled import stream as S
    from gpusim.workloads import find_workload

    cfg, wl = load_gpu(card), find_workload(name)
    t0 = time.perf_counter()
    real = S.EmulatorStream.slice
    seen = {"records": 0}

    def slice_(self, g, ctas=None):
        if time.perf_counter() - t0 > seconds:
            raise _Enough
        seg = real(self, g, ctas)
        if seg is not None:
            seen["records"] += int(seg.counts.sum())
        return seg

    S.EmulatorStream.slice = slice_
    finished = True
    peak = lambda: round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)  # noqa: E731
    try:
        emu, inputs, r = D.time_streamed(wl, cfg, n)
        run_peak = peak()
        verify(wl, emu, inputs, n)
    except _Enough:
        run_peak = peak()
        finished = False
        from gpusim.emu.run import build_launch
        from gpusim.toolchain.listings import load_program

        _, _, _, inputs = build_launch(wl, load_program(wl, cfg.arch), n)
        wl.reference_outputs(inputs, n)  # what the check computes at the end
    return {"workload": name, "card": card, "n": n, "finished": finished,
            "wall_s": round(time.perf_counter() - t0, 1), "records": seen["records"],
            "run_peak_mb": run_peak, "peak_mb": peak()}


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

    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    only = set(args.only.split(",")) if args.only else None
    for wl in list_workloads():
        if not wl.is_suite or (only and wl.name not in only):
            continue
        card = "h100" if "sm_90" in wl.archs else ("gtx970" if "sm_52" in wl.archs else "k40")
        n = args.size or max(wl.sizes)
        key = f"{wl.name}:{card}:{n}"
        if key in results:
            continue
        out = subprocess.run([sys.executable, __file__, "--one", wl.name, card, str(n), str(args.seconds)],
                             capture_output=True, text=True)
        if out.returncode:
            raise SystemExit(f"{key} failed:\n{out.stderr[-2000:]}")
        results[key] = json.loads(out.stdout.strip().splitlines()[-1])
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(results, indent=1))
        print(f"{key}: {results[key]['peak_mb']} MB", flush=True)
    t = Table(title="detailed mode (streamed): peak memory per suite kernel at its largest size")
    for col in ("workload", "card", "n", "whole run", "seconds", "records made", "peak MB: run", "with the check"):
        t.add_column(col, justify="right")
    for r in results.values():
        t.add_row(r["workload"], r["card"], str(r["n"]), "yes" if r["finished"] else "no (probe)", f"{r['wall_s']:g}",
                  f"{r['records']:,}", f"{r['run_peak_mb']:,}", f"{r['peak_mb']:,}")
    Console(width=160).print(t)


if __name__ == "__main__":
    main()
