"""The main job: replay the seed GEMM variants shipped in traces/ and report.

Today it runs the front end end to end (committed SASS -> functional emulation on real data ->
check against numpy) for every workload on Kepler (sm_35), Maxwell (sm_52) and Hopper (sm_90) and
prints the dynamic warp-instruction counts, with the H100's measured counts where we have them.
The timing model (cycles, stalls) is not built yet. Needs no GPU and no CUDA toolchain.
"""

import csv
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.progress import track
from rich.table import Table

from gpusim import REPO_ROOT
from gpusim.emu.run import check, emulate
from gpusim.workloads import list_workloads


def main(out_dir: Path = REPO_ROOT / "out" / "run_sim") -> int:
    console = Console()
    measured = {}
    counts = REPO_ROOT / "validation/h100/instruction_counts.csv"
    if counts.exists():
        measured = {(r["workload"], int(r["size"])): int(r["measured"]) for r in csv.DictReader(counts.open())}
    jobs = [(wl, arch, min(wl.sizes)) for wl in list_workloads() for arch in wl.archs]
    rows = []
    for wl, arch, n in track(jobs, description="emulating", console=console):
        emu, inputs = emulate(wl, arch, n, record=False)
        ok = all(r["passed"] for r in check(wl, emu, inputs, n).values())
        h100 = measured.get((wl.name, n)) if arch == "sm_90" else None
        rows.append({"workload": wl.name, "arch": arch, "size": n, "warp_instructions": emu.warp_instructions,
                     "h100_measured": h100, "matches_numpy": ok})
    table = Table(title="gpusim: seed GEMM variants (functional emulation; timing model not built yet)")
    for col in ("workload", "arch", "n", "warp-instructions", "H100 measured", "numpy check"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["workload"], r["arch"], str(r["size"]), f"{r['warp_instructions']:,}",
                      "" if r["h100_measured"] is None else f"{r['h100_measured']:,}",
                      "ok" if r["matches_numpy"] else "FAILED")
    console.print(table)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(rows, indent=2))
    console.print(f"results written to {out_dir / 'results.json'}")
    return 0 if all(r["matches_numpy"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
