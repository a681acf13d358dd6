#!/usr/bin/env python3
"""gpusim microbenchmark: does the dirty data one kernel leaves in L2 cost the next kernel its write-back,
and does an idle gap between them drain it first? (dirty_gap.cu beside this file.) gpusim's warm start
(`memory.l2.initial: warm`) carries the previous launch's dirty sectors into the next launch, which then
writes them back: its copy_float4 at n = 1024 (64 MiB each way) runs 25% longer warm than cold, where the
H100's event times (warm) and Nsight cycles (cold) are alike.

    python3 bench/micro/dirty_gap.py --out RESULTS.json      # on the GPU machine (cupy, nvcc), ~1 min
    python3 bench/micro/dirty_gap.py --out RESULTS.json --ncu   # and the Nsight pass (dram bytes of the probe)
    python3 bench/micro/dirty_gap.py --dry-run                  # compile only, list the cases

Each trial: reset the L2 (read a 256 MiB buffer, then idle 200 us), then enqueue the first kernel (`dg_fill`
writing W MiB, or with W = 0 `dg_read` reading 16 MiB), optionally `dg_spin` on one thread for `gap_us`
(DRAM idle), then `dg_probe` reading 128 MiB of another buffer, with events around the probe only. The
probe's reads push everything out of L2: if the first kernel's dirty data are still there, the probe's time
carries their write-back. `probe_us`: median over the trials. With --ncu, Nsight Compute
(`--cache-control none`, the probe only) gives the probe's DRAM bytes after a gap of Nsight's own making.
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run_micro import micro_build, micro_parser, run_meta, write_json  # noqa: E402

SRC = os.path.join(HERE, "dirty_gap.cu")
MIB = 1 << 20
FILLS = (0, 8, 16, 24, 32)  # W, MiB written by the first kernel (0: it reads 16 MiB instead)
GAPS = (0, 10, 50, 200)  # us of one-thread spin between the first kernel and the probe (0: none)
PROBE_MIB, RESET_MIB, TRIALS = 128, 256, 9
CASES = [{"W": w, "gap_us": g} for w in FILLS for g in GAPS]


def _trial(cp, np, fn, bufs, w: int, gap_cycles: int, clock_hz: float) -> float:
    """One trial's probe time (us)."""
    grid, block = fn["sms"] * 8, 256
    fill, probe, reset, sink = bufs
    fn["dg_read"]((grid,), (block,), (reset, sink, np.int64(RESET_MIB * MIB // 16)))
    fn["dg_spin"]((1,), (1,), (np.int64(int(200e-6 * clock_hz)), 0))
    if w:
        fn["dg_fill"]((grid,), (block,), (fill, np.int64(w * MIB // 16), np.float32(1.0)))
    else:
        fn["dg_read"]((grid,), (block,), (fill, sink, np.int64(16 * MIB // 16)))
    if gap_cycles:
        fn["dg_spin"]((1,), (1,), (np.int64(gap_cycles), 0))
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    e0.record()
    fn["dg_probe"]((grid,), (block,), (probe, sink, np.int64(PROBE_MIB * MIB // 16)))
    e1.record()
    e1.synchronize()
    return cp.cuda.get_elapsed_time(e0, e1) * 1e3


def _setup(cubin: str):
    """(cupy, numpy, the kernels (and "sms"), the buffers (fill, probe, reset, sink), the SM clock in Hz, the card's properties)."""
    import cupy as cp
    import numpy as np
    mod = cp.RawModule(path=cubin)
    props = cp.cuda.runtime.getDeviceProperties(0)
    fn = {k: mod.get_function(k) for k in ("dg_fill", "dg_read", "dg_probe", "dg_spin")}
    fn["sms"] = props["multiProcessorCount"]
    bufs = (cp.zeros(32 * MIB // 4, dtype=cp.float32), cp.zeros(PROBE_MIB * MIB // 4, dtype=cp.float32),
            cp.zeros(RESET_MIB * MIB // 4, dtype=cp.float32), cp.zeros(1, dtype=cp.float32))
    return cp, np, fn, bufs, props["clockRate"] * 1e3, props


def measure(cubin: str, cases=CASES) -> dict:
    cp, np, fn, bufs, clock_hz, props = _setup(cubin)
    for _ in range(3):  # warm-up: modules loaded, clocks up
        _trial(cp, np, fn, bufs, 16, 0, clock_hz)
    out = []
    for c in cases:
        times = [_trial(cp, np, fn, bufs, c["W"], int(c["gap_us"] * 1e-6 * clock_hz), clock_hz) for _ in range(TRIALS)]
        out.append({**c, "probe_us": round(statistics.median(times), 3), "probe_us_all": [round(t, 3) for t in times]})
    return {"gpu": props["name"].decode(), "clock_mhz": clock_hz / 1e6, "probe_mib": PROBE_MIB, "trials": TRIALS,
            "cases": out}


def ncu_pass(cubin: str) -> dict:
    """Nsight Compute over a child run of this script (the probe kernel only, caches not flushed)."""
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    metrics = "dram__bytes_read.sum,dram__bytes_write.sum,gpc__cycles_elapsed.max"
    cmd = [ncu, "--csv", "--page", "raw", "--cache-control", "none", "--clock-control", "none", "--kernel-name",
           "dg_probe", "--metrics", metrics, sys.executable, os.path.abspath(__file__), "--ncu-child", cubin]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    rows = [ln for ln in r.stdout.splitlines() if ln.startswith('"') and "dg_probe" in ln]
    header = next((ln for ln in r.stdout.splitlines() if ln.startswith('"ID"')), None)
    return {"command": " ".join(cmd), "returncode": r.returncode, "header": header, "rows": rows,
            "stderr_tail": r.stderr[-2000:]}


def main() -> int:
    ap = micro_parser(__doc__, ncu_child=True)
    ap.add_argument("--ncu", action="store_true", help="also run the Nsight pass")
    args = ap.parse_args()
    if args.ncu_child:  # under Nsight: one trial per case (its probes are the rows, in CASES order)
        cp, np, fn, bufs, clock_hz, _ = _setup(args.ncu_child)
        for c in CASES:
            if c["gap_us"] in (0, 200):
                _trial(cp, np, fn, bufs, c["W"], int(c["gap_us"] * 1e-6 * clock_hz), clock_hz)
        return 0
    comp = micro_build(ap, args, "dirty_gap.py", SRC)
    if comp is None:
        return 2
    if args.dry_run:
        print(json.dumps({**comp, "cases": CASES}))
        return 0
    errors: list = []
    res = {"meta": run_meta(comp, errors), "errors": errors, **measure(comp["cubin"])}
    if args.ncu:
        res["ncu"] = {**ncu_pass(comp["cubin"]), "cases": [c for c in CASES if c["gap_us"] in (0, 200)]}
    write_json(args.out, res)
    print(f"wrote {args.out}")
    for c in res["cases"]:
        print(f"W={c['W']:3d} MiB gap={c['gap_us']:4d} us: probe {c['probe_us']:8.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
