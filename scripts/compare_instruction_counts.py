"""Emulated sm_90 warp-instruction counts vs Nsight Compute's smsp__inst_executed.sum on the H100.

Reads validation/h100/small/*.json (gpusim.measure.run --ncu output) and writes
validation/h100/instruction_counts.csv. Usage: python scripts/compare_instruction_counts.py
"""

import csv
import glob
import json
import sys

from gpusim import REPO_ROOT
from gpusim.emu.run import emulate
from gpusim.workloads import find_workload


def measured_counts():
    for path in sorted(glob.glob(str(REPO_ROOT / "validation/h100/small/*.json"))):
        rec = json.load(open(path))
        ncu = rec.get("ncu")
        metrics = ncu.get("metrics", {}) if isinstance(ncu, dict) else {}
        if "smsp__inst_executed.sum" in metrics:
            yield rec["workload"], rec["size"], int(metrics["smsp__inst_executed.sum"]["value"])


def main() -> int:
    rows, bad = [], 0
    for name, n, measured in measured_counts():
        wl = find_workload(name)
        if n not in wl.sizes:
            continue
        emu, _ = emulate(wl, "sm_90", n, record=False)
        rows.append({"workload": name, "size": n, "emulated": emu.warp_instructions, "measured": measured})
        bad += emu.warp_instructions != measured
        print(f"{name:32s} {n:5d} emulated {emu.warp_instructions:10d} measured {measured:10d}", flush=True)
    with open(REPO_ROOT / "validation/h100/instruction_counts.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["workload", "size", "emulated", "measured"])
        w.writeheader()
        w.writerows(rows)
    print(f"{len(rows) - bad} of {len(rows)} equal")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
