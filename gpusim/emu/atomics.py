"""Atomic memory operations: ATOMS (shared memory), ATOMG and REDG (global memory; REDG returns
nothing), ATOM and RED (generic addresses).

    ATOMS.op d, [a], b          ATOMG.E.op Pd, d, [a], b          REDG.E.op [a], b
    ATOMS.CAS d, [a], cmp, new  ATOMG.E.CAS Pd, d, [a], cmp, new  ATOMS.CAST.SPIN d, [a], cmp, new

Each lane reads the word at its address, writes op(old, b) back and (with a destination) gets old
[PTX ISA atom/red]: ADD, MIN, MAX (.S32/.S64 signed, else unsigned), AND, OR, XOR, EXCH,
INC (old >= b ? 0 : old + 1), DEC (old == 0 or old > b ? b : old - 1), CAS (new where old == cmp),
POPC.INC (no data operand: each active lane adds 1, the form ptxas gives atomicAdd(p, 1); from the SASS
form, no golden kernel covers it),
and CAST.SPIN, the compare-and-store of the CAS loops nvcc writes for the atomics the hardware lacks
(64-bit shared add/min/max, float shared add): it stores new where old == cmp and returns 1 there,
0 elsewhere (the loop retries while it is not 1 [difftest2 golden, d2_atoms]). Float adds (.F32 with
.FTZ: denormal operands and results are zero; .F64) round to nearest; a NaN F32 sum is the canonical
0x7FFFFFFF, as FADD's (the golden sums are of small integers: FTZ and NaN here follow the PTX ISA and
FADD, not a measurement).

Lanes whose addresses meet apply their operations one after the other in lane order (the batch's
warps in order): the hardware's order is not specified, so only results that every order gives are
checked (the golden kernels use commutative operations on shared targets and take return values only
from a lane's own address)."""

from __future__ import annotations

import numpy as np

from gpusim.emu.memory import SHARED_WINDOW_HI
from gpusim.emu.ops import CANONICAL_NAN32, _address, _mem_operand, op
from gpusim.emu.state import U32

_INT_OPS = {
    "ADD": lambda old, b: old + b, "MIN": np.minimum, "MAX": np.maximum, "AND": np.bitwise_and,
    "OR": np.bitwise_or, "XOR": np.bitwise_xor, "EXCH": lambda old, b: b,
    "INC": lambda old, b: np.where(old >= b, old.dtype.type(0), old + old.dtype.type(1)),
    "DEC": lambda old, b: np.where((old == 0) | (old > b), b, old - old.dtype.type(1)),
}
_COMMUTATIVE = {"ADD": np.add, "MIN": np.minimum, "MAX": np.maximum, "AND": np.bitwise_and,
                "OR": np.bitwise_or, "XOR": np.bitwise_xor}


def _dtype(mods) -> np.dtype:
    if "F32" in mods:
        return np.dtype(np.float32)
    if "F64" in mods:
        return np.dtype(np.float64)
    wide = any(m in mods for m in ("64", "S64", "U64"))
    signed = any(m in mods for m in ("S32", "S64"))
    return np.dtype({(False, False): np.uint32, (False, True): np.int32, (True, False): np.uint64,
                     (True, True): np.int64}[wide, signed])


def _f32_add(old: np.ndarray, b: np.ndarray, ftz: bool) -> np.ndarray:
    """float32 old + b rounded to nearest (the float64 sum of two floats rounds once to float32)."""
    tiny = np.float32(np.finfo(np.float32).tiny)
    if ftz:
        old = np.where(np.abs(old) < tiny, np.copysign(np.float32(0), old), old)
        b = np.where(np.abs(b) < tiny, np.copysign(np.float32(0), b), b)
    with np.errstate(all="ignore"):
        r = (old.astype(np.float64) + b.astype(np.float64)).astype(np.float32)
    if ftz:
        r = np.where(np.abs(r) < tiny, np.copysign(np.float32(0), r), r)
    return np.where(np.isnan(r), CANONICAL_NAN32.view(np.float32), r)


def _operation(kind: str, dtype: np.dtype, mods):
    if dtype == np.float32 and kind == "ADD":
        return lambda old, b: _f32_add(old, b, "FTZ" in mods)
    if dtype == np.float64 and kind == "ADD":
        return lambda old, b: old + b
    if dtype.kind == "f" or kind not in _INT_OPS:
        raise NotImplementedError(f"atomic {kind} on {dtype}")
    return _INT_OPS[kind]


def _target(ex, addrs: np.ndarray, nbytes: int, dtype: np.dtype):
    """(memory as a flat array of `dtype`, each lane's element index) for the instruction's space;
    faults (out of bounds, misaligned) as loads and stores do."""
    emu, opc = ex.emu, ex.ins.opcode
    shared = opc == "ATOMS"
    if opc in ("ATOM", "RED"):  # generic: the shared window or global memory
        inside = (addrs >> np.uint64(32)) == np.uint64(SHARED_WINDOW_HI)
        if inside.any() and not inside.all():
            raise NotImplementedError("a generic atomic whose lanes address both shared and global memory")
        shared = bool(inside.any())
        addrs = addrs & np.uint64(0xFFFFFFFF) if shared else addrs
    if shared:
        smem = emu.shared
        offset = smem._offset(addrs, nbytes)
        per_row = smem.words.shape[1] * 4 // nbytes
        return smem.words.reshape(-1).view(dtype), emu.shared_rows(ex) * per_row + offset // nbytes
    return emu.memory.arena.view(dtype), emu.memory._offset(addrs, nbytes) // nbytes


def _values(ex, i: int, dtype: np.dtype) -> np.ndarray:
    """Source operand i for the executing lanes, as `dtype` (a register pair for 64-bit types)."""
    raw = ex.u64(i) if dtype.itemsize == 8 else ex.u32(i)
    return raw[ex.active].view(dtype)


def _serial(memory: np.ndarray, idx: np.ndarray, update, *operands) -> np.ndarray:
    """Apply update(old, *operands) lane by lane in lane order where addresses meet (all lanes with
    distinct addresses at once): each round takes the first remaining lane of every address. The
    old value each lane saw."""
    old = np.empty(len(idx), memory.dtype)
    remaining = np.arange(len(idx))
    while len(remaining):
        _, first = np.unique(idx[remaining], return_index=True)
        lanes = remaining[first]
        where = idx[lanes]
        seen = memory[where]
        old[lanes] = seen
        memory[where] = update(seen, *(o[lanes] for o in operands))
        if len(lanes) == len(remaining):
            break
        keep = np.ones(len(remaining), bool)
        keep[first] = False
        remaining = remaining[keep]
    return old


@op("ATOMS", "ATOMG", "ATOM", "REDG", "RED")
def atomic(ex):
    ins = ex.ins
    mods = ins.modifiers
    kind = next((m for m in mods if m in (*_INT_OPS, "CAS", "CAST")), None)
    popc = "POPC" in mods and kind == "INC"  # ATOMS.POPC.INC.32 RZ, [a]: atomicAdd(p, 1), no data operand
    if popc:
        kind = "ADD"  # each active lane adds 1
    if kind is None:
        raise NotImplementedError(f"atomic operation {'.'.join(mods)}")
    dtype = _dtype(mods)
    nbytes = dtype.itemsize
    addrs = _address(ex, _mem_operand(ex))
    ex.emu.record_addresses(ex, addrs, nbytes)
    memory, idx = _target(ex, addrs, nbytes, dtype)
    data = [i for i, s in enumerate(ins.srcs) if s.kind != "mem"]
    dst = next((j for j, d in enumerate(ins.dsts) if d.kind == "reg"), None)
    pdst = next((d for d in ins.dsts if d.kind == "pred"), None)
    if pdst is not None and pdst.reg != 7:
        raise NotImplementedError(f"atomic predicate destination {pdst.text}")
    returns = dst is not None and ins.dsts[dst].reg != 255
    if kind in ("CAS", "CAST"):
        cmp, new = _values(ex, data[0], dtype), _values(ex, data[1], dtype)
        old = _serial(memory, idx, lambda o, c, n: np.where(o == c, n, o), cmp, new)
        if kind == "CAST":
            old = (old == cmp).astype(dtype)  # 1 where it stored
    else:
        b = np.ones(int(ex.active.sum()), dtype) if popc else _values(ex, data[0], dtype)
        if not returns and kind in _COMMUTATIVE and dtype.kind in "iu":
            _COMMUTATIVE[kind].at(memory, idx, b)  # the same result in any order
            return
        old = _serial(memory, idx, _operation(kind, dtype, mods), b)
    if returns:
        full = np.zeros(ex.n, np.uint64 if nbytes == 8 else U32)
        full[ex.active] = old.view(full.dtype)
        if nbytes == 8:
            ex.write64(dst, full)
        else:
            ex.write(dst, full)
