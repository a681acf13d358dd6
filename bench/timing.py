"""Detailed timing model speed: simulated warp-instructions per wall second (trace generation excluded).

Usage: python bench/timing.py [--cases dgemm_unroll:gtx970:256,sgemm_maxas_64:h100:512]
"""

import argparse
import time

from gpusim.config import load_gpu
from gpusim.emu.run import emulate
from gpusim.timing.gpu import simulate
from gpusim.trace import DynamicTrace
from gpusim.workloads import find_workload

DEFAULT = "dgemm_unroll:gtx970:256,dgemm_unroll_db_128b_prefsmem:gtx970:256,sgemm_maxas_64:h100:512,sgemm_maxas_128:h100:512"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=DEFAULT)
    args = ap.parse_args()
    print(f"{'workload':32s} {'gpu':7s} {'n':>5s} {'warp-instr':>11s} {'sim s':>7s} {'warp-instr/s':>13s} {'cycles':>10s}")
    for case in args.cases.split(","):
        name, card, n = case.split(":")
        cfg = load_gpu(card)
        wl = find_workload(name)
        emu, _ = emulate(wl, cfg.arch, int(n))
        trace = DynamicTrace.from_emulator(emu)
        t0 = time.perf_counter()
        r = simulate(emu.program, trace, cfg)
        dt = time.perf_counter() - t0
        print(f"{name:32s} {card:7s} {n:>5s} {r.warp_instructions:11,d} {dt:7.2f} {r.warp_instructions / dt:13,.0f} "
              f"{r.cycles:10,.0f}", flush=True)


if __name__ == "__main__":
    main()
