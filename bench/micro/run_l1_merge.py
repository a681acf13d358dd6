#!/usr/bin/env python3
"""gpusim H100 microbenchmark: the latency of a load that finds its line still on its way into L1 (another
warp of the SM missed on it a few cycles before). l1_merge.cu beside this file says what is measured.

    python3 bench/micro/run_l1_merge.py --out RESULTS.json    # on the GPU machine (cupy)
    python3 bench/micro/run_l1_merge.py --dry-run             # compile, print the timed SASS

For each source (`l2`: lines read by a launch before, so they hit in L2; `dram`: a 256 MiB write before
the launch evicts them) and gap (cycles between warp w and warp w + 1's loads), the median over rounds
of each warp's issue-to-use cycles, warps 0-7, shared line and own lines (`own`). SM cycles (clock64).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run_micro import build_cubin, cupy_missing, run_meta, write_json  # noqa: E402

SRC = os.path.join(HERE, "l1_merge.cu")
ROUNDS = 64
GAPS = (0, 16, 32, 64, 128)


def compile_cubin(nvcc: str) -> dict:
    return build_cubin(nvcc, SRC)


def measure(cubin: str) -> dict:
    import cupy as cp
    import numpy as np
    mod = cp.RawModule(path=cubin)
    f, flush = mod.get_function("l1_merge"), mod.get_function("l1_merge_flush")
    words = ROUNDS * 8 * 1024
    buf = cp.arange(words, dtype=cp.uint32)
    scratch = cp.zeros(64 << 20, dtype=cp.uint32)  # 256 MiB
    out = cp.zeros(ROUNDS * 8 * 2, dtype=cp.int64)
    res = []
    for source in ("l2", "dram"):
        for own in (0, 1):
            for gap in GAPS:
                if source == "l2":  # the lines into L2 (L1 does not keep them across launches)
                    f((1,), (256,), (buf, np.int32(ROUNDS), np.int32(0), np.int32(own), out))
                else:
                    flush((8 * 132,), (256,), (scratch, np.int64(scratch.size)))
                cp.cuda.runtime.deviceSynchronize()
                f((1,), (256,), (buf, np.int32(ROUNDS), np.int32(gap), np.int32(own), out))
                cp.cuda.runtime.deviceSynchronize()
                o = cp.asnumpy(out).reshape(ROUNDS, 8, 2)[1:]  # round 0: cold instruction cache
                res.append({"source": source, "own": own, "gap": gap,
                            "issue_after_barrier_median": [int(np.median(o[:, w, 0])) for w in range(8)],
                            "latency_median": [int(np.median(o[:, w, 1])) for w in range(8)],
                            "latency_p10": [int(np.percentile(o[:, w, 1], 10)) for w in range(8)],
                            "latency_p90": [int(np.percentile(o[:, w, 1], 90)) for w in range(8)]})
                print(source, "own" if own else "shared", f"gap {gap:4d}", "latency by warp", res[-1]["latency_median"],
                      flush=True)
    return {"cases": res}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--nvcc", default=os.environ.get("GPUSIM_NVCC13") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    args = ap.parse_args()
    if not args.dry_run:
        if not args.out:
            ap.error("--out is required unless --dry-run")
        if cupy_missing("run_l1_merge.py"):
            return 2
    comp = compile_cubin(args.nvcc)
    if args.dry_run:
        dis = shutil.which("cuobjdump")
        if dis:
            sass = subprocess.run([dis, "-sass", comp["cubin"]], capture_output=True, text=True).stdout
            print("\n".join(l for l in sass.splitlines() if any(k in l for k in ("LDG", "STS", "CS2R", "S2UR", "BAR"))))
        print(json.dumps(comp, indent=1))
        return 0
    R = {"meta": run_meta(comp, rounds=ROUNDS, gaps=GAPS)}
    R.update(measure(comp["cubin"]))
    write_json(args.out, R)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
