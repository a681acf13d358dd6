"""The FFMA and DFMA fast paths' arithmetic as numba loops over lanes (the GEMMs' inner loops).

FFMA does per lane exactly the IEEE float64 operations, in the same order, of the numpy code it
stands for (fast.py's); numba compiles without fast-math, so nothing is reassociated or fused into
an fma. DFMA computes the fused multiply-add itself, which is what fastfp64.fma_round_to_odd computes
wherever it is taken (see `dfma`). So the results are the same to the bit. What this saves is
numpy's per-call overhead: a GEMM step is one instruction over 16-32 warps, and the numpy versions
spent most of their time in the dozen or so array calls per instruction. `block` runs a straight-line
run of them (and shared loads) in one call.

Both read their operands from the register file (`R[reg, lane]`, lanes `start:stop`) and write the
destination only once every lane is known to take the fast path; otherwise they write nothing and
return False, and the caller takes the numpy route (which handles every case).

The functions are self-contained (no calls into other modules' numba code), so numba's own cache,
keyed by this file, is never stale.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

_LOW28 = np.uint64(0x0FFFFFFF)
_CANONICAL_NAN32 = np.uint32(0x7FFFFFFF)
_LOW32 = np.uint64(0xFFFFFFFF)
_SHIFT32 = np.uint64(32)

# fastfp64's constants (the round-to-odd FMA's range; see its module docstring)
SPLIT = 134217729.0
BIG = 2.0**995
TINY = 2.0**-960


@njit(cache=True, nogil=True)
def ffma(R, F, ra, rb, rc, rd, start, stop, t):
    """R[rd] = float32(fl64(a) * fl64(b) + fl64(c)) for lanes start:stop (F: R viewed as float32;
    NaN results the canonical 0x7FFFFFFF, as ops.f32_result), the float64 sum kept in t. False
    (nothing written) where some lane's sum has its low 28 mantissa bits zero: there the rounding
    to float32 may round twice, and fast.py's numpy path redoes those lanes exactly (so does any
    batch with an infinite or NaN sum: their low bits are zero)."""
    n = stop - start
    a, b, c = F[ra, start:stop], F[rb, start:stop], F[rc, start:stop]  # (contiguous rows: vector code)
    bits = t[:n].view(np.uint64)
    exact = False  # (no early exit, so that the loop vectorises)
    for i in range(n):
        x = np.float64(a[i]) * np.float64(b[i]) + np.float64(c[i])
        t[i] = x
        exact |= (bits[i] & _LOW28) == 0
    if exact:
        return False
    d = R[rd, start:stop]
    for i in range(n):
        x = t[i]
        d[i] = _CANONICAL_NAN32 if x != x else np.float32(x).view(np.uint32)
    return True


@njit(cache=True, nogil=True)
def _pair(R, row, lane):
    bits = np.uint64(np.uint64(R[row, lane]) | (np.uint64(R[row + 1, lane]) << _SHIFT32))
    return bits.view(np.float64)


@intrinsic
def _fused(typingctx, a, b, c):
    """a * b + c rounded once (LLVM's fma: the processor's fused multiply-add, or the C library's fma
    where it has none). numba fuses nothing by itself (no fast-math), so this is the only fused
    operation here."""
    if not all(isinstance(t, types.Float) for t in (a, b, c)):
        return None

    def codegen(context, builder, signature, args):
        f64 = ir.DoubleType()
        fn = builder.module.declare_intrinsic("llvm.fma", [f64], ir.FunctionType(f64, [f64, f64, f64]))
        return builder.call(fn, [context.cast(builder, v, t, types.float64)
                                 for v, t in zip(args, signature.args)])

    return types.float64(a, b, c), codegen


@njit(cache=True, nogil=True)
def dfma(R, ra, rb, rc, rd, start, stop, out):
    """Pair rd:rd+1 = fma(a, b, c) on register pairs, lanes start:stop, the result kept in out. False
    (nothing written) where a lane is outside the range of fastfp64.fma_round_to_odd: |a| or |b| not
    below 2^995, a product (a * b rounded) or result not in [2^-960, inf), anything NaN (the
    comparisons fail). In that range rounding to odd (Boldo and Melquiond, see fastfp64) gives the
    exactly rounded fma, so the fused operation gives the same bits (tests/test_fastfp64.py checks
    both against each other, ties and the edges of the range included); it is 3-4x faster than the
    two dozen operations of the algorithm. The loop has no branches (so that it vectorises): every
    lane is computed and the range checks are and-ed."""
    n = stop - start
    ok = True
    for i in range(n):
        a = _pair(R, ra, start + i)
        b = _pair(R, rb, start + i)
        c = _pair(R, rc, start + i)
        uh = a * b
        r = _fused(a, b, c)
        mag_uh, mag_r = abs(uh), abs(r)
        ok &= (abs(a) < BIG) & (abs(b) < BIG) & (mag_uh >= TINY) & (mag_uh < np.inf) & (mag_r >= TINY) & \
            (mag_r < np.inf)
        out[i] = r
    if not ok:
        return False
    for i in range(n):
        bits = np.float64(out[i]).view(np.uint64)
        R[rd, start + i] = np.uint32(bits & _LOW32)
        R[rd + 1, start + i] = np.uint32(bits >> _SHIFT32)
    return True


@njit(cache=True, nogil=True)
def _units_inside(words, q, offset, k):
    """Whether every unit q[i] + offset of k words lies inside `words` (gather's and scatter's check)."""
    units = len(words) // k
    for i in range(len(q)):
        u = np.int64(q[i]) + offset
        if u < 0 or u >= units:
            return False
    return True


@njit(cache=True, nogil=True)
def gather(words, q, offset, k, R, first, start):
    """A load of k-word units (fastmem.make_load): R[first + j, start + i] = words[(q[i] + offset) * k + j]
    for each lane i, `words` the memory as flat uint32 words. False (nothing written) where a unit is
    outside `words` (the caller checked the bounds already; this only keeps a wrong index from
    reading beyond the array)."""
    if not _units_inside(words, q, offset, k):
        return False
    for i in range(len(q)):
        base = (np.int64(q[i]) + offset) * k
        for j in range(k):
            R[first + j, start + i] = words[base + j]
    return True


@njit(cache=True, nogil=True)
def scatter(words, q, offset, k, R, first, start):
    """A store of k-word units (fastmem.make_store): words[(q[i] + offset) * k + j] = R[first + j,
    start + i] for each lane i in order (where two lanes store to one unit the later one's value
    stays, as numpy's assignment leaves it). False (nothing written) where a unit is outside `words`."""
    if not _units_inside(words, q, offset, k):
        return False
    for i in range(len(q)):
        base = (np.int64(q[i]) + offset) * k
        for j in range(k):
            words[base + j] = R[first + j, start + i]
    return True


# ---- straight-line runs of FFMA, DFMA and shared loads (emulator._run_batch's blocks) ----------------
BLOCK_FFMA, BLOCK_DFMA, BLOCK_LDS = 1, 2, 3  # kinds of `block` (0: none)
_ffma, _dfma = ffma, dfma  # (what `block` calls, whatever a test puts in place of the module's names)


@njit(cache=True, nogil=True)
def block(R, F, kinds, args, pc, k, t, out, smem, lane_row, smem_size, addr, record, UR):
    """Instructions pc .. pc + k - 1 for every lane of every warp, one after the other, each as its
    fast path does it: FFMA as `ffma`, DFMA as `dfma`, and a shared load [Rx + imm] or [Rx + URy +
    imm] of 4, 8 or 16 bytes as fastmem's (bounds and alignment from the lowest, highest and OR of
    Rx (+ URy of the lane's warp, lane i in warp i // 32) over all lanes and the immediate; one unit
    per lane gathered from `smem`, the CTA slots' shared memory as flat words, lane i's slot
    beginning at word lane_row[i]). How many ran: the first that its fast path would not take (an
    FFMA that may round twice, a DFMA out of range, a load out of bounds or misaligned) is not run,
    nothing of it written, and the caller runs it the ordinary way. With `record`, the j-th load's
    addresses (per lane, inside shared memory: checked) go to addr[j].

    args per instruction: FFMA/DFMA (ra, rb, rc, rd); a load (bytes, first row, last row, Rx's row,
    imm, URy's row or -1)."""
    lanes = R.shape[1]
    loads = 0
    for j in range(k):
        p = pc + j
        kind = kinds[p]
        if kind == BLOCK_FFMA:
            if not _ffma(R, F, args[p, 0], args[p, 1], args[p, 2], args[p, 3], 0, lanes, t):
                return j
        elif kind == BLOCK_DFMA:
            if not _dfma(R, args[p, 0], args[p, 1], args[p, 2], args[p, 3], 0, lanes, out):
                return j
        else:
            nbytes, first, last, base, imm, ur = args[p, 0], args[p, 1], args[p, 2], args[p, 3], args[p, 4], args[p, 5]
            regs = R[base]
            lo = np.int64(1) << 62
            hi = -lo
            bits = np.int64(0)
            for i in range(lanes):
                v = np.int64(regs[i]) + (np.int64(UR[ur, i // 32]) if ur >= 0 else 0)
                lo = min(lo, v)
                hi = max(hi, v)
                bits |= v
            if not (lo + imm >= 0 and hi + imm + nbytes <= smem_size and (bits | imm) & (nbytes - 1) == 0):
                return j
            words = nbytes // 4
            units = len(smem) // words
            offset = imm // nbytes  # (imm >> log2(bytes))
            for i in range(lanes):
                v = np.int64(regs[i]) + (np.int64(UR[ur, i // 32]) if ur >= 0 else 0)
                u = lane_row[i] // words + v // nbytes + offset
                if u < 0 or u >= units:
                    return j
            if record:
                for i in range(lanes):
                    v = np.int64(regs[i]) + (np.int64(UR[ur, i // 32]) if ur >= 0 else 0)
                    addr[loads, i] = np.uint32(v + imm)
            loads += 1
            for i in range(lanes):
                v = np.int64(regs[i]) + (np.int64(UR[ur, i // 32]) if ur >= 0 else 0)
                at = (lane_row[i] // words + v // nbytes + offset) * words
                for w in range(last + 1 - first):
                    R[first + w, i] = smem[at + w]
    return k
