"""One streaming multiprocessor: sub-partitions with warp schedulers, pipes, scoreboards, barriers.

The SM is one simpy process. Each step it lets every sub-partition's scheduler issue (one
instruction, or a dual-issue pair), then jumps to the next cycle at which some warp can issue: warps
know when their next instruction becomes ready, because every latency (pipes, shared memory, the
memory hierarchy) is resolved analytically when the producing instruction issues.
Dependencies follow the compiler's control codes (stall counts, scoreboard barriers; sm_5x and
sm_90) or, with `honour_control_codes: false` and on Kepler, a register scoreboard using the unit
latencies of the config.

The loop runs once per attempt to issue, so it reads per-instruction facts prepared once per GPU
(`static.IssueFacts`: pipes as list indices, an instruction's fields as one tuple) and keeps its
clock a float (ints mixed with the floats of latencies and queues make slower arithmetic), except
when it records a timeline, whose events keep the integer cycle numbers they have always had.
"""

from __future__ import annotations

import math
import operator
from collections import deque

from gpusim.errors import GpusimError
from gpusim.timing import stalls as S
from gpusim.timing.mem.lsu import LSU, MIO, AccessQueue, DataStage, Stage
from gpusim.timing.static import BAR, BRANCH, CMEM, COPY, GLOAD, SMEM, SREG_WAIT, IssueFacts, queue_stores

EPS = 1e-9

_release = operator.itemgetter(0)  # of a scoreboard entry (release cycle, long?)


LEAVES_SET = (S.LONG_SB, S.SHORT_SB, S.LG, S.MIO)  # two_level_sticky: a warp waiting for one of these leaves the set


class Warp:
    """A resident warp: its dynamic instruction stream and what it waits for."""

    __slots__ = ("gid", "cta", "sp", "age", "pcs", "mem_rows", "regc", "wavef", "glines", "pos", "ready_at", "reason",
                 "since", "done", "at_barrier", "sb", "reg_ready", "gap_at", "misses", "active", "stores_done",
                 "copies_done", "sreg_due")

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
        self.gap_at = -1  # sampled mode: stream position where left-out loop iterations are made up
        self.misses = []  # its outstanding loads that missed L1: (return cycle, bytes) (mem/l1.py)
        self.active = False  # two_level_sticky: in its sub-partition's active set
        self.stores_done = 0.0  # the cycle its global stores so far have left the SM: L2 took them (it drains at EXIT until then)
        self.copies_done = 0.0  # the cycle its cp.async copies since the last LDGDEPBAR have written shared memory
        self.sreg_due = -1.0  # an S2R waiting for the MIO queues (`SM._sreg_wait`): the cycle it may issue, -1: none


class CTA:
    __slots__ = ("cid", "warps", "live", "arrived", "launched", "drained")

    def __init__(self, cid, launched):
        self.cid, self.warps, self.live, self.arrived = cid, [], 0, 0
        self.launched = launched  # in the kernel's time (see SM.kernel_time)
        self.drained = 0.0  # the cycle its exited warps' stores have left the SM


class SubPartition:
    __slots__ = ("index", "warps", "pipe_names", "pipes", "busy", "dispatch_free", "last", "order", "mio", "lsu",
                 "wake", "dirty", "slots", "held")

    def __init__(self, index, pipe_names, sm_cfg, mio_stage, tag_stage, data_stage=None):
        self.index = index
        self.warps: list[Warp] = []
        self.pipe_names = pipe_names  # pipe id -> name (IssueFacts)
        self.pipes = [0.0] * len(pipe_names)  # per pipe id: the cycle it accepts its next instruction
        self.busy = [0.0] * len(pipe_names)  # per pipe id: cycles busy so far
        self.dispatch_free = 0.0
        self.last = None  # the warp that issued last
        self.order = None  # gto: its warps in the order the scheduler tries them (None: to be worked out)
        self.mio = AccessQueue(sm_cfg.mio_queue_depth, sm_cfg.mio_sub_partition_rate, mio_stage, MIO,
                               data_stage, sm_cfg.mio_store_queue_depth)  # shared memory
        self.lsu = AccessQueue(sm_cfg.lsu_queue_depth, sm_cfg.lsu_sub_partition_rate, tag_stage, LSU,
                               data_stage, sm_cfg.lsu_store_queue_depth)  # global/local
        self.wake = 0.0  # earliest cycle at which one of its warps can issue
        self.dirty = True  # its warps changed since `wake` was computed
        # `sm.shared_access_queue`: both kinds' places in issue order, (release cycle, share), and the
        # shares held (`SM._queue_full`)
        self.slots: deque = deque()
        self.held = 0

    @property
    def pipe_busy(self) -> dict[str, float]:
        """Busy cycles per pipe, for the pipes that issued anything."""
        return {name: b for name, b in zip(self.pipe_names, self.busy) if b}


class SM:
    def __init__(self, index, gpu, l1):
        self.index, self.gpu, self.l1 = index, gpu, l1
        cfg = gpu.cfg
        self.cfg = cfg
        self.static = gpu.static
        self.control_mode = gpu.control_mode
        self.dual = cfg.sm.scheduler.dual_issue
        self.tick = gpu.issue_facts.tick  # the clock's type (see IssueFacts)
        facts = gpu.issue_facts
        self.facts = facts
        self.queue_store = queue_stores(gpu.static)  # per instruction: it takes a store slot of its queue
        self.execute_facts, self.operand_wait = facts.execute, facts.operand_wait  # read per instruction
        # the SM-wide stages behind the sub-partitions' queues: the shared-memory banks, the L1 tag stage,
        # and where L1 and shared memory are one array (`memory.l1.unified_data_stage`) one data stage
        # behind both (mem/lsu.py `DataStage`)
        l1 = cfg.memory.l1
        mio_stage = Stage(cfg.sm.shared_memory.wavefronts_per_cycle)
        tag_stage = Stage(l1.lines_per_cycle)
        data = DataStage(l1.lines_per_cycle, l1.data_stage == "booked") if l1.unified_data_stage else None
        self.sps = [SubPartition(i, facts.pipe_names, cfg.sm, mio_stage, tag_stage, data)
                    for i in range(cfg.sm.sub_partitions)]
        # the queues that share each stage (they divide its rate among those busy: mem/lsu.py)
        self.mio_queues, self.lsu_queues = [sp.mio for sp in self.sps], [sp.lsu for sp in self.sps]
        self.policy = cfg.sm.scheduler.policy
        self.smem_latency = cfg.sm.shared_memory.latency_cycles
        self.mio_read = cfg.sm.mio_register_read_cycles
        self.lsu_read = cfg.sm.lsu_register_read_cycles
        self.read_at_issue = cfg.sm.access_registers_read_at == "issue"
        self.shared_queue = cfg.sm.shared_access_queue  # the MIO and LSU queues are one (`_queue_full`)
        # in integer shares: places mio x lsu depth; a shared access takes lsu depth of them, a global one mio depth
        self.queue_places = cfg.sm.mio_queue_depth * cfg.sm.lsu_queue_depth
        self.share_smem, self.share_global = cfg.sm.lsu_queue_depth, cfg.sm.mio_queue_depth
        self.const_latency = cfg.memory.constant_latency_cycles
        self.branch_latency = cfg.sm.scheduler.branch_latency_cycles
        # register reads beyond the ports (precompute.register_read_cycles) occupy the port, not the result
        self.read_ports = cfg.sm.register_file.read_ports is not None
        self.stalls = S.StallTable(len(self.static))
        self.ctas: list[CTA] = []
        self.cta_residence: list[tuple[float, float]] = []  # (launch, end) of each finished CTA (`_cta_done`)
        self.warps: list[Warp] = []
        self.age = 0
        self.issued = 0  # warp instructions issued (and any the sampler fast-forwarded over)
        self.changed = True  # some sub-partition's warps changed outside its scheduling turn (see `run`)
        self.finish = 0.0
        self.last_done = 0.0  # latest completion of any issued instruction (results, stores) or CTA retirement
        self.smem_wavefronts = 0
        self.sampler = gpu.make_sampler()  # None in detailed mode
        self.timeline = [] if gpu.window is not None else None  # events for the Perfetto view
        self.window = gpu.window

    # ---- CTA residency ---------------------------------------------------------------------------
    def kernel_time(self, now: float) -> float:
        """Simulated cycles plus any cycles the sampler fast-forwarded so far (sampled mode)."""
        return now + self.sampler.extrapolated_cycles if self.sampler is not None else now

    def launch(self, cid: int, now: float) -> None:
        """Start CTA `cid` at `now`. A CTA that takes a slot another CTA left (`now` > 0) issues
        `sm.cta_launch_cycles` later; the first wave's launch is in the kernel's overhead."""
        cta = CTA(cid, self.kernel_time(now))
        ready = now + self.cfg.sm.cta_launch_cycles if now > 0 else now
        for w in range(self.gpu.warps_per_cta):
            gid = cid * self.gpu.warps_per_cta + w
            sp = self.sps[self.age % len(self.sps)]  # warp slot -> sub-partition, round robin
            warp = Warp(gid, cta, sp, self.age, self.gpu.stream(gid), ready)
            self.age += 1
            cta.warps.append(warp)
            if not warp.done:
                if self.sampler is not None:
                    self.sampler.attach(warp)
                sp.dirty = self.changed = True
                cta.live += 1
                sp.warps.append(warp)
                sp.order = None
                self.warps.append(warp)
        self.ctas.append(cta)
        if cta.live == 0:
            self._cta_done(cta, now)

    def _cta_done(self, cta: CTA, now: float) -> None:
        """The CTA's last warp exited at `now`: once the chip has retired it (`GPU.cta_retire`) its slot
        takes the SM's next CTA, and the SM is not done before."""
        done = self.gpu.cta_retire(now)
        if done > self.last_done:
            self.last_done = done
        # (sampled mode's residences end here, not at the retirement: the CTAs of its first waves end
        # together and wait for it in turn, which the steady state does not; `_cycles_per_cta` floors
        # the extrapolated CTAs at the retirement rate instead)
        self.cta_residence.append((cta.launched, self.kernel_time(now)))
        self.ctas.remove(cta)
        nxt = self.gpu.next_cta(self)
        if nxt is not None:
            self.launch(nxt, done)

    # ---- the process -------------------------------------------------------------------------------
    # SMs interact only through L2/DRAM; an SM runs ahead of the event engine's clock by up to this
    # many cycles before yielding to the others (it keeps its own clock `now`, used for every
    # timestamp), so the engine is entered once per quantum instead of once per issuing cycle
    QUANTUM = 64

    def run(self, env):
        """The SM steps from one issue cycle to the next. In a step, each sub-partition whose `wake`
        has come takes its turn, in index order:

        - its scheduler tries its ready warps in policy order (`_candidates`); the first one that no
          pipe or queue throttles issues (`_execute`). A warp is throttled while its pipe is still busy
          with earlier instructions (math_pipe_throttle) or the queue its access enters is full
          (`_queue_full`), and then waits until they free;
        - every warp tried is first charged its cycles since its last state change: to the reason
          it waited for until it became ready, then to not_selected (`selected` when it issues);
        - then it works out its next `wake` (`_wake`; when none issued, from the warps it passed).

        A sub-partition whose warps changed outside its turn (a barrier release, an exit, a CTA
        launch: `changed`) is caught up after all turns. Between steps the sampler (sampled mode)
        may look at the SM and move warps on. The next step is the earliest `wake`.

        This loop runs once per attempt to issue, so it keeps what it reads in locals."""
        watchdog, quantum = self.cfg.watchdog_cycles, self.QUANTUM
        sps, sampler, timeline, execute = self.sps, self.sampler, self.timeline, self._execute
        complete = self.policy != "two_level"  # the policy's order holds all the sub-partition's warps
        sticky = self.policy == "two_level_sticky"  # only the warps of its set may issue (`_sticky`)
        attempt, pairs = self.facts.attempt, self.facts.pairs
        rows = self.stalls.rows
        SELECTED, NOT_SELECTED = S.SELECTED, S.NOT_SELECTED
        float_clock, one = self.tick is float, self.tick(1)
        INF = math.inf
        next_check = sampler.next_check if sampler is not None else INF  # the sampler's next look
        last_progress = now = clock = self.tick(env.now)  # `clock`: the engine's time, which moves only while we yield
        while self.warps:
            progressed = False
            limit = now + EPS
            floor = now + one
            bound = floor - EPS  # a pipe busy beyond this throttles
            best = INF
            for sp in sps:
                wake = sp.wake
                if wake <= limit:
                    # ---- the sub-partition's turn: its scheduler tries its warps ----
                    wake = INF  # the earliest ready time of its warps not at a barrier, as they are passed
                    rescan = True  # whether to work that out from all its warps after the turn
                    if sp.dispatch_free <= limit:
                        rescan = not complete  # two_level tries some of its warps only
                        pipes = sp.pipes
                        for w in sp.order or self._candidates(sp, now):  # (`order` is kept for gto only)
                            if w.at_barrier:
                                continue
                            if w.ready_at > limit:
                                if w.ready_at < wake:
                                    wake = w.ready_at
                                continue
                            pc = w.pcs[w.pos]
                            pipe, queue, busy_reason = attempt[pc]
                            until = pipes[pipe]
                            if until > bound:
                                throttle = busy_reason
                            elif queue == SREG_WAIT:
                                throttle, until = self._sreg_wait(w, now)
                            elif queue:
                                throttle, until = self._queue_full(sp, queue, now, self.queue_store[pc])
                            else:
                                throttle = 0
                            # charge its cycles since its last state change (`since` <= `ready_at`, and
                            # `since` <= `now`; charges of 0 cycles are left out)
                            since, ready = w.since, w.ready_at
                            if ready >= now:  # ready only now
                                if now > since:
                                    rows[w.reason][pc] += now - since
                            elif ready > since:
                                rows[w.reason][pc] += ready - since
                                rows[NOT_SELECTED][pc] += now - ready
                            else:
                                rows[NOT_SELECTED][pc] += now - since
                            if timeline is not None:
                                self._record_wait(w, since, ready if ready < now else now, now, pc)
                            if throttle:
                                w.since = now
                                w.ready_at, w.reason = until, throttle
                                if until < wake:
                                    wake = until
                                continue
                            if sticky and not w.active:  # ready, but not in the set: not selected
                                w.since = now
                                if floor < wake:
                                    wake = floor
                                continue
                            # it issues: one `selected` cycle; a dual-issue partner may go with it
                            rows[SELECTED][pc] += 1.0
                            if timeline is not None:
                                self._record(w, now, floor, SELECTED, pc)
                            w.since = floor
                            if w is not sp.last:
                                sp.last, sp.order = w, None
                            execute(sp, w, pc, now)
                            if pairs[pc] and not w.done and not w.at_barrier:
                                self._second_issue(sp, w, pc, now)
                            progressed = rescan = True
                            break
                    # ---- its next wake (`_wake`) ----
                    if rescan:
                        wake = INF
                        for w in sp.warps:
                            if w.ready_at < wake and not w.at_barrier:
                                wake = w.ready_at
                    if wake < floor:
                        wake = floor
                    if sp.dispatch_free > wake:
                        wake = sp.dispatch_free
                    sp.wake = wake
                    sp.dirty = False
                if wake < best:
                    best = wake
            if self.changed:
                best = self._catch_up(now)
            if progressed:
                last_progress = now
            elif now - last_progress > watchdog:
                raise GpusimError(f"watchdog: SM {self.index} made no progress for {watchdog} cycles at cycle "
                                  f"{now:.0f} ({len(self.warps)} warps resident)")
            if not self.warps:
                break
            if now >= next_check:
                sampler.check(self, now)
                rows, next_check = self.stalls.rows, sampler.next_check
            if best == INF:
                raise GpusimError(f"deadlock: SM {self.index}: every resident warp waits at a barrier")
            now = -((EPS - best) // 1.0) if float_clock else math.ceil(best - EPS)  # the cycle `best` falls in
            if now - clock >= quantum:
                yield env.timeout(now - clock)
                clock = env.now
        self.finish = max(now + 1, self.last_done)  # the SM is done when its last result lands

    def _wake(self, sp: SubPartition, now: float) -> float:
        """The earliest cycle after `now` at which the sub-partition can issue: its first warp to be
        ready (warps at a barrier wait for the release), once its dispatch port is free."""
        wake = math.inf
        for w in sp.warps:
            if w.ready_at < wake and not w.at_barrier:
                wake = w.ready_at
        if wake < now + 1:
            wake = now + 1
        if sp.dispatch_free > wake:
            wake = sp.dispatch_free
        return wake

    def _catch_up(self, now: float) -> float:
        """Work out `wake` again for the sub-partitions whose warps changed; the earliest of all."""
        self.changed = False
        best = math.inf
        for sp in self.sps:
            if sp.dirty:
                sp.dirty = False
                sp.wake = self._wake(sp, now)
            if sp.wake < best:
                best = sp.wake
        return best

    # ---- scheduling ------------------------------------------------------------------------------------
    def _candidates(self, sp: SubPartition, now: float) -> list[Warp]:
        """Warps in the order the policy considers them. `sp.warps` is kept in age order.
        gto: the last issuing warp first, then the oldest (kept in `sp.order` until either changes);
        lrr: round robin after the last issuer; two_level: the oldest `two_level_active_warps` warps
        not waiting on global memory."""
        ws = sp.warps
        last = sp.last
        if self.policy == "gto":
            if sp.order is None:
                sp.order = [last] + [w for w in ws if w is not last] if last is not None and not last.done else ws[:]
            return sp.order
        if self.policy == "lrr":
            i = ws.index(last) + 1 if last is not None and not last.done else 0
            return ws[i:] + ws[:i]
        n = self.cfg.sm.scheduler.two_level_active_warps
        if self.policy == "two_level_sticky":
            return self._sticky(ws, last, n, now)
        return [w for w in ws if not (w.reason == S.LONG_SB and w.ready_at > now)][:n]

    @staticmethod
    def _sticky(ws: list, last, n: int, now: float) -> list:
        """two_level_sticky (a what-if; the H100 config keeps lrr): at most `n` warps of the sub-partition
        may issue, a set that keeps its members until they wait at a barrier, for a variable-latency result
        (long or short scoreboard) or for a memory queue (lg / mio throttle); the oldest warps that do none
        of these take the places so freed. Inside the set, round robin after the last issuer. The order
        holds the set, then the other warps: those are tried too (a throttled one is charged its
        throttle) but do not issue (not_selected). With n = 2 it reproduces the H100's
        validation/h100/micro/dispatch4_h100.json and dispatch5_h100.json (beside two issue-bound FFMA
        warps a third issues nothing until they end; three FFMA warps issue as two, then one) and
        regbank_order_h100.json (two such warps finish together), but not the mio_throttle share of
        shared-memory-bound kernels (bench/micro/README.md)."""
        count = 0
        for w in ws:
            if w.active:
                if w.at_barrier or (w.reason in LEAVES_SET and w.ready_at > now):
                    w.active = False
                else:
                    count += 1
        for w in ws:
            if count >= n:
                break
            if not w.active and not w.at_barrier and not (w.reason in LEAVES_SET and w.ready_at > now):
                w.active = True
                count += 1
        i = ws.index(last) + 1 if last is not None and not last.done else 0
        order = ws[i:] + ws[:i]
        return [w for w in order if w.active] + [w for w in order if not w.active]

    def _queue_full(self, sp: SubPartition, queue: int, now: float, store: bool) -> tuple[int, float]:
        """Queue throttles: a shared-memory access waits while its sub-partition's MIO queue is full
        (mio_throttle), a global access while its LSU queue is (lg_throttle), a store also while the
        queue's store slots are; see mem/lsu.py. With `sm.shared_access_queue` the two queues are one,
        a shared access taking 1 / mio depth of it and a global one 1 / lsu depth, its places given
        back in issue order (an access that has passed its stage keeps them until the ones before it
        have: `_hold_places`): an access that finds no room for its share waits in mio_throttle. H100
        (`xq`, memory14_h100.json): after 30 queued LDS a warp's LDGs enter one per LDS that leaves;
        after 30 LDGs 5 LDS enter, then one per LDG that leaves; an LDS still passes the LDGs queued
        before it (`order`, memory21); Nsight charges a global load waiting for a place mio_throttle
        (ncu_source_aat_h100.json: coalescedMultiply_padded's first LDG). (stall reason, cycle it may
        try again), or (0, _) if it may go."""
        mio, lsu = sp.mio, sp.lsu
        if queue == SMEM:
            until = mio.full_until(now, store)
            if until is not None:
                return S.MIO, until
        else:
            until = lsu.full_until(now, store)
            if until is not None:
                return S.LG, until
        if self.shared_queue:
            slots = sp.slots
            while slots and slots[0][0] <= now:
                sp.held -= slots.popleft()[1]
            if sp.held + (self.share_smem if queue == SMEM else self.share_global) > self.queue_places:
                return S.MIO, slots[0][0]
        return 0, now

    def _sreg_wait(self, w: Warp, now: float) -> tuple[int, float]:
        """`sm.thread_sreg_waits_for_mio`: an S2R of a per-thread register issues once every
        sub-partition's MIO queue has passed what it held when the S2R first tried (mio_throttle until
        then). H200 (memory30_h200.json `s2rq`): with all four queues full of 32-way conflicting LDS such
        an S2R takes 1,510-1,553 cycles (25 idle), about what the queues held (1,920 wavefronts at one a
        cycle, from ~300 cycles in); with one or two full, 392-774 cycles, less than they held: the
        rule's wait is the measured one where every sub-partition is busy, an upper bound otherwise."""
        if w.sreg_due < 0:
            w.sreg_due = max(now, max(q.free for q in self.mio_queues))
        if now + EPS < w.sreg_due:
            return S.MIO, w.sreg_due
        w.sreg_due = -1.0
        return 0, now

    @staticmethod
    def _hold_places(sp: SubPartition, leaves: float, share: int) -> None:
        """`sm.shared_access_queue`: an access that leaves its queue at `leaves` gives its `share` of
        the places back then, or when the last access before it gives its back (in order)."""
        release = max(leaves, sp.slots[-1][0]) if sp.slots else leaves
        sp.slots.append((release, share))
        sp.held += share

    def _record_wait(self, w: Warp, since: float, ready: float, now: float, pc: int) -> None:
        """Timeline events of a wait: its reason until `ready`, then not_selected until `now`."""
        if ready > since:
            self._record(w, since, ready, w.reason, pc)
            self._record(w, ready, now, S.NOT_SELECTED, pc)
        else:
            self._record(w, since, now, S.NOT_SELECTED, pc)

    def _record(self, w: Warp, start: float, end: float, reason: int, pc: int) -> None:
        """Timeline event (within the recording window): [sm, sub-partition, warp, start, cycles, reason, pc]."""
        lo, hi, ctas = self.window
        cycles = round(end - start, 2)  # (float queue times can leave slivers of a cycle: not shown)
        if cycles > 0 and end > lo and start < hi and (ctas is None or w.cta.cid in ctas):
            self.timeline.append([self.index, w.sp.index, w.gid, round(start, 2), cycles, reason, pc])

    def _second_issue(self, sp: SubPartition, w: Warp, first: int, now: float) -> None:
        """Dual issue: Maxwell pairs the instructions nvdisasm shows in braces; Kepler pairs the next
        instruction of the warp when it is independent of the first and its pipe has room. Never
        after a branch, and never a barrier, exit, branch or DEPBAR as the second."""
        pc = w.pcs[w.pos]
        facts = self.facts
        if not facts.second_ok[pc]:
            return
        if self.dual == "kepler":
            if not facts.dst_sets[first].isdisjoint(facts.deps[pc]):
                return
            if w.ready_at > now + 1 + EPS:  # its own dependencies are not met yet
                return
        pipe, queue, _ = facts.attempt[pc]
        if queue == SREG_WAIT or sp.pipes[pipe] > now + 1 - EPS or \
                (queue and self._queue_full(sp, queue, now, self.queue_store[pc])[0]):
            return
        self._execute(sp, w, pc, now)  # the pair shares the issue cycle (one `selected` cycle)

    # ---- executing one instruction ---------------------------------------------------------------------
    def _execute(self, sp: SubPartition, w: Warp, pc: int, now: float) -> None:
        """The instruction holds its pipe for `occupancy` cycles; its result is ready after the unit's
        latency plus its register-bank conflict cycles (which also hold the dispatch port), or when
        its memory access completes (`_access`). Then the warp's next instruction gets its earliest
        issue cycle. Under the read-port rule (sm_90, `register_file.read_ports`) the extra read
        cycles hold the dispatch port, or a multi-cycle pipe's issue (Nsight: dispatch_stall on
        FFMAs, math_pipe_throttle on DFMAs), and do not delay the result: a dependent FFMA or DFMA
        chain runs at the unit's latency whatever its sources (validation/h100/micro/micro_h100.json)."""
        kind, pipe, occupancy, latency, stall, wbar, rbar, writes, l1_cached, dsts, result_reason, mem, role = \
            self.execute_facts[pc]
        pos = w.pos
        pipes = sp.pipes
        pipe_free = pipes[pipe]
        pipes[pipe] = (pipe_free if pipe_free > now else now) + occupancy
        sp.busy[pipe] += occupancy
        self.issued += 1
        regc = w.regc[pos]
        if mem:
            done, long_wait, read = self._access(sp, w, kind, pos, l1_cached, now)
            read += regc
        elif regc and not self.read_ports:
            done, long_wait, read = now + latency + regc, False, now + 2 + regc
        else:
            done, long_wait, read = now + latency, False, now + 2
        if role:  # cp.async (static.COPY, COMMIT): a group is done when its last copy is
            if role == COPY:
                if done > w.copies_done:
                    w.copies_done = done
            else:
                done, long_wait = max(w.copies_done, now + 2), True
                w.copies_done = now
                groups = w.sb[wbar if wbar is not None else 0]
                groups[:] = [g for g in groups if g[0] > now]  # (released groups no longer count: a long loop's list stays short)
                if not self.control_mode:  # (control codes: its write barrier, SB0, below)
                    groups.append((done, True))
        if writes and done > self.last_done:  # results and stores, not EXIT/BRA
            self.last_done = done
        pos += 1
        w.pos = pos
        if pos == w.gap_at:  # sampled mode: the next loop iteration was left out of the trace
            self.sampler.synthesize(w)
        # results: scoreboards (control codes) or register ready times
        if self.control_mode:
            if wbar is not None:
                w.sb[wbar].append((done, long_wait))
            if rbar is not None:  # its source registers have been read
                w.sb[rbar].append((read, long_wait))
        else:
            reason = S.LONG_SB if long_wait else result_reason
            for d in dsts:
                w.reg_ready[d] = (done, reason)
        if kind == BAR:
            self._arrive(w, now)
            return
        if pos >= len(w.pcs):  # the stream ends: EXIT (a guarded EXIT that retired no lane is not the end)
            self._exit(w, pc, now)
            return
        # the next instruction: after the stall count (control codes) or in the next cycle, once its
        # operands are there; after a branch, once the branch resolves; later by this instruction's
        # bank-conflict operand reads
        t = now + stall
        nxt = w.pcs[pos]
        if self.operand_wait[nxt]:
            t, reason = self._operands_ready(w, nxt, t, now)
        else:
            reason = S.WAIT
        if kind == BRANCH and done > t:
            t, reason = now + self.branch_latency, S.BRANCH
        if regc:
            if not self.read_ports:  # bank conflicts: the reads delay the result and hold dispatch
                t, reason = t + regc, (S.DISPATCH if t <= now + 1 else reason)
                sp.dispatch_free = now + 1 + regc
            elif occupancy > 1:  # read ports (sm_90): a multi-cycle pipe (FP64) is held while they read
                if now + 1 + regc > pipes[pipe]:
                    pipes[pipe] = now + 1 + regc
            else:  # ... else the dispatch port; the result is not late (a dependent chain reads meanwhile)
                if t <= now + 1 + regc:
                    t, reason = now + 1 + regc, (S.DISPATCH if t <= now + 1 else reason)
                sp.dispatch_free = now + 1 + regc
        w.ready_at, w.reason = t, reason

    def _access(self, sp: SubPartition, w: Warp, kind: int, pos: int, l1_cached: bool,
                now: float) -> tuple[float, bool, float]:
        """A memory access: (cycle its data is there, long scoreboard?, cycle its registers have been
        read, before bank-conflict cycles: `sm.access_registers_read_at` after issue or after it starts
        to pass its stage). It passes its sub-partition's queue and the SM-wide stage
        behind it (mem/lsu.py): for shared memory the banks, wavefronts, then the shared latency; for
        global accesses the L1 tag stage, distinct lines, then L1/L2/DRAM (mem/l1.py, mem/l2.py), whose
        bandwidth is booked at the issue cycle. Constant loads: the constant latency."""
        if kind == SMEM:
            wf = w.wavef[pos]
            start, passed = sp.mio.access(now, max(wf, 1), self.mio_queues, self.queue_store[w.pcs[pos]])
            if self.shared_queue:
                self._hold_places(sp, passed, self.share_smem)
            self.smem_wavefronts += wf
            return passed + self.smem_latency + self.static[w.pcs[pos]].smem_extra, False, \
                (now if self.read_at_issue else start) + self.mio_read
        if kind == CMEM:
            return now + self.const_latency, False, now + 2
        start, passed = sp.lsu.access(now, max(1, w.glines[pos]), self.lsu_queues, self.queue_store[w.pcs[pos]])
        sectors = self.gpu.sectors(w.mem_rows[pos])
        if kind == GLOAD:
            static = self.static[w.pcs[pos]]
            done = self.l1.load(now, passed, sectors, l1_cached, w, static.warp_bytes)
            if static.copy_mio:  # an L1-allocating cp.async's data pass the shared-memory pipe too
                sp.mio.access(now, w.wavef[pos] * static.copy_mio, self.mio_queues, slot=False)
        else:
            done, accepted = self.l1.store(now, passed, sectors)
            sp.lsu.hold(accepted)
            if sp.lsu.leaving[-1] > w.stores_done:  # (it drains at EXIT until its stores have left)
                w.stores_done = sp.lsu.leaving[-1]
        if self.shared_queue:
            self._hold_places(sp, sp.lsu.leaving[-1], self.share_global)
        return done, True, (now if self.read_at_issue else start) + self.lsu_read

    def _operands_ready(self, w: Warp, pc: int, t: float, now: float) -> tuple[float, int]:
        """When the warp's next instruction `pc`, which cannot issue before `t`, has its operands,
        and what it waits for. Control codes: the scoreboards of its wait mask; otherwise the ready times
        of the registers it reads or writes. Either way a DEPBAR's limit of outstanding releases (in
        scoreboard mode only cp.async groups release)."""
        reason = S.WAIT
        if self.control_mode:
            sb = w.sb
            for b in self.facts.wait_barriers[pc]:
                if sb[b]:
                    rel, is_long = max(sb[b], key=_release)  # the first of the latest releases
                    if rel > t:
                        t, reason = rel, (S.LONG_SB if is_long else S.SHORT_SB)
                    sb[b] = []
        else:
            rr = w.reg_ready
            for d in self.facts.deps[pc]:
                r = rr.get(d)
                if r is not None and r[0] > t:
                    t, reason = r
        depbar = self.facts.depbars[pc]  # (scoreboard mode: only LDGDEPBAR's groups are counted)
        if depbar is not None:
            b, k = depbar
            pend = sorted(rel for rel, _ in w.sb[b] if rel > now)
            if len(pend) > k:
                rel = pend[len(pend) - k - 1]
                if rel > t:
                    t, reason = rel, S.LONG_SB
        return t, reason

    # ---- barriers and exit ------------------------------------------------------------------------
    def _arrive(self, w: Warp, now: float) -> None:
        cta = w.cta
        w.at_barrier = True
        w.reason = S.BARRIER
        w.ready_at = now + 1
        cta.arrived += 1
        self._maybe_release(cta, now)

    def _maybe_release(self, cta: CTA, now: float) -> None:
        """The last live warp of a CTA to arrive at the barrier releases them all; each then waits
        for its next instruction as after any instruction (the barrier's stall count, operands)."""
        if cta.arrived and cta.arrived >= cta.live:
            cta.arrived = 0
            for x in cta.warps:
                if x.at_barrier:
                    x.at_barrier = False
                    x.sp.dirty = self.changed = True
                    pc = x.pcs[x.pos - 1]
                    self.stalls.charge(S.BARRIER, pc, now + 1 - x.since)
                    if self.timeline is not None:
                        self._record(x, x.since, now + 1, S.BARRIER, pc)
                    x.since = now + 1
                    t, nxt = now + self.facts.execute[pc][4], x.pcs[x.pos]  # [4]: the barrier's stall count
                    x.ready_at, x.reason = self._operands_ready(x, nxt, t, now) if self.facts.operand_wait[nxt] \
                        else (t, S.WAIT)

    def _exit(self, w: Warp, pc: int, now: float) -> None:
        """The warp issued its EXIT (`pc`) at `now`: it leaves the scheduler, and no longer counts at
        barriers, but drains: its place is held until its global stores have left the SM, L2 having
        taken their data (their LSU queue places, mem/lsu.py `AccessQueue.hold`) (Nsight's drain: a warp
        after EXIT waiting for its memory instructions to complete so that its resources can be
        freed), and its CTA ends with its last warp's drain."""
        if w.stores_done > now:
            self.stalls.charge(S.DRAIN, pc, w.stores_done - now)
            if w.stores_done > w.cta.drained:
                w.cta.drained = w.stores_done
        w.done = True
        w.sp.dirty = self.changed = True
        w.sp.warps.remove(w)
        w.sp.order = None
        self.warps.remove(w)
        cta = w.cta
        cta.live -= 1
        if cta.live == 0:
            self._cta_done(cta, cta.drained if cta.drained > now else now)
        else:
            self._maybe_release(cta, now)
