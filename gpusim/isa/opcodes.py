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
    pdst_follow: bool = False  # predicate operands right after them are destinations too (carry-out), not the last
    pdst_lead: bool = False  # a leading predicate operand is an extra destination (LOP3.LUT P0, R1, ...)


# Fewest source operands each opcode takes in nvdisasm's syntax (after its destinations), from the
# instruction set reference (CUDA Binary Utilities) -- e.g. FFMA d, a, b, c; ISETP p, q, a, b, r;
# LOP3.LUT d, a, b, c, lut -- and cross-checked against every committed listing. A listing with fewer
# is rejected at parse time (the emulator would otherwise fail on a missing operand). Opcodes not
# listed are not checked.
MIN_SOURCES = {
    "FFMA": 3, "DFMA": 3, "HFMA2": 3, "FADD": 2, "FMUL": 2, "DADD": 2, "DMUL": 2, "FMNMX": 3,
    "IMAD": 3, "XMAD": 3, "IADD3": 3, "IADD": 2, "IADD32I": 2, "ISUB": 2, "IMUL": 2, "IMUL32I": 2,
    "ISCADD": 3, "LEA": 3, "SHF": 3, "SHL": 2, "SHR": 2, "BFE": 2, "BFI": 3, "LOP": 2, "LOP32I": 2,
    "LOP3": 4, "SEL": 3, "FSEL": 3, "ISETP": 3, "FSETP": 3, "DSETP": 3, "PSETP": 3, "VIADD": 2,
    "MOV": 1, "MOV32I": 1, "S2R": 1, "CS2R": 1, "S2UR": 1, "UMOV": 1, "ULDC": 1, "UIADD3": 3,
    "UISETP": 3, "ULEA": 3, "USHF": 3, "LD": 1, "LDG": 1, "LDS": 1, "LDC": 1, "ST": 2, "STG": 2,
    "STS": 2, "BRA": 1, "SSY": 1, "BSSY": 1, "BSYNC": 1,
}


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
