#!/usr/bin/env python3
"""CPU functional check of the reconstructed kernels in traces/kernels/*.cu.

The kernels themselves are compiled with g++ against a tiny CUDA shim (cuda_cpu_shim.h: every CUDA
thread is a fiber, __syncthreads/__syncwarp are real barriers) and run for each workload spec in
traces/workloads/*.yaml: inputs come from Workload.make_inputs, the grid/block from
Workload.geometry, and the result is compared with Workload.reference_outputs.  So this checks the
kernel, the spec's launch geometry and argument layout, and the spec's reference together.  Each case
runs under several thread-ordering policies (fwd, rev, rand): a shared-memory race shows up as a
policy-dependent result.  Extra cases that the square specs cannot express (DGEMM with K % 8 != 0,
non-square SGEMM) are run directly.

    python traces/kernels/check/run_checks.py               # all specs, sizes <= 256
    python traces/kernels/check/run_checks.py --max-n 512 dgemm_unroll sgemm_maxas_64
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(REPO))
from gpusim.workloads.spec import list_workloads  # noqa: E402

BUILD = HERE / "build"
EMU = BUILD / "emu"
SOURCES = ["cpusim", "reg_seed000", "reg_seed001", "reg_seed002", "reg_seed003", "reg_suite12"]
SCALAR_TAG = {"int32": "i32", "uint32": "u32", "float32": "f32", "float64": "f64"}


def build() -> None:
    BUILD.mkdir(exist_ok=True)
    deps = list(HERE.glob("*.h")) + list(HERE.glob("*.cpp")) + list(HERE.parent.glob("*.cu"))
    newest = max(p.stat().st_mtime for p in deps)
    if EMU.exists() and EMU.stat().st_mtime > newest:
        return
    objs = []
    for s in SOURCES:
        obj = BUILD / f"{s}.o"
        subprocess.run(["g++", "-std=c++17", "-O2", "-Wall", "-Wno-unknown-pragmas", "-Wno-maybe-uninitialized",
                        "-c", str(HERE / f"{s}.cpp"), "-o", str(obj)], check=True)
        objs.append(str(obj))
    subprocess.run(["g++", "-o", str(EMU), *objs], check=True)


def run_kernel(kernel, grid, block, args, policy="fwd", seed=1):
    """args: list of ('in'|'out', ndarray, order) or (tag, value). Returns the 'out' arrays."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [str(EMU), kernel, *map(str, grid), *map(str, block), policy, str(seed)]
        outs = []
        for i, a in enumerate(args):
            if a[0] in ("in", "out"):
                path = Path(tmp) / f"arg{i}.bin"
                path.write_bytes(a[1].tobytes(order=a[2]))
                cmd.append(f"{a[0]}:{path}")
                if a[0] == "out":
                    outs.append((path, a[1], a[2]))
            else:
                cmd.append(f"{a[0]}:{a[1]!r}")
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{kernel}: {r.stderr.strip()}")
        return [np.frombuffer(p.read_bytes(), dtype=arr.dtype).reshape(arr.shape, order=order)
                for p, arr, order in outs]


def rel_err(out, ref):
    if not np.all(np.isfinite(out)):
        return float("inf")
    return float(np.max(np.abs(out.astype(np.float64) - ref)) / max(np.max(np.abs(ref)), 1e-300))


def check_spec(wl, n, policies):
    inputs = wl.make_inputs(n, seed=n)
    grid, block, dyn = wl.geometry(n)
    assert dyn == 0, "dynamic shared memory is not modelled by the CPU checker"
    args, names = [], []
    for a in wl.args:
        if a.kind == "buffer":
            args.append(("out" if a.output else "in", inputs[a.name], a.order))
            if a.output:
                names.append(a.name)
        else:
            v = inputs[a.name]
            args.append((SCALAR_TAG[a.dtype], float(v) if a.dtype.startswith("float") else int(v)))
    ref = wl.reference_outputs(inputs, n)
    tol = wl.default_tolerance()
    worst, results = 0.0, []
    for pol in policies:
        outs = run_kernel(wl.kernel, grid, block, args, pol, seed=n)
        for name, out in zip(names, outs):
            e = rel_err(out, ref[name])
            worst = max(worst, e)
            results.append(out)
    same = all(np.array_equal(results[0], r, equal_nan=True) for r in results[1:])
    return worst, tol, same


def extra_checks(policies):
    """Cases outside the square specs: DGEMM K tail (K % 8 != 0), non-square SGEMM."""
    rng = np.random.default_rng(7)
    ok = True
    dgemms = ["cuk_dgemm_unroll", "cuk_dgemm_unroll_db", "cuk_dgemm_unroll_128b", "cuk_dgemm_unroll_128b_prefsmem",
              "cuk_dgemm_unroll_db_128b", "cuk_dgemm_unroll_db_128b_prefsmem"]
    for kern in dgemms:
        for (m, K, p) in [(128, 3, 256), (256, 13, 128), (128, 136, 128), (128, 141, 256)]:
            A = np.asfortranarray(rng.uniform(-1, 1, (m, K)))
            B = np.asfortranarray(rng.uniform(-1, 1, (K, p)))
            C = np.full((m, p), np.nan, order="F")
            for pol in policies:
                (out,) = run_kernel(kern, (m // 128, p // 128, 1), (32, 8, 1),
                                    [("out", C, "F"), ("in", A, "F"), ("in", B, "F"),
                                     ("i32", K), ("i32", m), ("i32", K), ("i32", m)], pol, seed=K)
                e = rel_err(out, A @ B)
                good = e < 1e-12
                ok &= good
                print(f"  {'ok ' if good else 'BAD'} {kern:36s} m={m} K={K} p={p} {pol:4s} rel.err {e:.2e}")
    for kern, tile in [("sgemm_maxas_64", 64), ("sgemm_maxas_128", 128)]:
        for (m, n, k) in [(2 * tile, 3 * tile, 8), (3 * tile, tile, 72), (tile, 2 * tile, 136)]:
            A = rng.uniform(-1, 1, (k, m)).astype(np.float32)    # k-major: A[k_, m_] at k_*lda + m_
            B = rng.uniform(-1, 1, (k, n)).astype(np.float32)
            C = np.full((m, n), np.nan, dtype=np.float32, order="F")
            for pol in policies:
                (out,) = run_kernel(kern, (m // tile, n // tile, 1), (tile * tile // 64, 1, 1),
                                    [("out", C, "F"), ("in", A, "C"), ("in", B, "C"), ("i32", m), ("i32", n),
                                     ("i32", k), ("i32", m), ("i32", n), ("i32", m), ("f32", 0.5)], pol, seed=k)
                e = rel_err(out, 0.5 * (A.astype(np.float64).T @ B))
                good = e < 1e-5
                ok &= good
                print(f"  {'ok ' if good else 'BAD'} {kern:36s} m={m} n={n} k={k} {pol:4s} rel.err {e:.2e}")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*", help="workload names (default: all)")
    ap.add_argument("--max-n", type=int, default=256)
    ap.add_argument("--policies", default="fwd,rev,rand")
    ap.add_argument("--no-extra", action="store_true")
    opts = ap.parse_args()
    build()
    policies = opts.policies.split(",")
    ok = True
    for wl in list_workloads():
        if opts.names and wl.name not in opts.names:
            continue
        for n in [s for s in wl.sizes if s <= opts.max_n]:
            worst, tol, same = check_spec(wl, n, policies)
            good = worst <= tol and same
            ok &= good
            print(f"{'ok ' if good else 'BAD'} {wl.name:32s} n={n:5d} rel.err {worst:.2e} (tol {tol:.0e})"
                  f"{'' if same else '  RESULT DEPENDS ON THREAD ORDER'}")
    if not opts.no_extra and not opts.names:
        print("extra cases:")
        ok &= extra_checks(policies)
    print("ALL OK" if ok else "FAILURES")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
