"""Sampled mode's main-loop bookkeeping, compiled: gpusim/timing/sampling.py's `LoopState` and the
sampler's moves over arrays (its docstrings state the rules), so that the engine makes up a left-out
loop iteration where the object model does, in the middle of an instruction, without stopping.

Per warp id (`st.lp`, one row; `st.lp_backs[boff:boff + bn]` its recorded back edges) the fields of
`LoopState`: positions are the object model's, in the warp's stream as the sampler sees it (the
trace's records with the made-up iterations inserted where the left-out ones were). The engine's
records of a warp stay where the trace put them (`st.warp_begin[gid]` on); a made-up iteration is
appended to the record arrays and the warp jumps there and back (`jump_at`, `jump_to` of its slot):
- `at0`: where the trace left iterations out (-1: nowhere), in the trace's own positions; the
  iterations made up so far (`nsyn`) sit there in the sampler's stream, so a position p at or past
  at0 + nsyn * length is the trace's record p - nsyn * length;
- a warp slot's `shift`: its position in the sampler's stream minus its position in the arrays.
Strides per warp and parity are worked out the first time an iteration of that parity is made up
(`lp_sv`: 0 not yet, 1 done; entries `str_*[lp_soff:lp_soff + lp_sn]`), as `Sampler._strides` does.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from gpusim.timing.compiled import lru as L
from gpusim.timing.sampling import PERIOD
from gpusim.timing.static import GLOAD, GSTORE
from gpusim.trace.elide import TraceTooShort

# st.glob entries of sampled mode: records, sector rows, sectors and stride entries in use
G_NREC, G_NROWS, G_NSEC, G_NSTR = 6, 7, 8, 9


@njit
def bisect_left(st, gid, v):
    """`bisect_left(LoopState.backs, v)`."""
    b = st.lp_backs
    lo = st.lp[gid].boff
    base = lo
    hi = lo + st.lp[gid].bn
    while lo < hi:
        mid = (lo + hi) // 2
        if b[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo - base


@njit
def back(st, gid, i):
    return st.lp_backs[st.lp[gid].boff + i]


@njit
def total(st, gid):
    """`LoopState.total`: back edges of the whole stream."""
    lp = st.lp[gid]
    return lp.bn + lp.consumed + (lp.g_hi - lp.g_lo if lp.cut >= 0 else 0)


@njit
def iterations(st, gid, v):
    """`Sampler.iterations` of a warp at position `v`."""
    return bisect_left(st, gid, v) + st.lp[gid].consumed


@njit
def progress(st, gid, v):
    """`Sampler.progress` of a warp at position `v` (the same operations in the same order)."""
    lp = st.lp[gid]
    i = bisect_left(st, gid, v)
    if 1 <= i < lp.bn:
        return i - 1 + (v - back(st, gid, i - 1)) / (back(st, gid, i) - back(st, gid, i - 1)) + lp.consumed
    return float(i + lp.consumed)


@njit
def to_records(st, gid, v):
    """Where position `v` of the sampler's stream (not in a made-up iteration) is in the arrays."""
    lp = st.lp[gid]
    base = st.warp_begin[gid]
    if lp.at0 < 0 or v < lp.at0:
        return base
    if v < lp.at0 + lp.nsyn * lp.length:
        raise RuntimeError("compiled sampler: a move into a made-up iteration")
    return base - lp.nsyn * lp.length


# ---- making up a left-out iteration (Sampler.synthesize) ------------------------------------------
@njit
def _row_stride(st, row0, row):
    """`GPU.row_stride`: (whether every executing lane moved by one distance, the distance)."""
    lanes = st.mem_exec[row]
    if st.mem_exec[row0] != lanes:
        return False, np.int64(0)
    if lanes == 0:
        return True, np.int64(0)
    first = True
    d0 = np.int64(0)
    for i in range(32):
        if lanes >> i & 1:
            d = np.int64(st.addr[row, i]) - np.int64(st.addr[row0, i])
            if first:
                d0, first = d, False
            elif d != d0:
                return False, np.int64(0)
    return True, d0


@njit
def _strides(st, gid, parity, lo, hi, lo0, hi0):
    """`Sampler._strides`: the global accesses of iteration records [lo, hi) (positions of the kept
    head) with their byte stride from the same accesses `PERIOD` iterations earlier ([lo0, hi0))."""
    base = st.warp_begin[gid]
    if hi - lo != hi0 - lo0:
        raise TraceTooShort("main-loop iterations differ: the left-out ones cannot be made up")
    for off in range(hi - lo):
        if st.pcs[base + lo + off] != st.pcs[base + lo0 + off]:
            raise TraceTooShort("main-loop iterations differ: the left-out ones cannot be made up")
    g = st.glob
    start = g[G_NSTR]
    n = 0
    for off in range(hi - lo):
        row, row0 = st.mem_rows[base + lo + off], st.mem_rows[base + lo0 + off]
        kind = st.kind[st.pcs[base + lo + off]]
        if row >= 0 and (kind == GLOAD or kind == GSTORE):
            ok = False
            stride = np.int64(0)
            if row0 >= 0:
                ok, stride = _row_stride(st, row0, row)
            if not ok:
                raise TraceTooShort("main-loop addresses do not move by one stride per iteration: the "
                                    "left-out iterations cannot be made up")
            st.str_off[start + n] = off
            st.str_row[start + n] = row
            st.str_stride[start + n] = stride
            n += 1
    g[G_NSTR] = start + n
    st.lp_soff[gid, parity] = start
    st.lp_sn[gid, parity] = n
    st.lp_sv[gid, parity] = 1


@njit
def moved_row(st, row, delta):
    """`GPU.moved_row`: a new access row, global access `row` with every address moved by `delta`
    bytes (executing lanes; a moved address 0 is none); its distinct sectors, ascending."""
    g = st.glob
    lanes = st.mem_exec[row]
    buf = st.scratch_sectors
    shift = np.uint64(st.cfg[0].sector_shift)
    d = np.uint64(delta)  # (modulo 2^64, as the object model's mask)
    k = 0
    for i in range(32):
        if lanes >> i & 1:
            a = st.addr[row, i] + d
            if a != 0:
                buf[k] = np.int64(a >> shift)
                k += 1
    s = np.sort(buf[:k])
    r = g[G_NROWS]
    at = st.sector_start[r]
    base = s[0] if k > 0 else np.int64(0)  # (rows keep their first sector and distances: gpu.sector_deltas)
    st.sector_base[r] = base
    u = 0
    for i in range(k):
        if i == 0 or s[i] != s[i - 1]:
            st.sector_list[at + u] = s[i] - base
            u += 1
    st.sector_start[r + 1] = at + u
    st.row_stored[r] = 0
    g[G_NROWS] = r + 1
    g[G_NSEC] = at + u
    return r


@njit
def synthesize(st, gid):
    """`Sampler.synthesize`: make up the warp's first left-out iteration (`g_lo`) at `cut`, a copy of
    its kept head iteration of the same parity with global addresses moved on by the stride. The
    records go to the arrays' free tail; (where they begin, how many, the position `cut` they have
    in the sampler's stream)."""
    lp = st.lp[gid]
    head, g_lo = lp.head, lp.g_lo
    t = head - PERIOD + (g_lo - head) % PERIOD  # the template iteration
    if t - PERIOD < 1:
        raise TraceTooShort("too few main-loop iterations kept to make up the left-out ones")
    lo, hi = back(st, gid, t - 1) + 1, back(st, gid, t) + 1
    parity = t % PERIOD
    if not st.lp_sv[gid, parity]:
        _strides(st, gid, parity, lo, hi, back(st, gid, t - PERIOD - 1) + 1, back(st, gid, t - PERIOD) + 1)
    m = (g_lo - t) // PERIOD
    n = hi - lo
    g = st.glob
    at_rec = g[G_NREC]
    src = st.warp_begin[gid] + lo
    for i in range(n):
        st.pcs[at_rec + i] = st.pcs[src + i]
        st.mem_rows[at_rec + i] = st.mem_rows[src + i]
        st.regc[at_rec + i] = st.regc[src + i]
        st.wavef[at_rec + i] = st.wavef[src + i]
        st.glines[at_rec + i] = st.glines[src + i]
    for j in range(st.lp_soff[gid, parity], st.lp_soff[gid, parity] + st.lp_sn[gid, parity]):
        st.mem_rows[at_rec + st.str_off[j]] = moved_row(st, st.str_row[j], m * st.str_stride[j])
    g[G_NREC] = at_rec + n
    at = lp.cut
    k = g_lo - lp.consumed  # index of the new back edge among the recorded ones
    b = st.lp_backs
    bo = lp.boff
    for x in range(lp.bn - 1, k - 1, -1):
        b[bo + x + 1] = b[bo + x] + n
    b[bo + k] = at + n - 1
    lp.bn += 1
    lp.g_lo = g_lo + 1
    lp.cut = at + n if lp.g_lo < lp.g_hi else -1
    lp.nsyn += 1
    return at_rec, n, at


@njit
def enter(st, sm, w):
    """The warp in slot `w` has reached its gap (`gap_at`): the iteration made up for it runs next."""
    wr = st.w[w]
    gid = wr.gid
    rec, n, at = synthesize(st, gid)
    _into(st, w, rec, n, at)
    st.sm[sm].synthesized += 1


@njit
def _into(st, w, rec, n, at):
    """Slot `w` runs the made-up iteration at `rec` (position `at` of the sampler's stream), then
    goes back to the trace's records where the left-out iterations were."""
    wr = st.w[w]
    lp = st.lp[wr.gid]
    wr.pos = rec
    wr.shift = at - rec
    wr.jump_at = rec + n
    wr.jump_to = st.warp_begin[wr.gid] + lp.at0
    wr.gap_at = wr.jump_to if lp.cut >= 0 else -1


@njit
def leave(st, w):
    """The warp in slot `w` has run its made-up iteration: back to the trace's records."""
    wr = st.w[w]
    lp = st.lp[wr.gid]
    wr.pos = wr.jump_to
    wr.jump_at = -1
    wr.shift = lp.nsyn * lp.length - st.warp_begin[wr.gid]


# ---- moves (Sampler._move) -------------------------------------------------------------------------
@njit
def move(st, sm, w, i, n):
    """`Sampler._move`: move the warp in slot `w` (`i` iterations done, inside iteration i + 1) on
    by `n` whole iterations, to the same point of iteration i + n + 1; (the instructions passed over,
    its point in that iteration: 1 = the first instruction after the back edge)."""
    wr = st.w[w]
    gid = wr.gid
    lp = st.lp[gid]
    pos = wr.pos + wr.shift
    r = bisect_left(st, gid, pos)
    offset = pos - back(st, gid, r - 1)
    target = i + n
    before = pos + lp.cinstr
    if lp.cut < 0 or target < lp.g_lo:  # all recorded up to there
        new = back(st, gid, r + n - 1) + offset
        _place(st, w, new)
    elif target >= lp.g_hi:  # over all the left-out iterations, into the kept tail
        _consume(st, gid, lp.g_hi - lp.g_lo)
        lp.cut = -1
        wr.gap_at = -1
        new = back(st, gid, target - lp.consumed - 1) + offset
        _place(st, w, new)
    else:  # into the left-out iterations: pass over those before it, make it up
        _consume(st, gid, target - lp.g_lo)
        rec, k, at = synthesize(st, gid)
        _into(st, w, rec, k, at)
        st.sm[sm].synthesized += 1
        new = at - 1 + offset
        wr.pos = rec + offset - 1
    return new + lp.cinstr - before, offset


@njit
def rewarm_l1(st, sm, w, offset):
    """`Sampler.rewarm_l1`: the sectors of the L1-cached global loads the warp in slot `w` passed in
    the iteration it was moved into (its `offset` - 1 records before its position, contiguous in the
    arrays) go into SM `sm`'s L1, uncounted, in the order its loads would have put them there."""
    wr = st.w[w]
    l1 = (st.l1_slots[sm], st.l1_links[sm], st.l1_keys[sm], st.l1_vals[sm], st.l1_meta[sm], st.l1_free[sm])
    for p in range(wr.pos - offset + 1, wr.pos):
        pc = st.pcs[p]
        row = st.mem_rows[p]
        if st.l1_cached[pc] and row >= 0:
            base = st.sector_base[row]
            for i in range(st.sector_start[row], st.sector_start[row + 1]):
                L.cache_touch(l1, base + st.sector_list[i])


@njit
def _place(st, w, v):
    """Slot `w` at position `v` of the sampler's stream (a kept record)."""
    wr = st.w[w]
    base = to_records(st, wr.gid, v)
    wr.pos = base + v
    wr.shift = -base
    wr.jump_at = -1


@njit
def _consume(st, gid, k):
    """`Sampler._consume`: pass over the next `k` left-out iterations."""
    lp = st.lp[gid]
    lp.consumed += k
    lp.cinstr += k * lp.length
    lp.g_lo += k
