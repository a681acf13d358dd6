"""Sampled mode on the compiled engine: `GPU._run_sampled`'s simulation of a few SMs with their own
CTAs, the same results to the last bit as the object model's (tests/test_sampled_engines.py).

The engine runs the SMs (`engine.simulate`) and stops when an SM's clock reaches its sampler's next
look (`sm.CHECK`, where `SM.run` calls `Sampler.check`). The look itself is the object model's
Python `Sampler` (windows, convergence, the fast-forward's arithmetic): `EngineSampler` reads the
warps' positions from the engine's arrays and moves them there (`engine.sampler_positions`,
`engine.sampler_moves`), and scales the SM's stall rows in place; then the engine goes on where it
stopped. A warp that reaches left-out loop iterations has one made up inside the engine
(compiled/loops.py: `Sampler.synthesize` over arrays, at the same point of the run), appended to the
record arrays, which grow between steps when their room runs short (`sm.NEED_ROOM`).

Each warp's `LoopState` is worked out here before the run, as `Sampler.attach` would at its launch
(the branch found on an SM's first launched warp where the trace names none; iterations of
different lengths raise `TraceTooShort`, and the driver builds the full trace).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from gpusim.timing.compiled import engine as E
from gpusim.timing.compiled import loops as P
from gpusim.timing.compiled import lru as L
from gpusim.timing.compiled import sm as C
from gpusim.timing.mem.l2 import memory_counters
from gpusim.timing.sampling import LoopState, Sampler, loop_branch

RECORD_KEYS = ("pcs", "mem_rows", "regc", "wavef", "glines")
GROWTH = 2.0  # arrays that run short grow to this many times what they must hold (tests use 1: many stops)


class EngineSampler(Sampler):
    """The object model's sampler for SM `index` of a compiled run (`run.st`, the engine's state)."""

    def __init__(self, program, run, index: int, **options):
        super().__init__(program, **options)
        self.run, self.index = run, index

    def positions(self, sm):
        st = self.run.st
        out = self.run.out
        n = E.sampler_positions(st, self.index, out)
        rows = out[:n]
        warps = [SimpleNamespace(slot=int(r[0]), gid=int(r[1]), cta=int(r[2])) for r in rows]
        its = {w.gid: int(r[3]) for w, r in zip(warps, rows)}
        prog = {w.gid: float(r[5]) for w, r in zip(warps, rows)}
        totals = {w.gid: int(r[4]) for w, r in zip(warps, rows)}
        return warps, its, prog, totals

    def dirty_state(self, sm):
        meta = self.run.st.dirty[4]
        return int(meta[L.SIZE]), int(meta[L.CAPACITY])

    def move_all(self, sm, moves) -> int:
        if not moves:
            return 0
        self.run.make_room(len(moves))
        slots = np.array([w.slot for w, _, _ in moves], dtype=np.int64)
        done = np.array([i for _, i, _ in moves], dtype=np.int64)
        n = np.array([k for _, _, k in moves], dtype=np.int64)
        return int(E.sampler_moves(self.run.st, self.index, slots, done, n))


class _SMView:
    """What `Sampler.check` reads and writes of an SM: its stall rows (the engine's array, written in
    place) and its issued count."""

    def __init__(self, run, index: int):
        self.run, self.index = run, index
        self.stalls = SimpleNamespace(rows=run.st.stalls[index])

    @property
    def issued(self) -> int:
        return int(self.run.st.sm[self.index]["issued"])

    @issued.setter
    def issued(self, value: int) -> None:
        self.run.st.sm[self.index]["issued"] = value


class SampledRun:
    """The engine's state for sampled mode and what grows it: (`st`, replaced as arrays grow)."""

    def __init__(self, gpu, occ, ctas, memory, queues):
        self.gpu = gpu
        loops, self.length = loop_arrays(gpu, queues)
        arrays = E.trace_arrays(gpu)
        used = (len(arrays["pcs"]), len(arrays["sector_start"]) - 1, len(arrays["sector_list"]), 0)
        n_sp = gpu.cfg.sm.sub_partitions
        # room one cycle step may take: each sub-partition issues at most two instructions, each may
        # reach left-out iterations (one made up: its records, a row and 32 sectors per record at most)
        k = 4 * n_sp * self.length
        self.room = (k, k, 32 * k, k)
        self.samplers = [EngineSampler(gpu.program, self, j, elision=gpu.trace.elision, gpu=gpu, **gpu.sampler_options)
                         for j in range(len(queues))]
        self.st = E.build(gpu, occ, ctas, arrays, sampled=dict(
            queues=queues, memory=memory, loops=loops, used=used, room=self.room,
            next_check=[s.next_check for s in self.samplers]))
        self.out = np.zeros((len(self.st.w), 6))
        self.stops = 0  # NEED_ROOM stops
        self._grow(self.room)

    def make_room(self, iterations: int) -> None:
        """Room for `iterations` more made-up iterations beyond a cycle step's."""
        k = iterations * self.length
        self._grow((self.room[0] + k, self.room[1] + k, self.room[2] + 32 * k, self.room[3] + k))

    def _grow(self, room) -> None:
        """Arrays with at least `room` (records, rows, sectors, strides) free: `GROWTH` times as large as
        needed."""
        st, g = self.st, self.st.glob
        n_rec, n_rows, n_sec, n_str = (int(g[i]) for i in (P.G_NREC, P.G_NROWS, P.G_NSEC, P.G_NSTR))
        grown = {}
        if len(st.pcs) - n_rec < room[0]:
            size = int(GROWTH * (n_rec + room[0]))
            for k in RECORD_KEYS:
                grown[k] = _resized(getattr(st, k), size, n_rec)
        if len(st.sector_start) - 1 - n_rows < room[1]:
            size = int(GROWTH * (n_rows + room[1]))
            grown["sector_start"] = _resized(st.sector_start, size + 1, n_rows + 1)
            grown["sector_base"] = _resized(st.sector_base, size, n_rows)
            grown["row_stored"] = _resized(st.row_stored, size, n_rows)
        if len(st.sector_list) - n_sec < room[2]:
            grown["sector_list"] = _resized(st.sector_list, int(GROWTH * (n_sec + room[2])), n_sec)
        if len(st.str_row) - n_str < room[3]:
            size = int(GROWTH * (n_str + room[3]))
            for k in ("str_off", "str_row", "str_stride"):
                grown[k] = _resized(getattr(st, k), size, n_str)
        if grown:
            self.st = st._replace(**grown)

    def simulate(self):
        """Run to the end: (status, SM) as `engine.simulate` ends."""
        while True:
            status, m = E._simulate(self.st)
            if status == C.CHECK:
                s = self.samplers[m]
                s.check(_SMView(self, m), float(self.st.sm[m]["now"]))
                self.st.sm[m]["next_check"] = s.next_check
                self.st.sm[m]["extrapolated"] = s.extrapolated_cycles
            elif status == C.NEED_ROOM:
                self.stops += 1
                self._grow(self.room)
            else:
                return status, m


def _resized(a: np.ndarray, size: int, used: int) -> np.ndarray:
    out = np.zeros((size,) + a.shape[1:], dtype=a.dtype)
    out[:used] = a[:used]
    return out


def loop_arrays(gpu, queues) -> tuple[dict, int]:
    """Per warp id of the trace, its `LoopState` as `Sampler.loop` makes it at the warp's launch, in
    the engine's arrays (compiled/loops.py); the longest main-loop iteration that may be made up."""
    trace = gpu.trace
    pcs = trace.records["pc_index"]
    starts = gpu._warp_start
    n_gid = len(starts) - 1
    wpc = gpu.warps_per_cta
    elision = trace.elision
    gaps = {} if elision is None else elision.warps
    states: dict[int, LoopState] = {}
    for queue in queues:  # each SM's warps in launch order: a sampler per SM finds its branch on its first
        branch = None if elision is None else elision.branch
        for cid in queue:
            for gid in range(cid * wpc, cid * wpc + wpc):
                if gid >= n_gid or starts[gid] == starts[gid + 1]:
                    continue  # (a warp with nothing to run is never attached)
                stream = pcs[starts[gid]:starts[gid + 1]]
                if branch is None:
                    branch = loop_branch(gpu.program, stream)
                backs = [] if branch is None else np.flatnonzero(stream == branch).tolist()
                states[gid] = LoopState(backs, gaps.get(gid))
    lp = np.zeros(n_gid, dtype=E.LOOP)
    lp["cut"] = lp["at0"] = -1
    cap = np.zeros(n_gid, dtype=np.int64)
    for gid, s in states.items():
        cap[gid] = len(s.backs) + (s.g_hi - s.g_lo if s.cut >= 0 else 0)
    boff = np.concatenate([[0], np.cumsum(cap)[:-1]]).astype(np.int64)
    backs = np.zeros(int(cap.sum()), dtype=np.int64)
    length = 0
    for gid, s in states.items():
        lp[gid] = (0, 0, s.cut, s.g_lo, s.g_hi, s.length, s.head, s.cut, 0, boff[gid], len(s.backs))
        backs[boff[gid]:boff[gid] + len(s.backs)] = s.backs
        if s.cut >= 0:
            length = max(length, s.length)
    loops = dict(lp=lp, lp_backs=backs, lp_sv=np.zeros((n_gid, 2), dtype=np.int64),
                 lp_soff=np.zeros((n_gid, 2), dtype=np.int64), lp_sn=np.zeros((n_gid, 2), dtype=np.int64),
                 str_off=np.zeros(0, dtype=np.int64), str_row=np.zeros(0, dtype=np.int64),
                 str_stride=np.zeros(0, dtype=np.int64), addr=np.ascontiguousarray(trace.addresses),
                 mem_exec=np.asarray(gpu._mem_exec, dtype=np.uint32),
                 row_stored=np.zeros(len(trace.addresses), dtype=np.uint8))
    return loops, length


def run_sampled(gpu, occ, ctas, memory, n_sms: int):
    """`GPU._simulate` of sampled mode on the compiled engine: SMs 0 .. `n_sms` - 1, each with its own
    CTAs, on `memory` (sampled mode's `MemorySystem`). (The SMs that ran, in the shape
    `GPU._run_sampled` and `GPU._result_sampled` read; the memory system, likewise.)"""
    queues = [[c for c in ctas if c % gpu.cfg.sm_count == j] for j in range(n_sms)]
    run = SampledRun(gpu, occ, ctas, memory, queues)
    status, m = run.simulate()
    st = run.st
    sms, _ = E.results(gpu, st, status, m)
    for sm in sms:
        sampler = run.samplers[sm.index]
        sampler.synthesized = int(st.sm[sm.index]["synthesized"])
        sm.sampler = sampler
        sm.cta_residence = [tuple(r) for r in st.res[sm.index, :int(st.sm[sm.index]["n_res"])].tolist()]
    mem = st.mem[0]
    rows = np.flatnonzero(st.row_stored[:int(st.glob[P.G_NROWS])])
    starts = st.sector_start
    stored = np.unique(np.concatenate([st.sector_base[r] + st.sector_list[starts[r]:starts[r + 1]].astype(np.int64)
                                       for r in rows])) if len(rows) \
        else np.zeros(0, dtype=np.int64)
    counters = memory_counters(int(st.l2_counts[0]), int(st.l2_counts[1]), int(mem["l2_bytes"]), int(mem["dram_read"]),
                               int(mem["dram_write"]), int(st.l2_counts[2]))
    out = SimpleNamespace(counters=lambda: counters, sector_bytes=memory.sector_bytes, stored=stored,
                          dirty_capacity=memory.dirty_capacity,
                          l2_queue_bytes=float(mem["l2_queue_bytes"]), l2_queue=memory.l2_queue,
                          dram=SimpleNamespace(read_bytes=int(mem["dram_read"]), write_bytes=int(mem["dram_write"]),
                                               busy_bytes=float(mem["dram_busy"]), queue=memory.dram.queue))
    return sms, out
