"""Specialised handlers for the instructions that dominate GEMM kernels: FFMA on registers and the
32/64/128-bit loads and stores.

`specialise(ins, generic, state)` resolves once per static instruction what it reads and writes
(register rows, access size, memory space) and returns a closure over that. At run time the closure
takes the fast route only when every lane of a contiguous batch executes (and, for memory, every
access is in bounds and aligned): then writes cover whole rows and no per-lane masks are needed.
Otherwise it calls the generic handler from ops.py, which defines the semantics, computes the same
result and raises the same faults.
"""

from __future__ import annotations

import numpy as np

from gpusim.isa.program import RZ, URZ
from gpusim.isa.widths import access_bits

SUB_WORD = ("U8", "S8", "U16", "S16")


def specialise(ins, generic, state):
    """The handler to run for `ins`: a specialised closure where one applies, else `generic`."""
    make = _MAKERS.get(ins.opcode)
    if make is None:
        return generic
    try:
        fast = make(ins, generic, state)
    except IndexError:  # a register beyond the kernel's: the generic handler reports it when it runs
        return generic
    return fast or generic


def _whole_rows(ex) -> bool:
    """The batch is contiguous, per-lane, and every lane executes: results may replace row slices."""
    return isinstance(ex.sel, slice) and not ex.uniform and ex.full


def _plain_reg(op) -> bool:
    return op.kind == "reg" and op.width == 32 and not (op.negate or op.absolute or op.invert or op.suffix)


# ---- FFMA ------------------------------------------------------------------------------------------
def _ffma(ins, generic, st):
    """FFMA d, a, b, c on plain registers: d = float32(fl64(a) * fl64(b) + fl64(c)), as ops.ffma,
    computed in reused float64 buffers. A multiplicand row read for all lanes is widened once and
    kept (WarpState.float64_row) until the row is written: GEMM loops reuse each one many times."""
    if ins.modifiers or len(ins.srcs) != 3 or len(ins.dsts) != 1:
        return None
    if not all(_plain_reg(op) for op in ins.srcs + ins.dsts) or ins.dsts[0].reg == RZ:
        return None
    ra, rb, rc = (st.row(op.reg) for op in ins.srcs)
    rd = st.row(ins.dsts[0].reg)
    lanes = st.R.shape[1]

    def ffma(ex):
        if not _whole_rows(ex):
            return generic(ex)
        sel = ex.sel
        t, u = st.scratch(ex.n)
        whole = ex.n == lanes
        a = st.float64_row(ra) if whole else _widen(st, ra, sel, t)
        b = st.float64_row(rb) if whole else _widen(st, rb, sel, u)
        np.multiply(a, b, out=t)
        c = st.cached_float64_row(rc) if whole else None
        np.add(t, c if c is not None else _widen(st, rc, sel, u), out=t)
        st.forget(rd)
        np.copyto(st.R[rd, sel].view(np.float32), t, casting="same_kind")

    return ffma


def _widen(st, row: int, sel: slice, out: np.ndarray) -> np.ndarray:
    """Register row `row` over `sel` as float32 widened to float64, into `out`."""
    np.copyto(out, st.R[row, sel].view(np.float32))
    return out


# ---- loads and stores --------------------------------------------------------------------------------
def _access_bytes(ins) -> int | None:
    if any(m in ins.modifiers for m in SUB_WORD):
        return None  # the generic handler raises "not emulated"
    return access_bits(ins.modifiers) // 8


def _addresser(m, st):
    """Closure: the int64 address of every lane of the batch for memory operand `m`, with the bits of
    ops._address (base register or pair, plus uniform register, plus immediate, modulo 2^64)."""
    lo = st.row(m.reg) if m.reg is not None else None
    hi = st.row(m.reg + 1) if m.reg is not None and m.width == 64 and m.reg != RZ else None
    ureg = m.ureg if m.ureg is not None and m.ureg != URZ else None
    offset = int(m.value or 0)

    def address(ex) -> np.ndarray:
        a = st.R[lo, ex.sel].astype(np.int64) if lo is not None else np.zeros(ex.n, np.int64)
        if hi is not None:
            a |= st.R[hi, ex.sel].astype(np.int64) << 32
        if ureg is not None:
            a += np.repeat(st.UR[ureg, ex.wids].astype(np.int64), 32)
        if offset:
            a += offset
        return a

    return address


def _space(ins):
    """'shared' or 'global' for the memory instructions specialised here."""
    return "shared" if ins.opcode in ("LDS", "STS") else "global"


def _word_index(ex, space: str, addrs: np.ndarray, nbytes: int):
    """Flat word index of every lane's access, or None when some access would fault."""
    emu = ex.emu
    if space == "shared":
        return emu.shared.flat_index(emu.lane_cta[ex.sel], addrs, nbytes)
    return emu.memory.flat_index(addrs, nbytes)


def _words(ex, space: str) -> np.ndarray:
    return ex.emu.shared.flat if space == "shared" else ex.emu.memory.words


def _load(ins, generic, st):
    """LDS/LDG/LD of 32, 64 or 128 bits into a register range: gather the words for all lanes."""
    nbytes = _access_bytes(ins)
    mem = [s for s in ins.srcs if s.kind == "mem"]
    d = ins.dsts[0] if ins.dsts else None
    if nbytes not in (4, 8, 16) or len(mem) != 1 or d is None or d.kind != "reg" or d.reg == RZ:
        return None
    rows = [st.row(d.reg + w) for w in range(nbytes // 4)]
    address, space = _addresser(mem[0], st), _space(ins)

    def load(ex):
        if not _whole_rows(ex):
            return generic(ex)
        addrs = address(ex)
        idx = _word_index(ex, space, addrs, nbytes)
        if idx is None:
            return generic(ex)
        ex.emu.record_addresses(ex, addrs.view(np.uint64), nbytes)
        words = _words(ex, space)
        for w, r in enumerate(rows):
            st.forget(r)
            np.take(words, idx + w if w else idx, out=st.R[r, ex.sel], mode="clip")  # idx checked above

    return load


def _store(ins, generic, st):
    """STS/STG/ST of 32, 64 or 128 bits from a register range: scatter the words of all lanes (a
    later lane wins when two lanes write one word, as in the generic handler)."""
    nbytes = _access_bytes(ins)
    mem = [s for s in ins.srcs if s.kind == "mem"]
    data = next((s for s in ins.srcs if s.kind == "reg"), None)
    if nbytes not in (4, 8, 16) or len(mem) != 1 or data is None:
        return None
    rows = [st.row(RZ if data.reg == RZ else data.reg + w) for w in range(nbytes // 4)]
    address, space = _addresser(mem[0], st), _space(ins)

    def store(ex):
        if not _whole_rows(ex):
            return generic(ex)
        addrs = address(ex)
        idx = _word_index(ex, space, addrs, nbytes)
        if idx is None:
            return generic(ex)
        ex.emu.record_addresses(ex, addrs.view(np.uint64), nbytes)
        words = _words(ex, space)
        for w, r in enumerate(rows):
            words[idx + w if w else idx] = st.R[r, ex.sel]

    return store


_MAKERS = {"FFMA": _ffma, "LDS": _load, "LDG": _load, "LD": _load, "STS": _store, "STG": _store, "ST": _store}
