#!/usr/bin/env python3
"""gpusim against the H200's L1 row-walk microbenchmarks (this folder; records in validation/h200/l1rows/).

    python3 bench/micro/l1rows/compare.py [--set FIELD=VALUE ...]    # ~2 min on 2 cores

For each spec and size: Nsight Compute's cycles (sm__cycles_elapsed.max, caches flushed: cold) and
gpusim's (`gpusim run --gpu h200`, cold L2; the row walks in sampled mode, the chases in detailed mode),
per loop step: cycles / 2,048 for the row walks (one load of A per step), (cycles - the card's
kernel_overhead_cycles) / 64 for the chases (one dependent load per step). It fits nothing.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent
RECORDS = ROOT / "validation/h200/l1rows"
sys.path.insert(0, str(HERE.parent))
from compare_specs import measured, simulated  # noqa: E402  (the records' cycles, and `gpusim run` on the h200 card)

SPECS = ["rows_hit_skew", "rows_hit", "rows_walk", "lines_chase_1sm", "rows_chase_1sm", "lines_chase_16sm",
         "rows_chase_16sm", "lines_chase_33sm", "rows_chase_33sm", "lines_chase_66sm", "rows_chase_66sm", "lines_chase",
         "rows_chase"]


def per_step(spec: str, cycles: float, overhead: float) -> float:
    """Cycles per loop step; the chases less the kernel's launch overhead (`overhead`, the card's)."""
    return (cycles - overhead) / 64 if "chase" in spec else cycles / 2048


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", action="append", default=[], help="config override FIELD=VALUE (as gpusim run --set)")
    ap.add_argument("--only", default="", help="comma list of specs (default: all)")
    args = ap.parse_args()
    import yaml

    from gpusim.config import load_gpu

    overhead = load_gpu("h200").kernel_overhead_cycles
    print(f"{'spec':16s} {'n':>3s} {'ncu cyc':>9s} {'gpusim':>9s} {'err %':>6s}   cycles per step: {'H200':>7s} {'gpusim':>7s}")
    for spec in [s for s in SPECS if not args.only or s in args.only.split(",")]:
        for n in yaml.safe_load((HERE / f"{spec}.yaml").read_text())["sizes"]:
            m, s = measured(RECORDS, spec, n), simulated(HERE, spec, n, args.set)
            if m is None or s is None:
                continue
            print(f"{spec:16s} {n:3d} {m:9.0f} {s:9.0f} {100 * (s / m - 1):+6.1f}   {'':17s}{per_step(spec, m, overhead):7.1f} "
                  f"{per_step(spec, s, overhead):7.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
