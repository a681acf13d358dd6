"""Score the model's LSU/MIO queues against the H100 `mix` microbenchmark (memory7_h100.json).

The measurement (bench/micro/memory.cu `mix_lds_ldg`, run_memory.py --only mix; mix2, and mix3's wide
shared loads, memory8 / memory12): one CTA of 32 warps
per SM; each warp either issues conflict-free 32-bit LDS (1 wavefront each) or 32-bit LDG whose 32
lanes touch 32 lines (L1 hits), the same units (wavefronts + lines) per warp; which warps do which is
set by a mask. This script runs the same warps through gpusim's timing model (one SM, every access
issued back to back, the loads' lines in L1 after the first) and prints, per case, the measured and
simulated units per cycle. It fits nothing; `memory.l1.mixed_line_cycles` in configs/gpus/arch/gh100.yaml
is the one parameter these cases set (see its comment).

    python bench/micro/score_mix.py [--set memory.l1.unified_data_stage=true ...]
    python bench/micro/score_mix.py --ends      # the measured per-kind end times (no simulation)
    python bench/micro/score_mix.py --turns     # the measured spans against a turn-taking rule (no simulation)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from gpusim.cli import _parse_sets  # noqa: E402
from gpusim.config import apply_overrides, load_gpu  # noqa: E402
from gpusim.errors import GpusimError  # noqa: E402
from gpusim.timing.gpu import simulate  # noqa: E402
from timing_kit import program, trace  # noqa: E402

RESULT = ROOT / "validation/h100/micro/memory7_h100.json"
RESULT2 = ROOT / "validation/h100/micro/memory8_h100.json"
RESULT3 = ROOT / "validation/h100/micro/memory12_h100.json"
SCALE = 16  # the measurement's 16384 units per warp, divided by this (the same rates, a shorter run)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", action="append", default=[], help="config override FIELD=VALUE (as gpusim run --set)")
    ap.add_argument("--ends", action="store_true", help="print when each kind's warps end in the measured mixes")
    ap.add_argument("--turns", action="store_true", help="score a turn-taking rule for the stage on the measured mixes")
    args = ap.parse_args(argv)
    if args.ends:
        print_ends()
        return 0
    if args.turns:
        print_turns()
        return 0
    over = {"sm_count": 1, "kernel_overhead_cycles": 0, "launch_overhead_us": 0}
    try:  # gpusim run's own parsing and checks: YAML values, one-line errors naming the field
        cfg = apply_overrides(load_gpu("h100"), {**over, **_parse_sets(args.set)})
    except GpusimError as e:
        print(f"score_mix.py: {e}", file=sys.stderr)
        return 2
    errors = []
    print(f"{'point':24s} {'case':16s} {'measured':>9s} {'gpusim':>9s}  units/cycle/SM")
    for point, name, measured, a in cases():
        sim = simulate_case(cfg, *a)
        errors.append(abs(sim / measured - 1))
        print(f"{point:24s} {name:16s} {measured:9.3f} {sim:9.3f}")
    print(f"mean |error| {100 * float(np.mean(errors)):.1f}% over {len(errors)} cases, max {100 * max(errors):.1f}%")
    return 0


def simulate_case(cfg, ldg_mask: int, active_mask: int, lds_units: int, ldg_units: int, wavefronts: int = 1,
                  lines: int = 32, lds_bits: int = 32) -> float:
    """Units per cycle of one SM running 32 warps (those outside `active_mask` only exit): those in
    `ldg_mask` issue `ldg_units` / `lines` LDGs of `lines` lines each (L1 hits), the others
    `lds_units` / `wavefronts` LDS of `wavefronts` wavefronts each: LDS.32 with 1, 4 or 32 (lanes 4,
    16 or 128 bytes apart), or a conflict-free LDS.64 / LDS.128 (`lds_bits`; 2 / 4 by width)."""
    lds = {32: "LDS R10, [R4]", 64: "LDS.64 R10, [R4]", 128: "LDS.128 R12, [R4]"}[lds_bits]
    prog = program("sm_90", [(lds, {"stall": 1}), ("LDG.E R11, desc[UR4][R6.64]", {"stall": 1}),
                             ("EXIT", {"stall": 1})])
    streams = []
    for w in range(32):
        if not active_mask >> w & 1:
            streams.append([2])
        elif ldg_mask >> w & 1:
            streams.append([1] * (ldg_units // lines) + [2])
        else:
            streams.append([0] * (lds_units // wavefronts) + [2])
    t = trace(prog, 32, 32, streams=streams)
    rec = t.records
    is_ldg = rec["pc_index"][rec["mem_row"] >= 0] == 1
    t.addresses[is_ldg] = np.arange(32, dtype=np.uint64) * 4 * lines  # `lines` lines, the same each time: L1 hits
    t.addresses[~is_ldg] = np.arange(32, dtype=np.uint64) * (lds_bits // 8 if lds_bits > 32 else
                                                             {1: 4, 4: 16, 32: 128}[wavefronts])
    r = simulate(prog, t, cfg, honour_control_codes=True)
    n_lds = bin(active_mask & ~ldg_mask & 0xFFFFFFFF).count("1")
    n_ldg = bin(active_mask & ldg_mask).count("1")
    return (n_lds * lds_units + n_ldg * ldg_units) / r.cycles


def print_ends() -> None:
    """Per measured mix (SM 0 of the kept launch): the median end of the LDG warps and of the LDS
    warps (cycles from the CTA's first start), and how many units each kind passed before the first
    kind's warps ended, the other kind's rest taken at its rate alone (the kind's own `*16` case)."""
    print(f"{'file':9s} {'point':20s} {'case':14s} {'units/ldg':>9s} {'units/lds':>9s} {'ldg end':>8s} {'lds end':>8s}  first  "
          "other kind's share passed by then")
    for f, key in ((RESULT, "mix"), (RESULT2, "mix2"), (RESULT3, "mix3")):
        d = json.loads(f.read_text())[key]
        for point, v in (d["points"] if "points" in d else {"ldg32l_lds1w": d}).items():
            alone = {k: c["units_per_cycle"] for k, c in v["cases"].items() if k in ("lds16", "ldg16")}
            for name, c in v["cases"].items():
                if not name.startswith("mix") or "end_offsets_sm0" not in c:
                    continue
                act, ldg = int(c["active_mask"], 16), int(c["ldg_mask"], 16)
                on = [w for w in range(32) if act >> w & 1]
                ends = dict(zip(on, c["end_offsets_sm0"]))
                e_ldg = float(np.median([ends[w] for w in on if ldg >> w & 1]))
                e_lds = float(np.median([ends[w] for w in on if not ldg >> w & 1]))
                first, t0, t1 = ("ldg", e_ldg, e_lds) if e_ldg < e_lds else ("lds", e_lds, e_ldg)
                other = "lds" if first == "ldg" else "ldg"
                units = c[f"{other}_warps"] * v[f"units_per_{other}_warp"]
                rest = (t1 - t0) * alone.get(f"{other}16", 1.0)  # what the other kind passed alone after
                print(f"{f.name[:9]:9s} {point:20s} {name:14s} {c.get('lines_per_ldg', 32):9d} "
                      f"{c.get('wavefronts_per_lds', 1):9d} {e_ldg:8.0f} {e_lds:8.0f}  {first:5s}  "
                      f"{max(0.0, 1 - rest / units):.2f}")


def _mixes():
    """(file name, point, case name, case, the point's cases) of every measured mix with per-warp ends."""
    for f, key in ((RESULT, "mix"), (RESULT2, "mix2"), (RESULT3, "mix3")):
        d = json.loads(f.read_text())[key]
        for point, v in (d["points"] if "points" in d else {"ldg32l_lds1w": d}).items():
            for name, c in v["cases"].items():
                if name.startswith("mix") and "end_offsets_sm0" in c:
                    yield f.name, point, name, c, v


def turn_span(n_big: int, n_small: int, units: int, big: int, small: int, rate_small: float, rate: float) -> float:
    """A candidate rule, not gpusim's: while both kinds have work the stage takes one access from every
    warp in turn and every turn costs `big` cycles (the larger access's units), so the larger kind's
    warps end after units / big rounds, U (n_big + n_small) cycles at `rate`, with the smaller kind
    `small` / `big` through; the smaller kind's rest then passes alone at `rate_small`."""
    first = units * (n_big + n_small) / rate
    return first + n_small * units * (1 - small / big) / rate_small


def print_turns() -> None:
    """The measured spans of the mixes against `turn_span` (each kind's rate alone from the point's
    own lds16 / ldg16 cases)."""
    errors = []
    print(f"{'point':20s} {'case':14s} {'measured':>9s} {'turns':>9s}  error")
    for _, point, name, c, v in _mixes():
        if name == "mix16_16_by_sp" or "miss" in point:  # by sub-partition / L1 misses: other limits
            continue
        alone = {k: v["cases"][k]["units_per_cycle"] for k in ("lds16", "ldg16")}
        lines, wf = c.get("lines_per_ldg", 32), c.get("wavefronts_per_lds", 1)
        n_ldg, n_lds = c["ldg_warps"], c["lds_warps"]
        units = v["units_per_lds_warp"]
        if lines >= wf:
            span = turn_span(n_ldg, n_lds, units, lines, wf, alone["lds16"], min(alone.values()))
        else:
            span = turn_span(n_lds, n_ldg, units, wf, lines, alone["ldg16"], min(alone.values()))
        errors.append(abs(span / c["span_cycles"] - 1))
        print(f"{point:20s} {name:14s} {c['span_cycles']:9.0f} {span:9.0f}  {100 * (span / c['span_cycles'] - 1):+6.1f}%")
    print(f"mean |error| {100 * float(np.mean(errors)):.1f}% over {len(errors)} cases, max {100 * max(errors):.1f}%")


def cases():
    """(point, case, measured units per cycle, simulate_case's arguments but cfg) of memory7 `mix`
    and memory8 `mix2`."""
    mix = json.loads(RESULT.read_text())["mix"]
    u = mix["units_per_lds_warp"] // SCALE
    for name, c in mix["cases"].items():
        yield "ldg32l_lds1w (memory7)", name, c["units_per_cycle"], (int(c["ldg_mask"], 16), int(c["active_mask"], 16), u, u)
    mix2 = json.loads(RESULT2.read_text())["mix2"]
    for point, v in mix2["points"].items():
        u = v["units_per_lds_warp"] // SCALE
        for name, c in v["cases"].items():
            yield point, name, c["units_per_cycle"], (int(c["ldg_mask"], 16), int(c["active_mask"], 16), u, u,
                                                      c["wavefronts_per_lds"], c["lines_per_ldg"])
    mix3 = json.loads(RESULT3.read_text())["mix3"]
    for point, v in mix3["points"].items():
        if "miss" in point:  # the L1-missing points walk new lines: not replayed here
            continue
        u = v["units_per_lds_warp"] // SCALE
        bits = 128 if "lds128" in point else 64 if "lds64" in point else 32
        for name, c in v["cases"].items():
            yield f"{point} (memory12)", name, c["units_per_cycle"], (int(c["ldg_mask"], 16), int(c["active_mask"], 16),
                                                                    u, u, c["wavefronts_per_lds"], c["lines_per_ldg"], bits)


if __name__ == "__main__":
    sys.exit(main())
