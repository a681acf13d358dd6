"""Emulation rate: warp-instructions per second for the maxas SGEMMs at 1024^3 on sm_90 and sm_52.

Usage: python bench/emulator.py [--size N] [--archs sm_90,sm_52] [--workloads ...] [--record both] [--repeat 3]

--record: no (record=False), yes (record=True, what `gpusim trace` does) or both. --repeat N reports the
best of N runs (the machine may be shared).
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
    ap.add_argument("--record", choices=("no", "yes", "both"), default="no")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    records = {"no": [False], "yes": [True], "both": [False, True]}[args.record]
    print(f"{'workload':18s} {'arch':6s} {'n':>5s} {'record':6s} {'warp-instr':>12s} {'seconds':>8s} "
          f"{'M warp-instr/s':>15s}")
    for name in args.workloads.split(","):
        for arch in args.archs.split(","):
            for record in records:
                wl = find_workload(name)
                best = float("inf")
                for _ in range(args.repeat):
                    t0 = time.perf_counter()
                    emu, _ = emulate(wl, arch, args.size, record=record)
                    best = min(best, time.perf_counter() - t0)
                    n = emu.warp_instructions
                    del emu  # a recorded 1024^3 log holds about a gigabyte
                print(f"{name:18s} {arch:6s} {args.size:5d} {str(record):6s} {n:12,d} {best:8.2f} "
                      f"{n / best / 1e6:15.2f}", flush=True)


if __name__ == "__main__":
    main()
