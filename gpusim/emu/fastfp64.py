"""DFMA on plain register pairs, the inner loop of the FP64 GEMMs, without the per-operand packing of
the generic handler (ops.dfma, which defines the semantics).

The fused multiply-add is computed exactly from float64 operations (numpy has no fma) with
Boldo and Melquiond's emulation through rounding to odd [BM08, "Emulation of a FMA and correctly
rounded sums: proved algorithms using rounding to odd", IEEE Trans. Computers 57(4), Algorithm 5]:

    (uh, ul) = exact product a * b            (Dekker's split)
    (th, tl) = exact sum c + uh               (TwoSum)
    v        = tl + ul rounded to odd         (TwoSum (s, e), then if e != 0 and s is even one ulp
                                               from s towards e's sign)
    result   = th + v rounded to nearest      = fma(a, b, c)

The theorem needs no underflow and no overflow: where any lane is outside that range (a product or
result below 2^-960 or zero, a factor beyond 2^995, anything not finite) the whole batch takes the
generic path instead, which handles every case. `fma_round_to_odd` is the algorithm over arrays (the
reference, checked against exact arithmetic); the handler runs it lane by lane as one compiled loop
(compiled.dfma: the same operations in the same order, so the same bits) reading the register pairs
in place: in numpy the dozen array operations per instruction cost far more than the arithmetic.
"""

from __future__ import annotations

import numpy as np

from gpusim.emu import compiled
from gpusim.emu.state import Exec
from gpusim.isa.program import RZ

SPLIT = 134217729.0  # 2^27 + 1: Dekker's split of a float64 into two 26-bit halves
BIG = 2.0**995  # beyond this the split overflows
TINY = 2.0**-960  # below this products lose bits to underflow


def halves(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dekker's split: x = hi + lo, each with at most 26 significant bits."""
    t = SPLIT * x
    hi = t - (t - x)
    return hi, x - hi


def fma_round_to_odd(a, b, c, a_halves=None, b_halves=None):
    """fma(a, b, c) for every lane, or None if a lane is outside the theorem's range (see module)."""
    with np.errstate(all="ignore"):
        ah, al = a_halves if a_halves is not None else halves(a)
        bh, bl = b_halves if b_halves is not None else halves(b)
        uh = a * b
        ul = ((ah * bh - uh) + ah * bl + al * bh) + al * bl
        th = c + uh
        bv = th - c
        tl = (c - (th - bv)) + (uh - bv)
        s = tl + ul
        bv = s - tl
        e = (tl - (s - bv)) + (ul - bv)
        even = (s.view(np.int64) & 1) == 0
        inexact = e != 0
        v = np.where(inexact & even, np.nextafter(s, np.copysign(np.inf, e)), s)  # one ulp towards e's side
        r = th + v
        mag = np.abs(uh)
        if not (mag.min() >= TINY and mag.max() < np.inf):
            return None
        mag = np.abs(r)
        if not (mag.min() >= TINY and mag.max() < np.inf):
            return None
    return r


def _pair_reg(op) -> bool:
    return op.kind == "reg" and op.width == 64 and op.reg != RZ and \
        not (op.negate or op.absolute or op.invert or op.suffix)


def make_dfma(ins, generic, emu):
    """DFMA d, a, b, c on plain 64-bit register pairs (no rounding modifier); None otherwise."""
    if ins.modifiers or len(ins.srcs) != 3 or len(ins.dsts) != 1:
        return None
    if not all(_pair_reg(op) for op in ins.srcs + ins.dsts):
        return None
    st = emu.state
    ra, rb, rc = (st.row(op.reg) for op in ins.srcs)
    rd = st.row(ins.dsts[0].reg)
    st.row(ins.dsts[0].reg + 1)
    for op in ins.srcs:
        st.row(op.reg + 1)  # IndexError (-> generic) for a pair beyond the kernel's registers
    if any(abs(r - rd) == 1 for r in (ra, rb, rc)):  # overlapping pairs: leave them to the generic path
        return None
    R, lanes, forget = st.R, st.R.shape[1], st.forget
    out = st.scratch(lanes)[0]

    def dfma(ex):
        sel = ex.sel
        if isinstance(sel, slice) and sel.step is None and not ex.uniform and ex.full:
            start, stop = sel.start, sel.stop
            if compiled.dfma(R, ra, rb, rc, rd, start, stop, st.scratch(stop - start)[0]):
                forget(rd)
                forget(rd + 1)
                return None
        return generic(ex)

    def all_lanes():
        """Every lane of every warp, all executing (the emulator's all-lanes step: no Exec to build
        unless the generic path has to run)."""
        if compiled.dfma(R, ra, rb, rc, rd, 0, lanes, out):
            forget(rd)
            forget(rd + 1)
            return
        generic(Exec(emu, ins, np.arange(st.n_warps), slice(0, lanes), np.ones(lanes, bool), False, True))

    all_lanes.block = (compiled.BLOCK_DFMA, (ra, rb, rc, rd), (rd, rd + 1))  # (kind, operands, rows written)
    return dfma, all_lanes
