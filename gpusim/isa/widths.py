"""Operand widths (32/64/128-bit register ranges) from the opcode and its modifiers.

SASS text does not print register ranges: `LDS.128 R12` writes R12..R15, `DFMA R2, R4, R6, R2` reads
and writes register pairs, `IMAD.WIDE R2, R5, 0x4, R2` writes R2:R3 and reads R2:R3 as its C operand.
These rules follow the instruction semantics as documented for PTX->SASS lowering and as seen in
the listings (e.g. `.64`/`.128` access sizes, `.WIDE` multiply-add, F64 arithmetic).
"""

from __future__ import annotations

from dataclasses import replace

from gpusim.isa.program import Operand

_LOADS = {"LD", "LDG", "LDS", "LDL", "LDC", "ULDC", "LDSM", "LDU", "TLD", "TEX"}
_STORES = {"ST", "STG", "STS", "STL"}
_ATOMICS = {"ATOMS", "ATOM", "ATOMG", "RED", "REDG"}
_WIDE_TYPES = ("64", "F64", "S64", "U64")
_F64_ALL = {"DFMA", "DADD", "DMUL", "DMNMX", "DSET", "DSETP", "DMMA"}
_SIZE_MODS = {"64": 64, "128": 128, "U.128": 128}


def access_bits(modifiers: tuple[str, ...]) -> int:
    """Bits moved per thread by a load/store: .64 / .128 (default 32; .U8/.S16 etc. are 32 in registers)."""
    for m in modifiers:
        if m in ("64", "128"):
            return int(m)
    return 32


def _widen(op: Operand, bits: int) -> Operand:
    return replace(op, width=bits) if op.kind in ("reg", "ureg") else op


def apply_widths(opcode: str, mods: tuple[str, ...], dsts: list[Operand], srcs: list[Operand],
                 arch: str) -> tuple[list[Operand], list[Operand]]:
    dsts, srcs = list(dsts), list(srcs)
    # 64-bit addresses: sm_90 writes [R2.64]; sm_35/sm_52 mark the instruction .E (extended address)
    if "E" in mods and not arch.startswith("sm_9"):
        srcs = [replace(s, width=64) if s.kind == "mem" and s.reg is not None else s for s in srcs]
        dsts = [replace(s, width=64) if s.kind == "mem" and s.reg is not None else s for s in dsts]
    if opcode in _ATOMICS:  # ATOMS.CAS.64 R12, [R21], R12, R14: result, compare and value are pairs
        bits = 64 if any(m in mods for m in _WIDE_TYPES) else 32
        dsts = [_widen(d, bits) for d in dsts]
        srcs = [_widen(s, bits) if s.kind == "reg" else s for s in srcs]
        if "E" in mods:  # sm_90 prints ATOMG.E.CAS's 64-bit address without .64: [R10+0x18]
            srcs = [replace(s, width=64) if s.kind == "mem" and s.reg is not None else s for s in srcs]
    elif opcode in _LOADS:
        bits = access_bits(mods)
        dsts = [_widen(d, bits) for d in dsts]
    elif opcode in _STORES:
        bits = access_bits(mods)
        srcs = [_widen(s, bits) if s.kind == "reg" else s for s in srcs]
    elif opcode in _F64_ALL:
        dsts = [_widen(d, 64) for d in dsts]
        srcs = [_widen(s, 64) for s in srcs]
    elif opcode in ("IMAD", "UIMAD", "IMADSP") and "WIDE" in mods:
        dsts = [_widen(d, 64) for d in dsts[:1]] + dsts[1:]
        regs = [i for i, s in enumerate(srcs) if s.kind in ("reg", "ureg", "const", "imm")]
        if len(regs) >= 3:
            srcs[regs[2]] = _widen(srcs[regs[2]], 64)
    elif opcode in ("F2F", "I2F", "F2I", "I2I"):
        dsts, srcs = _conversion_widths(opcode, mods, dsts, srcs)
    elif opcode == "CS2R" and "32" not in mods:
        dsts = [_widen(d, 64) for d in dsts]
    elif opcode in ("MOV", "UMOV") and "64" in mods:
        dsts = [_widen(d, 64) for d in dsts]
        srcs = [_widen(s, 64) for s in srcs]
    return dsts, srcs


_TYPES = {"F64": 64, "S64": 64, "U64": 64, "F32": 32, "S32": 32, "U32": 32, "F16": 32, "S16": 32,
          "U16": 32, "S8": 32, "U8": 32}


def _conversion_widths(opcode, mods, dsts, srcs):
    """Conversions print destination type first, then source type (e.g. F2F.F64.F32).

    With one type printed it names the integer side of I2F/F2I, unless it is a float type
    (I2F.U64 R12, R12: u64 -> f32; F2I.U64.TRUNC R8, R8: f32 -> u64; I2F.F64 R2, R4: s32 -> f64), and
    the destination of F2F and I2I.
    """
    types = [m for m in mods if m in _TYPES]
    if len(types) >= 2:
        dst_t, src_t = types[0], types[1]
    elif len(types) == 1:
        is_float = types[0].startswith("F")
        if opcode == "I2F":
            dst_t, src_t = (types[0], None) if is_float else (None, types[0])
        elif opcode == "F2I":
            dst_t, src_t = (None, types[0]) if is_float else (types[0], None)
        else:
            dst_t, src_t = types[0], None
    else:
        dst_t = src_t = None
    if dst_t and _TYPES[dst_t] == 64:
        dsts = [_widen(d, 64) for d in dsts]
    if src_t and _TYPES[src_t] == 64:
        srcs = [_widen(s, 64) if s.kind == "reg" else s for s in srcs]
    return dsts, srcs
