"""Speed and accuracy of the two timing modes (the fast-mode issue's table).

For the DGEMM family on the GTX 970 and the two SGEMMs on the H100 at each size: wall time and
warp-instructions per second of the detailed and sampled modes (emulation included: it is part of
what a user waits for), and the sampled-vs-detailed difference in cycles where detailed mode runs
(`--detailed-max`). Results are appended to bench/results/speed.json as they come (a rerun skips
the cases already there), then printed as a table.

Usage: python bench/speed.py [--sizes 1024,2048,4096] [--detailed-max 1024] [--detailed-max-fp64 512] [--only-table]
"""

import argparse
import json
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from gpusim.timing.driver import run_workload

RESULTS = Path(__file__).parent / "results" / "speed.json"
DGEMMS = ["dgemm_unroll", "dgemm_unroll_128b", "dgemm_unroll_128b_prefsmem", "dgemm_unroll_db",
          "dgemm_unroll_db_128b", "dgemm_unroll_db_128b_prefsmem"]
CASES = [(w, "gtx970") for w in DGEMMS] + [("sgemm_maxas_64", "h100"), ("sgemm_maxas_128", "h100")]


def load() -> dict:
    return json.loads(RESULTS.read_text()) if RESULTS.exists() else {}


def measure(name, card, n, mode) -> dict:
    t0 = time.perf_counter()
    r = run_workload(name, card, n, mode=mode)
    wall = time.perf_counter() - t0
    return {"cycles": r.cycles, "time_s": r.time_s, "wall_s": round(wall, 2),
            "warp_instructions": r.warp_instructions, "rate": round(r.warp_instructions / wall),
            "sampling": r.sampling}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1024,2048,4096")
    ap.add_argument("--detailed-max", type=int, default=1024)
    ap.add_argument("--detailed-max-fp64", type=int, default=512,
                    help="detailed-mode limit for the FP64-bound DGEMMs on the GTX 970 (minutes per case above)")
    ap.add_argument("--only-table", action="store_true")
    args = ap.parse_args()
    results = load()
    sizes = [int(s) for s in args.sizes.split(",")]
    if not args.only_table:
        for n in sizes:
            for name, card in CASES:
                for mode in ("sampled", "detailed"):
                    key = f"{name}:{card}:{n}:{mode}"
                    limit = args.detailed_max_fp64 if name.startswith("dgemm") else args.detailed_max
                    if key in results or (mode == "detailed" and n > limit):
                        continue
                    results[key] = measure(name, card, n, mode)
                    RESULTS.parent.mkdir(parents=True, exist_ok=True)
                    RESULTS.write_text(json.dumps(results, indent=1))
                    print(f"{key}: {results[key]['wall_s']} s", flush=True)
    table = Table(title="gpusim timing modes: wall time (emulation included) and agreement")
    for col in ("workload", "card", "n", "sampled s", "sampled warp-instr/s", "detailed s",
                "detailed warp-instr/s", "sampled vs detailed"):
        table.add_column(col, justify="right")
    for n in sizes:
        for name, card in CASES:
            s = results.get(f"{name}:{card}:{n}:sampled")
            d = results.get(f"{name}:{card}:{n}:detailed")
            if not s:
                continue
            diff = f"{(s['cycles'] - d['cycles']) / d['cycles']:+.2%}" if d else "-"
            table.add_row(name, card, str(n), f"{s['wall_s']:.1f}", f"{s['rate']:,}",
                          f"{d['wall_s']:.1f}" if d else "-", f"{d['rate']:,}" if d else "-", diff)
    Console(width=170).print(table)


if __name__ == "__main__":
    main()
