#!/usr/bin/env python3
"""gpusim against the H200 on a folder of microbenchmark specs (bench/micro/<folder>/, records in
validation/h200/<folder>/, measured by bench/micro/measure_specs.sh).

    python3 bench/micro/compare_specs.py cpasync [--only SPEC,...] [--set FIELD=VALUE ...]   # ~3 min on 2 cores
    python3 bench/micro/compare_specs.py ldsrate                                             # ~1 min
    python3 bench/micro/compare_specs.py tpose                                               # ~1 min

For each spec (the folder's SPECS order, else alphabetical) and size: Nsight Compute's cycles
(sm__cycles_elapsed.max, caches flushed) and gpusim's (`gpusim run --gpu h200`, cold L2; one-warp
"chase" specs in detailed mode, the rest sampled). For the chases also the cycles per step between
their two largest sizes (the launch and the first pass from DRAM cancel): the latency of one dependent
copy or load. It fits nothing (cpasync's mio_cpa4 is what `sm.shared_memory.l1_copy_wavefronts` was
fitted on).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ORDER = {"cpasync": ["cpa_chase_cg", "ldg_chase_cg", "cpa_chase_ca", "ldg_chase_ca", "cpa_tiles", "ldg_tiles", "mio_lds",
                     "mio_sts4", "mio_cpa4", "mio_sts16", "mio_cpa16", "tile16_ldg", "tile16_cpa_sync", "tile16_cpa_db"],
         "tpose": ["tp_lds", "tp_nold", "tp_nost", "tp_l2", "tp_dram", "tp_l2_c4", "tp_dram_c4", "tp_l2_c2", "tp_dram_c2",
                   "tpp_l2", "tpp_dram"]}


def measured(records: Path, spec: str, n: int) -> float | None:
    f = records / f"{spec}__n{n}.json"
    if not f.exists():
        return None
    v = json.loads(f.read_text()).get("ncu", {}).get("metrics", {}).get("sm__cycles_elapsed.max", {}).get("value")
    return float(v) if v is not None else None


def simulated(folder: Path, spec: str, n: int, sets: list[str]) -> float | None:
    mode = "detailed" if "chase" in spec else "sampled"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        cmd = [sys.executable, "-m", "gpusim", "run", str(folder / f"{spec}.yaml"), "--gpu", "h200", "--size", str(n),
               "--mode", mode, "--json", str(out)] + [a for s in sets for a in ("--set", s)]
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if r.returncode:
            print(f"{spec} n={n}: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else 'failed'}", file=sys.stderr)
            return None
        return float(json.loads(out.read_text())["cycles"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", help="a folder of bench/micro/ (cpasync, ldsrate)")
    ap.add_argument("--set", action="append", default=[], help="config override FIELD=VALUE (as gpusim run --set)")
    ap.add_argument("--only", default="", help="comma list of specs (default: all)")
    args = ap.parse_args()
    import yaml

    folder, records = ROOT / "bench" / "micro" / args.folder, ROOT / "validation" / "h200" / args.folder
    if not folder.is_dir() or not records.is_dir():
        ap.error(f"no specs in {folder} or no records in {records}")
    specs = ORDER.get(args.folder) or sorted(p.stem for p in folder.glob("*.yaml"))
    print(f"{'spec':16s} {'n':>5s} {'ncu cyc':>9s} {'gpusim':>9s} {'err %':>6s}")
    for spec in [s for s in specs if not args.only or s in args.only.split(",")]:
        rows = []
        for n in yaml.safe_load((folder / f"{spec}.yaml").read_text())["sizes"]:
            m, s = measured(records, spec, n), simulated(folder, spec, n, args.set)
            if m is None or s is None:
                continue
            rows.append((n, m, s))
            print(f"{spec:16s} {n:5d} {m:9.0f} {s:9.0f} {100 * (s / m - 1):+6.1f}", flush=True)
        if "chase" in spec and len(rows) >= 2:
            (n0, m0, s0), (n1, m1, s1) = rows[-2], rows[-1]
            print(f"{spec:16s} cycles per step (n = {n0}..{n1}): H200 {(m1 - m0) / (n1 - n0):.1f}, "
                  f"gpusim {(s1 - s0) / (n1 - n0):.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
