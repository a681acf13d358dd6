"""One streaming multiprocessor: sub-partitions with warp schedulers, pipes, scoreboards, barriers.

The SM is one simpy process. Each step it lets every sub-partition's scheduler issue (one
instruction, or a dual-issue pair), then jumps to the next cycle at which some warp can issue: warps
know when their next instruction becomes ready, because every latency (pipes, shared memory, the
memory hierarchy) is resolved analytically when the producing instruction issues.
Dependencies follow the compiler's control codes (stall counts, scoreboard barriers; sm_5x and
sm_90) or, with `honour_control_codes: false` and on Kepler, a register scoreboard using the unit
latencies of the config.
"""

from __future__ import annotations

import math


from gpusim.errors import GpusimError
from gpusim.timing import stalls as S
from gpusim.timing.static import BAR, BRANCH, CMEM, DEPBAR, EXIT, GLOAD, GSTORE, SMEM

EPS = 1e-9


class Warp:
    """A resident warp: its dynamic instruction stream and what it waits for."""

    __slots__ = ("gid", "cta", "sp", "age", "pcs", "mem_rows", "regc", "wavef", "glines", "pos", "ready_at", "reason",
                 "since", "done", "at_barrier", "sb", "reg_ready")

    def __init__(self, gid, cta, sp, age, stream, now):
        self.gid, self.cta, self.sp, self.age = gid, cta, sp, age
        self.pcs, self.mem_rows, self.regc, self.wavef, self.glines = stream
        self.pos = 0
        self.ready_at = now
        self.reason = S.NOT_SELECTED
        self.since = now
        self.done = not self.pcs
        self.at_barrier = False
        self.sb = [[] for _ in range(8)]  # per scoreboard: [(release cycle, long?)]
        self.reg_ready = {}  # dependency id -> (ready cycle, stall reason)


class CTA:
    __slots__ = ("cid", "warps", "live", "arrived")

    def __init__(self, cid):
        self.cid, self.warps, self.live, self.arrived = cid, [], 0, 0


class SubPartition:
    __slots__ = ("index", "warps", "pipes", "dispatch_free", "last", "lsu_inflight", "issued", "pipe_busy", "wake",
                 "dirty")

    def __init__(self, index):
        self.index = index
        self.warps: list[Warp] = []
        self.pipes: dict[str, float] = {}
        self.dispatch_free = 0.0
        self.last = None
        self.lsu_inflight: list[float] = []
        self.issued = 0
        self.pipe_busy: dict[str, float] = {}
        self.wake = 0.0  # earliest cycle at which one of its warps can issue
        self.dirty = True  # its warps changed since `wake` was computed


class SM:
    def __init__(self, index, gpu, l1):
        self.index, self.gpu, self.l1 = index, gpu, l1
        cfg = gpu.cfg
        self.cfg = cfg
        self.sps = [SubPartition(i) for i in range(cfg.sm.sub_partitions)]
        self.static = gpu.static
        self.control_mode = gpu.control_mode
        self.dual = cfg.sm.scheduler.dual_issue
        self.policy = cfg.sm.scheduler.policy
        self.smem_free = 0.0
        self.l1_free = 0.0  # the L1/texture tag stage: one cycle per distinct line of an access
        self.l1_lpc = cfg.memory.l1.lines_per_cycle
        self.smem_wpc = cfg.sm.shared_memory.wavefronts_per_cycle
        self.smem_latency = cfg.sm.shared_memory.latency_cycles
        self.mio_depth = cfg.sm.mio_queue_depth
        self.lsu_depth = cfg.sm.lsu_queue_depth
        self.const_latency = cfg.memory.constant_latency_cycles
        self.branch_latency = cfg.sm.scheduler.branch_latency_cycles
        self.stalls = S.StallTable(len(self.static))
        self.ctas: list[CTA] = []
        self.cta_finish: list[float] = []
        self.warps: list[Warp] = []
        self.age = 0
        self.issued = 0
        self.finish = 0.0
        self.last_done = 0.0  # latest completion of any issued instruction (results, stores)
        self.smem_wavefronts = 0
        self.sampler = gpu.make_sampler()  # None in detailed mode
        self.timeline = [] if gpu.window is not None else None  # events for the Perfetto view
        self.window = gpu.window

    # ---- CTA residency ---------------------------------------------------------------------------
    def launch(self, cid: int, now: float) -> None:
        cta = CTA(cid)
        for w in range(self.gpu.warps_per_cta):
            gid = cid * self.gpu.warps_per_cta + w
            sp = self.sps[self.age % len(self.sps)]  # warp slot -> sub-partition, round robin
            warp = Warp(gid, cta, sp, self.age, self.gpu.stream(gid), now + self.gpu.cta_launch_cycles)
            self.age += 1
            cta.warps.append(warp)
            if not warp.done:
                sp.dirty = True
                cta.live += 1
                sp.warps.append(warp)
                self.warps.append(warp)
        self.ctas.append(cta)
        if cta.live == 0:
            self._cta_done(cta, now)

    def _cta_done(self, cta: CTA, now: float) -> None:
        # completion in the kernel's time: simulated cycles plus any cycles fast-forwarded so far
        self.cta_finish.append(now + (self.sampler.extrapolated_cycles if self.sampler is not None else 0.0))
        self.ctas.remove(cta)
        nxt = self.gpu.next_cta()
        if nxt is not None:
            self.launch(nxt, now)

    # ---- the process -------------------------------------------------------------------------------
    # SMs interact only through L2/DRAM; an SM runs ahead of the event engine's clock by up to this
    # many cycles before yielding to the others (it keeps its own clock `now`, used for every
    # timestamp), so the engine is entered once per quantum instead of once per issuing cycle
    QUANTUM = 64

    def run(self, env):
        watchdog = self.cfg.watchdog_cycles
        last_progress = now = env.now
        while self.warps:
            progressed = False
            limit = now + EPS
            for sp in self.sps:
                if sp.wake <= limit:
                    sp.dirty = True
                    if sp.dispatch_free <= limit and sp.warps and self._schedule(sp, now):
                        progressed = True
            if progressed:
                last_progress = now
            elif now - last_progress > watchdog:
                raise GpusimError(f"watchdog: SM {self.index} made no progress for {watchdog} cycles at cycle "
                                  f"{now:.0f} ({len(self.warps)} warps resident)")
            if not self.warps:
                break
            if self.sampler is not None and now >= self.sampler.next_check:
                self.sampler.check(self, now)
            now = self._next_time(now)
            if now - env.now >= self.QUANTUM:
                yield env.timeout(now - env.now)
        self.finish = max(now + 1, self.last_done)  # the SM is done when its last result lands

    def _next_time(self, now: float) -> float:
        """The next cycle at which any sub-partition can issue (each remembers its own)."""
        floor = now + 1
        best = math.inf
        for sp in self.sps:
            if not sp.dirty:  # nothing changed for it: its wake time stands (and is in the future)
                if sp.wake < best:
                    best = sp.wake
                continue
            sp.dirty = False
            wake = math.inf
            for w in sp.warps:
                if not w.at_barrier:
                    t = w.ready_at if w.ready_at > floor else floor
                    if t < wake:
                        wake = t
            if sp.dispatch_free > wake:
                wake = sp.dispatch_free
            sp.wake = wake
            if wake < best:
                best = wake
        if best == math.inf:
            raise GpusimError(f"deadlock: SM {self.index}: every resident warp waits at a barrier")
        return math.ceil(best - EPS)

    # ---- scheduling ------------------------------------------------------------------------------------
    def _candidates(self, sp: SubPartition):
        """Warps in the order the policy considers them. `sp.warps` is kept in age order.
        gto: the last issuing warp first, then the oldest; lrr: round robin after the last issuer;
        two_level: the oldest `two_level_active_warps` warps not waiting on global memory."""
        ws = sp.warps
        last = sp.last
        if self.policy == "gto":
            if last is not None and not last.done:
                yield last
            yield from ws
        elif self.policy == "lrr":
            i = ws.index(last) + 1 if last is not None and not last.done else 0
            yield from ws[i:]
            yield from ws[:i]
        else:
            n = self.cfg.sm.scheduler.two_level_active_warps
            yield from [w for w in ws if w.reason != S.LONG_SB][:n]

    def _schedule(self, sp: SubPartition, now: float) -> bool:
        limit = now + EPS
        if self.policy == "gto":  # the common case, without the generator
            last = sp.last
            if last is not None and not last.done and last.ready_at <= limit and not last.at_barrier \
                    and self._issue(sp, last, now):
                return True
            for w in sp.warps:
                if w.ready_at <= limit and w is not last and not w.at_barrier and self._issue(sp, w, now):
                    sp.last = w
                    return True
            return False
        for w in self._candidates(sp):
            if w.ready_at <= limit and not w.at_barrier and not w.done and self._issue(sp, w, now):
                sp.last = w
                return True
        return False

    def _charge_until(self, w: Warp, now: float) -> None:
        """Charge the warp's cycles since its last state change: to its reason until it became
        ready, then to not_selected."""
        pc = w.pcs[w.pos]
        ready = w.ready_at if w.ready_at < now else now
        rows = self.stalls.rows
        if ready > w.since:
            rows[w.reason][pc] += ready - w.since
            rows[S.NOT_SELECTED][pc] += now - ready
            if self.timeline is not None:
                self._record(w, w.since, ready, w.reason, pc)
                self._record(w, ready, now, S.NOT_SELECTED, pc)
        else:
            rows[S.NOT_SELECTED][pc] += now - w.since
            if self.timeline is not None:
                self._record(w, w.since, now, S.NOT_SELECTED, pc)
        w.since = now

    def _record(self, w: Warp, start: float, end: float, reason: int, pc: int) -> None:
        """Timeline event (within the recording window): [sm, sub-partition, warp, start, cycles, reason, pc]."""
        lo, hi, ctas = self.window
        if end > start and end > lo and start < hi and (ctas is None or w.cta.cid in ctas):
            self.timeline.append([self.index, w.sp.index, w.gid, round(start, 2), round(end - start, 2), reason, pc])

    def _throttle(self, w: Warp, until: float, reason: int, now: float) -> None:
        self._charge_until(w, now)
        w.ready_at, w.reason = until, reason

    def _issue(self, sp: SubPartition, w: Warp, now: float) -> bool:
        """Try to issue the warp's next instruction; False if a pipe or queue throttles it."""
        pc = w.pcs[w.pos]
        st = self.static[pc]
        pipe_free = sp.pipes.get(st.pipe, 0.0)
        if pipe_free > now + 1 - EPS:
            self._throttle(w, pipe_free, S.MATH, now)
            return False
        if st.kind == SMEM and self.smem_free - now > self.mio_depth:
            self._throttle(w, self.smem_free - self.mio_depth, S.MIO, now)
            return False
        if st.kind in (GLOAD, GSTORE):
            sp.lsu_inflight = [t for t in sp.lsu_inflight if t > now]
            if len(sp.lsu_inflight) >= self.lsu_depth:
                self._throttle(w, min(sp.lsu_inflight), S.LG, now)
                return False
            if self.l1_free - now > self.lsu_depth:  # the tag stage's queue is full
                self._throttle(w, self.l1_free - self.lsu_depth, S.LG, now)
                return False
        self._charge_until(w, now)
        self.stalls.charge(S.SELECTED, pc, 1)
        if self.timeline is not None:
            self._record(w, now, now + 1, S.SELECTED, pc)
        w.since = now + 1
        self._execute(sp, w, st, now)
        if self.dual != "none" and not w.done and not w.at_barrier:
            self._second_issue(sp, w, st, now)
        return True

    def _second_issue(self, sp, w, first, now) -> None:
        """Dual issue: Maxwell pairs the instructions nvdisasm shows in braces; Kepler pairs the next
        instruction of the warp when it is independent of the first and its pipe has room."""
        if self.dual == "control_codes" and not first.dual:
            return
        nxt = self.static[w.pcs[w.pos]]
        if nxt.kind in (BAR, EXIT, BRANCH, DEPBAR) or first.kind in (BRANCH,):
            return
        if self.dual == "kepler":
            if set(nxt.srcs).intersection(first.dsts) or set(nxt.dsts).intersection(first.dsts):
                return
            if w.ready_at > now + 1 + EPS:  # its own dependencies are not met yet
                return
        if sp.pipes.get(nxt.pipe, 0.0) > now + 1 - EPS:
            return
        self.stalls.charge(S.SELECTED, w.pcs[w.pos], 0)  # the pair shares the issue cycle
        self._execute(sp, w, nxt, now)

    # ---- executing one instruction ---------------------------------------------------------------------
    def _execute(self, sp: SubPartition, w: Warp, st, now: float) -> None:
        pos = w.pos
        pipe_free = sp.pipes.get(st.pipe, 0.0)
        sp.pipes[st.pipe] = (pipe_free if pipe_free > now else now) + st.occupancy
        sp.pipe_busy[st.pipe] = sp.pipe_busy.get(st.pipe, 0.0) + st.occupancy
        sp.issued += 1
        self.issued += 1
        regc = w.regc[pos]
        done = now + st.latency + regc
        long_wait = False
        kind = st.kind
        if kind == SMEM:
            wf = w.wavef[pos]
            start = self.smem_free if self.smem_free > now else now
            self.smem_free = start + max(wf, 1) / self.smem_wpc
            self.smem_wavefronts += wf
            done = self.smem_free + self.smem_latency
        elif kind == GLOAD or kind == GSTORE:
            sectors = self.gpu.sectors(w.mem_rows[pos])
            start = self.l1_free if self.l1_free > now else now
            self.l1_free = start + max(1, w.glines[pos]) / self.l1_lpc
            t = self.l1_free
            done = self.l1.load(t, sectors, st.readonly) if kind == GLOAD else self.l1.store(t, sectors)
            sp.lsu_inflight.append(done)
            long_wait = True
        elif kind == CMEM:
            done = now + self.const_latency
        if done > self.last_done and (st.dsts or kind == GSTORE):  # results and stores, not EXIT/BRA
            self.last_done = done
        w.pos = pos + 1
        # results: scoreboards (control codes) or register ready times
        if self.control_mode:
            if st.write_barrier is not None:
                w.sb[st.write_barrier].append((done, long_wait))
            if st.read_barrier is not None:
                w.sb[st.read_barrier].append((now + 2 + regc, False))
        else:
            reason = S.LONG_SB if long_wait else (S.SHORT_SB if st.variable else S.WAIT)
            for d in st.dsts:
                w.reg_ready[d] = (done, reason)
        if kind == BAR:
            self._arrive(w, now)
            return
        if w.pos >= len(w.pcs):  # the stream ends: EXIT (a guarded EXIT that retired no lane is not the end)
            self._exit(w, now)
            return
        self._next_ready(w, st, now, done, regc)
        if regc:
            sp.dispatch_free = now + 1 + regc

    def _next_ready(self, w: Warp, st, now: float, done: float, regc: int) -> None:
        nxt = self.static[w.pcs[w.pos]]
        if self.control_mode:
            t, reason = now + max(st.stall, 1), S.WAIT
            mask = nxt.wait_mask
            if mask:
                for b in range(6):
                    if mask >> b & 1 and w.sb[b]:
                        for rel, is_long in w.sb[b]:
                            if rel > t:
                                t, reason = rel, (S.LONG_SB if is_long else S.SHORT_SB)
                        w.sb[b] = []
            if nxt.depbar is not None:
                b, k = nxt.depbar
                pend = sorted(rel for rel, _ in w.sb[b] if rel > now)
                if len(pend) > k:
                    rel = pend[len(pend) - k - 1]
                    if rel > t:
                        t, reason = rel, S.LONG_SB
        else:
            t, reason = now + 1, S.WAIT
            rr = w.reg_ready
            for d in nxt.srcs + nxt.dsts:
                r = rr.get(d)
                if r is not None and r[0] > t:
                    t, reason = r
        if st.kind == BRANCH and done > t:
            t, reason = now + self.branch_latency, S.BRANCH
        if regc:
            t, reason = t + regc, (S.REG_BANK if t <= now + 1 else reason)
        w.ready_at, w.reason = t, reason

    # ---- barriers and exit ------------------------------------------------------------------------
    def _arrive(self, w: Warp, now: float) -> None:
        cta = w.cta
        w.at_barrier = True
        w.reason = S.BARRIER
        w.ready_at = now + 1
        cta.arrived += 1
        self._maybe_release(cta, now)

    def _maybe_release(self, cta: CTA, now: float) -> None:
        if cta.arrived and cta.arrived >= cta.live:
            cta.arrived = 0
            for x in cta.warps:
                if x.at_barrier:
                    x.at_barrier = False
                    x.sp.dirty = True
                    pc = x.pcs[x.pos - 1]
                    self.stalls.charge(S.BARRIER, pc, now + 1 - x.since)
                    if self.timeline is not None:
                        self._record(x, x.since, now + 1, S.BARRIER, pc)
                    x.since = now + 1
                    self._next_ready(x, self.static[pc], now, now + 1, 0)

    def _exit(self, w: Warp, now: float) -> None:
        w.done = True
        w.sp.dirty = True
        w.sp.warps.remove(w)
        self.warps.remove(w)
        cta = w.cta
        cta.live -= 1
        if cta.live == 0:
            self._cta_done(cta, now)
        else:
            self._maybe_release(cta, now)
