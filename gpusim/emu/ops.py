"""Opcode semantics, registered by decorator: `@op("FFMA")` def ffma(ex) ... .

A handler reads sources through `Exec` (u32/s32/f32/u64/f64/pred by source index), writes destinations,
and returns None to fall through to the next instruction; control-flow handlers set the warps' PCs
and return True. Semantics follow NVIDIA's instruction descriptions (CUDA Binary Utilities) and the
PTX ISA for the operations they lower; XMAD follows the maxas notes on Maxwell's 16-bit multiply-add.
Per-architecture differences are resolved inside the handler from `ex.emu.arch_family`.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from gpusim.emu import mufu as mufu_model
from gpusim.emu.memory import SHARED_WINDOW_HI, MemoryFault
from gpusim.emu.state import U32, pack64
from gpusim.isa.program import RZ

HANDLERS: dict[str, callable] = {}
M32 = np.uint64(0xFFFFFFFF)


def op(*names):
    def register(fn):
        for n in names:
            HANDLERS[n] = fn
        return fn
    return register


def handler(arch: str, ins):
    fn = HANDLERS.get(ins.opcode)
    if fn is None:
        def missing(ex):
            raise NotImplementedError(f"opcode {ins.opcode} has no emulator semantics")
        return missing
    return lambda ex: fn(ex)


def _srcs_values(ex):
    return [i for i, s in enumerate(ex.ins.srcs) if s.kind not in ("pred", "upred")]


# ---- moves, special registers ------------------------------------------------------------------
@op("MOV", "MOV32I", "UMOV")
def mov(ex):
    if ex.ins.dsts[0].width == 64:
        ex.write64(0, ex.u64(0))
    else:
        ex.write(0, ex.u32(0))


@op("S2R", "S2UR", "CS2R")
def s2r(ex):
    src = ex.ins.srcs[0]
    if src.kind == "sreg" and src.suffix[0] == "SRZ":
        ex.write(0, 0)
        if ex.ins.dsts[0].width == 64:
            ex.write(0, 0, 1)
        return
    v = ex.u32(0)
    ex.write(0, v)
    if ex.ins.dsts[0].width == 64:
        ex.write(0, np.zeros_like(v), 1)


@op("R2UR")
def r2ur(ex):
    ex.write(0, ex.u32(0))


@op("NOP", "DEPBAR", "TEXDEPBAR", "MEMBAR", "CCTL", "LDGDEPBAR", "YIELD")
def nop(ex):
    return None


# ---- FP32 --------------------------------------------------------------------------------------

CANONICAL_NAN32 = np.uint32(0x7FFFFFFF)  # the NaN every FP32 arithmetic result that is NaN has (H100 golden)


def f32_result(r64, mods=(), err=None) -> np.ndarray:
    """A float64 result rounded to FP32 as the instruction's modifiers say, as uint32 bits. The exact
    value is r64 + err (err: the float64 sum's rounding error; None or 0 where r64 is exact, as a
    product of two floats is). Round to nearest even by default: where r64 sits exactly halfway between
    two floats but the exact value does not, err decides (rounding r64 alone would round twice:
    1 / 4294967040 came out one ulp low [difftest golden, dt_mufu; now dt_fdiv]); .RZ/.RM/.RP step one ulp where
    round-to-nearest went the wrong way; .FTZ flushes a denormal result to a zero of its sign; .SAT
    clamps to [0, 1] with NaN giving +0; any other NaN result becomes the canonical 0x7FFFFFFF."""
    r64 = np.asarray(r64, dtype=np.float64)
    with np.errstate(all="ignore"):
        r = r64.astype(np.float32)
        mode = next((m for m in mods if m in ("RZ", "RM", "RP")), None)
        if mode is not None:  # exact value = r64 + err
            d = r.astype(np.float64) - r64
            if err is not None:
                d = d - err
            above, below = d > 0, d < 0
            up, down = np.nextafter(r, np.float32(np.inf)), np.nextafter(r, np.float32(-np.inf))
            if mode == "RP":
                r = np.where(below, up, r)
            elif mode == "RM":
                r = np.where(above, down, r)
            else:
                r = np.where(above & (r64 >= 0), down, np.where(below & (r64 <= 0), up, r))
        elif err is not None:
            r = _break_ties(r64, r, err)
        if "FTZ" in mods:
            r = ftz(r)
        if "SAT" in mods:
            r = np.where(np.isnan(r), np.float32(0), np.clip(r, np.float32(0), np.float32(1)))
    bits = np.asarray(r, dtype=np.float32).view(U32)
    if "SAT" in mods:
        return bits
    nan = np.isnan(r64)
    return np.where(nan, CANONICAL_NAN32, bits) if nan.any() else bits


def _break_ties(r64, r, err):
    """r = float32(r64) rounded to nearest even; where r64 is exactly a midpoint between r and its
    neighbour beyond r64 and err != 0, the exact value r64 + err is nearer to the float on err's side."""
    far = np.nextafter(r, np.where(r64 > r, np.float32(np.inf), np.float32(-np.inf)).astype(np.float32))
    tie = (err != 0) & (r.astype(np.float64) + far.astype(np.float64) == 2 * r64) & np.isfinite(far)
    if not tie.any():
        return r
    toward_far = np.sign(err) == np.sign(far.astype(np.float64) - r64)
    return np.where(tie & toward_far, far, r)


def ftz(x: np.ndarray) -> np.ndarray:
    """.FTZ: a denormal float32 is a zero of its sign [PTX ISA, .ftz]."""
    tiny = np.float32(np.finfo(np.float32).tiny)
    return np.where(np.abs(x) < tiny, np.copysign(np.float32(0), x), x)


def _f32_operands(ex, n: int):
    """The first n FP32 sources as float64 (denormals flushed under .FTZ)."""
    vals = [ex.f32(i) for i in range(n)]
    if "FTZ" in ex.ins.modifiers:
        vals = [ftz(v) for v in vals]
    return [v.astype(np.float64) for v in vals]


@op("FFMA", "FFMA32I")
def ffma(ex):
    """a * b + c rounded once: the product is exact in float64; the sum of three floats is not
    (rounding it to float64 and then to FP32 can round twice), so its rounding error (TwoSum) goes to
    f32_result."""
    a, b = _f32_operands(ex, 2)
    c = ex.f32(2) if ex.ins.opcode == "FFMA" else f32_from_dst(ex)
    if ex.ins.opcode == "FFMA" and ex.ins.srcs[2].kind == "reg" and ex.ins.srcs[2].reg == RZ:
        c = -c  # RZ as the addend is -0.0, so that a * b + RZ keeps the sign of a zero product [golden]
    c = (ftz(c) if "FTZ" in ex.ins.modifiers else c).astype(np.float64)
    with np.errstate(all="ignore"):
        total, err = _two_sum(a * b, c)
        ex.write(0, f32_result(total, ex.ins.modifiers, err))


def f32_from_dst(ex):
    """FFMA32I d, a, imm: the addend is the destination register itself."""
    r = ex.st.R[ex.st.row(ex.ins.dsts[0].reg)][ex.sel]
    return r.view(np.float32)


@op("FADD", "FADD32I")
def fadd(ex):
    """a + b: the float64 sum rounded to FP32 (rounding twice is harmless for a sum of two floats,
    53 >= 2 * 24 + 2 [Figueroa, "When is double rounding innocuous?", 1995]); its rounding error
    (TwoSum) serves the directed modes."""
    a, b = _f32_operands(ex, 2)
    with np.errstate(all="ignore"):
        total, err = _two_sum(a, b)
        ex.write(0, f32_result(total, ex.ins.modifiers, err))


@op("FMUL", "FMUL32I")
def fmul(ex):
    """a * b: exact in float64, rounded once."""
    a, b = _f32_operands(ex, 2)
    with np.errstate(all="ignore"):
        ex.write(0, f32_result(a * b, ex.ins.modifiers))


@op("FMNMX")
def fmnmx(ex):
    """FMNMX d, a, b, Pmin: min (Pmin) or max; a NaN operand gives the other one, two NaNs the canonical
    NaN, and -0 < +0 [difftest golden: fmaxf(+0, -0) = +0]."""
    a, b, p = ex.f32(0), ex.f32(1), ex.pred(2)
    ua, ub = a.view(U32), b.view(U32)
    with np.errstate(invalid="ignore"):
        both_zero = (a == 0) & (b == 0)
        zero = np.where(p, ua | ub, ua & ub)  # min takes a sign bit, max needs both
        r = np.where(p, np.fmin(a, b), np.fmax(a, b)).astype(np.float32).view(U32)
    r = np.where(both_zero, zero, r)
    ex.write(0, np.where(np.isnan(a) & np.isnan(b), CANONICAL_NAN32, r))


@op("FSEL", "SEL", "USEL")
def sel(ex):
    ex.write(0, np.where(ex.pred(2), ex.u32(0), ex.u32(1)))


@op("HFMA2", "HADD2", "HMUL2")
def hfma2(ex):
    """Packed half2 arithmetic; an immediate pair is one operand of two halves, printed high half
    first: `HFMA2.MMA R86, -RZ, RZ, 0, 8.94e-07` writes 0x0000000f (the half 15 * 2^-24 in the low
    bits), where the other path of the same kernel has `MOV R86, 0xf` [difftest2 golden, d2_regtile]."""
    vals, i = [], 0
    srcs = ex.ins.srcs
    while i < len(srcs):
        s = srcs[i]
        if s.kind in ("imm", "fimm") and i + 1 < len(srcs) and srcs[i + 1].kind in ("imm", "fimm"):
            h = np.array([srcs[i + 1].value, srcs[i].value], dtype=np.float16)  # low half, high half
            vals.append(np.broadcast_to(h, (ex.n, 2)))
            i += 2
            continue
        v = ex.u32(i).view(np.float16).reshape(-1, 2)
        if s.negate:  # u32() applied integer negation; redo as a half negation
            v = -(np.uint32(0) - ex.u32(i)).astype(U32).view(np.float16).reshape(-1, 2)
        vals.append(v)
        i += 1
    if ex.ins.opcode == "HFMA2":
        r = vals[0].astype(np.float32) * vals[1].astype(np.float32) + vals[2].astype(np.float32)
    elif ex.ins.opcode == "HADD2":
        r = vals[0].astype(np.float32) + vals[1].astype(np.float32)
    else:
        r = vals[0].astype(np.float32) * vals[1].astype(np.float32)
    ex.write(0, np.ascontiguousarray(r.astype(np.float16)).view(U32).ravel())


_FCMP = {
    "EQ": np.equal, "NE": lambda a, b: np.not_equal(a, b) & ~np.isnan(a) & ~np.isnan(b),
    "LT": np.less, "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal,
    "EQU": lambda a, b: np.equal(a, b) | np.isnan(a) | np.isnan(b), "NEU": np.not_equal,
    "LTU": lambda a, b: ~np.greater_equal(a, b), "LEU": lambda a, b: ~np.greater(a, b),
    "GTU": lambda a, b: ~np.less_equal(a, b), "GEU": lambda a, b: ~np.less(a, b),
    "NUM": lambda a, b: ~np.isnan(a) & ~np.isnan(b), "NAN": lambda a, b: np.isnan(a) | np.isnan(b),
}
_ICMP = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal, "GT": np.greater,
         "GE": np.greater_equal}
_BOOL = {"AND": np.logical_and, "OR": np.logical_or, "XOR": np.logical_xor}


def _setp(ex, cond):
    """xSETP.cmp.bool Pd, Pd2, a, b, Pc: Pd = cond BOOL Pc, Pd2 = !cond BOOL Pc."""
    boolop = next((_BOOL[m] for m in ex.ins.modifiers if m in _BOOL), np.logical_and)
    pc = np.array(ex.pred(2)) if ex.is_pred(2) else True  # a copy: Pd may be Pc
    ex.write_pred(0, boolop(cond, pc))
    if len(ex.ins.dsts) > 1:
        ex.write_pred(1, boolop(~cond, pc))


@op("FSETP")
def fsetp(ex):
    """FSETP.cmp[.FTZ]: the comparison (U: unordered, NaN makes it true), .FTZ comparing denormals as 0."""
    cmp = next(m for m in ex.ins.modifiers if m in _FCMP)
    a, b = _f32_operands(ex, 2)
    with np.errstate(invalid="ignore"):
        _setp(ex, _FCMP[cmp](a, b))


@op("DSETP")
def dsetp(ex):
    mods = ex.ins.modifiers
    if "MAX" in mods or "MIN" in mods:
        return _dsetp_minmax(ex)
    cmp = next(m for m in mods if m in _FCMP)
    with np.errstate(invalid="ignore"):
        _setp(ex, _FCMP[cmp](ex.f64(0), ex.f64(1)))


def _dsetp_minmax(ex):
    """DSETP.{MAX,MIN}.AND Pd, Pn, a, b, Pc: how nvcc lowers fmax/fmin of doubles (the result is then
    SEL/FSEL a : b on Pd, and on Pn the quietened b). Pd: take a (a NaN b gives the other operand;
    -0 < +0); Pn: both are NaN [difftest golden]."""
    a, b = ex.f64(0), ex.f64(1)
    na, nb = np.isnan(a), np.isnan(b)
    neg_a = np.signbit(a)
    with np.errstate(invalid="ignore"):
        if "MAX" in ex.ins.modifiers:
            take_a = (a > b) | (nb & ~na) | ((a == b) & ~neg_a)
        else:
            take_a = (a < b) | (nb & ~na) | ((a == b) & neg_a)
    pc = np.array(ex.pred(2)) if ex.is_pred(2) else True
    ex.write_pred(0, take_a & pc)
    if len(ex.ins.dsts) > 1:
        ex.write_pred(1, na & nb)


@op("ISETP", "UISETP")
def isetp(ex):
    mods = ex.ins.modifiers
    cmp = next(m for m in mods if m in _ICMP)
    unsigned = "U32" in mods
    a, b = (ex.u32(0), ex.u32(1)) if unsigned else (ex.s32(0), ex.s32(1))
    cond = _ICMP[cmp](a, b)
    if "EX" in mods or "X" in mods:  # high words of a 64-bit compare; low result chained in
        low = ex.pred(3) if "EX" in mods else ex.cc()  # sm_90: last predicate; sm_5x: carry/zero flag
        eq = a == b
        strict = {"LT": np.less, "LE": np.less, "GT": np.greater, "GE": np.greater}.get(cmp)
        if strict is not None:
            cond = strict(a, b) | (eq & low)
        elif cmp == "EQ":
            cond = eq & low
        else:
            cond = ~eq | low
    _setp(ex, cond)


# ---- FP64 --------------------------------------------------------------------------------------
def _two_sum(a, b):
    """s, e with a + b = s + e exactly (Knuth's TwoSum; e = 0 where s is not finite)."""
    s = a + b
    bv = s - a
    e = (a - (s - bv)) + (b - bv)
    return s, np.where(np.isfinite(s), e, 0.0)


def _two_product(a, b):
    """p, e with a * b = p + e exactly (Dekker's split; e = 0 where p is not finite)."""
    p = a * b
    split = 134217729.0  # 2^27 + 1
    ta, tb = split * a, split * b
    ah, bh = ta - (ta - a), tb - (tb - b)
    al, bl = a - ah, b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, np.where(np.isfinite(p) & np.isfinite(e), e, 0.0)


def _mode(mods):
    """The directed rounding modifier (RZ, RM, RP) or None (round to nearest even)."""
    return next((m for m in mods if m in ("RZ", "RM", "RP")), None)


@op("DFMA")
def dfma(ex):
    a, b, c = ex.f64(0), ex.f64(1), ex.f64(2)
    ex.write64(0, _nan64(_fma64(a, b, c, ex.ins.modifiers), a, b))


def _fma64(a, b, c, mods=()):
    """a * b + c rounded once, to nearest even or as .RZ/.RM/.RP say: the exact product's two parts
    and the addend summed error-free, then rounded (exact except where the last sum itself rounds
    twice). Directed rounding steps the nearest result one ulp toward the exact value's side, and a
    result that overflowed from finite operands is finite underneath (.RZ gives the largest finite).
    Where the product's error term underflows (a product below 2^-960) or the result is that small,
    the lane is rounded from the exact rational value instead (_fma64_exact)."""
    mode = _mode(mods)
    with np.errstate(all="ignore"):
        a0, b0 = a, b
        plain = a * b + c
        finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
        big = 2.0 ** 995  # Dekker's split overflows beyond: move a factor 2^64 to the other operand
        a, b = np.where(np.abs(b) >= big, a * 2.0**64, a), np.where(np.abs(b) >= big, b * 2.0**-64, b)
        a, b = np.where(np.abs(a) >= big, a * 2.0**-64, a), np.where(np.abs(a) >= big, b * 2.0**64, b)
        p, pe = _two_product(a, b)
        s, se = _two_sum(p, c)
        t, te = _two_sum(se, pe)
        fused, fe = _two_sum(s, t)  # exact value: fused + fe + te
        if mode is None:
            # a tie (fe half an ulp of fused) broken by te: the exact value lies beyond it, or before it
            half = np.abs(np.nextafter(fused, fused + 2 * fe) - fused) / 2
            past = (fe != 0) & (np.abs(fe) == half) & (te != 0) & (np.sign(te) == np.sign(fe))
            fused = np.where(past, np.nextafter(fused, fused + 2 * fe), fused)
        else:  # |te| is below fe's last bit where fe != 0: fe + te has the sign of (exact - fused)
            fused = _directed64(fused, fe + te, mods, finite)
        fused = np.where(fused == 0, np.where(plain == 0, plain, 0.0), fused)  # the sign of an exact zero
        tiny = finite & (a != 0) & (b != 0) & ((np.abs(p) < 2.0**-960) | (np.abs(fused) < 2.0**-960))
        if mode == "RM":
            tiny |= finite & (fused == 0)  # an exact zero's sign differs
        if tiny.any():
            fused = fused.copy()
            for i in np.flatnonzero(tiny):
                fused[i] = _fma64_exact(float(a0[i]), float(b0[i]), float(c[i]), mode)
        return np.where(finite, fused, plain)


def _fma64_exact(a: float, b: float, c: float, mode) -> float:
    """a * b + c (finite) rounded once onto float64's grid from the exact rational value (rounding
    to nearest even, or RZ/RM/RP); an exact zero has the sign IEEE 754 gives a sum: -0 when both
    parts are -0, and under RM unless both are +0."""
    q = Fraction(a) * Fraction(b) + Fraction(c)
    if q == 0:
        neg_product = (a == 0 or b == 0) and math.copysign(1, a) * math.copysign(1, b) < 0
        both_zero = (a == 0 or b == 0) and c == 0
        plus = (not neg_product) and not math.copysign(1, c) < 0
        minus = neg_product and math.copysign(1, c) < 0
        if mode == "RM":
            return 0.0 if both_zero and plus else -0.0
        return -0.0 if both_zero and minus else 0.0
    x = abs(q)
    e = max(x.numerator.bit_length() - x.denominator.bit_length(), -1022)
    while Fraction(2) ** e > x and e > -1022:
        e -= 1
    while Fraction(2) ** (e + 1) <= x:
        e += 1
    ulp = Fraction(2) ** (e - 52)
    m = x / ulp
    n = m.numerator // m.denominator
    rest = m - n
    negative = q < 0
    up = {None: rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2 == 1), "RZ": False,
          "RP": rest > 0 and not negative, "RM": rest > 0 and negative}[mode]
    v = (n + up) * ulp
    if v >= Fraction(2) ** 1024:
        to_inf = mode is None or (mode == "RP" and not negative) or (mode == "RM" and negative)
        v = math.inf if to_inf else np.finfo(np.float64).max
    v = float(v)
    return -v if negative else v


def _nan64(r, a, b):
    """FP64 NaN results: a NaN operand propagates; where both are NaN, the second one (b, quietened)
    [difftest golden: DADD R4, R10, R8 with both NaN gives R8's]."""
    both = np.isnan(a) & np.isnan(b)
    if not both.any():
        return r
    quiet = b.view(np.uint64) | np.uint64(0x0008000000000000)
    return np.where(both, quiet.view(np.float64), r)


def _directed64(s, err, mods, finite=None):
    """The float64 s (exact value s + err, s rounded to nearest) stepped one ulp for .RZ/.RM/.RP.
    Where s overflowed to +-inf from finite operands (`finite`), the exact value lies inside."""
    mode = _mode(mods)
    if mode is None:
        return s
    if finite is not None:
        err = np.where(np.isinf(s) & finite, -s, err)
    up, down = np.nextafter(s, np.inf), np.nextafter(s, -np.inf)
    if mode == "RP":
        return np.where(err > 0, up, s)
    if mode == "RM":
        return np.where(err < 0, down, s)
    return np.where((err < 0) & (s > 0), down, np.where((err > 0) & (s < 0), up, s))


@op("DADD")
def dadd(ex):
    with np.errstate(all="ignore"):
        a, b = ex.f64(0), ex.f64(1)
        s, e = _two_sum(a, b)
        s = _directed64(s, e, ex.ins.modifiers, np.isfinite(a) & np.isfinite(b))
        if _mode(ex.ins.modifiers) == "RM":  # an exact zero sum is -0 unless both are +0 [IEEE 754 6.3]
            s = np.where((s == 0) & ~((a == 0) & (b == 0) & ~np.signbit(a) & ~np.signbit(b)), -0.0, s)
        ex.write64(0, _nan64(s, a, b))


@op("DMUL")
def dmul(ex):
    """a * b, rounded to nearest or as .RZ/.RM/.RP say (through the fused multiply-add with a zero
    addend; a zero factor gives the product's own signed zero)."""
    a, b = ex.f64(0), ex.f64(1)
    with np.errstate(all="ignore"):
        r = a * b
        if _mode(ex.ins.modifiers) is not None:
            r = np.where((a == 0) | (b == 0), r, _fma64(a, b, np.full_like(a, -0.0), ex.ins.modifiers))
        ex.write64(0, _nan64(r, a, b))


# ---- integer -----------------------------------------------------------------------------------
def _wide(v):
    return np.asarray(v, dtype=np.uint64)


def _term(ex, i):
    """Operand i as a 33-bit addend: negation is ~x + 1 so carries/borrows come out right."""
    s = ex.ins.srcs[i]
    raw = ex._raw(s).astype(np.uint64)
    if s.invert:
        raw = ~raw & M32
    if s.negate:
        return (~raw & M32) + np.uint64(1)
    return raw


@op("IADD3", "UIADD3")
def iadd3(ex):
    """IADD3[.X] d, [Pc0, [Pc1,]] a, b, c[, Pi0, Pi1]: the sum of three 32-bit terms (negated ones as
    ~x + 1), .X adding both carry-in predicates. The carry out (0, 1 or 2) goes to the predicate
    destinations as a count: Pc0 = carry >= 1, Pc1 = carry == 2, so that IADD3.X ..., Pc0, Pc1 adds
    it back whole (a 64-bit sum of three terms: `IADD3 R23, P2, P3, R16, R18, R23` then
    `IADD3.X R21, R17, R19, R21, P2, P3` [difftest2 golden, d2_index]; which of the two flags the
    hardware sets for a carry of 1 is not observable through .X and is not measured)."""
    vals = _srcs_values(ex)[:3]
    total = _term(ex, vals[0]) + _term(ex, vals[1]) + _term(ex, vals[2])
    if "X" in ex.ins.modifiers:
        for i in [i for i, s in enumerate(ex.ins.srcs) if s.kind in ("pred", "upred")][:2]:
            total = total + ex.pred(i).astype(np.uint64)
    ex.write(0, (total & M32).astype(U32))
    carry = (total >> np.uint64(32)) & np.uint64(3)  # the terms are < 2^33 each
    for j, d in enumerate(ex.ins.dsts[1:3], start=1):
        if d.kind in ("pred", "upred"):
            ex.write_pred(j, carry >= np.uint64(j))
    if ex.ins.dsts[0].suffix and "CC" in ex.ins.dsts[0].suffix:
        ex.write_cc((total >> np.uint64(32)) & np.uint64(1))


@op("IADD", "IADD32I")
def iadd(ex):
    """Kepler/Maxwell add: .X adds the carry flag, a .CC destination writes it."""
    total = _term(ex, 0) + _term(ex, 1)
    if "X" in ex.ins.modifiers:
        total = total + _carry_in(ex)
    _write_with_cc(ex, total)


def _carry_in(ex):
    """The carry an .X instruction adds: its first predicate source (sm_90), else the CC flag (sm_3x/5x)."""
    preds = [i for i, s in enumerate(ex.ins.srcs) if s.kind in ("pred", "upred")]
    return (ex.pred(preds[0]) if preds else ex.cc()).astype(np.uint64)


def _write_with_cc(ex, total):
    """Write the low word of a 33-bit sum; its carry goes to a predicate second destination
    (sm_90 LEA/IMAD) and/or to the CC flag when the destination says .CC (sm_3x/5x)."""
    ex.write(0, (total & M32).astype(U32))
    carry = ((total >> np.uint64(32)) & np.uint64(1)).astype(bool)
    if len(ex.ins.dsts) > 1 and ex.ins.dsts[1].kind in ("pred", "upred"):
        ex.write_pred(1, carry)
    if "CC" in ex.ins.dsts[0].suffix:
        ex.write_cc(carry)


@op("VIADD")
def viadd(ex):
    ex.write(0, ((_term(ex, 0) + _term(ex, 1)) & M32).astype(U32))


@op("ISUB")
def isub(ex):
    """Kepler d = a - b (.X subtracts with the carry as not-borrow)."""
    b = ex._raw(ex.ins.srcs[1]).astype(np.uint64)
    total = _term(ex, 0) + (~b & M32) + (ex.cc().astype(np.uint64) if "X" in ex.ins.modifiers else np.uint64(1))
    _write_with_cc(ex, total)


@op("ISCADD", "ISCADD32I")
def iscadd(ex):
    shift = np.uint64(ex.ins.srcs[2].value)
    total = ((_term(ex, 0) << shift) & M32) + _term(ex, 1)
    if "X" in ex.ins.modifiers:
        total = total + _carry_in(ex)
    _write_with_cc(ex, total)


@op("LEA", "ULEA")
def lea(ex):
    """LEA d, a, b, s: d = (a << s) + b. LEA.HI d, a, b, [c,] s: d = b + high word of ({c:a} << s)
    (.SX32: c is a's sign). A predicate destination or a .CC destination gets the carry; .X adds it."""
    mods = ex.ins.modifiers
    vals = _srcs_values(ex)
    shift = np.uint64(ex.ins.srcs[vals[-1]].value)
    a = ex.u32(vals[0]).astype(np.uint64)
    b = _term(ex, vals[1])
    if "HI" in mods:
        if "SX32" in mods:
            hi = np.where(a >> np.uint64(31), M32, np.uint64(0))
        else:
            hi = ex.u32(vals[2]).astype(np.uint64)
        full = (hi << np.uint64(32)) | a
        part = (full << shift) >> np.uint64(32) & M32 if shift else hi
        total = b + part
    else:
        total = ((a << shift) & M32) + b
    if "X" in mods:
        total = total + _carry_in(ex)
    _write_with_cc(ex, total)


@op("IMAD", "UIMAD", "IMUL", "IMUL32I", "IMAD32I")
def imad(ex):
    """d = a * b + c (low word; .HI: high word of a*b plus c; .WIDE: 64-bit a*b + c64;
    .X adds a carry: the trailing predicate on sm_90, the carry flag on Kepler)."""
    mods = ex.ins.modifiers
    vals = _srcs_values(ex)
    unsigned = "U32" in mods
    if unsigned:
        prod = ex.u32(vals[0]).astype(np.uint64) * ex.u32(vals[1]).astype(np.uint64)
    else:  # exact in int64 (|a*b| < 2^62); two's complement bits
        prod = (ex.s32(vals[0]).astype(np.int64) * ex.s32(vals[1]).astype(np.int64)).view(np.uint64)
    has_c = len(vals) >= 3
    if "WIDE" in mods:  # d:d+1 = a*b + c:c+1 (+ carry-in for .X); a predicate destination gets bit 64
        c = ex.u64(vals[2]) if has_c else np.uint64(0)
        total = prod + c
        carry = total < prod
        if "X" in mods:
            total2 = total + _carry_in(ex)
            carry = carry | (total2 < total)
            total = total2
        ex.write64(0, total)
        if len(ex.ins.dsts) > 1 and ex.ins.dsts[1].kind in ("pred", "upred"):
            ex.write_pred(1, carry)
        return
    if "HI" in mods and ex.emu.arch_family >= 70:
        return _imad_hi_pair(ex, prod, vals)
    c = _term(ex, vals[2]) if has_c else np.uint64(0)
    if "HI" in mods:  # Kepler/Maxwell: the high word plus a 32-bit c
        total = ((prod >> np.uint64(32)) & M32) + c
    else:
        total = (prod & M32) + c
    if "X" in mods:
        total = total + _carry_in(ex)
    _write_with_cc(ex, total)


def _imad_hi_pair(ex, prod, vals):
    """Volta+ IMAD.HI d, [Pc,] a, b, c: the addend is the 64-bit register pair c:c+1, as in IMAD.WIDE,
    and d is the high word of the 64-bit sum a*b + c64 (+ the carry-in for .X); a predicate
    destination gets the carry out of that sum (bit 64). nvcc relies on it: unsigned division sets
    c's low register to 0 and its high register to the running estimate (`IMAD.MOV.U32 R6, RZ, RZ, RZ;
    IMAD.HI.U32 R7, R7, R5, R6` is hi(R7 * R5) + R7), and 64-bit products chain the carries."""
    c = ex.u64(vals[2]) if len(vals) >= 3 else np.uint64(0)
    op = ex.ins.srcs[vals[2]] if len(vals) >= 3 else None
    if op is not None and op.kind != "reg":  # an immediate or constant addend: zero-extended (not seen)
        c = ex.u32(vals[2]).astype(np.uint64)
    total = prod + c  # modulo 2^64
    carry = (total < prod).astype(np.uint64)
    if "X" in ex.ins.modifiers:
        cin = _carry_in(ex) << np.uint64(32)  # into the result word, as PTX madc.hi (unverified)
        total2 = total + cin
        carry = carry + (total2 < total)
        total = total2
    ex.write(0, ((total >> np.uint64(32)) & M32).astype(U32))
    if len(ex.ins.dsts) > 1 and ex.ins.dsts[1].kind in ("pred", "upred"):
        ex.write_pred(1, carry.astype(bool))


@op("XMAD")
def xmad(ex):
    """Maxwell 16x16-bit multiply-add [maxas]: p = a.{H0|H1} * b.{H0|H1} (16-bit halves, .S16 signs);
    .PSL shifts p left 16; the addend is c (.CLO: c's low half, .CHI: c's high half, .CBCC: c + (b << 16));
    .MRG replaces the result's high half with b's low half. .X adds the carry, .CC writes it."""
    mods = ex.ins.modifiers
    srcs = ex.ins.srcs
    a_full, b_full = ex.u32(0), ex.u32(1)
    types = [m for m in mods if m in ("S16", "U16")]
    a_signed = bool(types) and types[0] == "S16"
    b_signed = len(types) > 1 and types[1] == "S16"
    a16 = _half(a_full, "H1" in srcs[0].suffix, a_signed)
    b16 = _half(b_full, "H1" in srcs[1].suffix, b_signed)
    prod = (a16 * b16).astype(np.int64).astype(np.uint64) & M32
    if "PSL" in mods:
        prod = (prod << np.uint64(16)) & M32
    c = ex.u32(2).astype(np.uint64)
    if "CLO" in mods:
        c = c & np.uint64(0xFFFF)
    elif "CHI" in mods:
        c = c >> np.uint64(16)
    elif "CSFU" in mods:
        raise NotImplementedError("XMAD.CSFU is not emulated")
    if "CBCC" in mods:
        c = c + ((b_full.astype(np.uint64) << np.uint64(16)) & M32)
    total = prod + c
    if "X" in mods:
        total = total + _carry_in(ex)
    if "MRG" in mods:
        total = (total & np.uint64(0xFFFF)) | ((b_full.astype(np.uint64) & np.uint64(0xFFFF)) << np.uint64(16))
    _write_with_cc(ex, total)


def _half(v, high: bool, signed: bool):
    h = (v >> np.uint32(16)) if high else (v & np.uint32(0xFFFF))
    h = h.astype(np.int64)
    return np.where(h >= 0x8000, h - 0x10000, h) if signed else h


def _shift_amount(ex, i, limit):
    s = ex.u32(i).astype(np.uint64)
    if "W" in ex.ins.modifiers:
        return s & np.uint64(limit - 1)
    return np.minimum(s, np.uint64(limit))


@op("SHL")
def shl(ex):
    s = _shift_amount(ex, 1, 32)
    ex.write(0, ((ex.u32(0).astype(np.uint64) << s) & M32).astype(U32))


@op("SHR")
def shr(ex):
    s = _shift_amount(ex, 1, 32)
    if "U32" in ex.ins.modifiers:
        ex.write(0, (ex.u32(0).astype(np.uint64) >> s).astype(U32))
    else:
        ex.write(0, (ex.s32(0).astype(np.int64) >> s.astype(np.int64)).astype(np.int32))


@op("SHF", "USHF")
def shf(ex):
    """Funnel shift of {c:a} (c the high word). sm_90 picks the word by .HI (default low);
    sm_3x/5x return the high word for .L and the low word for .R."""
    mods = ex.ins.modifiers
    a, c = ex.u32(0).astype(np.uint64), ex.u32(2).astype(np.uint64)
    wide = any(m in mods for m in ("U64", "S64"))
    s = _shift_amount(ex, 1, 64 if wide else 32)
    val = (c << np.uint64(32)) | a
    if "L" in mods:
        res = np.where(s >= 64, np.uint64(0), val << np.minimum(s, np.uint64(63)))
        hi_default = True
    else:
        if "S64" in mods or "S32" in mods:
            res = (val.view(np.int64) >> np.minimum(s, np.uint64(63)).astype(np.int64)).view(np.uint64)
        else:
            res = np.where(s >= 64, np.uint64(0), val >> np.minimum(s, np.uint64(63)))
        hi_default = False
    take_hi = ("HI" in mods) if ex.emu.arch_family >= 70 else hi_default
    ex.write(0, ((res >> np.uint64(32)) if take_hi else (res & M32)).astype(U32))


def _lut3(a, b, c, lut):
    r = np.zeros_like(a)
    for i in range(8):
        if lut >> i & 1:
            r |= (a if i & 4 else ~a) & (b if i & 2 else ~b) & (c if i & 1 else ~c)
    return r


@op("LOP3", "ULOP3")
def lop3(ex):
    """LOP3.LUT [Pd,] d, a, b, c, lut, Pc: bitwise function given by the 8-bit truth table."""
    vals = _srcs_values(ex)
    r = _lut3(ex.u32(vals[0]), ex.u32(vals[1]), ex.u32(vals[2]), ex.ins.srcs[vals[3]].value)
    _write_logic(ex, r, r != 0)


@op("LOP", "LOP32I")
def lop(ex):
    """Kepler/Maxwell LOP.{AND,OR,XOR,PASS_B} with ~ on operands; optional predicate destination."""
    mods = ex.ins.modifiers
    vals = _srcs_values(ex)
    a, b = ex.u32(vals[0]), ex.u32(vals[1])
    fn = next((m for m in mods if m in ("AND", "OR", "XOR", "PASS_B")), "AND")
    r = {"AND": a & b, "OR": a | b, "XOR": a ^ b, "PASS_B": b}[fn]
    _write_logic(ex, r, (r != 0) if "NZ" in mods or "Z" not in mods else (r == 0))


def _write_logic(ex, r, test):
    """LOP/LOP3 with a leading predicate destination write `test` to it and r to the register
    after it (if any); otherwise r to the first destination."""
    if ex.ins.dsts[0].kind in ("pred", "upred"):
        ex.write_pred(0, test)
        if ex.ins.dsts[1:]:
            ex.write(1, r)
    else:
        ex.write(0, r)


@op("PLOP3", "UPLOP3")
def plop3(ex):
    preds = [i for i, s in enumerate(ex.ins.srcs) if s.kind in ("pred", "upred")]
    luts = [s.value for s in ex.ins.srcs if s.kind == "imm"]
    a, b, c = (ex.pred(i).astype(np.uint8) for i in preds[:3])
    ex.write_pred(0, _lut3(a, b, c, luts[0]) & 1)
    if len(ex.ins.dsts) > 1 and len(luts) > 1:
        ex.write_pred(1, _lut3(a, b, c, luts[1]) & 1)


@op("PSETP")
def psetp(ex):
    mods = [m for m in ex.ins.modifiers if m in _BOOL]
    first = _BOOL[mods[0]](ex.pred(0), ex.pred(1))
    second = _BOOL[mods[1]] if len(mods) > 1 else np.logical_and
    pc = np.array(ex.pred(2)) if ex.is_pred(2) else True  # a copy: Pd may be Pc
    ex.write_pred(0, second(first, pc))
    if len(ex.ins.dsts) > 1:
        ex.write_pred(1, second(~first, pc))


@op("IMNMX", "VIMNMX")
def imnmx(ex):
    unsigned = "U32" in ex.ins.modifiers
    a, b = (ex.u32(0), ex.u32(1)) if unsigned else (ex.s32(0), ex.s32(1))
    p = ex.pred(2) if ex.is_pred(2) else "MIN" in ex.ins.modifiers
    ex.write(0, np.where(p, np.minimum(a, b), np.maximum(a, b)))


@op("FCHK")
def fchk(ex):
    """FCHK Pd, a, b: whether a / b must take the division slow path (nvcc then CALLs
    __internal_*_cuda_sm3x_div_rn_*_slowpath). Modelled (not measured bit by bit): a or b zero,
    infinite, NaN or denormal, or an exponent or their difference near the FP32 range's ends."""
    a, b = ex.f32(0).astype(np.float64), ex.f32(1).astype(np.float64)
    with np.errstate(all="ignore"):
        ea, eb = np.frexp(a)[1], np.frexp(b)[1]
        tiny = np.float64(np.finfo(np.float32).tiny)
        finite = np.isfinite(a) & np.isfinite(b) & (a != 0) & (b != 0)
        odd = ~finite | (np.abs(a) < tiny) | (np.abs(b) < tiny)  # zeros, infinities, NaNs, denormals
        odd |= finite & ((np.abs(ea) > 120) | (np.abs(eb) > 120) | (np.abs(ea - eb) > 120))
    ex.write_pred(0, odd)


@op("VIADDMNMX")
def viaddmnmx(ex):
    """VIADDMNMX d, a, b, c, Pmin: min (Pmin) or max of the 32-bit sum a + b and c, signed unless .U32
    (as IMNMX on the sum)."""
    total = ((_term(ex, 0) + _term(ex, 1)) & M32).astype(U32)
    c = ex.u32(2)
    if "U32" not in ex.ins.modifiers:
        total, c = total.view(np.int32), c.view(np.int32)
    p = ex.pred(3) if ex.is_pred(3) else True
    ex.write(0, np.where(p, np.minimum(total, c), np.maximum(total, c)))


@op("IABS")
def iabs(ex):
    ex.write(0, np.abs(ex.s32(0).astype(np.int64)).astype(np.uint64) & M32)


@op("POPC")
def popc(ex):
    v = ex.u32(0)
    ex.write(0, np.unpackbits(v.view(np.uint8)).reshape(-1, 32).sum(axis=1).astype(U32))


@op("PRMT")
def prmt(ex):
    a, sel, b = ex.u32(0), ex.u32(1), ex.u32(2)
    both = pack64(a, b)
    out = np.zeros_like(a)
    for k in range(4):
        nib = (sel >> np.uint32(4 * k)) & np.uint32(0xF)
        byte = ((both >> (nib & np.uint32(7)).astype(np.uint64) * np.uint64(8)) & np.uint64(0xFF)).astype(U32)
        sign = np.where(byte & np.uint32(0x80), np.uint32(0xFF), np.uint32(0))
        byte = np.where(nib & np.uint32(8), sign, byte)
        out |= byte << np.uint32(8 * k)
    ex.write(0, out)


@op("BFE")
def bfe(ex):
    v, ctl = ex.u32(0), ex.u32(1)
    pos, length = (ctl & np.uint32(0xFF)).astype(np.uint64), ((ctl >> np.uint32(8)) & np.uint32(0xFF)).astype(np.uint64)
    field = (v.astype(np.uint64) >> pos) & ((np.uint64(1) << length) - np.uint64(1))
    if "U32" not in ex.ins.modifiers:
        sign = (field >> np.maximum(length, np.uint64(1)) - np.uint64(1)) & np.uint64(1)
        field = np.where((sign == 1) & (length > 0), field | (~((np.uint64(1) << length) - np.uint64(1))), field)
    ex.write(0, (field & M32).astype(U32))


@op("BFI")
def bfi(ex):
    """BFI d, a, ctl, c: insert the low `len` bits of a into c at bit `pos` (ctl = len << 8 | pos)."""
    a, ctl, c = ex.u32(0).astype(np.uint64), ex.u32(1).astype(np.uint64), ex.u32(2).astype(np.uint64)
    pos, length = ctl & np.uint64(0xFF), (ctl >> np.uint64(8)) & np.uint64(0xFF)
    field = ((np.uint64(1) << np.minimum(length, np.uint64(32))) - np.uint64(1)) << pos
    ex.write(0, (((a << pos) & field) | (c & ~field)) & M32)


@op("P2R")
def p2r(ex):
    mask = ex.ins.srcs[-1].value
    out = ex.u32(1) & ~np.uint32(mask)
    for i in range(7):
        if mask >> i & 1:
            out = out | (ex.st.P[i][ex.sel].astype(U32) << np.uint32(i))
    ex.write(0, out)


@op("R2P")
def r2p(ex):
    v, mask = ex.u32(1), ex.ins.srcs[-1].value
    for i in range(7):
        if mask >> i & 1:
            ex._store(ex.st.P[i], ((v >> np.uint32(i)) & np.uint32(1)).astype(bool))


# ---- conversions and SFU -------------------------------------------------------------------------
_NP = {"F64": np.float64, "F32": np.float32, "S32": np.int32, "U32": np.uint32, "S64": np.int64,
       "U64": np.uint64, "F16": np.float16}


_SMALL_INT = {"U8": (0xFF, np.uint8), "S8": (0xFF, np.int8), "U16": (0xFFFF, np.uint16), "S16": (0xFFFF, np.int16)}


def _read_typed(ex, i, t):
    if t in _SMALL_INT:  # I2F.U8 R13, R10: the register's low byte (halfword), zero- or sign-extended
        mask, dt = _SMALL_INT[t]
        low = (ex.u32(i) & np.uint32(mask)).astype(np.uint8 if mask == 0xFF else np.uint16)
        return low.view(dt).astype(np.int64)
    if t == "F64":
        return ex.f64(i)
    if t in ("S64", "U64"):
        return ex.u64(i).view(_NP[t])
    if t == "F32":
        return ex.f32(i)
    if t == "F16":  # the low half of the register
        return (ex.u32(i) & np.uint32(0xFFFF)).astype(np.uint16).view(np.float16)
    return ex.u32(i).view(_NP[t]) if t in ("S32", "U32") else ex.u32(i).view(np.int32)


def _write_typed(ex, v, t):
    if t in ("F64", "S64", "U64"):
        ex.write64(0, np.asarray(v).astype(_NP[t]).view(np.uint64))
    elif t == "F32":
        ex.write(0, np.asarray(v, dtype=np.float32))
    elif t == "F16":
        ex.write(0, np.asarray(v, dtype=np.float16).view(np.uint16).astype(U32))
    else:
        ex.write(0, np.asarray(v).astype(np.int64).astype(np.uint64) & M32)


_FLOATS = ("F64", "F32", "F16")
_INT_RANGE = {"S32": (-2**31, 2**31 - 1), "U32": (0, 2**32 - 1), "S64": (-2**63, 2**63 - 1), "U64": (0, 2**64 - 1)}
_SMALL_RANGE = {"U8": (0, 255), "S8": (-128, 127), "U16": (0, 65535), "S16": (-32768, 32767)}  # sources only


def _conversion_types(ins) -> tuple[str, str]:
    """(destination type, source type) of a conversion. Two type modifiers read destination then source
    (I2F.F64.S32, F2I.S64.F64, I2FP.F32.U32); a single one names the integer side, or the float side
    when it is a float type (I2F.U32: u32 -> f32; F2I.U32: f32 -> u32; I2F.F64: s32 -> f64)."""
    mods = [m for m in ins.modifiers if m in _NP or m in _SMALL_INT]
    opc = ins.opcode
    if len(mods) >= 2:
        return mods[0], mods[1]
    if opc in ("I2F", "I2FP"):
        return (mods[0], "S32") if mods and mods[0] in _FLOATS else ("F32", mods[0] if mods else "S32")
    if opc == "F2I":
        return ("S32", mods[0]) if mods and mods[0] in _FLOATS else (mods[0] if mods else "S32", "F32")
    if opc == "F2F":
        return (mods[0], "F32") if mods else ("F32", "F32")
    return (mods[0], "S32") if mods else ("S32", "S32")  # I2I


def _round_int_to_float(v, ftype: str, mode: str):
    """Integers v (int64/uint64 array) to float type `ftype` rounded by `mode` (RN nearest even,
    RZ toward zero, RM down, RP up) [PTX ISA cvt]. numpy's cast rounds to nearest; a directed
    mode steps the result one ulp where it went the wrong way (compared exactly as integers)."""
    dt = _NP[ftype]
    r = v.astype(dt)
    if mode == "RN":
        return r
    big = float(2**63) if v.dtype == np.int64 else float(2**64)
    rf = r.astype(np.float64)
    exact = np.zeros(v.shape, bool)
    inrange = np.abs(rf) < big
    back = np.where(inrange, rf, 0).astype(v.dtype)
    above = np.where(inrange, back > v, rf > 0)  # r > v
    below = np.where(inrange, back < v, rf < 0)  # r < v
    exact = ~above & ~below
    up, down = np.nextafter(r, dt(np.inf)), np.nextafter(r, dt(-np.inf))
    if mode == "RP":
        return np.where(below, up, r)
    if mode == "RM":
        return np.where(above, down, r)
    # RZ: toward zero
    return np.where(exact, r, np.where((rf > 0) & above, down, np.where((rf < 0) & below, up, r)))


@op("I2F", "F2I", "F2F", "I2FP", "I2I")
def convert(ex):
    """Conversions [PTX ISA cvt]: float to integer rounds (default to nearest even, .TRUNC/.FLOOR/.CEIL)
    and saturates to the destination range, NaN giving 0; integer to float rounds by .RN/.RZ/.RM/.RP."""
    dst_t, src_t = _conversion_types(ex.ins)
    if dst_t in _SMALL_INT:
        raise NotImplementedError(f"conversion to {dst_t}")
    mods = ex.ins.modifiers
    opc = ex.ins.opcode
    v = _read_typed(ex, 0, src_t)
    if dst_t in _INT_RANGE and src_t in _FLOATS:
        rnd = {"TRUNC": np.trunc, "FLOOR": np.floor, "CEIL": np.ceil}.get(
            next((m for m in mods if m in ("TRUNC", "FLOOR", "CEIL")), ""), np.rint)
        lo, hi = _INT_RANGE[dst_t]
        with np.errstate(invalid="ignore"):
            x = rnd(v.astype(np.float64))
            nan = np.isnan(x)
            # compare in float64 before casting: 2^63 and 2^64 are exact there
            x = np.where(nan, 0.0, x)
            # NaN gives 0 from FP32 to a 32-bit integer, the sign-bit pattern otherwise [difftest golden]
            nan_bits = 0 if (src_t == "F32" and dst_t in ("S32", "U32")) else 1 << (8 * _NP[dst_t]().itemsize - 1)
            low, high = x <= float(lo), x >= float(hi)
            ints = np.where(low | high, 0.0, x).astype(np.int64 if lo < 0 else np.uint64)
        ints = np.where(low, np.array(lo).astype(ints.dtype), ints)
        v = np.where(high, np.array(hi).astype(ints.dtype), ints)
        v = np.where(nan, np.array(nan_bits).astype(v.dtype), v)
        if dst_t in ("S64", "U64"):
            ex.write64(0, v.astype(np.uint64) if v.dtype != np.uint64 else v)
        else:
            ex.write(0, (v.astype(np.int64).astype(np.uint64) & M32).astype(U32))
        return
    if dst_t in _FLOATS and src_t in _SMALL_RANGE:  # exact in every float type but F16 (not seen)
        _write_typed(ex, v.astype(_NP[dst_t]), dst_t)
        return
    if dst_t in _FLOATS and src_t in _INT_RANGE:
        mode = next((m for m in mods if m in ("RN", "RZ", "RM", "RP")), "RN")
        wide = v.astype(np.int64 if src_t[0] == "S" else np.uint64)
        _write_typed(ex, _round_int_to_float(wide, dst_t, mode), dst_t)
        return
    if opc == "F2F" and any(m in mods for m in ("TRUNC", "FLOOR", "CEIL", "RNI")):
        rnd = {"TRUNC": np.trunc, "FLOOR": np.floor, "CEIL": np.ceil}.get(
            next((m for m in mods if m in ("TRUNC", "FLOOR", "CEIL")), ""), np.rint)
        v = rnd(v)
    _write_typed(ex, v, dst_t)


@op("MUFU")
def mufu(ex):
    fn = next(m for m in ex.ins.modifiers)
    exact = mufu_model.evaluate(fn, ex.u32(0))  # the H100's interpolation where fitted (mufu.py)
    if exact is not None:
        ex.write(0, exact)
        return
    if fn in ("RCP64H", "RSQ64H"):  # the operand is a double's high word; so is the result
        x = (ex.u32(0).astype(np.uint64) << np.uint64(32)).view(np.float64)
        with np.errstate(all="ignore"):
            r = 1.0 / x if fn == "RCP64H" else 1.0 / np.sqrt(x)
        ex.write(0, (np.asarray(r, np.float64).view(np.uint64) >> np.uint64(32)).astype(U32))
        return
    x = ex.f32(0).astype(np.float64)
    with np.errstate(all="ignore"):
        r = {"RCP": lambda: 1.0 / x, "RSQ": lambda: 1.0 / np.sqrt(x), "SQRT": lambda: np.sqrt(x),
             "EX2": lambda: np.exp2(x), "LG2": lambda: np.log2(x), "SIN": lambda: np.sin(x),
             "COS": lambda: np.cos(x), "RCP64H": lambda: x, "RSQ64H": lambda: x}[fn]()
    ex.write(0, f32_result(r))  # NaN results canonical, as FP32 arithmetic


# ---- memory --------------------------------------------------------------------------------------
def _address(ex, opnd) -> np.ndarray:
    """Per active lane: base register (32- or 64-bit) + uniform register + immediate offset."""
    addr = np.zeros(ex.n, dtype=np.uint64)
    if opnd.reg is not None:
        lo = ex.st.R[ex.st.row(opnd.reg)][ex.sel].astype(np.uint64)
        addr = lo | (ex.st.R[ex.st.row(opnd.reg + 1)][ex.sel].astype(np.uint64) << np.uint64(32)) \
            if opnd.width == 64 and opnd.reg != 255 else lo
    if opnd.ureg is not None and opnd.ureg != 63:
        addr = addr + np.repeat(ex.st.UR[opnd.ureg, ex.wids].astype(np.uint64), 32)
    addr = (addr.astype(np.int64) + np.int64(opnd.value or 0)).astype(np.uint64)
    return addr[ex.active]


def _mem_operand(ex):
    return next(s for s in ex.ins.srcs if s.kind == "mem")


_SUB_WORD = {"U8": 1, "S8": 1, "U16": 2, "S16": 2}


def _nbytes(ex):
    from gpusim.isa.widths import access_bits

    mods = ex.ins.modifiers
    small = next((_SUB_WORD[m] for m in mods if m in _SUB_WORD), None)
    return small if small is not None else access_bits(mods) // 8


def _space(ex):
    """(memory, rows) for the instruction's state space: shared rows are CTA slots, local rows lanes;
    global memory has no rows."""
    emu, opc = ex.emu, ex.ins.opcode
    if opc in ("LDS", "STS"):
        return emu.shared, emu.shared_rows(ex)
    if opc in ("LDL", "STL"):
        lanes = np.arange(ex.sel.start, ex.sel.stop) if isinstance(ex.sel, slice) else ex.sel
        return emu.local, lanes[ex.active]
    return emu.memory, None


def _generic_shared(ex, addrs):
    """LD/ST take generic addresses: the lanes whose address is in the shared window (memory.
    SHARED_WINDOW, 4 GB) access their CTA's shared memory at the offset in the window, the others
    global memory [PTX ISA, generic addressing]. None when no lane is in the window."""
    if ex.ins.opcode not in ("LD", "ST"):
        return None
    inside = (addrs >> np.uint64(32)) == np.uint64(SHARED_WINDOW_HI)
    return inside if inside.any() else None


def _load_words(ex, addrs, nbytes):
    memory, rows = _space(ex)
    shared = _generic_shared(ex, addrs)
    if shared is None:
        return memory.load(addrs, nbytes) if rows is None else memory.load(rows, addrs, nbytes)
    words = np.zeros((max(1, nbytes // 4), len(addrs)), U32)
    with _lanes_of(shared):
        words[:, shared] = ex.emu.shared.load(ex.emu.shared_rows(ex)[shared], addrs[shared] & M32, nbytes)
    if not shared.all():
        with _lanes_of(~shared):
            words[:, ~shared] = memory.load(addrs[~shared], nbytes)
    return words


def _store_words(ex, addrs, words, nbytes):
    memory, rows = _space(ex)
    shared = _generic_shared(ex, addrs)
    if shared is None:
        return memory.store(addrs, words, nbytes) if rows is None else memory.store(rows, addrs, words, nbytes)
    with _lanes_of(shared):
        ex.emu.shared.store(ex.emu.shared_rows(ex)[shared], addrs[shared] & M32, words[:, shared], nbytes)
    if not shared.all():
        with _lanes_of(~shared):
            memory.store(addrs[~shared], words[:, ~shared], nbytes)


class _lanes_of:
    """A fault inside names the lane among all executing lanes, not among the subset `which`."""

    def __init__(self, which):
        self.which = which

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if isinstance(exc, MemoryFault):
            exc.lane = int(np.flatnonzero(self.which)[exc.lane])
        return False


@op("LDG", "LD", "LDS", "LDL")
def load(ex):
    """Load 1 to 16 bytes per lane into d (d..d+3); .U8/.U16 zero-extend, .S8/.S16 sign-extend
    [PTX ISA ld]."""
    m = _mem_operand(ex)
    nbytes = _nbytes(ex)
    addrs = _address(ex, m)
    ex.emu.record_addresses(ex, addrs, nbytes)
    words = _load_words(ex, addrs, nbytes)
    if any(t in ex.ins.modifiers for t in ("S8", "S16")):
        shift = np.uint32(32 - 8 * nbytes)
        words = ((words << shift).view(np.int32) >> shift.astype(np.int32)).view(U32)
    full = np.zeros((words.shape[0], ex.n), dtype=U32)
    full[:, ex.active] = words
    for w in range(words.shape[0]):
        ex.write(0, full[w], w)


@op("STG", "ST", "STS", "STL")
def store(ex):
    """Store 1 to 16 bytes per lane from s (s..s+3); .U8/.U16 store the register's low bytes."""
    m = _mem_operand(ex)
    data = next(s for s in ex.ins.srcs if s.kind == "reg")
    nbytes = _nbytes(ex)
    addrs = _address(ex, m)
    ex.emu.record_addresses(ex, addrs, nbytes)
    words = np.stack([ex.st.R[ex.st.row(data.reg + w)][ex.sel][ex.active] if data.reg != 255
                      else np.zeros(int(ex.active.sum()), U32) for w in range(max(1, nbytes // 4))])
    _store_words(ex, addrs, words, nbytes)


@op("LDGSTS")
def ldgsts(ex):
    """cp.async (sm_80+): copy 4, 8 or 16 bytes per lane from global [a] to shared [s], no register
    written [PTX ISA cp.async]. A trailing predicate operand says the source is valid: where it is false
    the lane reads nothing and writes zeros (cp.async's ignore-src, and src-size 0). .ZFILL (src-size
    below the copy size): ptxas adds (size - src-size) mod size to the source address, so the lane copies
    size - (a mod size) bytes from a rounded down to the size and zeros the rest (nvcc 13.0's code for
    `cp.async.cg.shared.global [s], [a], 16, n`, checked by tests/test_emu_cpasync.py against that PTX's
    meaning). The copy is done at issue: a kernel may read the shared words only after waiting
    (DEPBAR.LE SB0 after LDGDEPBAR, then a barrier for other warps), so the values it reads are these."""
    dst, src = (s for s in ex.ins.srcs if s.kind == "mem")
    nbytes = _nbytes(ex)
    addrs = _address(ex, src)
    valid = np.ones(len(addrs), dtype=bool)
    pi = next((i for i, s in enumerate(ex.ins.srcs) if s.kind in ("pred", "upred")), None)
    if pi is not None:
        valid = np.asarray(ex.pred(pi), dtype=bool)[ex.active]
    keep = np.full(len(addrs), nbytes, dtype=np.int64)
    if "ZFILL" in ex.ins.modifiers:
        skip = (addrs & np.uint64(nbytes - 1)).astype(np.int64)
        addrs = addrs - skip.astype(np.uint64)
        keep -= skip
    keep[~valid] = 0
    # the trace's addresses: the lanes that read; a lane that reads nothing takes a reading lane's
    # address (no sector of its own), or its own where none of the warp reads
    logged = addrs.copy()
    if valid.any() and not valid.all():
        logged[~valid] = addrs[np.flatnonzero(valid)[0]]
    ex.emu.record_addresses(ex, logged, nbytes)
    words = np.zeros((nbytes // 4, len(addrs)), dtype=U32)
    if valid.any():
        with _lanes_of(valid):
            words[:, valid] = ex.emu.memory.load(addrs[valid], nbytes)
    if (keep < nbytes).any():  # zero the bytes past each lane's src-size (little-endian words)
        lane_bytes = np.ascontiguousarray(words.T).view(np.uint8)  # (lanes, nbytes)
        lane_bytes[np.arange(nbytes)[None, :] >= keep[:, None]] = 0
        words = np.ascontiguousarray(lane_bytes.view(U32).T)
    saddr = _address(ex, dst) & M32
    ex.emu.shared.store(ex.emu.shared_rows(ex), saddr, words, nbytes)


@op("LDC", "ULDC")
def ldc(ex):
    for w in range(max(1, ex.ins.dsts[0].width // 32)):
        ex.write(0, ex._raw(ex.ins.srcs[0], w), w)


# ---- control flow ----------------------------------------------------------------------------------
from gpusim.emu import control  # noqa: E402,F401  (registers BRA, EXIT, BAR, SSY, ...)
from gpusim.emu import warp  # noqa: E402,F401  (registers SHFL, VOTE, MATCH, REDUX, FLO, BREV)
from gpusim.emu import atomics  # noqa: E402,F401  (registers ATOMS, ATOMG, REDG, ATOM, RED)
