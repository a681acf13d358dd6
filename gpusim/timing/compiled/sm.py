"""The SM's issue loop, compiled: gpusim/timing/sm.py's rules (its docstrings state them and their
sources) over arrays, so that a warp-instruction costs tens of nanoseconds instead of microseconds.

Each function names the method of `SM` it mirrors and keeps its order of operations, so that both
give the same cycles to the last bit (tests/test_compiled_engine.py replays the suite's cases on
both). State lives in structured arrays (fields as in the object model), one row per:
- warp slot (`st.w`): slots of a CTA slot are `cta_slot * warps_per_cta + k`; a slot is reused when
  its CTA retires;
- CTA slot (`st.cta`): SM m owns slots m * ctas_per_sm ...;
- sub-partition (`st.sp`): SM m owns m * sub_partitions ...; its resident warps in age order are
  `st.sp_warps[sp, :nw]`, its pipes' free and busy cycles `st.sp_pipes` / `st.sp_busy`;
- SM (`st.sm`): its clock, counters and whether its warps changed outside a turn.
Per static instruction facts (`st.kind`, `st.pipe`, ...) are `static.IssueFacts` as arrays.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from gpusim.timing import stalls as S
from gpusim.timing.compiled import loops as P
from gpusim.timing.compiled import memory as M
from gpusim.timing.static import BAR, BRANCH, CMEM, COMMIT, COPY, GLOAD, SMEM, SREG_WAIT

EPS = 1e-9
INF = np.inf
GTO, LRR, TWO_LEVEL, STICKY = 0, 1, 2, 3  # scheduler policies (STICKY: two_level_sticky)
DUAL_NONE, DUAL_CONTROL, DUAL_KEPLER = 0, 1, 2  # dual-issue rules
# how `run` returns; sampled mode (compiled/sampled.py) also stops for the sampler's look (CHECK, at a
# cycle step's end, as `SM.run` calls `Sampler.check`) and for room to make up loop iterations in
YIELD, DONE, WATCHDOG, DEADLOCK, NEED_TRACE, CHECK, NEED_ROOM = 0, 1, 2, 3, 4, 5, 6
# streaming (compiled/stream.py): a warp whose stream goes on beyond the records loaded for it keeps at
# least LOOKAHEAD of them ahead of its position at every cycle step's start (one step issues at most two
# of its instructions and reads the one after); below that its SM stops (NEED_TRACE) for more
LOOKAHEAD = 8
# st.glob: the next CTA of the queue to hand out; how many of the queue's CTAs have records loaded
# (their warps LOOKAHEAD or all of theirs); whether the first launches were made; the SM to resume
# after NEED_TRACE (-1: none); the event heap's length and its next sequence number (see engine.simulate)
G_NEXT, G_PRIMED, G_STARTED, G_RESUME, G_HEAP_N, G_SEQ = 0, 1, 2, 3, 4, 5
SELECTED, NOT_SELECTED, WAIT, SHORT_SB, LONG_SB = S.SELECTED, S.NOT_SELECTED, S.WAIT, S.SHORT_SB, S.LONG_SB
MIO_T, LG_T, BARRIER_R, DISPATCH_R, BRANCH_R, DRAIN_R = S.MIO, S.LG, S.BARRIER, S.DISPATCH, S.BRANCH, S.DRAIN


# ---- CTA residency -------------------------------------------------------------------------------
@njit
def next_cta(st, sm):
    """`GPU.next_cta`: the next CTA of the grid's queue (sampled mode: of the SM's own), or -1."""
    if st.cfg[0].sampled:
        smr = st.sm[sm]
        if smr.qnext < smr.qend:
            smr.qnext += 1
            return st.cta_queue[smr.qnext - 1]
        return -1
    g = st.glob
    if g[G_NEXT] < len(st.cta_queue):
        if g[G_NEXT] >= g[G_PRIMED]:
            raise RuntimeError("compiled engine: a CTA launched before its records were loaded")
        g[G_NEXT] += 1
        return st.cta_queue[g[G_NEXT] - 1]
    return -1


@njit
def launch(st, sm, cid, now):
    """`SM.launch`: CTA `cid` takes a free CTA slot of the SM; its warps go to the sub-partitions
    round robin by age. Its number of live warps (0: its warps had nothing to run, and it has
    given its slot back, as `_cta_done` does)."""
    c = st.cfg[0]
    k = c.ctas_per_sm
    slot = sm * k
    while st.cta[slot].used:
        slot += 1
    cta = st.cta[slot]
    cta.used = True
    smr = st.sm[sm]
    cta.cid, cta.live, cta.arrived, cta.launched = cid, 0, 0, now + smr.extrapolated  # (`SM.kernel_time`)
    cta.drained = 0.0
    ready = now + c.cta_launch_cycles if now > 0 else now  # (`SM.launch`: refills only)
    wpc = c.warps_per_cta
    for j in range(wpc):
        gid = cid * wpc + j
        sp = sm * c.n_sp + smr.age % c.n_sp
        w = slot * wpc + j
        wr = st.w[w]
        if gid >= len(st.warp_begin):
            start = end = 0
            more = False
        else:
            start, end, more = st.warp_begin[gid], st.warp_end[gid], st.warp_more[gid]
        if more and end - start < LOOKAHEAD:
            raise RuntimeError("compiled engine: a warp launched with too few of its records loaded")
        wr.gid, wr.cta, wr.sp, wr.pos, wr.end, wr.more = gid, slot, sp, start, end, more
        wr.ready_at = ready
        wr.reason = NOT_SELECTED
        wr.since = wr.ready_at  # (no stall is charged before the warp exists)
        wr.done = start == end and not more
        wr.at_barrier = False
        wr.active = False
        wr.stores_done = 0.0
        wr.copies_done = 0.0
        wr.sreg_due = -1.0
        wr.age = smr.age
        wr.shift = -start
        wr.jump_at = -1
        wr.gap_at = -1
        if c.sampled and not wr.done and st.lp[gid].cut >= 0:  # (`Sampler.attach`)
            wr.gap_at = start + st.lp[gid].cut
        st.sb_n[w, :] = 0
        st.miss_n[w] = 0
        if not c.control_mode:
            st.rr_t[w, :] = -INF
        smr.age += 1
        if not wr.done:
            spr = st.sp[sp]
            spr.dirty = True
            smr.changed = True
            cta.live += 1
            st.sp_warps[sp, spr.nw] = w
            spr.nw += 1
            smr.n_warps += 1
    if cta.live == 0:
        cta_done(st, sm, slot, now)
    return cta.live


@njit
def cta_done(st, sm, slot, now):
    """`SM._cta_done`: the CTA whose last warp exited at `now` is retired (`GPU.cta_retire`: the cycle
    kept in retire[2] and returned) and gives its slot back (sampled mode: its residence is noted)."""
    r = st.retire
    done = now
    if r[0] > 0:
        if r[1] > done:
            done = r[1]
        r[1] = done + r[0]
    r[2] = done
    smr = st.sm[sm]
    if done > smr.last_done:
        smr.last_done = done
    cta = st.cta[slot]
    cta.used = False
    if st.cfg[0].sampled:
        st.res[sm, smr.n_res, 0] = cta.launched
        st.res[sm, smr.n_res, 1] = now + smr.extrapolated  # (its end, not its retirement: `SM._cta_done`)
        smr.n_res += 1
    return done


@njit
def launch_next(st, sm, now):
    """The SM's next CTA from the grid's queue (and, while those have no live warps, the ones after,
    each once the one before is retired): `_simulate`'s initial launches and `_cta_done`'s refill."""
    while True:
        nxt = next_cta(st, sm)
        if nxt < 0 or launch(st, sm, nxt, now) > 0:
            return
        now = st.retire[2]


# ---- the process ---------------------------------------------------------------------------------
@njit
def run(st, sm, env_now, resume):
    """`SM.run` from the engine's time `env_now` until it yields (it has run `quantum` cycles ahead:
    YIELD, to be resumed at `st.sm[sm].now`) or its last warp has exited (DONE); WATCHDOG or
    DEADLOCK when the SM stopped making progress. Streaming: NEED_TRACE at a cycle step's start when
    one of its warps, or the CTAs it may launch next, lack records; `resume` then goes on from there
    as if it had not stopped (the same cycle, quantum and progress). Sampled mode: CHECK at a step's
    end once the clock has reached the SM's `next_check` (`resume` then goes on after the look),
    NEED_ROOM at a step's start while the arrays have too little room left to make up iterations."""
    c = st.cfg[0]
    smr = st.sm[sm]
    if not smr.started:
        smr.started = True
        smr.now = smr.last_progress = env_now
    now, clock, last_progress = smr.now, (smr.clock if resume else env_now), smr.last_progress
    g = st.glob
    n_queue = len(st.cta_queue)
    rows = st.stalls[sm]
    complete = c.policy != TWO_LEVEL
    sticky = c.policy == STICKY
    order = st.order_buf
    first_sp = sm * c.n_sp
    looked = resume and smr.checking  # (the sampler has looked: go on from there)
    smr.checking = False
    while smr.n_warps > 0:
        if looked:
            looked = False
            best = smr.best
        else:
            if smr.starved or (g[G_PRIMED] < n_queue and g[G_NEXT] + c.ctas_per_sm > g[G_PRIMED]):
                smr.starved = False
                smr.now, smr.clock, smr.last_progress = now, clock, last_progress
                return NEED_TRACE
            if c.sampled and short_of_room(st):
                smr.now, smr.clock, smr.last_progress = now, clock, last_progress
                return NEED_ROOM
            progressed = False
            limit = now + EPS
            floor = now + 1.0
            bound = floor - EPS
            best = INF
            for sp in range(first_sp, first_sp + c.n_sp):
                spr = st.sp[sp]
                wake = spr.wake
                if wake <= limit:
                    # ---- the sub-partition's turn: its scheduler tries its warps ----
                    wake = INF
                    rescan = True
                    if spr.dispatch_free <= limit:
                        rescan = not complete
                        n = candidates(st, sp, now, order)
                        for i in range(n):
                            w = order[i]
                            wr = st.w[w]
                            if wr.at_barrier:
                                continue
                            if wr.ready_at > limit:
                                if wr.ready_at < wake:
                                    wake = wr.ready_at
                                continue
                            pc = st.pcs[wr.pos]
                            until = st.sp_pipes[sp, st.pipe[pc]]
                            queue = st.queue[pc]
                            if until > bound:
                                throttle = st.busy_reason[pc]
                            elif queue == SREG_WAIT:
                                throttle, until = sreg_wait(st, wr, first_sp, c.n_sp, now)
                            elif queue:
                                throttle, until = queue_full(st, sp, queue, now, st.qstore[pc])
                            else:
                                throttle = 0
                            since, ready = wr.since, wr.ready_at
                            if ready >= now:
                                if now > since:
                                    rows[wr.reason, pc] += now - since
                            elif ready > since:
                                rows[wr.reason, pc] += ready - since
                                rows[NOT_SELECTED, pc] += now - ready
                            else:
                                rows[NOT_SELECTED, pc] += now - since
                            if throttle:
                                wr.since = now
                                wr.ready_at, wr.reason = until, throttle
                                if until < wake:
                                    wake = until
                                continue
                            if sticky and not wr.active:  # ready, but not in the set: not selected
                                wr.since = now
                                if floor < wake:
                                    wake = floor
                                continue
                            rows[SELECTED, pc] += 1.0
                            wr.since = floor
                            if w != spr.last:
                                spr.last = w
                            # (a warp that exits may see its slot reused by the CTA launched after it)
                            exited = execute(st, sm, sp, w, pc, now)
                            if st.pairs[pc] and not exited and not wr.at_barrier:
                                second_issue(st, sm, sp, w, pc, now)
                            progressed = rescan = True
                            break
                    # ---- its next wake ----
                    if rescan:
                        wake = INF
                        for i in range(spr.nw):
                            wr = st.w[st.sp_warps[sp, i]]
                            if wr.ready_at < wake and not wr.at_barrier:
                                wake = wr.ready_at
                    if wake < floor:
                        wake = floor
                    if spr.dispatch_free > wake:
                        wake = spr.dispatch_free
                    spr.wake = wake
                    spr.dirty = False
                if wake < best:
                    best = wake
            if smr.changed:
                best = catch_up(st, sm, now)
            if progressed:
                last_progress = now
            elif now - last_progress > c.watchdog:
                smr.now = now
                return WATCHDOG
            if smr.n_warps == 0:
                break
            if now >= smr.next_check:  # (detailed mode: never)
                smr.now, smr.clock, smr.last_progress, smr.best = now, clock, last_progress, best
                smr.checking = True
                return CHECK
        if best == INF:
            smr.now = now
            return DEADLOCK
        now = np.ceil(best - EPS)  # the cycle `best` falls in: sm.py's -((EPS - best) // 1.0), without its fmod
        if now - clock >= c.quantum:
            smr.now, smr.last_progress = now, last_progress
            return YIELD
    smr.finish = max(now + 1, smr.last_done)
    return DONE


@njit
def short_of_room(st):
    """Sampled mode: whether the record, row, sector or stride arrays have less room left than one
    cycle step may take to make up loop iterations (`cfg.room_*`)."""
    c = st.cfg[0]
    g = st.glob
    return (len(st.pcs) - g[P.G_NREC] < c.room_records or len(st.sector_start) - 1 - g[P.G_NROWS] < c.room_rows
            or len(st.sector_list) - g[P.G_NSEC] < c.room_sectors or len(st.str_row) - g[P.G_NSTR] < c.room_strides)


@njit
def _wake(st, sp, now):
    """`SM._wake`."""
    spr = st.sp[sp]
    wake = INF
    for i in range(spr.nw):
        wr = st.w[st.sp_warps[sp, i]]
        if wr.ready_at < wake and not wr.at_barrier:
            wake = wr.ready_at
    if wake < now + 1:
        wake = now + 1
    if spr.dispatch_free > wake:
        wake = spr.dispatch_free
    return wake


@njit
def catch_up(st, sm, now):
    """`SM._catch_up`: `wake` again for the sub-partitions whose warps changed; the earliest."""
    st.sm[sm].changed = False
    best = INF
    for sp in range(sm * st.cfg[0].n_sp, (sm + 1) * st.cfg[0].n_sp):
        spr = st.sp[sp]
        if spr.dirty:
            spr.dirty = False
            spr.wake = _wake(st, sp, now)
        if spr.wake < best:
            best = spr.wake
    return best


# ---- scheduling ----------------------------------------------------------------------------------
@njit(inline="always")
def _leaves_set(reason):
    """`sm.LEAVES_SET`: waits that take a warp out of the sticky set."""
    return reason == LONG_SB or reason == SHORT_SB or reason == LG_T or reason == MIO_T


@njit
def sticky_set(st, ws, nw, now):
    """`SM._sticky`: the active set of a sub-partition's warps `ws[:nw]` (at most two_level_n)."""
    n_act = st.cfg[0].two_level_n
    count = 0
    for i in range(nw):
        wr = st.w[ws[i]]
        if wr.active:
            if wr.at_barrier or (_leaves_set(wr.reason) and wr.ready_at > now):
                wr.active = False
            else:
                count += 1
    for i in range(nw):
        if count >= n_act:
            break
        wr = st.w[ws[i]]
        if not wr.active and not wr.at_barrier and not (_leaves_set(wr.reason) and wr.ready_at > now):
            wr.active = True
            count += 1


@njit
def candidates(st, sp, now, out):
    """`SM._candidates`: the sub-partition's warps in the order its policy tries them, into `out`;
    how many. gto: the last issuing warp first, then the oldest; lrr: round robin after the last
    issuer; two_level: the oldest `two_level_active_warps` not waiting on global memory."""
    spr = st.sp[sp]
    ws = st.sp_warps[sp]
    nw = spr.nw
    last = spr.last
    policy = st.cfg[0].policy
    live_last = last >= 0 and not st.w[last].done
    n = 0
    if policy == GTO:
        if live_last:
            out[0] = last
            n = 1
        for i in range(nw):
            if not (live_last and ws[i] == last):
                out[n] = ws[i]
                n += 1
        return n
    if policy == LRR or policy == STICKY:
        if policy == STICKY:
            sticky_set(st, ws, nw, now)
        first = 0
        if live_last:
            for i in range(nw):
                if ws[i] == last:
                    first = i + 1
                    break
        for i in range(nw):
            w = ws[(first + i) % nw]
            if policy == LRR or st.w[w].active:
                out[n] = w
                n += 1
        if policy == STICKY:  # then the warps outside the set: tried, charged, but not issued
            for i in range(nw):
                w = ws[(first + i) % nw]
                if not st.w[w].active:
                    out[n] = w
                    n += 1
        return n
    for i in range(nw):
        wr = st.w[ws[i]]
        if not (wr.reason == LONG_SB and wr.ready_at > now):
            if n < st.cfg[0].two_level_n:
                out[n] = ws[i]
                n += 1
    return n


@njit
def queue_full(st, sp, queue, now, store):
    """`SM._queue_full`: (mio_throttle or lg_throttle, cycle it may try again), or (0, now)."""
    if queue == SMEM:
        until = M.full_until(st, sp * 2 + M.MIO, now, store)
        if until >= 0.0:
            return MIO_T, until
    else:
        until = M.full_until(st, sp * 2 + M.LSU, now, store)
        if until >= 0.0:
            return LG_T, until
    c = st.cfg[0]
    if c.shared_queue:
        until = M.slots_until(st, sp, now, c.share_smem if queue == SMEM else c.share_global)
        if until >= 0.0:
            return MIO_T, until
    return 0, now


@njit
def sreg_wait(st, wr, first_sp, n_sp, now):
    """`SM._sreg_wait`: an S2R of a per-thread register issues once every sub-partition's MIO queue of
    its SM has passed what it held when the S2R first tried; (mio_throttle, that cycle) until then."""
    if wr.sreg_due < 0.0:
        due = now
        for sp in range(first_sp, first_sp + n_sp):
            free = st.q[sp * 2 + M.MIO].free
            if free > due:
                due = free
        wr.sreg_due = due
    if now + EPS < wr.sreg_due:
        return MIO_T, wr.sreg_due
    wr.sreg_due = -1.0
    return 0, now


@njit
def _disjoint(st, first, pc):
    for i in range(st.dsts_start[first], st.dsts_start[first + 1]):
        for j in range(st.deps_start[pc], st.deps_start[pc + 1]):
            if st.dsts_ids[i] == st.deps_ids[j]:
                return False
    return True


@njit
def second_issue(st, sm, sp, w, first, now):
    """`SM._second_issue`: dual issue of the warp's next instruction with `first`."""
    wr = st.w[w]
    pc = st.pcs[wr.pos]
    if not st.second_ok[pc]:
        return
    if st.cfg[0].dual == DUAL_KEPLER:
        if not _disjoint(st, first, pc):
            return
        if wr.ready_at > now + 1 + EPS:
            return
    queue = st.queue[pc]
    if queue == SREG_WAIT or st.sp_pipes[sp, st.pipe[pc]] > now + 1 - EPS:
        return
    if queue:
        throttle, _ = queue_full(st, sp, queue, now, st.qstore[pc])
        if throttle:
            return
    execute(st, sm, sp, w, pc, now)


# ---- executing one instruction ---------------------------------------------------------------------
@njit
def execute(st, sm, sp, w, pc, now):
    """`SM._execute`: pipe occupancy, the result's ready cycle, the warp's next issue cycle. Whether
    the warp exited."""
    c = st.cfg[0]
    wr = st.w[w]
    kind = st.kind[pc]
    pipe = st.pipe[pc]
    occupancy = st.occupancy[pc]
    pos = wr.pos
    pipe_free = st.sp_pipes[sp, pipe]
    st.sp_pipes[sp, pipe] = (pipe_free if pipe_free > now else now) + occupancy
    st.sp_busy[sp, pipe] += occupancy
    smr = st.sm[sm]
    smr.issued += 1
    regc = st.regc[pos]
    if st.is_mem[pc]:
        done, long_wait, read = access(st, sm, sp, w, kind, pos, pc, now)
        read += regc
    elif regc and not c.read_ports:
        done, long_wait, read = now + st.latency[pc] + regc, False, now + 2 + regc
    else:
        done, long_wait, read = now + st.latency[pc], False, now + 2
    role = st.copy_role[pc]
    if role == COPY:  # (`SM._execute`: cp.async groups)
        if done > wr.copies_done:
            wr.copies_done = done
    elif role == COMMIT:
        done = wr.copies_done if wr.copies_done > now + 2 else now + 2
        long_wait = True
        wr.copies_done = now
        if not c.control_mode:
            sb_push(st, w, st.wbar[pc] if st.wbar[pc] >= 0 else 0, done, True, now)
    if st.writes[pc] and done > smr.last_done:
        smr.last_done = done
    pos += 1
    wr.pos = pos
    if pos == wr.jump_at:  # sampled mode: the end of a made-up loop iteration
        P.leave(st, w)
        pos = wr.pos
    if pos == wr.gap_at:  # sampled mode: the next loop iteration was left out of the trace
        P.enter(st, sm, w)
        pos = wr.pos
    if c.control_mode:
        if st.wbar[pc] >= 0:
            sb_push(st, w, st.wbar[pc], done, long_wait, now)
        if st.rbar[pc] >= 0:
            sb_push(st, w, st.rbar[pc], read, long_wait, now)
    else:
        reason = LONG_SB if long_wait else st.result_reason[pc]
        for i in range(st.dsts_start[pc], st.dsts_start[pc + 1]):
            d = st.dsts_ids[i]
            st.rr_t[w, d] = done
            st.rr_r[w, d] = reason
    if kind == BAR:
        arrive(st, sm, w, now)
        return False
    if wr.more:
        if wr.end - pos < LOOKAHEAD:
            if pos >= wr.end:
                raise RuntimeError("compiled engine: a warp ran out of loaded records")
            smr.starved = True
    elif pos >= wr.end and wr.jump_at < 0:  # (made-up iterations lie past every warp's records)
        exit_warp(st, sm, w, pc, now)
        return True
    t = now + st.stall[pc]
    nxt = st.pcs[pos]
    if st.operand_wait[nxt]:
        t, reason = operands_ready(st, w, nxt, t, now)
    else:
        reason = WAIT
    if kind == BRANCH and done > t:
        t, reason = now + c.branch_latency, BRANCH_R
    if regc:
        if not c.read_ports:
            t, reason = t + regc, (DISPATCH_R if t <= now + 1 else reason)
            st.sp[sp].dispatch_free = now + 1 + regc
        elif occupancy > 1:
            if now + 1 + regc > st.sp_pipes[sp, pipe]:
                st.sp_pipes[sp, pipe] = now + 1 + regc
        else:
            if t <= now + 1 + regc:
                t, reason = now + 1 + regc, (DISPATCH_R if t <= now + 1 else reason)
            st.sp[sp].dispatch_free = now + 1 + regc
    wr.ready_at, wr.reason = t, reason
    return False


@njit
def sb_push(st, w, b, release, long_wait, now):
    """A scoreboard release (`w.sb[b].append`). Releases at or before `now` can no longer delay
    anything (waits and DEPBARs look at releases after the current cycle), so a full list drops them.
    If it is still full (more loads in flight on one scoreboard than it holds: an unrolled prologue's
    40 LDGs), the earliest release goes, the last of equal ones: a wait mask waits for the first of the
    latest releases and a DEPBAR of k for the (k + 1)-th latest, so both stay exact for k below the
    capacity (the object model keeps every release)."""
    n = st.sb_n[w, b]
    cap = st.sb_rel.shape[2]
    if n >= cap:
        k = 0
        for i in range(n):
            if st.sb_rel[w, b, i] > now:
                st.sb_rel[w, b, k] = st.sb_rel[w, b, i]
                st.sb_long[w, b, k] = st.sb_long[w, b, i]
                k += 1
        n = k
        if n >= cap:
            drop = 0
            for i in range(n):  # the last of the earliest releases
                if st.sb_rel[w, b, i] <= st.sb_rel[w, b, drop]:
                    drop = i
            if release <= st.sb_rel[w, b, drop]:  # the new one is (the last of) the earliest
                st.sb_n[w, b] = n
                return
            for i in range(drop, n - 1):
                st.sb_rel[w, b, i] = st.sb_rel[w, b, i + 1]
                st.sb_long[w, b, i] = st.sb_long[w, b, i + 1]
            n -= 1
    st.sb_rel[w, b, n] = release
    st.sb_long[w, b, n] = long_wait
    st.sb_n[w, b] = n + 1


@njit
def access(st, sm, sp, w, kind, pos, pc, now):
    """`SM._access`: (cycle the data is there, long scoreboard?, cycle its registers were read)."""
    c = st.cfg[0]
    first = sm * c.n_sp * 2  # the SM's first queue; its queues of one kind are every second one
    if kind == SMEM:
        wf = st.wavef[pos]
        start, passed = M.queue_access(st, sp * 2 + M.MIO, sm * 2 + M.MIO, first + M.MIO, 2, c.n_sp, now, max(wf, 1),
                                       c.unified_stage, st.qstore[pc])
        if c.shared_queue:
            M.hold_places(st, sp, passed, c.share_smem)
        st.sm[sm].smem_wavefronts += wf
        return passed + c.smem_latency + st.smem_extra[pc], False, (now if c.read_at_issue else start) + c.mio_read
    if kind == CMEM:
        return now + c.const_latency, False, now + 2
    start, passed = M.queue_access(st, sp * 2 + M.LSU, sm * 2 + M.LSU, first + M.LSU, 2, c.n_sp, now,
                                   max(1, st.glines[pos]), c.unified_stage, st.qstore[pc])
    row = st.mem_rows[pos]
    lo, hi, base = st.sector_start[row], st.sector_start[row + 1], st.sector_base[row]
    if kind == GLOAD:
        done = M.l1_load(st, sm, w, now, passed, lo, hi, base, st.l1_cached[pc], st.warp_bytes[pc])
        if st.copy_mio[pc] > 0.0:  # (`SM._access`: an L1-allocating cp.async's passes of the shared-memory pipe)
            M.queue_access(st, sp * 2 + M.MIO, sm * 2 + M.MIO, first + M.MIO, 2, c.n_sp, now,
                           st.wavef[pos] * st.copy_mio[pc], c.unified_stage, False, False)
    else:
        done, accepted = M.store(st, now, lo, hi, base, passed)
        M.queue_hold(st, sp * 2 + M.LSU, accepted)
        if c.sampled:  # (`MemorySystem.stored`: the sectors stores wrote)
            st.row_stored[row] = 1
        if accepted > passed:  # (`AccessQueue.hold`)
            passed = accepted
        wr = st.w[w]
        if passed > wr.stores_done:  # (`SM._access`: it drains at EXIT until its stores have left)
            wr.stores_done = passed
    if c.shared_queue:
        M.hold_places(st, sp, passed, c.share_global)
    return done, True, (now if c.read_at_issue else start) + c.lsu_read


@njit
def operands_ready(st, w, pc, t, now):
    """`SM._operands_ready`: when instruction `pc`, which cannot issue before `t`, has its operands,
    and what it waits for (scoreboards of its wait mask and DEPBAR; or register ready times)."""
    reason = WAIT
    if st.cfg[0].control_mode:
        mask = st.wait_mask[pc]
        for b in range(6):
            if mask >> b & 1 and st.sb_n[w, b] > 0:
                rel = -INF
                is_long = False
                for i in range(st.sb_n[w, b]):  # the first of the latest releases
                    if st.sb_rel[w, b, i] > rel:
                        rel = st.sb_rel[w, b, i]
                        is_long = st.sb_long[w, b, i]
                if rel > t:
                    t, reason = rel, (LONG_SB if is_long else SHORT_SB)
                st.sb_n[w, b] = 0
    else:
        for i in range(st.deps_start[pc], st.deps_start[pc + 1]):
            d = st.deps_ids[i]
            if st.rr_t[w, d] > t:
                t, reason = st.rr_t[w, d], st.rr_r[w, d]
    b = st.depbar_b[pc]
    if b >= 0:
        k = st.depbar_k[pc]
        pend = st.scratch_pend
        n = 0
        for i in range(st.sb_n[w, b]):
            if st.sb_rel[w, b, i] > now:
                pend[n] = st.sb_rel[w, b, i]
                n += 1
        if n > k:
            rel = np.sort(pend[:n])[n - k - 1]
            if rel > t:
                t, reason = rel, LONG_SB
    return t, reason


# ---- barriers and exit -----------------------------------------------------------------------------
@njit
def arrive(st, sm, w, now):
    """`SM._arrive`."""
    wr = st.w[w]
    wr.at_barrier = True
    wr.reason = BARRIER_R
    wr.ready_at = now + 1
    st.cta[wr.cta].arrived += 1
    maybe_release(st, sm, wr.cta, now)


@njit
def maybe_release(st, sm, slot, now):
    """`SM._maybe_release`: the last live warp to arrive releases the CTA's barrier."""
    cta = st.cta[slot]
    if cta.arrived and cta.arrived >= cta.live:
        cta.arrived = 0
        wpc = st.cfg[0].warps_per_cta
        for x in range(slot * wpc, slot * wpc + wpc):
            xr = st.w[x]
            if xr.at_barrier:
                xr.at_barrier = False
                st.sp[xr.sp].dirty = True
                st.sm[sm].changed = True
                pc = prev_pc(st, xr)
                cycles = now + 1 - xr.since
                if cycles > 0:
                    st.stalls[sm, BARRIER_R, pc] += cycles
                xr.since = now + 1
                t, nxt = now + st.stall[pc], st.pcs[xr.pos]
                if st.operand_wait[nxt]:
                    xr.ready_at, xr.reason = operands_ready(st, x, nxt, t, now)
                else:
                    xr.ready_at, xr.reason = t, WAIT


@njit
def prev_pc(st, wr):
    """The instruction of the record before the warp's position in its stream (`x.pcs[x.pos - 1]`:
    the barrier it waits at, or where the sampler moved it to): the record before it in the arrays,
    except at the first record of a made-up loop iteration (sampled mode), which follows a back
    edge, the loop's branch."""
    if wr.jump_at >= 0 and wr.pos == wr.jump_at - st.lp[wr.gid].length:
        return st.cfg[0].loop_branch
    return st.pcs[wr.pos - 1]


@njit
def exit_warp(st, sm, w, pc, now):
    """`SM._exit`: the warp leaves its sub-partition, drains its stores (charged at its EXIT `pc`); the
    CTA retires with its last warp's drain."""
    wr = st.w[w]
    cta = st.cta[wr.cta]
    if wr.stores_done > now:
        st.stalls[sm, DRAIN_R, pc] += wr.stores_done - now
        if wr.stores_done > cta.drained:
            cta.drained = wr.stores_done
    wr.done = True
    sp = wr.sp
    spr = st.sp[sp]
    spr.dirty = True
    smr = st.sm[sm]
    smr.changed = True
    ws = st.sp_warps[sp]
    j = 0
    for i in range(spr.nw):
        if ws[i] != w:
            ws[j] = ws[i]
            j += 1
    spr.nw = j
    if spr.last == w:  # (the slot may be reused; a retired last issuer counts as none)
        spr.last = -1
    smr.n_warps -= 1
    cta.live -= 1
    if cta.live == 0:
        launch_next(st, sm, cta_done(st, sm, wr.cta, cta.drained if cta.drained > now else now))
    else:
        maybe_release(st, sm, wr.cta, now)
