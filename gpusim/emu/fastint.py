"""Specialised handlers for the simple integer and FP32 forms that GEMM kernels run outside their
inner loop: MOV, IADD, IADD3, ISCADD, LEA, SHL, SHR, LOP/LOP32I, LOP3, IMAD (low word and .WIDE),
FMUL, and ISETP.

Only forms whose result is the low 32 bits of modular arithmetic are specialised (no predicate
destination, no .HI, no negated or inverted operand); they run in uint32 arithmetic, which wraps
exactly like the generic handlers' 64-bit sums masked to 32 bits. Kepler/Maxwell carry chains
(IADD/ISCADD with .X or a .CC destination) are summed in uint64 as the generic handler does. Operands
are resolved once: a register row, an immediate or constant-bank word as a scalar, a uniform register
broadcast over its warp. A partial batch goes to the generic handler.
"""

from __future__ import annotations

import numpy as np

from gpusim.emu.fastmem import whole_rows
from gpusim.isa.program import PT, RZ, URZ

U32 = np.uint32


def _operand(op, emu):
    """Closure ex -> the operand's 32-bit value per lane (array or uint32 scalar), or None when the
    operand is not a plain register, uniform register, immediate or bank-0 constant."""
    if op.negate or op.invert or op.absolute or op.suffix:
        return None
    st = emu.state
    if op.kind == "reg":
        if op.reg == RZ:
            return lambda ex: U32(0)
        row = st.row(op.reg)
        return lambda ex: st.R[row, ex.sel]
    if op.kind == "ureg":
        if op.reg == URZ:
            return lambda ex: U32(0)
        return lambda ex: np.repeat(st.UR[op.reg, ex.wids], 32)
    if op.kind == "imm" and isinstance(op.value, int):
        value = U32(op.value & 0xFFFFFFFF)
        return lambda ex: value
    if op.kind == "const" and op.bank == 0 and op.reg in (None, RZ) and op.ureg in (None, URZ):
        if op.value < 0 or op.value % 4 or op.value + 4 > 4 * len(emu.cbank0):
            return None  # the generic handler reports the bad access
        value = U32(emu.cbank0[op.value >> 2])
        return lambda ex: value
    return None


def _operands(ops, emu, dst_row: int | None = None):
    """Readers of `ops`. A register reader returns a view of its row, so a source that is also the
    destination (`IADD3 R19, R16, R7, R19`) would see a partly written result where the compute
    writes into the destination before it reads that source: such a source is read as a copy
    (the hardware reads every source before it writes)."""
    readers = [_operand(op, emu) for op in ops]
    if any(r is None for r in readers):
        return None
    if dst_row is not None:
        st = emu.state
        for i, op in enumerate(ops):
            if op.kind == "reg" and op.reg != RZ and st.row(op.reg) == dst_row:
                readers[i] = (lambda row: lambda ex: st.R[row, ex.sel].copy())(dst_row)
    return readers


def _plain_dst(ins, emu, suffix=()) -> int | None:
    """Row of the single 32-bit register destination (with exactly `suffix`), else None."""
    if len(ins.dsts) != 1:
        return None
    d = ins.dsts[0]
    if d.kind != "reg" or d.reg == RZ or d.width != 32 or d.suffix != suffix:
        return None
    return emu.state.row(d.reg)


def _make(ins, generic, emu, nsrc: int, compute, allowed_mods=((),)):
    """Handler for an instruction of exactly `nsrc` sources and one plain register destination:
    `compute(values, out)` writes the result into the destination's row slice."""
    if tuple(sorted(ins.modifiers)) not in allowed_mods or len(ins.srcs) != nsrc:
        return None
    d = _plain_dst(ins, emu)
    readers = _operands(ins.srcs, emu, d)
    if d is None or readers is None:
        return None
    st = emu.state

    def handler(ex):
        if not whole_rows(ex):
            return generic(ex)
        values = [read(ex) for read in readers]
        st.forget(d)
        compute(values, st.R[d, ex.sel])

    return handler


def _shift_amount(ins, i: int) -> int | None:
    op = ins.srcs[i]
    return op.value if op.kind == "imm" and isinstance(op.value, int) and 0 <= op.value < 32 else None


# ---- the forms ----------------------------------------------------------------------------------------
def make_mov(ins, generic, emu):
    """MOV d, a (32-bit)."""
    return _make(ins, generic, emu, 1, lambda v, out: np.copyto(out, v[0]))


def make_add(ins, generic, emu):
    """IADD/IADD32I d, a, b and IADD3 d, a, b, c: the sum modulo 2^32."""
    if ins.opcode == "IADD" and ("X" in ins.modifiers or "CC" in ins.dsts[0].suffix):
        return make_carry_add(ins, generic, emu)
    n = 3 if ins.opcode == "IADD3" else 2

    def compute(v, out):
        np.add(v[0], v[1], out=out)
        if n == 3:
            np.add(out, v[2], out=out)

    return _make(ins, generic, emu, n, compute)


def make_shift_add(ins, generic, emu):
    """ISCADD d, a, b, s and LEA d, a, b, s: (a << s) + b modulo 2^32 (s < 32)."""
    s = _shift_amount(ins, 2) if len(ins.srcs) == 3 else None
    if s is None:
        return None
    if ins.opcode == "ISCADD" and ("X" in ins.modifiers or "CC" in ins.dsts[0].suffix):
        return make_carry_add(ins, generic, emu)
    return _make(ins, generic, emu, 3, lambda v, out: np.add(np.left_shift(v[0], U32(s)), v[1], out=out))


def make_carry_add(ins, generic, emu):
    """Kepler/Maxwell IADD/ISCADD with .X (adds the carry flag) and/or a .CC destination (writes the
    carry out): the 33-bit sum of (a << s) mod 2^32 and b, worked out in uint64 as ops.iadd does."""
    shift = _shift_amount(ins, 2) if ins.opcode == "ISCADD" else 0
    if shift is None or tuple(ins.modifiers) not in ((), ("X",)) or len(ins.srcs) != (3 if ins.opcode == "ISCADD" else 2):
        return None
    carry_in, carry_out = "X" in ins.modifiers, ins.dsts[0].suffix == ("CC",)
    d = _plain_dst(ins, emu, ins.dsts[0].suffix if carry_out else ())
    readers = _operands(ins.srcs[:2], emu)
    if d is None or readers is None:
        return None
    st = emu.state

    def handler(ex):
        if not whole_rows(ex):
            return generic(ex)
        a, b = (np.asarray(read(ex), dtype=np.uint64) for read in readers)
        total = ((a << np.uint64(shift)) & np.uint64(0xFFFFFFFF)) + b
        if carry_in:
            total = total + st.CC[ex.sel]
        st.forget(d)
        st.R[d, ex.sel] = total  # the low word (the unsafe cast keeps the low 32 bits)
        if carry_out:
            st.CC[ex.sel] = (total >> np.uint64(32)) & np.uint64(1)

    return handler


def make_shl(ins, generic, emu):
    """SHL d, a, s (immediate s < 32): a << s modulo 2^32."""
    s = _shift_amount(ins, 1) if len(ins.srcs) == 2 else None
    if s is None:
        return None
    return _make(ins, generic, emu, 2, lambda v, out: np.left_shift(v[0], U32(s), out=out))


def make_shr(ins, generic, emu):
    """SHR[.U32] d, a, s (immediate s < 32): logical shift for .U32, arithmetic otherwise."""
    s = _shift_amount(ins, 1) if len(ins.srcs) == 2 else None
    if s is None:
        return None

    def compute(v, out):
        if "U32" in ins.modifiers:
            np.right_shift(v[0], U32(s), out=out)
        else:
            np.right_shift(np.asarray(v[0]).view(np.int32), np.int32(s), out=out.view(np.int32))

    return _make(ins, generic, emu, 2, compute, allowed_mods=((), ("U32",)))


_LOGIC = {"AND": np.bitwise_and, "OR": np.bitwise_or, "XOR": np.bitwise_xor}


def make_logic(ins, generic, emu):
    """LOP/LOP32I.{AND,OR,XOR} d, a, b (no predicate result)."""
    if len(ins.modifiers) != 1 or ins.modifiers[0] not in _LOGIC:
        return None
    fn = _LOGIC[ins.modifiers[0]]
    return _make(ins, generic, emu, 2, lambda v, out: fn(v[0], v[1], out=out), allowed_mods=(ins.modifiers,))


def make_imad(ins, generic, emu):
    """IMAD d, a, b, c (also .MOV/.SHL/.IADD/.U32 spellings): a * b + c modulo 2^32; the low word of a
    product is the same signed or unsigned. IMAD.WIDE goes to `make_imad_wide`."""
    if "WIDE" in ins.modifiers:
        return make_imad_wide(ins, generic, emu)
    allowed = {tuple(sorted(m)) for m in ((), ("U32",), ("MOV", "U32"), ("SHL", "U32"), ("IADD",), ("MOV",))}
    return _make(ins, generic, emu, 3, lambda v, out: np.add(np.multiply(v[0], v[1]), v[2], out=out),
                 allowed_mods=allowed)


def make_imad_wide(ins, generic, emu):
    """IMAD.WIDE[.U32] d, a, b, c: the 64-bit product of a and b (signed unless .U32) plus the pair
    c:c+1, written to d:d+1 (all modulo 2^64)."""
    mods = tuple(sorted(ins.modifiers))
    if mods not in (("WIDE",), ("U32", "WIDE")) or len(ins.srcs) != 3 or len(ins.dsts) != 1:
        return None
    d, c = ins.dsts[0], ins.srcs[2]
    if d.kind != "reg" or d.reg == RZ or d.suffix or c.kind != "reg" or c.negate or c.invert or c.suffix:
        return None
    readers = _operands(ins.srcs[:2], emu)
    if readers is None:
        return None
    st = emu.state
    lo, hi = st.row(d.reg), st.row(d.reg + 1)
    c_rows = None if c.reg == RZ else (st.row(c.reg), st.row(c.reg + 1))
    wide = np.uint64 if "U32" in mods else np.int64
    narrow = np.uint32 if "U32" in mods else np.int32

    def handler(ex):
        if not whole_rows(ex):
            return generic(ex)
        a, b = (np.asarray(read(ex)).view(narrow).astype(wide) for read in readers)
        total = np.empty(ex.n, np.uint64)
        np.multiply(a, b, out=total.view(wide))
        if c_rows is not None:
            total += st.R[c_rows[0], ex.sel].astype(np.uint64) | (st.R[c_rows[1], ex.sel].astype(np.uint64) << 32)
        st.forget(lo)
        st.forget(hi)
        st.R[lo, ex.sel] = total  # the low word (the unsafe cast keeps the low 32 bits)
        st.R[hi, ex.sel] = total >> 32

    return handler


def make_fmul(ins, generic, emu):
    """FMUL d, a, b on plain operands: the float32 product (as ops.fmul)."""
    def compute(v, out):
        o = out.view(np.float32)
        with np.errstate(all="ignore"):
            np.multiply(np.asarray(v[0]).view(np.float32), np.asarray(v[1]).view(np.float32), out=o)
            if np.isnan(o.max()):  # NaN results are canonical (ops.f32_result); max propagates NaN
                np.copyto(out, np.uint32(0x7FFFFFFF), where=np.isnan(o))

    return _make(ins, generic, emu, 2, compute)


# LOP3 truth tables (bit i = f(a, b, c) for i = a << 2 | b << 1 | c) with a direct bitwise form
_LUTS = {
    0xF0: lambda a, b, c: a, 0xCC: lambda a, b, c: b, 0xAA: lambda a, b, c: c,
    0xC0: lambda a, b, c: a & b, 0xFC: lambda a, b, c: a | b, 0x3C: lambda a, b, c: a ^ b,
    0x30: lambda a, b, c: a & ~b, 0x0C: lambda a, b, c: ~a & b, 0x3F: lambda a, b, c: ~(a & b),
    0x80: lambda a, b, c: a & b & c, 0xFE: lambda a, b, c: a | b | c, 0x96: lambda a, b, c: a ^ b ^ c,
    0xF8: lambda a, b, c: a | (b & c), 0xEA: lambda a, b, c: (a & b) | c, 0xE2: lambda a, b, c: (a & b) | (c & ~b),
}


def make_lop3(ins, generic, emu):
    """LOP3.LUT d, a, b, c, lut[, Pc] for the truth tables in _LUTS (the predicate source does not
    affect a register result)."""
    srcs = ins.srcs
    if ins.modifiers != ("LUT",) or len(srcs) not in (4, 5) or srcs[3].kind != "imm" or srcs[3].value not in _LUTS:
        return None
    if len(srcs) == 5 and srcs[4].kind not in ("pred", "upred"):
        return None
    fn = _LUTS[srcs[3].value]
    readers, d = _operands(srcs[:3], emu), _plain_dst(ins, emu)
    if readers is None or d is None:
        return None
    st = emu.state

    def handler(ex):
        if not whole_rows(ex):
            return generic(ex)
        result = fn(*(read(ex) for read in readers))
        st.forget(d)
        np.copyto(st.R[d, ex.sel], result)

    return handler


_ICMP = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal, "GT": np.greater,
         "GE": np.greater_equal}
_BOOL = {"AND": np.logical_and, "OR": np.logical_or, "XOR": np.logical_xor}


def make_isetp(ins, generic, emu):
    """ISETP.cmp[.U32].bool Pd, Pd2, a, b, Pc (no .EX/.X): Pd = (a cmp b) bool Pc, then
    Pd2 = !(a cmp b) bool Pc, in that order (as ops._setp; Pc is read through the same view)."""
    mods = ins.modifiers
    cmp = [m for m in mods if m in _ICMP]
    boolop = [m for m in mods if m in _BOOL]
    if len(cmp) != 1 or len(boolop) != 1 or set(mods) - {cmp[0], boolop[0], "U32"} or len(ins.srcs) != 3:
        return None
    p = ins.srcs[2]
    if p.kind != "pred" or not ins.dsts or any(d.kind != "pred" for d in ins.dsts) or len(ins.dsts) > 2:
        return None
    readers = _operands(ins.srcs[:2], emu)
    if readers is None:
        return None
    compare, combine = _ICMP[cmp[0]], _BOOL[boolop[0]]
    signed = "U32" not in mods
    st = emu.state

    def handler(ex):
        if not whole_rows(ex):
            return generic(ex)
        a, b = (np.asarray(read(ex)) for read in readers)
        cond = compare(a.view(np.int32), b.view(np.int32)) if signed else compare(a, b)
        pc = st.P[p.reg][ex.sel].copy()  # read before Pd is written (Pd may be Pc)
        pc = ~pc if p.invert else pc
        _write_pred(st, ins.dsts[0], combine(cond, pc), ex.sel)
        if len(ins.dsts) > 1:
            _write_pred(st, ins.dsts[1], combine(~cond, pc), ex.sel)

    return handler


def _write_pred(st, d, value, sel) -> None:
    if d.reg != PT:
        st.P[d.reg][sel] = value


MAKERS = {"MOV": make_mov, "IADD": make_add, "IADD32I": make_add, "IADD3": make_add, "ISCADD": make_shift_add,
          "LEA": make_shift_add, "SHL": make_shl, "SHR": make_shr, "LOP": make_logic, "LOP32I": make_logic,
          "IMAD": make_imad, "FMUL": make_fmul, "LOP3": make_lop3, "ISETP": make_isetp}
