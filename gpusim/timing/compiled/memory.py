"""The load/store and memory path of the compiled engine: the rules of gpusim/timing/mem/ (lsu.py,
l1.py, l2.py, dram.py; their docstrings give the hardware rules and the measurements behind them)
as functions over arrays. Each function names the method it mirrors; the order of operations is
that method's, so that results are the same to the last bit.

State (fields of the structured arrays built by `engine.build`):
- queues (`st.q`, one row per sub-partition and kind: `q = sub-partition * 2 + MIO|LSU`): depth,
  rate (-1: none, instructions pass the SM-wide stage in issue order), free, and the cycles its
  queued instructions leave (`st.q_buf[q]`, a ring from `head`, `n` long);
- stages (`st.stage`, one row per SM and kind: `SM * 2 + MIO|LSU`): rate, free; with a unified data
  stage (`cfg.unified_stage`) the `DataStage`: each kind's work and last access's units in its row,
  and its rate and the cycle it was brought up to in the MIO row; booked (`cfg.booked_stage`): its
  booked intervals per SM (`st.book`, `st.book_n`);
- the chip's L2, DRAM and their counters (`st.mem[0]`), the LRUs of L2, its dirty sectors and its
  reused sectors (the dirty data's reach), each SM's L1 LRU.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from gpusim.timing.compiled import lru as L
from gpusim.timing.mem import dram, lsu

MIO, LSU = 0, 1  # the two queues of a sub-partition


# ---- lsu.py: AccessQueue, Stage ------------------------------------------------------------------
@njit(inline="always")
def _leave(buf, head, n, now):
    """The ring `buf[head:head + n]` (cyclic) of leaving cycles with those <= `now` gone: (head, n)."""
    cap = buf.shape[0]
    while n > 0 and buf[head] <= now:
        head = (head + 1) % cap
        n -= 1
    return head, n


@njit(inline="always")
def _push(buf, head, n, value):
    """Append `value` to the ring `buf[head:head + n]` (cyclic): its new length."""
    if n >= buf.shape[0]:
        raise RuntimeError("compiled engine: an access queue overflowed a ring")
    buf[(head + n) % buf.shape[0]] = value
    return n + 1


@njit
def full_until(st, q, now, store):
    """`AccessQueue.full_until`: -1.0 if an instruction (a `store`) may enter at `now`, else the cycle
    the first one it waits for leaves (the queue's first, or its first store: `st.qs_buf[q]`)."""
    row = st.q[q]
    buf = st.q_buf[q]
    row.head, row.n = _leave(buf, row.head, row.n, now)
    if row.n >= row.depth:
        return buf[row.head]
    if store and row.sdepth > 0:
        sbuf = st.qs_buf[q]
        row.shead, row.sn = _leave(sbuf, row.shead, row.sn, now)
        if row.sn >= row.sdepth:
            return sbuf[row.shead]
    return -1.0


@njit
def slots_until(st, sp, now, share):
    """`SM._queue_full`'s one queue (`sm.shared_access_queue`): -1.0 if sub-partition `sp`'s places
    have room for `share` at `now` (those given back by then dropped), else the cycle the next are
    given back."""
    row = st.sp[sp]
    buf = st.slot_buf[sp]
    cap = buf.shape[0]
    while row.slot_n > 0 and buf[row.slot_head, 0] <= now:
        row.held -= np.int64(buf[row.slot_head, 1])
        row.slot_head = (row.slot_head + 1) % cap
        row.slot_n -= 1
    if row.held + share > st.cfg[0].queue_places:
        return buf[row.slot_head, 0]
    return -1.0


@njit
def hold_places(st, sp, leaves, share):
    """`SM._hold_places`: an access that leaves its queue at `leaves` holds `share` places until then, or
    until the last access before it gives its back."""
    row = st.sp[sp]
    buf = st.slot_buf[sp]
    cap = buf.shape[0]
    if row.slot_n >= cap:
        raise RuntimeError("compiled engine: a sub-partition's ring of queue places overflowed")
    release = leaves
    if row.slot_n > 0:
        last = buf[(row.slot_head + row.slot_n - 1) % cap, 0]
        if last > release:
            release = last
    at = (row.slot_head + row.slot_n) % cap
    buf[at, 0] = release
    buf[at, 1] = share
    row.slot_n += 1
    row.held += share


drained, access_cost, shared_finish = njit(lsu.drained), njit(lsu.access_cost), njit(lsu.shared_finish)


@njit
def data_passed(st, sm, kind, now, units, done):
    """`DataStage.passed` (with `_advance`): the cycle an access of `kind` that passed its own stage at
    `done` has passed the SM's unified data stage."""
    d = st.stage[sm * 2 + MIO]
    g = st.stage[sm * 2 + LSU]
    if now > d.at:
        d.work, g.work = drained(d.work, g.work, (now - d.at) * d.data_rate)
        d.at = now
    mine = st.stage[sm * 2 + kind]
    other = st.stage[sm * 2 + 1 - kind]
    mine.work += access_cost(units, other.size, other.work)
    mine.size = units
    t = shared_finish(now, mine.work, other.work, d.data_rate)
    return t if t > done else done


@njit
def data_book(st, sm, now, arrive, units, done):
    """`DataStage.book` (with `book_gaps`): the cycle an access that starts to pass its queue at `arrive`
    has passed the SM's booked data stage."""
    b = st.book[sm]
    n = st.book_n[sm]
    k = 0
    while k < n and b[k, 1] <= now:  # bookings over by now
        k += 1
    if k:
        for j in range(n - k):
            b[j, 0] = b[j + k, 0]
            b[j, 1] = b[j + k, 1]
        n -= k
    need = units / st.stage[sm * 2 + MIO].data_rate
    t = arrive
    i = 0
    while i < n and b[i, 1] <= t:
        i += 1
    while need > 1e-12:
        if i < n and b[i, 0] <= t:
            if b[i, 1] > t:
                t = b[i, 1]
            i += 1
            continue
        gap_end = b[i, 0] if i < n else np.inf
        take = need if need < gap_end - t else gap_end - t
        if take > 0.0:
            if n >= b.shape[0]:
                raise RuntimeError("compiled engine: the booked data stage overflowed its intervals")
            for j in range(n, i, -1):
                b[j, 0] = b[j - 1, 0]
                b[j, 1] = b[j - 1, 1]
            b[i, 0] = t
            b[i, 1] = t + take
            n += 1
            i += 1
            need -= take
            t += take
    st.book_n[sm] = n
    return t if t > done else done


@njit
def queue_access(st, q, stage, first_q, step, count, now, units, unified, store, slot=True):
    """`AccessQueue.access`: an instruction of `units` (a `store`) enters queue `q` at `now`; (cycle it starts to
    pass, cycle it has passed). The `count` queues `first_q`, `first_q` + `step`, ... share `stage`
    (`SM.mio_queues` / `SM.lsu_queues`: the SM's queues of one kind, step 2); `unified`: a unified
    data stage follows (the SM's, `stage` // 2); `slot` False: it holds no place of the queue."""
    row = st.q[q]
    srow = st.stage[stage]
    if row.rate < 0.0:
        start = srow.free if srow.free > now else now
        done = start + units / srow.rate
        srow.free = done
    else:
        busy = 1
        for i in range(count):
            other = first_q + step * i
            if other != q and st.q[other].free > now:
                busy += 1
        rate = min(row.rate, srow.rate / busy)
        start = row.free if row.free > now else now
        done = start + units / rate
        row.free = done
    if unified:
        if st.cfg[0].booked_stage:
            done = data_book(st, stage // 2, now, start, units, done)
        else:
            done = data_passed(st, stage // 2, stage % 2, now, units, done)
        if done > row.free:
            row.free = done
    if slot:
        row.n = _push(st.q_buf[q], row.head, row.n, done)
        if store and row.sdepth > 0:
            row.sn = _push(st.qs_buf[q], row.shead, row.sn, done)
    return start, done


@njit
def queue_hold(st, q, until):
    """`AccessQueue.hold`: the instruction that entered last, a store, keeps its place (and store
    slot) until `until`."""
    row = st.q[q]
    buf = st.q_buf[q]
    last = (row.head + row.n - 1) % buf.shape[0]
    if until > buf[last]:
        buf[last] = until
        if row.sdepth > 0:
            sbuf = st.qs_buf[q]
            sbuf[(row.shead + row.sn - 1) % sbuf.shape[0]] = until
        if until > row.free:
            row.free = until


# ---- dram.py: BandwidthQueue, Dram ---------------------------------------------------------------
@njit
def l2_serve(m, now, nbytes):
    """`BandwidthQueue.serve` of the L2 queue."""
    start = m.l2q_free if m.l2q_free > now else now
    m.l2q_free = start + nbytes / m.l2_bpc
    return m.l2q_free


@njit
def dram_serve(m, now, nbytes):
    """`Dram.serve`: the DRAM queue's `BandwidthQueue.serve`, the bytes counted in the window `now` falls in."""
    m.dram_busy += nbytes
    if m.dram_wait_c > 0 or m.dram_wwait_c > 0:
        dram_tick(m, now)
        m.dram_cur += nbytes
    start = m.dram_free if m.dram_free > now else now
    m.dram_free = start + nbytes / m.dram_bpc
    return m.dram_free


@njit
def dram_tick(m, now):
    """`Dram._tick`."""
    b = math.floor(now / m.dram_window)
    if b > m.dram_bucket:
        m.dram_prev = m.dram_cur if b == m.dram_bucket + 1 else 0.0
        m.dram_prev_w = m.dram_cur_w if b == m.dram_bucket + 1 else 0.0
        m.dram_prev_r = m.dram_cur_r if b == m.dram_bucket + 1 else 0.0
        m.dram_cur = 0.0
        m.dram_cur_w = 0.0
        m.dram_cur_r = 0.0
        m.dram_bucket = b


spread = njit(dram.spread)  # the exponential draw (mean 1) of a sector's line: the object model's function
jitter = njit(dram.jitter)  # the read latency's draw of a sector's block and cycle: the object model's function


@njit
def dram_wait(m, now, sector):
    """`Dram.wait`: the cycles a read of `sector` issued at `now` waits beyond the latency under load."""
    if m.dram_wait_c <= 0 and m.dram_wwait_c <= 0:
        return 0.0
    dram_tick(m, now)
    full = m.dram_window * m.dram_bpc
    rho = m.dram_prev / full
    if rho > m.dram_rho_max:
        rho = m.dram_rho_max
    w = m.dram_prev_w / full
    if w > m.dram_rho_max:
        w = m.dram_rho_max
    ww = m.dram_wwait_c * w
    if m.dram_wspread > 0 and ww > 0:
        ww *= 1.0 - m.dram_wspread + m.dram_wspread * spread(sector)
    return m.dram_wait_c * rho / (1.0 - rho) + ww


@njit
def dram_read(m, now, nbytes, start, sector):
    """`Dram.read`: the cycle a fill of `sector` booked at `now`, sent no earlier than `start`, arrives in L2."""
    m.dram_read += nbytes
    if m.dram_turn > 0:
        dram_tick(m, now)
        m.dram_cur_r += nbytes
    t = dram_serve(m, now, nbytes)
    scatter = m.dram_rspread * jitter(sector, m.dram_rshift, now) if m.dram_rspread > 0 else 0.0
    return (t if t > start else start) + m.dram_latency + dram_wait(m, now, sector) + scatter


@njit
def dram_write(m, now, nbytes):
    """`Dram.write`: a write-back takes bandwidth (more where reads share DRAM); the cycle the write-back path
    has drained it (write-backs alone at DRAM's full rate)."""
    m.dram_write += nbytes
    cost = float(nbytes)
    if m.dram_wwait_c > 0 or m.dram_turn > 0:
        dram_tick(m, now)
        m.dram_cur_w += nbytes
        if m.dram_turn > 0:
            r = m.dram_prev_r
            w = m.dram_prev_w
            mix = (r / w if r < w else 1.0) if w > 0 else (1.0 if r > 0 else 0.0)
            cost = nbytes * (1.0 + m.dram_turn * mix)
    dram_serve(m, now, cost)
    m.dram_drained = (m.dram_drained if m.dram_drained > now else now) + cost / m.dram_bpc
    return m.dram_drained


# ---- l2.py: MemorySystem ------------------------------------------------------------------------
@njit
def _evicted(st, m, sector, now):
    """`MemorySystem._evicted`: the cycle the write-back path has drained the write-back, 0 where none."""
    if sector != L.NONE:
        n = L.find(st.dirty, sector)
        if n:
            L.remove(st.dirty, n)
            return dram_write(m, now, m.sector_bytes)
    return 0.0


@njit
def _make_dirty(st, m, sector, now):
    """`MemorySystem._make_dirty`: the cycle the write-back path has drained the write-back, 0 where none."""
    n = L.find(st.dirty, sector)
    if n:
        L.move_to_end(st.dirty, n)
        return 0.0
    L.insert(st.dirty, sector, 0.0)
    if L.over_capacity(st.dirty):  # clean the oldest dirty sector: write it back
        L.pop_oldest(st.dirty)
        return dram_write(m, now, m.sector_bytes)
    return 0.0


@njit
def _reuse(st, m, sector, now):
    """`MemorySystem._reuse`: `sector` was stored or hit: the newest reused sector; the oldest past
    the reach leaves the order and, if dirty, is written back."""
    n = L.find(st.reach, sector)
    if n:
        L.move_to_end(st.reach, n)
    else:
        L.insert(st.reach, sector, 0.0)
    if L.over_capacity(st.reach):
        old = L.pop_oldest(st.reach)
        d = L.find(st.dirty, old)
        if d:
            L.remove(st.dirty, d)
            return dram_write(m, now, m.sector_bytes)
    return 0.0


@njit
def _to_dram(m):
    """`MemorySystem._to_dram`: whether this access's L2 misses move DRAM bytes (sampled mode: the
    share `dram_fraction` of accesses, by a running credit; detailed mode: all)."""
    if m.dram_fraction < 0.0:
        return True
    m.dram_credit += m.dram_fraction
    if m.dram_credit >= 1.0:
        m.dram_credit -= 1.0
        return True
    return False


@njit
def fetch(st, now, sectors, k, start):
    """`MemorySystem.fetch`: the sectors[:k] a load issued at `now` missed in L1, sent no earlier
    than `start`; the completion cycle."""
    m = st.mem[0]
    to_dram = _to_dram(m)
    done = start
    sb = m.sector_bytes
    m.l2_bytes += sb * k
    m.l2_queue_bytes += sb * k
    for i in range(k):
        s = sectors[i]
        t = l2_serve(m, now, sb)
        ready = L.cache_lookup(st.l2, st.l2_counts, s)
        if ready != -np.inf:  # in L2, or on its way from DRAM
            finish = max((t if t > start else start) + m.l2_latency, ready)
            if m.reach > 0 and st.dirty[4][L.SIZE] > 0:  # before the first store the order does not matter
                _reuse(st, m, s, now)
        else:
            extra = _fetched_with(st, s, m.fetch_sectors, sectors, k) if m.fetch_sectors > 1 else 0
            finish = dram_read(m, now, sb * (1 + extra), start, s) if to_dram else start + m.dram_latency + dram_wait(m, now, s)
            _evicted(st, m, L.cache_fill(st.l2, s, finish), now)
            st.l2_counts[2] += extra
            for j in range(extra):  # its block's other sectors come with it
                st.l2_counts[1] += 1
                _evicted(st, m, L.cache_fill(st.l2, st.scratch_fill[j], finish), now)
        if finish > done:
            done = finish
    return done


@njit
def _fetched_with(st, s, block, sectors, k):
    """`MemorySystem._fetched_with`: the other sectors of `s`'s aligned `block` that are not in L2 and
    not among sectors[:k], put in `st.scratch_fill`; how many."""
    n = 0
    b = s - s % block
    for x in range(b, b + block):
        if x == s or L.find(st.l2, x):
            continue
        asked = False
        for i in range(k):
            if sectors[i] == x:
                asked = True
                break
        if not asked:
            st.scratch_fill[n] = x
            n += 1
    return n


@njit
def store(st, now, lo, hi, base, start):
    """`MemorySystem.store`: the sectors `base + st.sector_list[lo:hi]` (ascending) a store issued at `now`
    writes, sent no earlier than `start`; (cycle the last write reached L2, cycle L2 took the last)."""
    m = st.mem[0]
    sectors = st.sector_list
    n = hi - lo
    done = start
    accepted = start
    sb = m.sector_bytes
    m.l2_bytes += sb * n
    per = sb * m.write_cost
    if m.line_sectors != 0.0 and n:
        spl = m.sectors_per_line
        lines = 1
        for i in range(lo, hi - 1):
            if (base + sectors[i]) // spl != (base + sectors[i + 1]) // spl:
                lines += 1
        per *= 1.0 + m.line_sectors * lines / n
    m.l2_queue_bytes += per * n
    for i in range(lo, hi):
        s = base + sectors[i]
        t = l2_serve(m, now, per)
        if t > accepted:
            accepted = t
        finish = (t if t > start else start) + m.l2_latency
        node = L.find(st.l2, s)
        if node:
            ready = st.l2[3][node]
            fill = ready if ready >= finish else finish  # max(ready, finish)
        else:
            fill = finish
        wb = _evicted(st, m, L.cache_fill(st.l2, s, fill), now)
        wb = max(wb, _make_dirty(st, m, s, now))
        if m.reach > 0:
            wb = max(wb, _reuse(st, m, s, now))
        if m.backpressure and wb > accepted:  # L2 takes the store once DRAM has taken what it evicts
            accepted = wb
        if finish > done:
            done = finish
    return done, accepted


# ---- l1.py: L1 ------------------------------------------------------------------------------------
@njit
def _miss_slot(st, w, now, nbytes):
    """`L1._miss_slot`: the cycle from which a load of `nbytes` fits under warp `w`'s limit of bytes in
    loads that missed L1 (its outstanding misses, kept sorted by (return cycle, bytes))."""
    t = st.miss_t[w]
    b = st.miss_b[w]
    k = 0
    for i in range(st.miss_n[w]):  # drop those returned by `now`
        if t[i] > now:
            t[k] = t[i]
            b[k] = b[i]
            k += 1
    for i in range(1, k):  # insertion sort by (return cycle, bytes)
        ti, bi = t[i], b[i]
        j = i - 1
        while j >= 0 and (t[j] > ti or (t[j] == ti and b[j] > bi)):
            t[j + 1] = t[j]
            b[j + 1] = b[j]
            j -= 1
        t[j + 1] = ti
        b[j + 1] = bi
    st.miss_n[w] = k
    held = 0
    for i in range(k):
        held += b[i]
    start = now
    limit = st.mem[0].miss_limit
    i = 0
    while held + nbytes > limit and i < k:
        start = t[i]
        held -= b[i]
        i += 1
    return start


@njit
def l1_load(st, sm, w, now, ready, lo, hi, base, cached, nbytes):
    """`L1.load`: a load issued at `now` whose lines passed the tag stage at `ready`, touching the
    sectors `base + st.sector_list[lo:hi]` (`cached`: L1 holds them); the cycle its data is there."""
    m = st.mem[0]
    missing = st.scratch_sectors
    k = 0
    filling = -np.inf  # the latest fill among the sectors found in L1 (one still in flight: later than now)
    l1 = (st.l1_slots[sm], st.l1_links[sm], st.l1_keys[sm], st.l1_vals[sm], st.l1_meta[sm], st.l1_free[sm])
    if cached:
        for i in range(lo, hi):
            s = base + st.sector_list[i]
            r = L.cache_lookup(l1, st.l1_counts[sm], s)
            if r == -np.inf:
                L.cache_fill(l1, s, np.inf)  # allocated now, its data there when the fetch below returns
                missing[k] = s
                k += 1
            elif r > filling:
                filling = r
    else:
        for i in range(lo, hi):
            missing[k] = base + st.sector_list[i]
            k += 1
    done = ready + m.l1_latency if k < hi - lo else ready
    if filling > done:
        done = filling
    if k:
        if m.miss_limit < 0:
            finish = fetch(st, now, missing, k, ready)
        else:
            n = min(m.miss_limit, nbytes)
            finish = fetch(st, now, missing, k, _miss_slot(st, w, ready, n))
            c = st.miss_n[w]
            if c >= st.miss_t.shape[1]:
                raise RuntimeError("compiled engine: a warp's outstanding L1 misses overflowed")
            st.miss_t[w, c] = finish
            st.miss_b[w, c] = n
            st.miss_n[w] = c + 1
        if cached:
            for j in range(k):
                node = L.find(l1, missing[j])
                if node:
                    l1[3][node] = finish
        done = done if done >= finish else finish
    return done
