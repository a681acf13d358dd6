#!/usr/bin/env python3
"""gpusim H100 microbenchmark: do loads held back by a full LSU queue take issue slots from the other warps of
their sub-partition (Nsight's dispatch_stall)? dispatch.cu beside this file says what runs.

    python3 bench/micro/run_dispatch.py --out RESULTS.json [--ncu]   # on the GPU machine (cupy; ncu)
    python3 bench/micro/run_dispatch.py --dry-run                    # compile, count the timed SASS

Per case (loader warps and FFMA warps per sub-partition, load stride): the FFMA warps' rate (warp FFMAs per
cycle per sub-partition, from their clock64 spans, median over SMs) and the loaders' (warp loads per cycle
per SM). The loaders run until the FFMA warps are done. With --ncu, Nsight's stall ratios of each.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run_micro import build_cubin, cupy_missing, ncu_raw_rows, run_meta, write_json  # noqa: E402

SRC = os.path.join(HERE, "dispatch.cu")
CASES = [  # (ldg warps, fma warps) per sub-partition, stride; the loaders poll (run until the FFMA warps end)
    (0, 2, 4), (1, 2, 4), (3, 2, 4), (6, 2, 4),
    (1, 2, 128), (3, 2, 128), (6, 2, 128),
    (0, 1, 4), (3, 1, 128), (6, 1, 128), (6, 0, 128), (6, 0, 4),
]
FIXED = [  # the same with the loaders running LDG_ITERS iterations, no polling ("fixed": set --fixed)
    (1, 2, 4), (1, 2, 128), (3, 2, 128), (1, 1, 4), (3, 1, 128), (1, 0, 4), (3, 0, 128),
]
YOUNG = [  # --fixed --loaders-last: the FFMA warps first on each sub-partition, the loaders after them
    (1, 2, 4), (1, 1, 4), (1, 2, 128),
]
ACTIVE = [  # --fixed --active: how many issue-bound warps it takes to starve a loader (loaders first)
    (1, 3, 4), (1, 4, 4), (2, 2, 4), (2, 1, 4), (2, 3, 4), (0, 3, 4), (0, 4, 4), (2, 0, 4),
]
INTEGER = [  # --fixed --integer: stride 0 makes the "loader" an integer warp (LOP3/IADD chains, no memory)
    (1, 0, 0), (1, 1, 0), (1, 2, 0), (1, 3, 0),
]
SHARED = [  # --fixed --shared: stride -1 makes the "loader" a shared-memory warp (conflict-free LDS)
    (1, 0, -1), (1, 1, -1), (1, 2, -1), (2, 2, -1),
]
FMA_ITERS, LDG_ITERS = {4: 2000, 128: 2000, 0: 2000, -1: 2000}, {4: 400, 128: 40, 0: 400, -1: 400}  # (loaders alone: LDG_ITERS)
STALLS = ["dispatch_stall", "lg_throttle", "not_selected", "selected", "long_scoreboard", "math_pipe_throttle", "wait"]
NCU_METRICS = ["gpc__cycles_elapsed.max", "smsp__inst_executed.sum"] + \
    [f"smsp__average_warps_issue_stalled_{s}_per_issue_active.ratio" for s in STALLS]


def compile_cubin(nvcc: str) -> dict:
    return build_cubin(nvcc, SRC)


def launch(mod, cp, np, sms, case, out, buf, sink, poll=True, last=False):
    ldg, fma, stride = case
    mod.get_function("dispatch_steal")((sms,), (1024,), (buf, sink, out, np.int32(LDG_ITERS[stride]),
                                                          np.int32(FMA_ITERS[stride]), np.int32(ldg), np.int32(fma),
                                                          np.int32(stride), np.int32(bool(poll and fma)),
                                                          np.int32(last)))


def measure(cubin: str, cases=None, poll=True, last=False) -> list:
    import cupy as cp
    import numpy as np
    mod = cp.RawModule(path=cubin)
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    buf, sink = cp.zeros(1 << 20, dtype=cp.uint8), cp.zeros(1024, dtype=cp.float32)
    out = cp.zeros(sms * 32 * 3, dtype=cp.int64)
    res = []
    for case in cases or CASES:
        ldg, fma, stride = case
        vals_f, vals_l, ldg_span, fma_span = [], [], [], []
        for _ in range(3):
            out.fill(0)
            launch(mod, cp, np, sms, case, out, buf, sink, poll, last)
            cp.cuda.runtime.deviceSynchronize()
            o = cp.asnumpy(out).reshape(sms, 32, 3)
            place = np.arange(32) // 4
            slot = np.where(place < fma, place + ldg, np.where(place < fma + ldg, place - fma, place)) if last else place
            fw, lw = (slot >= ldg) & (slot < ldg + fma), slot < ldg
            if fma:
                spans = (o[:, fw, 1] - o[:, fw, 0]).max(axis=1)  # per SM: the slowest FFMA warp
                fma_span.append(float(np.median(spans)))
                vals_f.append(float(np.median(fma * FMA_ITERS[stride] * 64 / spans)))  # per sub-partition
            if ldg:
                spans = (o[:, lw, 1].max(axis=1) - o[:, lw, 0].min(axis=1))
                ldg_span.append(float(np.median(spans)))
                vals_l.append(float(np.median(o[:, lw, 2].sum(axis=1) * 16 / spans)))  # per SM
        r = {"ldg_warps_per_sp": ldg, "fma_warps_per_sp": fma, "stride": stride,
             "fma_per_cycle_per_sp": round(statistics.median(vals_f), 4) if vals_f else None,
             "ldg_per_cycle_per_sm": round(statistics.median(vals_l), 4) if vals_l else None,
             "reps_fma": [round(v, 4) for v in vals_f], "reps_ldg": [round(v, 4) for v in vals_l],
             "loaders_poll": bool(poll and fma), "loaders_last": bool(last), "fma_span_cycles": fma_span, "ldg_span_cycles": ldg_span}
        print(r, flush=True)
        res.append(r)
    return res


def ncu_child(cubin: str) -> None:
    import cupy as cp
    import numpy as np
    mod = cp.RawModule(path=cubin)
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    buf, sink = cp.zeros(1 << 20, dtype=cp.uint8), cp.zeros(1024, dtype=cp.float32)
    out = cp.zeros(sms * 32 * 3, dtype=cp.int64)
    for case in CASES:
        launch(mod, cp, np, sms, case, out, buf, sink, poll=True)
        cp.cuda.runtime.deviceSynchronize()


def run_ncu(cubin: str) -> dict:
    ncu = shutil.which("ncu") or "/opt/nvidia/nsight-compute/2025.3.1/ncu"
    cmd = [ncu, "--csv", "--page", "raw", "--clock-control", "none", "--metrics", ",".join(NCU_METRICS),
           sys.executable, os.path.abspath(__file__), "--ncu-child", cubin]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    rows = ncu_raw_rows(r.stdout)
    out = []
    for case, row in zip(CASES, rows):
        out.append({"case": list(case), **{k: float(row[k].replace(",", "")) for k in NCU_METRICS if row.get(k)}})
    return {"command": " ".join(map(shlex.quote, cmd)), "rows": out, "stderr_tail": r.stderr[-800:]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out")
    ap.add_argument("--ncu", action="store_true")
    ap.add_argument("--fixed", action="store_true", help="only the FIXED cases (loaders run a fixed count)")
    ap.add_argument("--loaders-last", action="store_true", help="with --fixed: the YOUNG cases, loaders after the FFMA warps")
    ap.add_argument("--active", action="store_true", help="with --fixed: the ACTIVE cases (more FFMA warps and loaders)")
    ap.add_argument("--integer", action="store_true", help="with --fixed: the INTEGER cases (an integer warp for the loader)")
    ap.add_argument("--shared", action="store_true", help="with --fixed: the SHARED cases (a shared-memory warp for the loader)")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--ncu-child", metavar="CUBIN", help=argparse.SUPPRESS)
    ap.add_argument("--nvcc", default=os.environ.get("GPUSIM_NVCC13") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    a = ap.parse_args()
    if a.ncu_child:
        ncu_child(a.ncu_child)
        return 0
    if not a.dry_run:
        if not a.out:
            ap.error("--out is required unless --dry-run")
        if cupy_missing("run_dispatch.py"):
            return 2
    comp = compile_cubin(a.nvcc)
    if a.dry_run:
        print(json.dumps(comp, indent=1))
        return 0
    R = {"meta": run_meta(comp)}
    fixed = SHARED if a.shared else INTEGER if a.integer else ACTIVE if a.active else YOUNG if a.loaders_last else FIXED
    R["cases"] = measure(comp["cubin"], fixed, poll=False, last=a.loaders_last) if a.fixed else measure(comp["cubin"])
    if a.ncu and not a.fixed:
        R["ncu"] = run_ncu(comp["cubin"])
    write_json(a.out, R)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
