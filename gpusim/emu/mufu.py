"""MUFU (FP32 special function unit): the hardware's bit-exact approximations.

Rule modelled (quadratic interpolation, Oberman & Siu ARITH 2005; the bit layout is the Tesla SFU's as
documented by envytools nvhw/sfu.c, which the H100 follows exactly where fitted): the top mantissa bits
index a table of integer triples (C0, C1, C2), the low bits x enter linearly and through a truncated
squarer, P = C0 << a + C1*x + (C2*sq(x) << b) + K, and the result mantissa is P >> s. The exponent is
handled by rule. The tables (mufu_tab.py) are fitted to an exhaustive H100 measurement by
scripts/fit_mufu.py; a function is bit-exact on every measured input (all 2^23 mantissas of the fitted
slices, 512 mantissas of every other (sign, exponent) slice). Inputs and outputs flush denormals (FTZ).
SIN and COS take their operand in revolutions (the compiler's FMUL.RZ by 1/2pi comes first) and share
one table; their result is fixed point, normalised and truncated (no rounding constant).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

try:
    from gpusim.emu.mufu_tab import TABLES
except ImportError:  # before the first fit
    TABLES = {}

NAN = np.uint32(0x7FFFFFFF)  # every NaN result [H100]
INF = np.uint32(0x7F800000)


def square(v):
    """Truncated squarer: the partial products v_i * (v >> (18 - i)) for bits i < 17 of v, summed, then
    halved (the low partial products are dropped, as in the SFU's multiplier array)."""
    v = np.asarray(v, np.int64)
    res = np.zeros_like(v)
    for i in range(1, 17):
        res += np.where((v >> i) & 1, v >> (18 - i), 0)
    return res >> 1


def _fields(u):
    u = np.asarray(u, np.uint32)
    return (u >> 31).astype(np.int64), ((u >> 23) & 0xFF).astype(np.int64), (u & 0x7FFFFF).astype(np.int64)


def _coef(name, idx):
    t = np.asarray(TABLES[name], np.int64)
    return t[idx, 0], t[idx, 1], t[idx, 2]


def _pack(sign, exp, mant_with_one):
    """Sign, biased exponent of [1,2), 24-bit mantissa with its leading one (2^24 carries into the
    exponent); an exponent <= 0 flushes to signed zero."""
    bits = (exp << 23) + mant_with_one - (1 << 23)
    bits = np.where(exp + (mant_with_one >> 24) <= 0, 0, bits)
    return ((sign << 31) | bits).astype(np.uint32)


# ---- RCP: 128 segments of 2^16; a = 13, x enters the squarer doubled, K = 0x47e7, s = 15 -----------------
def rcp(u):
    sign, exp, fract = _fields(u)
    idx, x = fract >> 16, fract & 0xFFFF
    c0, c1, c2 = _coef("rcp", idx)
    f = ((c0 << 13) + c1 * x + c2 * square(x << 1) + 0x47E7) >> 15
    r = _pack(sign, 253 - exp, f)
    r = np.where(exp == 0, (sign << 31).astype(np.uint32) | INF, r)                 # 1/0 -> inf
    r = np.where(exp == 255, np.where(fract == 0, (sign << 31).astype(np.uint32), NAN), r)  # 1/inf -> 0
    return r.astype(np.uint32)


def _rcp_intervals(u, out):
    _, exp, fract = _fields(u)
    _, oexp, omant = _fields(out)
    y = (omant | (1 << 23)) << (oexp - (253 - exp))
    return fract >> 16, fract & 0xFFFF, (y << 15) - 0x47E7, ((y + 1) << 15) - 1 - 0x47E7


# ---- RSQ: 64 segments of 2^17 for [1,2) and 64 for [2,4) (the exponent's parity is the index's top bit);
# a = 14, the squared term shifted by 2, K = 0x7fff, s = 16; an exact power of 4 gives its exact root ------
def rsq(u):
    sign, exp, fract = _fields(u)
    e = exp - 127
    fr = fract | ((e & 1) << 23)
    idx, x = fr >> 17, fr & 0x1FFFF
    c0, c1, c2 = _coef("rsq", idx)
    f = ((c0 << 14) + c1 * x + ((c2 * square(x)) << 2) + 0x7FFF) >> 16
    oexp = 126 - (e >> 1)
    f = np.where(fr == 0, 1 << 24, f)
    r = _pack(np.zeros_like(sign), oexp, f)
    r = np.where((sign == 1) & (exp != 0), NAN, r)                                    # negative -> NaN
    r = np.where(exp == 0, (sign << 31).astype(np.uint32) | INF, r)                 # +-0 -> +-inf
    r = np.where((exp == 255) & (sign == 0), np.where(fract == 0, np.uint32(0), NAN), r)
    return r.astype(np.uint32)


def _rsq_intervals(u, out):
    _, exp, fract = _fields(u)
    _, oexp, omant = _fields(out)
    e = exp - 127
    fr = fract | ((e & 1) << 23)
    y = (omant | (1 << 23)) << (oexp - (126 - (e >> 1)))
    lo, hi = (y << 16) - 0x7FFF, ((y + 1) << 16) - 1 - 0x7FFF
    return fr >> 17, fr & 0x1FFFF, np.where(fr == 0, 1, lo), np.where(fr == 0, 0, hi)


# ---- EX2: the input as a fixed-point number (7 integer, 23 fraction bits; the magnitude truncated
# [H100]), integer part -> exponent, fraction (complemented for negative inputs) -> 64 segments of 2^17;
# a = 13, K = 0x77e2, s = 15 ---------------------------------------------------------------------------
def _ex2_fixed(u):
    """(sign, exponent of the result before the table's carry, 23-bit table input, in range)."""
    sign, exp, fract = _fields(u)
    m = np.where(exp == 0, 0, fract | (1 << 23))
    sh = exp - 127
    left = m << np.clip(sh, 0, 7)
    fx = np.where(sh >= 0, left, m >> np.clip(-sh, 0, 40))
    i, f = fx >> 23, fx & 0x7FFFFF
    oexp = np.where(sign == 1, np.where(f == 0, -i, -i - 1), i) + 127
    f = np.where((sign == 1) & (f != 0), 0x7FFFFF - f, f)
    return sign, oexp, f, sh < 7


def ex2(u):
    sign, exp, fract = _fields(u)
    s, oexp, f, ok = _ex2_fixed(u)
    idx, x = f >> 17, f & 0x1FFFF
    c0, c1, c2 = _coef("ex2", idx)
    p = ((c0 << 13) + c1 * x + c2 * square(x) + 0x77E2) >> 15
    r = _pack(np.zeros_like(sign), oexp, p)
    big = ~ok | (exp == 255)
    r = np.where(big, np.where(sign == 1, np.uint32(0), INF), r)                  # 2^inf, 2^-inf
    r = np.where((exp == 255) & (fract != 0), NAN, r)
    return r.astype(np.uint32)


def _ex2_intervals(u, out):
    _, oexp0, f, _ = _ex2_fixed(u)
    _, oexp, omant = _fields(out)
    y = (omant | (1 << 23)) << (oexp - oexp0)
    return f >> 17, f & 0x1FFFF, (y << 15) - 0x77E2, ((y + 1) << 15) - 1 - 0x77E2


# ---- LG2: log2 of the mantissa as a 36-bit fraction (64 segments of 2^17; a = 12, the squared term
# shifted by 1, K = 0x3345, then >> 2), plus the exponent as the integer part; a negative sum is
# complemented (one's complement), then normalised and truncated to 24 bits --------------------------------
def lg2(u):
    sign, exp, fract = _fields(u)
    idx, x = fract >> 17, fract & 0x1FFFF
    c0, c1, c2 = _coef("lg2", idx)
    res = ((c0 << 12) + c1 * x + ((c2 * square(x)) << 1) + 0x3345) >> 2
    res = np.where((fract == 0) & (exp == 127), 0, res)
    tot = res + ((exp - 127) << 36)
    neg = tot < 0
    mag = np.where(neg, -tot - 1, tot)
    lead = _bit_length(mag) - 1
    top = np.where(lead >= 23, mag >> np.maximum(lead - 23, 0), mag << np.maximum(23 - lead, 0))
    r = _pack(neg.astype(np.int64), lead - 36 + 127, top)
    r = np.where(mag == 0, np.uint32(0), r)
    r = np.where(exp == 0, np.uint32(0xFF800000), r)                                  # lg2(+-0) -> -inf
    r = np.where((sign == 1) & (exp != 0), NAN, r)
    r = np.where((exp == 255) & (sign == 0), np.where(fract == 0, INF, NAN), r)
    return r.astype(np.uint32)


def _lg2_intervals(u, out):
    """Slice e = 127 only (positive results): res in [Y, Y + 1) << (exponent - 114), one point if exact."""
    _, exp, fract = _fields(u)
    _, oexp, omant = _fields(out)
    y = omant | (1 << 23)
    sh = oexp - 114
    lo = np.where(sh >= 0, y << np.maximum(sh, 0), y >> np.maximum(-sh, 0))
    hi = np.where(sh >= 0, ((y + 1) << np.maximum(sh, 0)) - 1, lo)
    lo, hi = (lo << 2) - 0x3345, (hi << 2) + 3 - 0x3345
    zero = (out == 0) | (exp != 127)
    return fract >> 17, fract & 0x1FFFF, np.where(zero, 1, lo), np.where(zero, 0, hi)


# ---- SIN / COS: the operand (revolutions) as a fixed-point number of quarter turns, 2 quadrant bits and 23
# fraction bits (magnitude truncated; whole turns dropped), then: COS adds one quadrant and takes sign 0;
# an odd quadrant complements the fraction; quadrant bit 1 flips the sign; 64 segments of 2^17 of one
# table give sin(pi/2 * fraction) as a 38-bit fixed-point value (a = 11, no rounding constant),
# normalised and truncated to 24 bits [H100, as envytools' Tesla SFU] -----------------------------------
def _sincos_fixed(u, cos):
    """(result sign, 23-bit table input) of SIN (cos False) or COS (cos True)."""
    sign, exp, fract = _fields(u)
    m = np.where(exp == 0, 0, fract | (1 << 23))
    sh = exp - 125                                   # y * 4 with 23 fraction bits
    fx = np.where(sh >= 0, m << np.clip(sh, 0, 25), m >> np.clip(-sh, 0, 40)) & 0x1FFFFFF
    q, f = fx >> 23, fx & 0x7FFFFF
    if cos:
        q, sign = q + 1, np.zeros_like(sign)
    f = np.where(q & 1, 0x7FFFFF - f, f)
    return sign ^ ((q >> 1) & 1), f


def _sincos(u, cos):
    _, exp, _ = _fields(u)
    sign, f = _sincos_fixed(u, cos)
    idx, x = f >> 17, f & 0x1FFFF
    c0, c1, c2 = _coef("sin", idx)
    res = (c0 << 11) + c1 * x + c2 * square(x)
    lead = _bit_length(res) - 1
    top = np.where(lead >= 23, res >> np.maximum(lead - 23, 0), res << np.maximum(23 - lead, 0))
    r = _pack(sign, lead - 37 + 127, top)
    r = np.where(res == 0, (sign << 31).astype(np.uint32), r)
    r = np.where(exp == 255, NAN, r)                                                  # sin(inf), sin(NaN)
    return r.astype(np.uint32)


def sin(u):
    return _sincos(u, False)


def cos(u):
    return _sincos(u, True)


def _sincos_intervals(cos):
    def intervals(u, out):
        """res in [Y, Y + 1) << (exponent - 113) (one point if exact), 0 for a zero result; a wrong sign
        (never seen) gives an empty interval."""
        sign, f = _sincos_fixed(u, cos)
        osign, oexp, omant = _fields(out)
        y = omant | (1 << 23)
        sh = oexp - 113
        lo = np.where(sh >= 0, y << np.maximum(sh, 0), y >> np.maximum(-sh, 0))
        hi = np.where(sh >= 0, ((y + 1) << np.maximum(sh, 0)) - 1, lo)
        zero = (out & 0x7FFFFFFF) == 0
        lo, hi = np.where(zero, 0, lo), np.where(zero, 0, hi)
        bad = (osign != sign) & ~zero
        return f >> 17, f & 0x1FFFF, np.where(bad, 1, lo), np.where(bad, 0, hi)
    return intervals


def _bit_length(v):
    """Exact bit length of non-negative int64 values (0 for 0)."""
    v = np.asarray(v, np.int64)
    n = np.zeros_like(v)
    for b in (32, 16, 8, 4, 2, 1):
        big = (v >> (n + b)) > 0
        n = np.where(big, n + b, n)
    return np.where(v > 0, n + 1, 0)


def fmul_rz_2pi(u):
    """The compiler's FMUL.RZ by 1/2pi before MUFU.SIN/COS (float32 words -> operand words): how the
    measurement (a function of x) maps to the MUFU operand. The product of two floats is exact in float64."""
    with np.errstate(all="ignore"):
        x = np.asarray(u, np.uint32).view(np.float32).astype(np.float64)
        p = x * float(np.float32(0.15915493667125701904))
        r = p.astype(np.float32)
        over = np.abs(r.astype(np.float64)) > np.abs(p)
    return np.where(over, np.nextafter(r, np.float32(0)), r).view(np.uint32)


def _identity(u):
    return u


@dataclass(frozen=True)
class Spec:
    """How scripts/fit_mufu.py fits a function: table entries, C0's shift a, the squared feature, the
    measured slices (sign, exponent) that bound every segment, and intervals(u, out) -> (index, x, lo, hi):
    the range of C0 << a + C1*x + C2*sq that reproduces each measured output; table: the table it uses
    (SIN and COS share one); operand: measured input word -> MUFU operand (SIN/COS: after the FMUL.RZ)."""
    entries: int
    a: int
    sq: Callable
    fit_slices: tuple
    intervals: Callable
    model: Callable
    table: str = ""
    operand: Callable = _identity


SPEC = {
    "rcp": Spec(128, 13, lambda x: square(x << 1), ((0, 127),), _rcp_intervals, rcp),
    "rsq": Spec(128, 14, lambda x: square(x) << 2, ((0, 127), (0, 128)), _rsq_intervals, rsq),
    "ex2": Spec(64, 13, square, ((0, 127), (1, 127)), _ex2_intervals, ex2),
    "lg2": Spec(64, 12, lambda x: square(x) << 1, ((0, 127),), _lg2_intervals, lg2),
    # x in [2, 4): y in [0.318, 0.637), converted exactly; SIN sees complemented fractions (0, 0.73] and
    # direct ones [0, 0.55), COS direct [0.27, 1) and complemented (0.45, 1]: every segment, twice
    "sin": Spec(64, 11, square, ((0, 128),), _sincos_intervals(False), sin, "sin", fmul_rz_2pi),
    "cos": Spec(64, 11, square, ((0, 128),), _sincos_intervals(True), cos, "sin", fmul_rz_2pi),
}

MODELS = {"RCP": "rcp", "RSQ": "rsq", "EX2": "ex2", "LG2": "lg2", "RCP64H": "rcp", "RSQ64H": "rsq",
          "SIN": "sin", "COS": "cos"}


def evaluate(fn, u):
    """MUFU.<fn> of 32-bit words u (FP32, or a double's high word for the 64H forms) with its fitted
    model, or None when the function has no table."""
    name = MODELS.get(fn)
    if name is None or (SPEC[name].table or name) not in TABLES:
        return None
    return {"RCP64H": rcp64h, "RSQ64H": rsq64h}.get(fn, SPEC[name].model)(u)


# ---- RCP64H / RSQ64H: the operand and result are a double's high word; the high word's 20-bit mantissa
# goes through the FP32 unit (RCP/RSQ above) and the 24-bit result mantissa is truncated to 20 bits [H100] --
def _f64h(u, core, rsqrt):
    u = np.asarray(u, np.uint32)
    sign = (u >> 31).astype(np.int64)
    exp = ((u >> 20) & 0x7FF).astype(np.int64)
    m20 = (u & 0xFFFFF).astype(np.int64)
    e = exp - 1023
    e32 = 127 + (e & 1) if rsqrt else np.full_like(e, 127)
    r = core(((m20 << 3) | (e32 << 23)).astype(np.uint32)).astype(np.int64)
    oe = ((r >> 23) & 0xFF) - 127 + (-(e >> 1) if rsqrt else -e)
    bits = ((oe + 1023) << 20) + ((r & 0x7FFFFF) >> 3)
    bits = np.where(oe + 1023 <= 0, 0, bits)
    out = ((0 if rsqrt else sign) << 31) | bits
    out = np.where(exp == 0, (sign << 31) | 0x7FF00000, out)                       # +-0 -> +-inf
    if rsqrt:
        out = np.where((sign == 1) & (exp != 0), 0x7FFFFFFF, out)
        out = np.where((exp == 2047) & (sign == 0), np.where(m20 == 0, 0, 0x7FFFFFFF), out)
    else:
        out = np.where(exp == 2047, np.where(m20 == 0, sign << 31, 0x7FFFFFFF), out)
    return out.astype(np.uint32)


def rcp64h(u):
    return _f64h(u, rcp, False)


def rsq64h(u):
    return _f64h(u, rsq, True)
