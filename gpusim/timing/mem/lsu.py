"""The queues of the sub-partitions in front of the SM's MIO (shared memory) and LSU (global/local) pipes.

Each sub-partition sends its shared-memory instructions to the MIO and its global/local ones to the
LSU through a queue that holds `depth` instructions. Behind the queues one SM-wide stage (the shared
memory banks; the L1 tag stage) passes `stage.rate` units per cycle (wavefronts; 128-byte lines).
Where L1 and shared memory are one array (`memory.l1.unified_data_stage`) both kinds' stages feed
one data stage (`DataStage`), a shared wavefront and a global load's wavefront each taking one of its
cycles. How the kinds share it is `memory.l1.data_stage`: `booked` (the H100's) books every access in
the stage's earliest free cycles from the start of its queue pass, so LDS issued after a burst of LDGs
wait for the LDGs' wavefronts and a loop's period is the sum of both kinds' work (memory23/24_h100.json
`dstage`, `dfree`); `shared` gives each kind half the stage while both have work, accesses smaller
than the other kind's costing more (16 warps of conflict-free LDS beside 16 of 32-line LDG pass 0.66
units per cycle where each kind alone passes 0.95-0.97, memory7_h100.json `mix`, memory8 `mix2`;
bench/micro/score_mix.py scores both: 13.6% shared, 23.9% booked, whose mixes of single-kind warps
run at the stage's full rate).
Where a sub-partition has a rate of its own (`rate`), its queue passes at most that many units per
cycle, and the sub-partitions with work queued share the stage equally: min(rate, stage rate /
busy sub-partitions) each. Where it has none (older cards), instructions pass the stage in issue
order. An instruction holds its place in the queue until it has passed; a warp whose instruction
finds the queue full waits: Nsight Compute's mio_throttle / lg_throttle. The registers an access
reads (a store's data, the address) have been read `*_register_read_cycles` after it enters its queue
(`sm.access_registers_read_at: issue`, the H100: an instruction overwriting an LDG's address waits
12-14 cycles whether 24 32-line LDGs are queued in front or none, memory12_h100.json `war`) or after it
starts to pass the stage (`stage`, the older cards' assumption); until then its read scoreboard is held.

Measured on the H100 (bench/micro/run_memory.py, validation/h100/micro/memory*_h100.json; what first
suggested the unified stage: naiveMatMatMul and sgemm_smem_padded issue the same LDS stream, but the
first's Ac loads touch 32 lines each, and it takes 918,870 ncu cycles at n=1024 to the second's 619,529):
- one warp issues 32-way-conflicting LDS (32 wavefronts) every 4 cycles until about 30 are queued,
  then one every 64 cycles: depth ~30, 0.5 wavefronts per cycle per sub-partition, while 32 warps
  reach 0.95-1.0 wavefront per cycle per SM (`issue.lds_s128`, `sts.sts32_*`); two warps of one
  sub-partition share its queue (17 + 14 LDS before they wait, memory3 `issue.lds_s128_sp2`);
- LDG touching 32 lines: 36 queued, then one per 62-66 cycles: depth ~36, 0.5 lines per cycle
  (`issue.ldg_s128`); 32 warps reach 1 line per cycle per SM (`ldg.by_stride`);
- STS / STG from one warp free their data register 11 / 13 cycles after issue (`issue.sts_s4`,
  `issue.stg_s4`: a CS2R that overwrites the stored register waits for it);
- stores have fewer places than loads: one warp issuing stores of their own data registers has 10
  32-line STG, or 10 32-way-conflicting STS, in flight before it waits, then one per ~60 cycles
  (memory10_h100.json `issue_st.stg_s128_w1`, `sts_s128_w1`; one-line STG: 24). A queue here holds
  `store_depth` stores at most besides its `depth` instructions in all (`store_depth` None: no
  such limit), so loads queued in front do not take a store's slot;
- stores whose 32 lanes write 32 sectors in 32 lines pass at 0.24 sectors per SM-cycle when they
  stay in L2, what L2's write bandwidth gives each SM (`stg_scatter`, memory6_h100.json): a store
  holds its LSU slot until L2 has taken its data (`hold`), so stores beyond L2's write bandwidth
  back up into the queue (lg_throttle), as Nsight shows for transpose_naive.
"""

from __future__ import annotations

import math
from collections import deque


MIO, LSU = 0, 1  # the two kinds of queue


class Stage:
    """The SM-wide pipe behind a kind of queue: `rate` units per cycle."""

    def __init__(self, rate: float):
        self.rate = rate
        self.free = 0.0  # older cards: when it takes its next unit


class DataStage:
    """The one data stage of an SM whose L1 and shared memory are one array: past their own stages,
    shared-memory wavefronts (MIO) and global lines (LSU) pass through it, `rate` units per cycle in
    all, shared between the two kinds while both have work (round robin: processor sharing of the two
    backlogs, `work`, in stage cycles). An access's completion is worked out when it enters, as if no
    more came: with its kind's backlog B (its own cost included) and the other's O, after 2B cycles if
    O >= B, else B + O. So a shared load behind a burst of global ones waits for twice its own kind's
    work, not for the burst.

    Mixing sizes costs: while the other kind has work and its accesses are larger (S units, the last
    one's), an access of s < S units costs s (2 - s / S) stage cycles. Measured on the H100
    (validation/h100/micro/memory8_h100.json `mix2`, memory7 `mix`): 1-wavefront LDS beside LDG of
    L = 1, 2, 4, 8, 32 lines, 32-wavefront LDS beside 2- and 32-line LDG, with 16 + 16, 24 + 8 and
    8 + 24 warps: the time beyond the two kinds' own is (units of the smaller kind) x (1 - small /
    large), whichever kind is the smaller. Run through the model (bench/micro/score_mix.py), those
    mixes come out 13.5% fast on average (max 54%, 24 + 8 warps): the hardware's time is about the
    sum of the costs, as if the kinds did not overlap, while here the larger kind takes its half of
    the stage, finishes early, and the smaller one's rest passes alone at cost 1. Open: how the
    stage picks between the kinds (warp counts matter: 24 + 8 and 8 + 24 differ).

    Booked (`memory.l1.data_stage: booked`, `book`): no sharing by kind and no cost for mixing; each
    access takes the earliest free cycles from when it starts to pass its queue, around the cycles
    earlier accesses booked. Where every warp issues both kinds (a GEMM's loop) the H100 adds the kinds'
    work (`dstage`, `dfree`: 15 cases, 4% mean error booked, 11% shared); the saturated mixes above,
    warps of one kind each, it does not reproduce (23.9%): those point at the issue scheduler."""

    def __init__(self, rate: float, booked: bool = False):
        self.rate = rate
        self.booked = booked  # `memory.l1.data_stage: booked`: `book` instead of `passed`
        self.work = [0.0, 0.0]  # per kind (MIO, LSU): stage cycles still to pass at cycle `at`
        self.size = [0.0, 0.0]  # per kind: units of its last access
        self.at = 0.0
        self.starts: list[float] = []  # booked: the stage's booked intervals, in order (disjoint)
        self.ends: list[float] = []

    def book(self, now: float, arrive: float, units: float, done: float) -> float:
        """`memory.l1.data_stage: booked`: an access that starts to pass its queue at `arrive` (and has
        passed it at `done`) books its units in the stage's earliest free cycles from `arrive` on, in
        as many pieces as the gaps between earlier bookings make; the cycle it has passed. Earlier
        bookings keep their cycles. Measured on the H100 (validation/h100/micro/memory23/24_h100.json
        `dstage`, `dfree`): LDS issued after a burst of LDGs wait for the LDGs' wavefronts, and a loop's
        period is the sum of both kinds' wavefronts, barrier or not; a lone LDS beside one
        sub-partition's LDGs (which use half the stage) passes at once (memory21 `order`)."""
        starts, ends = self.starts, self.ends
        k = 0
        while k < len(ends) and ends[k] <= now:  # bookings over by now
            k += 1
        if k:
            del starts[:k], ends[:k]
        return book_gaps(starts, ends, arrive, units / self.rate, done)

    def _advance(self, now: float) -> None:
        """Pass the work of the cycles since `at` (`drained`)."""
        if now <= self.at:
            return
        self.work = list(drained(self.work[0], self.work[1], (now - self.at) * self.rate))
        self.at = now

    def passed(self, now: float, kind: int, units: float, done: float) -> float:
        """An access of `kind` and `units` entered at `now` and passed its own stage at `done`: the
        cycle it has passed this one too."""
        self._advance(now)
        work = self.work
        other = 1 - kind
        work[kind] += access_cost(units, self.size[other], work[other])
        self.size[kind] = units
        t = shared_finish(now, work[kind], work[other], self.rate)
        return t if t > done else done


# The data stage's arithmetic, as plain functions: the compiled engine compiles these same ones
# (compiled/memory.py `data_passed`), so both engines do the same float operations.
def drained(a: float, b: float, cycles: float) -> tuple[float, float]:
    """The two kinds' work after `cycles` stage cycles: each at half the rate while both have some."""
    both = a if a < b else b
    if 2.0 * both >= cycles:
        a -= cycles / 2.0
        b -= cycles / 2.0
    else:
        rest = cycles - 2.0 * both
        a = a - both - rest
        b = b - both - rest
    return (a if a > 0.0 else 0.0), (b if b > 0.0 else 0.0)


def access_cost(units: float, other_size: float, other_work: float) -> float:
    """Stage cycles an access of `units` costs while the other kind has `other_work` left and its
    last access took `other_size` units: s (2 - s / S) if it is the smaller, else s."""
    return units * (2.0 - units / other_size) if other_work > 0.0 and other_size > units else units


def shared_finish(now: float, mine: float, other: float, rate: float) -> float:
    """When a kind's backlog `mine` has passed, the other kind's `other` sharing the stage: after
    2 x mine if other >= mine, else mine + other (stage cycles, at `rate`)."""
    return now + (2.0 * mine if other >= mine else mine + other) / rate


def book_gaps(starts, ends, t: float, need: float, done: float) -> float:
    """Book `need` cycles into the free time after `t` between the sorted disjoint intervals
    (`starts`, `ends`, updated in place); the cycle the last is booked, at least `done`. (The compiled
    engine's `data_book` does the same operations on its arrays.)"""
    n = len(ends)
    i = 0
    while i < n and ends[i] <= t:
        i += 1
    while need > 1e-12:
        if i < n and starts[i] <= t:
            if ends[i] > t:
                t = ends[i]
            i += 1
            continue
        gap_end = starts[i] if i < n else math.inf
        take = need if need < gap_end - t else gap_end - t
        if take > 0.0:
            starts.insert(i, t)
            ends.insert(i, t + take)
            n += 1
            i += 1
            need -= take
            t += take
    return t if t > done else done


def _left(ring: deque, now: float) -> deque:
    """`ring` (leaving cycles, non-decreasing) without those that have left by `now`."""
    while ring and ring[0] <= now:
        ring.popleft()
    return ring


class AccessQueue:
    def __init__(self, depth: int, rate: float | None, stage: Stage, kind: int = MIO, data: DataStage | None = None,
                 store_depth: int | None = None):
        self.depth = depth
        self.store_depth = store_depth  # stores it holds at most (None: no limit but `depth`)
        self.rate = rate  # units per cycle; None: instructions pass the stage in issue order
        self.stage = stage
        self.kind = kind
        self.data = data  # the unified data stage behind `stage`, if any
        self.free = 0.0  # when this sub-partition's queue has passed everything it holds
        self.leaving: deque[float] = deque()  # cycle each queued instruction has passed (non-decreasing)
        self.stores: deque[float] = deque()  # the same for the queued stores (with a store_depth)

    def full_until(self, now: float, store: bool = False) -> float | None:
        """None if an instruction (a `store`) may enter at `now`, else the cycle the first one it
        waits for leaves: the queue's first, or its first store where the stores fill their slots."""
        leaving = _left(self.leaving, now)
        if len(leaving) >= self.depth:
            return leaving[0]
        if store and self.store_depth is not None:
            stores = _left(self.stores, now)
            if len(stores) >= self.store_depth:
                return stores[0]
        return None

    def access(self, now: float, units: float, queues, store: bool = False, slot: bool = True) -> tuple[float, float]:
        """An instruction of `units` (a `store`) enters at `now`: (cycle it starts to pass, cycle it
        has passed). `queues`: all the queues of this kind of the SM (they share the stage). `slot`
        False: work that passes the queue's stage without holding one of its places (an L1-allocating
        cp.async's data, whose instruction waits in the LSU queue)."""
        stage = self.stage
        if self.rate is None:
            start = stage.free if stage.free > now else now
            done = stage.free = start + units / stage.rate
        else:
            busy = 1 + sum(1 for q in queues if q is not self and q.free > now)
            rate = min(self.rate, stage.rate / busy)
            start = self.free if self.free > now else now
            done = self.free = start + units / rate
        if self.data is not None:
            data = self.data
            done = data.book(now, start, units, done) if data.booked else data.passed(now, self.kind, units, done)
            if done > self.free:
                self.free = done
        if slot:
            self.leaving.append(done)
            if store and self.store_depth is not None:
                self.stores.append(done)
        return start, done

    def hold(self, until: float) -> None:
        """The instruction that entered last, a store, keeps its place (and store slot) until `until`
        (until L2 has taken its data); the queue passes in order, so the ones behind it wait too."""
        if until > self.leaving[-1]:
            self.leaving[-1] = until
            if self.store_depth is not None:
                self.stores[-1] = until
            if until > self.free:
                self.free = until
