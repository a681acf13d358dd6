"""Per-architecture opcode tables: functional-unit class, latency class and destination layout.

Tables are YAML data in `gpusim/arch/<arch>.yaml`, one row per base opcode with a source comment.
Unit classes: fp32, fp64, int, sfu, conv, lsu (global/local), smem (shared), cmem (constant load),
branch, sync, uniform, misc. Latency classes: fixed (pipeline latency known at issue, no scoreboard
needed on sm_5x+) or variable (memory, SFU, conversions: completion signalled through a scoreboard).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from gpusim.errors import ListingError

ARCH_DIR = Path(__file__).resolve().parent.parent / "arch"
UNITS = {"fp32", "fp64", "int", "sfu", "conv", "lsu", "smem", "cmem", "branch", "sync", "uniform", "misc"}
LATENCIES = {"fixed", "variable"}


@dataclass(frozen=True)
class OpcodeRow:
    unit: str
    latency: str
    dst: int  # number of leading destination operands
    pdst_follow: bool = False  # predicate operands right after them are destinations too (carry-out)
    pdst_lead: bool = False  # a leading predicate operand is an extra destination (LOP3.LUT P0, R1, ...)


class OpcodeTable(dict):
    arch: str = ""


@lru_cache(maxsize=None)
def load_opcode_table(arch: str) -> OpcodeTable:
    path = ARCH_DIR / f"{arch}.yaml"
    if not path.exists():
        raise ListingError(f"no opcode table for architecture {arch}", str(path))
    data = yaml.safe_load(path.read_text())
    table = OpcodeTable()
    table.arch = arch
    for name, row in (data.get("opcodes") or {}).items():
        if row.get("unit") not in UNITS or row.get("latency") not in LATENCIES:
            raise ListingError(f"opcode {name}: unit must be one of {sorted(UNITS)} and latency one of "
                               f"{sorted(LATENCIES)}", str(path))
        table[name] = OpcodeRow(unit=row["unit"], latency=row["latency"], dst=int(row.get("dst", 1)),
                                pdst_follow=bool(row.get("pdst_follow", False)),
                                pdst_lead=bool(row.get("pdst_lead", False)))
    return table
