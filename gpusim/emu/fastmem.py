"""Fast paths for 32/64/128-bit loads and stores (LDS/STS, LDG/STG, LD/ST) over whole batches.

Memory is viewed as an array of access-sized units (`units(nbytes)`: uint32 for 4 bytes, an 8/16-byte
opaque type otherwise), so an aligned access is one element: a load gathers the units of all lanes at
once and a store scatters them. Bounds and alignment are checked once per batch on the lowest and
highest address and the OR of all addresses; when that check fails (or the batch is partial) the
generic handler runs instead and reports any fault exactly as before. Addresses have the bits of
ops._address (modulo 2^64).
"""

from __future__ import annotations

import numpy as np

from gpusim.emu import compiled
from gpusim.emu.memory import access_units
from gpusim.isa.program import RZ, URZ
from gpusim.isa.widths import access_bits

SUB_WORD = ("U8", "S8", "U16", "S16")
SHARED_OPCODES = ("LDS", "STS")


def whole_rows(ex) -> bool:
    """The batch is contiguous, per-lane, and every lane executes: results may replace row slices."""
    return isinstance(ex.sel, slice) and not ex.uniform and ex.full


def _access_bytes(ins) -> int | None:
    if any(m in ins.modifiers for m in SUB_WORD):
        return None  # the generic handler raises "not emulated"
    return access_bits(ins.modifiers) // 8


def _mem_operand(ins):
    mem = [s for s in ins.srcs if s.kind == "mem"]
    return mem[0] if len(mem) == 1 else None


def _plan(ins, reg_op, emu):
    """(bytes, first row, last row, locator) for a 4/8/16-byte access moving registers
    reg_op..reg_op+k, or None when the fast path does not apply."""
    nbytes, m = _access_bytes(ins), _mem_operand(ins)
    if nbytes not in (4, 8, 16) or m is None or reg_op is None or reg_op.reg + nbytes // 4 > RZ:
        return None
    st = emu.state
    return nbytes, st.row(reg_op.reg), st.row(reg_op.reg + nbytes // 4 - 1), _locator(ins, m, st, nbytes)


def _units(ex, locate, nbytes):
    """(memory as flat uint32 words, per-lane unit index, unit offset to add) for a batch the fast
    path can take (addresses recorded), or None: then the generic handler runs (and reports any fault)."""
    if not whole_rows(ex):
        return None
    found = locate(ex)
    if found is None:
        return None
    words, q, offset, addrs = found
    if addrs is not None:
        ex.emu.record_addresses(ex, addrs, nbytes)
    return words, q, offset


def _unit_index(q: np.ndarray, offset: int) -> np.ndarray:
    """q + offset (the sum is a unit of the memory: >= 0, and below 2^32 where q is uint32)."""
    if not offset:
        return q
    return q + (np.uint32(offset % 2**32) if q.dtype == np.uint32 else offset)


def make_load(ins, generic, emu):
    """LDS/LDG/LD of 4, 8 or 16 bytes into registers d..d+k: gather one unit per lane."""
    d = ins.dsts[0] if ins.dsts else None
    plan = _plan(ins, d if d is not None and d.kind == "reg" else None, emu)
    if plan is None:
        return None
    nbytes, first, last, locate = plan
    st = emu.state

    k = last + 1 - first

    def load(ex):
        found = _units(ex, locate, nbytes)
        if found is None:
            return generic(ex)
        words, q, offset = found
        for r in range(first, last + 1):
            st.forget(r)
        # one compiled loop: unit q + offset of each lane into rows first .. last (q is in bounds:
        # checked; the loop checks again and writes nothing if not, and the generic handler runs)
        if not compiled.gather(words, q, offset, k, st.R, first, ex.sel.start):
            return generic(ex)

    m = _mem_operand(ins)
    if ins.opcode in SHARED_OPCODES and m.reg is not None and m.width == 32:
        # a shared load [Rx (+ URy) + imm]: compiled.block runs it among FFMAs and DFMAs (kind,
        # operands, rows written)
        ur = -1 if m.ureg is None or m.ureg == URZ else m.ureg
        load.block = (compiled.BLOCK_LDS, (nbytes, first, last, st.row(m.reg), int(m.value or 0), ur),
                      tuple(range(first, last + 1)))
    return load


def make_store(ins, generic, emu):
    """STS/STG/ST of 4, 8 or 16 bytes from registers s..s+k: scatter one unit per lane (when two
    lanes write one address the later lane wins, as in the generic handler)."""
    plan = _plan(ins, next((s for s in ins.srcs if s.kind == "reg"), None), emu)
    if plan is None:
        return None
    nbytes, first, last, locate = plan
    st = emu.state

    def store(ex):
        found = _units(ex, locate, nbytes)
        if found is None:
            return generic(ex)
        words, q, offset = found
        # one compiled loop, lane by lane (q is in bounds: checked; where the loop finds it is not, it
        # writes nothing and numpy's assignment below reports it)
        if compiled.scatter(words, q, offset, last + 1 - first, st.R, first, ex.sel.start):
            return
        units, q = access_units(words, nbytes), _unit_index(q, offset)
        if first == last:
            units[q] = st.R[first, ex.sel]
        else:
            rows = np.ascontiguousarray(st.R[first:last + 1, ex.sel].T)
            units[q] = rows.view(units.dtype).reshape(-1)

    return store


# ---- where the lanes' accesses go -----------------------------------------------------------------
def _locator(ins, m, st, nbytes: int):
    """Closure ex -> (words, q, offset, addrs): the memory as flat uint32 words, the unit (of
    `nbytes`, as access_units numbers them) of every lane's access less `offset`, and the lanes'
    addresses for the trace (uint64; uint32 for a shared [Rx + imm], half the log's memory; None
    when the step is not recorded); None when some access would fault (out of bounds, misaligned,
    outside every buffer)."""
    shift = nbytes.bit_length() - 1
    addresses = _addresser(m, st)
    plain = m.reg is not None and m.width == 32 and (m.ureg is None or m.ureg == URZ)
    base, imm = (st.row(m.reg) if plain else None), int(m.value or 0)
    lanes = st.R.shape[1]

    def shared(ex):
        emu, smem = ex.emu, ex.emu.shared
        if plain:  # [Rx + imm]: bounds from the register's summary (kept per row while Rx is unchanged)
            if ex.n == lanes:
                lo, hi, bits, q = st.derived(base, ("shared", nbytes), lambda regs: _summary(
                    regs, emu.shared_unit_base(nbytes), shift))
            else:
                lo, hi, bits, q = _summary(st.R[base, ex.sel], emu.shared_unit_base(nbytes)[ex.sel], shift)
            if not smem.fits(lo + imm, hi + imm, bits | imm, nbytes):
                return None
            offset = imm >> shift  # q + offset >= 0
            addrs = st.R[base, ex.sel] + np.uint32(imm % 2**32) if emu.record else None  # < size: no wrap
        else:
            a = addresses(ex)
            if not smem.fits(int(a.min()), int(a.max()), int(np.bitwise_or.reduce(a)), nbytes):
                return None
            q, offset = emu.shared_unit_base(nbytes)[ex.sel] + (a >> shift), 0
            addrs = a.view(np.uint64)
        return smem.flat_words, q, offset, addrs

    def global_(ex):
        a = addresses(ex)
        q = ex.emu.memory.unit_index(a, nbytes)
        return None if q is None else (ex.emu.memory.words, q, 0, a.view(np.uint64))

    return shared if ins.opcode in SHARED_OPCODES else global_


def _summary(regs: np.ndarray, unit_base: np.ndarray, shift: int):
    """Lowest, highest and OR of the 32-bit address registers, and each lane's unit before the
    immediate is added (when all accesses are aligned, (r + imm) >> shift == (r >> shift) + (imm >> shift))."""
    q = unit_base + (regs >> shift)
    q.setflags(write=False)
    return int(regs.min()), int(regs.max()), int(np.bitwise_or.reduce(regs)), q


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
