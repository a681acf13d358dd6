#!/usr/bin/env python3
"""gpusim against a card's DRAM streams: a float4 read, write and copy (bench/micro/dram_mix/*.yaml, the
kernels of micro.cu that run_micro.py times; measured in validation/h100/micro/micro_h100.json `bandwidth`,
on the H200 in micro_bw_h200.json).

    python3 bench/micro/dram_mix.py [--card h100|h200]          # the config's model, ~30 s on 2 cores
    python3 bench/micro/dram_mix.py [--card h100|h200] --fit    # fit memory.dram.turnaround on the copy, ~2 min
    python3 bench/micro/dram_mix.py --mix [--set ...]           # check: mix_rw's read:write mixes (H100), ~2 min

Each kernel runs in gpusim (sampled mode, 1 GiB a buffer, cold L2; the cards measured 2 GiB a buffer) and
its rate is the buffer bytes it moves (the copy: both buffers) over its simulated cycles at the config's
clock, as run_micro.py reports the hardware's. `--fit` bisects `memory.dram.turnaround` (with
`write_backpressure` on) until the copy's rate is the measured one; the read and write rates are shown as
checks (the read fixes `bandwidth_gb_s`, the write checks the back-pressure). `--mix` checks the rule on
mixes nothing was fitted to: mix_rw (dram_writes.cu; `dram_mix/mix_rw.yaml`, n = 10 a + b) reads a and writes
b float4 streams, one unit per thread at a time, the larger side 1 GiB on the H100
(validation/h100/micro/dram_dmix_h100.json, Nsight cycles, caches flushed) and 256 MiB in gpusim (cold);
compared as bytes moved per cycle. Results: bench/results/dram_mix.txt.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "bench" / "micro" / "dram_mix"
MEASURED = {"h100": ROOT / "validation" / "h100" / "micro" / "micro_h100.json",
            "h200": ROOT / "validation" / "h100" / "micro" / "micro_bw_h200.json"}
SIZE_MIB = 1024
KERNELS = {"bw_read": ("dram_read", 1), "bw_write": ("dram_write", 1), "bw_copy": ("dram_copy", 2)}  # name: (record, buffers)


def measured(card: str) -> dict:
    res = json.loads(MEASURED[card].read_text())["bandwidth"]["results"]
    return {k: float(res[rec]["gb_s"]) for k, (rec, _) in KERNELS.items()}


def run_spec(spec: str, card: str, size: int, sets: list[str]) -> dict:
    """`gpusim run` of a spec of dram_mix/ (sampled mode, cold L2) with the --set overrides: its result JSON."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        cmd = [sys.executable, "-m", "gpusim", "run", str(SPECS / f"{spec}.yaml"), "--gpu", card, "--size",
               str(size), "--mode", "sampled", "--json", str(out)] + [a for s in sets for a in ("--set", s)]
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if r.returncode:
            raise SystemExit(f"dram_mix.py: gpusim run {spec} n={size} failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
        return json.loads(out.read_text())


def simulated(kernel: str, sets: list[str], card: str) -> float:
    """GB/s gpusim gives the kernel (buffer bytes over simulated cycles at the config's clock)."""
    d = run_spec(kernel, card, SIZE_MIB, sets)
    return KERNELS[kernel][1] * SIZE_MIB * 2 ** 20 / (d["cycles"] / (d["clock_mhz"] * 1e6)) / 1e9


MIXES = ((1, 0), (4, 1), (2, 1), (1, 1), (1, 2), (1, 4), (0, 1))  # mix_rw's (a, b), as run_dram_writes.py --set dmix


def mix_measured() -> dict:
    """(a, b): the H100's bytes moved per cycle (the mean over its launches of that mix)."""
    rows = json.loads((ROOT / "validation" / "h100" / "micro" / "dram_dmix_h100.json").read_text())["ncu"]["cases"]
    out: dict = {}
    for r in rows:
        if r["kernel"] == "mix_rw":
            a, b = r["a"], r["b"]
            nbytes = (a + b) * (1 << 30) // max(a, b)
            out.setdefault((a, b), []).append(nbytes / r["gpc__cycles_elapsed.max"])
    return {k: sum(v) / len(v) for k, v in out.items()}


def mix_simulated(a: int, b: int, sets: list[str]) -> float:
    """gpusim's bytes moved per cycle for mix_rw (a, b), the larger side 256 MiB, cold L2."""
    return (a + b) * (256 << 20) // max(a, b) / run_spec("mix_rw", "h100", 10 * a + b, sets)["cycles"]


def mix_table(sets: list[str]) -> list[str]:
    meas = mix_measured()
    lines = [f"{'a:b':5s} {'H100 B/cycle':>12s} {'gpusim':>8s} {'error':>7s}"]
    for a, b in MIXES:
        s = mix_simulated(a, b, sets)
        lines.append(f"{a}:{b:<3d} {meas[(a, b)]:12.1f} {s:8.1f} {100 * (s / meas[(a, b)] - 1):+6.1f}%")
    return lines


def table(sets: list[str], meas: dict, card: str) -> list[str]:
    lines = [f"{'kernel':10s} {card.upper() + ' GB/s':>10s} {'gpusim':>8s} {'error':>7s}"]
    for k in KERNELS:
        s = simulated(k, sets, card)
        lines.append(f"{k:10s} {meas[k]:10.1f} {s:8.1f} {100 * (s / meas[k] - 1):+6.1f}%")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", action="store_true", help="bisect memory.dram.turnaround on the copy")
    ap.add_argument("--set", action="append", default=[], help="config override FIELD=VALUE (as gpusim run --set)")
    ap.add_argument("--card", choices=sorted(MEASURED), default="h100")
    ap.add_argument("--mix", action="store_true", help="check on mix_rw's read:write mixes (H100)")
    args = ap.parse_args()
    if args.mix:
        if args.card != "h100" or args.fit:
            ap.error("--mix is a check on the H100's mix_rw records: no --fit, no other card")
        print("\n".join([f"mix_rw, h100, the config's model ({' '.join(args.set) or 'no overrides'}):"] + mix_table(args.set)))
        return 0
    meas = measured(args.card)
    if not args.fit:
        print("\n".join([f"{args.card}, the config's model ({' '.join(args.set) or 'no overrides'}):"]
                        + table(args.set, meas, args.card)))
        return 0
    base = args.set + ["memory.dram.write_backpressure=true"]
    lo, hi = 0.0, 0.6
    rate = lambda t: simulated("bw_copy", base + [f"memory.dram.turnaround={t}"], args.card)  # noqa: E731
    if not rate(hi) <= meas["bw_copy"] <= rate(lo):
        raise SystemExit("dram_mix.py: the measured copy rate is outside what turnaround 0..0.6 gives")
    for _ in range(7):  # 0.6 / 2^7: about 0.005
        mid = (lo + hi) / 2
        if rate(mid) > meas["bw_copy"]:
            lo = mid
        else:
            hi = mid
    t = round((lo + hi) / 2, 3)
    print("\n".join([f"{args.card}, fitted: memory.dram.turnaround = {t} (write_backpressure on; copy at {SIZE_MIB} MiB a buffer)"]
                    + table(base + [f"memory.dram.turnaround={t}"], meas, args.card)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
