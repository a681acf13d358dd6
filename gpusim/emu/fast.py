"""Specialised handlers for the instructions that dominate GEMM kernels: FFMA on registers here,
the 32/64/128-bit loads and stores in fastmem.py, simple integer forms in fastint.py.

`specialise(ins, generic, state)` resolves once per static instruction what it reads and writes
(register rows, access size, memory space) and returns a closure over that. At run time the closure
takes the fast route only when every lane of a contiguous batch executes (and, for memory, every
access is in bounds and aligned): then writes cover whole rows and no per-lane masks are needed.
Otherwise it calls the generic handler from ops.py, which defines the semantics, computes the same
result and raises the same faults.
"""

from __future__ import annotations

import numpy as np

from gpusim.emu import compiled, fastint
from gpusim.emu.fastfp64 import make_dfma
from gpusim.emu.fastmem import make_load, make_store, whole_rows
from gpusim.isa.program import RZ


def specialise(ins, generic, emu):
    """(handler, all_lanes) for `ins` in emulator `emu`: the handler to run (a specialised closure
    where one applies, else `generic`) and, where there is one, a no-argument function that runs the
    instruction for a batch of all lanes of all warps with every lane executing (None otherwise)."""
    make = _MAKERS.get(ins.opcode) or fastint.MAKERS.get(ins.opcode)
    if make is None:
        return generic, None
    try:
        fast = make(ins, generic, emu)
    except IndexError:  # a register beyond the kernel's: the generic handler reports it when it runs
        return generic, None
    if fast is None:
        return generic, None
    return fast if isinstance(fast, tuple) else (fast, None)


def _all_finite(row: np.ndarray) -> bool:
    f = row.view(np.float32)
    return bool(np.isfinite(f.max()) and np.isfinite(f.min()))


def _nan_free(row: np.ndarray) -> bool:
    return not np.isnan(row.view(np.float32).max())


def _true(row) -> bool:
    return True


def _canonical_nan(result64: np.ndarray, out32: np.ndarray) -> None:
    """NaN results are the canonical 0x7FFFFFFF (as ops.f32_result); one max (NaN propagates through
    it, the cheapest reduction numpy has) finds that there are none."""
    if np.isnan(result64.max()):
        np.copyto(out32.view(np.uint32), np.uint32(0x7FFFFFFF), where=np.isnan(result64))


def _plain_reg(op) -> bool:
    return op.kind == "reg" and op.width == 32 and not (op.negate or op.absolute or op.invert or op.suffix)


# ---- FFMA ------------------------------------------------------------------------------------------
_LOW28 = np.uint64(0x0FFFFFFF)


def _exact_bits(t: np.ndarray, bits: np.ndarray) -> bool:
    """Whether float32(t) may round twice somewhere, t the float64 sum fl64(a * b + c): it does where
    t lands exactly halfway between two floats (ops.f32_result), and such a t has its low 28 mantissa
    bits zero (as has a t that is itself a float32, the common case of exact arithmetic). Leaves
    those bits in `bits` (uint64, t's size) for `_redo`."""
    np.bitwise_and(t.view(np.uint64), _LOW28, out=bits)
    return not bits.all()


def _redo(bits: np.ndarray, a, b, c):
    """(lanes, their correct float32 values) among the lanes `_exact_bits` found, or None: a * b + c
    redone exactly there (ops._two_sum, ops._break_ties); a, b, c give the operands of given lanes as
    float64 (read before the destination is written: it may be a source)."""
    from gpusim.emu.ops import _break_ties, _two_sum

    idx = np.flatnonzero(bits == 0)
    with np.errstate(all="ignore"):
        total, err = _two_sum(a(idx) * b(idx), c(idx))
        fixed = _break_ties(total, total.astype(np.float32), err)
    wrong = fixed != total.astype(np.float32)
    return (idx[wrong], fixed[wrong]) if wrong.any() else None


def _ffma(ins, generic, emu):
    """FFMA d, a, b, c on plain registers: d = float32(fl64(a) * fl64(b) + fl64(c)) rounded once, as
    ops.ffma: one compiled loop over the lanes (compiled.ffma) where no lane's sum may round twice,
    else in numpy over reused float64 buffers, those sums redone exactly. There a multiplicand row
    read for all lanes is widened once and kept (WarpState.float64_row) until the row is written."""
    if ins.modifiers or len(ins.srcs) != 3 or len(ins.dsts) != 1:
        return None
    if not all(_plain_reg(op) for op in ins.srcs + ins.dsts) or ins.dsts[0].reg == RZ:
        return None
    if ins.srcs[2].reg == RZ:  # the addend RZ is -0.0 (ops.ffma)
        return None
    st = emu.state
    ra, rb, rc = (st.row(op.reg) for op in ins.srcs)
    rd = st.row(ins.dsts[0].reg)
    lanes = st.R.shape[1]
    f32 = st.R.view(np.float32)
    c_all, d_all = f32[rc], f32[rd]  # row views for batches of all lanes

    t, u = st.scratch(lanes)  # work arrays shared by all FFMAs
    widened, cached, forget = st.float64_row, st.cached_float64_row, st.forget
    derived = st.derived
    R = st.R

    def all_lanes():
        # the common case in one compiled loop (compiled.ffma: the same float64 operations lane by
        # lane); where a sum may round twice it writes nothing and the numpy route below redoes it
        if compiled.ffma(R, f32, ra, rb, rc, rd, 0, lanes, t):
            forget(rd)
            return
        numpy_all_lanes()

    def numpy_all_lanes():
        # a * b + c is NaN only where an operand is: finite a and b and a NaN-free c (flags kept per
        # row until it is written) spare the search for NaNs to canonicalise
        clean = derived(ra, "finite", _all_finite) and derived(rb, "finite", _all_finite) and \
            derived(rc, "nan_free", _nan_free)
        np.multiply(widened(ra), widened(rb), out=t)
        c = cached(rc)
        if c is None:
            np.copyto(u, c_all)
            c = u
        np.add(t, c, out=t)
        bits = st.scratch_bits(lanes)
        fix = _redo(bits, lambda i: widened(ra)[i], lambda i: widened(rb)[i], lambda i: c[i]) \
            if _exact_bits(t, bits) else None
        forget(rd)
        np.copyto(d_all, t, casting="same_kind")
        if fix is not None:
            d_all[fix[0]] = fix[1]
        if clean:
            derived(rd, "nan_free", _true)
        else:
            _canonical_nan(t, d_all)

    def some_lanes(sel: slice):
        p, q = st.scratch(sel.stop - sel.start)
        if compiled.ffma(R, f32, ra, rb, rc, rd, sel.start, sel.stop, p):
            forget(rd)
            return
        np.copyto(p, f32[ra, sel])
        np.copyto(q, f32[rb, sel])
        np.multiply(p, q, out=p)
        np.copyto(q, f32[rc, sel])
        np.add(p, q, out=p)
        bits = st.scratch_bits(len(p))
        fix = _redo(bits, lambda i: f32[ra, sel][i].astype(np.float64), lambda i: f32[rb, sel][i].astype(np.float64),
                    lambda i: q[i]) if _exact_bits(p, bits) else None
        st.forget(rd)
        np.copyto(f32[rd, sel], p, casting="same_kind")
        if fix is not None:
            f32[rd, sel][fix[0]] = fix[1]
        _canonical_nan(p, f32[rd, sel])

    def ffma(ex):
        if not whole_rows(ex):
            return generic(ex)
        if ex.n == lanes:
            all_lanes()
        else:
            some_lanes(ex.sel)

    all_lanes.block = (compiled.BLOCK_FFMA, (ra, rb, rc, rd), (rd,))  # (kind, operands, rows written)
    return ffma, all_lanes


_MAKERS = {"FFMA": _ffma, "DFMA": make_dfma, "LDS": make_load, "LDG": make_load, "LD": make_load,
           "STS": make_store, "STG": make_store, "ST": make_store}
