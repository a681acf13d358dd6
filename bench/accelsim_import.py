"""Accel-Sim trace import rate (issue 15: >= 1 M warp instructions per second).

Emulates a workload, exports its Accel-Sim trace to a temporary folder (`gpusim trace --format
accelsim`), then times reading it back into a DynamicTrace with the vectorised reader
(gpusim.trace.accelsim_fast) and, with --compare, the line-by-line reader; checks both give the
same trace. Prints wall and CPU seconds and the rate (the CPU figure is the fairer one on a busy
machine).

Usage: python bench/accelsim_import.py [--workload dgemm_unroll] [--arch sm_90] [--size 256] [--compare]
"""

import argparse
import tempfile
import time
from pathlib import Path

from gpusim.emu.run import emulate
from gpusim.trace import DynamicTrace
from gpusim.trace.accelsim import export_accelsim, read_kernel_trace, to_dynamic_trace
from gpusim.trace.accelsim_fast import read_dynamic_trace
from gpusim.workloads import find_workload


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", default="dgemm_unroll")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--compare", action="store_true", help="also time the line-by-line reader")
    args = ap.parse_args()
    wl = find_workload(args.workload)
    emu, _ = emulate(wl, args.arch, args.size)
    dyn = DynamicTrace.from_emulator(emu, workload=wl.name, size=args.size)
    with tempfile.TemporaryDirectory() as tmp:
        export_accelsim(dyn, emu.program, Path(tmp))
        kernel = Path(tmp) / "kernel-1.traceg"
        mb = kernel.stat().st_size / 1e6
        for attempt in ("first read", "second read"):  # the first pays the page faults of its big arrays
            fast, wall, cpu = timed(lambda: read_dynamic_trace(kernel, emu.program))
            assert fast is not None, "the fast reader did not take the exported trace"
            n = fast.n_warp_instructions
            if attempt == "first read":
                print(f"{wl.name} {args.arch} n={args.size}: {n:,} warp instructions, {mb:.1f} MB")
            print(f"vectorised reader, {attempt}: {wall:6.2f} s wall, {cpu:6.2f} s CPU -> {n / wall / 1e6:.2f} M/s "
                  f"wall, {n / cpu / 1e6:.2f} M/s CPU")
        if args.compare:
            slow, wall, cpu = timed(lambda: to_dynamic_trace(read_kernel_trace(kernel, args.arch), emu.program))
            print(f"line-by-line reader: {wall:6.2f} s wall, {cpu:6.2f} s CPU -> {n / wall / 1e6:.2f} M/s wall; "
                  f"same trace: {slow == fast}")


if __name__ == "__main__":
    main()
