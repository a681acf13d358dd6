#!/usr/bin/env python3
"""Per-instruction stall sampling of suite kernels on the H100 (Nsight Compute's source page), to find
which SASS instructions carry a stall reason gpusim does not charge (issue 12: dispatch_stall on the
naive coalesced SGEMMs and maxas at 2048, barrier on maxas at 512).

    python3 bench/micro/ncu_source.py --out DIR      # on the GPU machine (nvcc, cupy, ncu)

Builds traces/kernels/{suite12,seed002_sgemm_maxas}.cu as `gpusim compile` does (nvcc -arch=sm_90 -cubin
-O3 -std=c++14), launches each case once under `ncu --section SourceCounters --section WarpStateStats`
with random inputs, and writes per case the source page (SASS, one row per instruction, with the warp
stall samples by reason) as CSV, and the raw page. Nothing is fitted to these.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CASES = {  # name: (source, mangled kernel, size, grid(n), block, args(n) kind)
    "sgemm_naive_coalesced_512": ("suite12.cu", "_Z20gemm_naive_coalescedIfEvPKT_S2_PS0_i", 512,
                                  lambda n: (n // 32, n // 8), (32, 8), "abcn"),
    "sgemm_naive_coalesced_2048": ("suite12.cu", "_Z20gemm_naive_coalescedIfEvPKT_S2_PS0_i", 2048,
                                   lambda n: (n // 32, n // 8), (32, 8), "abcn"),
    "sgemm_maxas_64_2048": ("seed002_sgemm_maxas.cu", "_Z14sgemm_maxas_64PfPKfS1_iiiiiif", 2048,
                            lambda n: (n // 64, n // 64), (64, 1), "maxas"),
    "sgemm_maxas_64_512": ("seed002_sgemm_maxas.cu", "_Z14sgemm_maxas_64PfPKfS1_iiiiiif", 512,
                           lambda n: (n // 64, n // 64), (64, 1), "maxas"),
}


def child(build: str) -> None:
    import cupy as cp
    import numpy as np
    for name, (src, fn, n, grid, block, kind) in CASES.items():
        mod = cp.RawModule(path=os.path.join(build, src.replace(".cu", ".cubin")))
        f = mod.get_function(fn)
        rng = np.random.default_rng(0)
        A = cp.asarray(rng.random((n, n), dtype=np.float32))
        B = cp.asarray(rng.random((n, n), dtype=np.float32))
        C = cp.zeros((n, n), dtype=cp.float32)
        cp.cuda.runtime.deviceSynchronize()
        i = np.int32(n)
        args = (A, B, C, i) if kind == "abcn" else (C, A, B, i, i, i, i, i, i, np.float32(1.0))
        f(grid(n), block, args)
        cp.cuda.runtime.deviceSynchronize()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=False)
    ap.add_argument("--child", metavar="BUILD", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.child)
        return 0
    if not a.out:
        ap.error("--out is required")
    try:
        import cupy  # noqa: F401
    except ImportError:
        print("ncu_source.py: needs a GPU machine with cupy; none here", file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    build = os.path.join(HERE, "build")
    os.makedirs(build, exist_ok=True)
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    for src in {c[0] for c in CASES.values()}:
        subprocess.run([nvcc, "-arch=sm_90", "-cubin", "-O3", "-std=c++14", "-o",
                        os.path.join(build, src.replace(".cu", ".cubin")), os.path.join(ROOT, "traces/kernels", src)],
                       check=True)
    ncu = shutil.which("ncu") or "/opt/nvidia/nsight-compute/2025.3.1/ncu"
    rep = os.path.join(a.out, "source")
    subprocess.run([ncu, "--section", "SourceCounters", "--section", "WarpStateStats", "--clock-control", "none",
                    "-f", "-o", rep, sys.executable, os.path.abspath(__file__), "--child", build], check=True)
    for page, extra in (("source", ["--print-source", "sass"]), ("details", [])):
        r = subprocess.run([ncu, "--import", rep + ".ncu-rep", "--page", page, "--csv"] + extra,
                           capture_output=True, text=True)
        with open(os.path.join(a.out, f"{page}.csv"), "w") as fh:
            fh.write(r.stdout)
        print(page, len(r.stdout), r.stderr[-500:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
