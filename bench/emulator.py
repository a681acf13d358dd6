"""Emulation rate: warp-instructions per second for the maxas SGEMM at 1024^3 on sm_90 and sm_52.

Usage: python bench/emulator.py [--size N] [--arch sm_90]
"""

import argparse
import time

from gpusim.emu.run import emulate
from gpusim.workloads import find_workload


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--archs", default="sm_90,sm_52")
    ap.add_argument("--workloads", default="sgemm_maxas_64,sgemm_maxas_128")
    args = ap.parse_args()
    print(f"{'workload':18s} {'arch':6s} {'n':>5s} {'warp-instr':>12s} {'seconds':>8s} {'M warp-instr/s':>15s}")
    for name in args.workloads.split(","):
        for arch in args.archs.split(","):
            wl = find_workload(name)
            t0 = time.perf_counter()
            emu, _ = emulate(wl, arch, args.size, record=False)
            dt = time.perf_counter() - t0
            print(f"{name:18s} {arch:6s} {args.size:5d} {emu.warp_instructions:12,d} {dt:8.2f} "
                  f"{emu.warp_instructions / dt / 1e6:15.2f}", flush=True)


if __name__ == "__main__":
    main()
