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
    # the seed DGEMMs (issue 12: gpusim charges dgemm_unroll_128b's LDS.128 that overwrites an LDG's address
    # register with long_scoreboard waits for the LDG's read; Nsight's long_scoreboard there is half gpusim's)
    "dgemm_unroll_128b_1024": ("seed000_dgemm.cu", "_Z21cuk_dgemm_unroll_128bPdPKdS1_iiii", 1024,
                               lambda n: (n // 128, n // 128), (32, 8), "dgemm"),
    "dgemm_unroll_1024": ("seed000_dgemm.cu", "_Z16cuk_dgemm_unrollPdPKdS1_iiii", 1024,
                          lambda n: (n // 128, n // 128), (32, 8), "dgemm"),
    "dgemm_unroll_db_128b_1024": ("seed000_dgemm.cu", "_Z24cuk_dgemm_unroll_db_128bPdPKdS1_iiii", 1024,
                                  lambda n: (n // 128, n // 128), (32, 8), "dgemm"),
    # seed003's C = A A^T (gpusim predicts the padded kernel 12-13% fast at n = 1024-16384, the unpadded within 2%)
    "coalescedMultiply_4096": ("seed003_aat.cu", "_Z17coalescedMultiplyPfS_i", 4096,
                               lambda n: (n // 32, n // 32), (32, 32), "aat"),
    "coalescedMultiply_padded_4096": ("seed003_aat.cu", "_Z24coalescedMultiply_paddedPfS_i", 4096,
                                      lambda n: (n // 32, n // 32), (32, 32), "aat"),
    # the transpose skeletons of bench/micro/tpose (H200: gpusim times the unpadded shared-tile transpose 12% fast
    # from DRAM, 6% from L2, and right without global accesses, but charges barrier where Nsight has mio_throttle)
    "tp_lds_1024": ("bench/micro/tpose/kernels.cu", "_Z2tpILi0ELi0ELi0ELi1EEvPKfPfiif", 1024,
                    lambda n: (n // 8, n // 8), (32, 8), "tp_wrap"),
    "tp_l2_1024": ("bench/micro/tpose/kernels.cu", "_Z2tpILi0ELi1ELi1ELi1EEvPKfPfiif", 1024,
                   lambda n: (n // 8, n // 8), (32, 8), "tp_wrap"),
    "tp_dram_1024": ("bench/micro/tpose/kernels.cu", "_Z2tpILi0ELi1ELi1ELi0EEvPKfPfiif", 1024,
                     lambda n: (n // 8, n // 8), (32, 8), "tp"),
}


def source_path(src: str) -> str:
    """A case's source: a file of traces/kernels, or a path from the checkout's root."""
    return os.path.join(ROOT, src if "/" in src else os.path.join("traces/kernels", src))


def cubin_name(src: str) -> str:
    return src.replace("/", "_").replace(".cu", ".cubin")


def child(build: str, only: str = "") -> None:
    import cupy as cp
    import numpy as np
    for name, (src, fn, n, grid, block, kind) in selected(only).items():
        mod = cp.RawModule(path=os.path.join(build, cubin_name(src)))
        f = mod.get_function(fn)
        rng = np.random.default_rng(0)
        if kind.startswith("tp"):  # the transposes' m = 4n: whole m x m matrices, or 8 MiB each (indices masked)
            m = 4 * n
            elems = 1 << 21 if kind == "tp_wrap" else m * m
            src_buf = cp.zeros(elems, dtype=np.float32) if kind == "tp_wrap" else cp.asarray(rng.random(elems, dtype=np.float32))
            dst_buf = cp.zeros(elems, dtype=np.float32)
            cp.cuda.runtime.deviceSynchronize()
            f(grid(n), block, (src_buf, dst_buf, np.int32(m), np.int32((1 << 21) - 1), np.float32(0.0)))
            cp.cuda.runtime.deviceSynchronize()
            continue
        dt = np.float64 if kind == "dgemm" else np.float32
        A = cp.asarray(rng.random((n, 32 if kind == "aat" else n)).astype(dt))
        B = cp.asarray(rng.random((n, n)).astype(dt))
        C = cp.zeros((n, n), dtype=dt)
        cp.cuda.runtime.deviceSynchronize()
        i = np.int32(n)
        args = (A, B, C, i) if kind == "abcn" else (C, A, B, i, i, i, i) if kind == "dgemm" else \
            (A, C, i) if kind == "aat" else (C, A, B, i, i, i, i, i, i, np.float32(1.0))
        f(grid(n), block, args)
        cp.cuda.runtime.deviceSynchronize()


def to_json(csv_path: str, only: str, out_path: str) -> None:
    """The source page (`source.csv`) as validation/h100/micro/ncu_source_*.json: per profiled launch (the
    cases of `only`, in launch order), per SASS instruction, its executions and warp stall samples by
    reason (all samples); the page lists each launch twice, the first copy is kept."""
    import csv
    import json
    launches, header = [], None
    for row in csv.reader(open(csv_path)):
        if row and row[0] == "Kernel Name":
            launches.append({"kernel": row[1], "rows": []})
        elif row and row[0] == "Address":
            header = row
        elif launches and header and len(row) == len(header):
            launches[-1]["rows"].append(dict(zip(header, row)))
    names = list(selected(only))
    launches = launches[0::2]  # each launch twice
    if len(launches) != len(names):
        raise SystemExit(f"ncu_source.py: {csv_path} holds {len(launches)} launches, --only names {len(names)}")
    reasons = [h for h in header if h.startswith("stall_") and "(" not in h]
    cases = {}
    for name, launch in zip(names, launches):
        instructions, total = [], {}
        for r in launch["rows"]:
            samples = {x[6:]: float(r[x]) for x in reasons if r[x] and float(r[x])}
            for k, v in samples.items():
                total[k] = total.get(k, 0.0) + v
            instructions.append({"address": r["Address"], "sass": r["Source"].strip(),
                                 "executed": float(r["Instructions Executed"] or 0), "stall_samples": samples})
        cases[name] = {"kernel": launch["kernel"], "stall_samples_total": total,
                       "instructions_executed": sum(i["executed"] for i in instructions), "instructions": instructions}
    meta = {"command": f"python3 bench/micro/ncu_source.py --out DIR --only {only}; python3 bench/micro/ncu_source.py "
                       f"--to-json DIR/source.csv --only {only} OUT (ncu --section SourceCounters --section "
                       "WarpStateStats --clock-control none; ncu --import --page source --csv --print-source sass)",
            "note": "per SASS instruction of each profiled launch: warp stall samples by reason (ncu's stall_* columns, "
                    "all samples), instructions executed; the source page lists each launch twice, the first copy kept"}
    with open(out_path, "w") as fh:
        json.dump({"meta": meta, "cases": cases}, fh, indent=0)


def selected(only: str) -> dict:
    """The cases named in `only` (comma list; all when empty)."""
    names = [x for x in only.split(",") if x]
    unknown = [x for x in names if x not in CASES]
    if unknown:
        raise SystemExit(f"ncu_source.py: unknown case(s) {', '.join(unknown)}; known: {', '.join(CASES)}")
    return {k: v for k, v in CASES.items() if not names or k in names}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=False)
    ap.add_argument("--child", metavar="BUILD", help=argparse.SUPPRESS)
    ap.add_argument("--only", default="", help="comma list of cases (default: all)")
    ap.add_argument("--to-json", nargs=2, metavar=("SOURCE_CSV", "OUT_JSON"),
                    help="convert a run's source.csv (its cases: --only) to the committed JSON form")
    a = ap.parse_args()
    if a.child:
        child(a.child, a.only)
        return 0
    if a.to_json:
        to_json(a.to_json[0], a.only, a.to_json[1])
        return 0
    if not a.out:
        ap.error("--out is required")
    selected(a.only)
    try:
        import cupy  # noqa: F401
    except ImportError:
        print("ncu_source.py: needs a GPU machine with cupy; none here", file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    build = os.path.join(HERE, "build")
    os.makedirs(build, exist_ok=True)
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    for src in {c[0] for c in selected(a.only).values()}:
        subprocess.run([nvcc, "-arch=sm_90", "-cubin", "-O3", "-std=c++14", "-o",
                        os.path.join(build, cubin_name(src)), source_path(src)], check=True)
    ncu = shutil.which("ncu") or "/opt/nvidia/nsight-compute/2025.3.1/ncu"
    rep = os.path.join(a.out, "source")
    subprocess.run([ncu, "--section", "SourceCounters", "--section", "WarpStateStats", "--clock-control", "none",
                    "-f", "-o", rep, sys.executable, os.path.abspath(__file__), "--child", build, "--only", a.only], check=True)
    for page, extra in (("source", ["--print-source", "sass"]), ("details", [])):
        r = subprocess.run([ncu, "--import", rep + ".ncu-rep", "--page", page, "--csv"] + extra,
                           capture_output=True, text=True)
        with open(os.path.join(a.out, f"{page}.csv"), "w") as fh:
            fh.write(r.stdout)
        print(page, len(r.stdout), r.stderr[-500:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
