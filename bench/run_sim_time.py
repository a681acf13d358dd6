"""Wall time of the main job (`python run_sim.py`) from an empty cache, and the report's size.

Issue 15's goal: under 60 s on a fresh clone on the 2-core machine, report.html under 3 MB.
Measured 2026-11-25 on the 2-core machine, quiet, from fresh clones: 51.4 s and 51.3 s, report.html
0.74 MB (30 jobs: each seed's variants on its era's card and the H100). Earlier the same day, busy,
with all 45 card x variant jobs: 4 min 04 s.

Usage: python bench/run_sim_time.py [--cards gtx970,k40,h100]
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cards", default="gtx970,k40,h100")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, str(ROOT / "run_sim.py"), out, "--cards", args.cards],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - t0
        if proc.returncode:
            sys.exit(f"run_sim.py failed ({proc.returncode}): {proc.stderr.strip().splitlines()[-1:]}")
        report = Path(out) / "report" / "report.html"
        print(f"run_sim.py --cards {args.cards}: {wall:.1f} s wall from an empty cache; "
              f"report.html {report.stat().st_size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
