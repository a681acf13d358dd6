"""Detailed mode streamed: each warp's records made as the timing run consumes them, so that memory
holds what the resident warps have still to run, not the grid's whole trace.

The grid's CTAs are emulated in launch order, in groups (`EmulatorStream`; as many CTAs as SMs, see
`driver.time_streamed`): each group by its own `Emulator` on the launch's one global memory, a slice of emulator steps at a time. A slice's log
becomes records for the group's warps (trace, precompute and global sectors, as for a whole trace),
and the log is dropped. The compiled engine stops (`sm.NEED_TRACE`) at a cycle step's start when a
warp it runs has fewer than `sm.LOOKAHEAD` records left, or when the CTAs it may launch next have
none; the `Arena` then drops what the warps have run, appends the new slices' records, and the
engine goes on exactly where it stopped. The records of each warp are the same as a whole trace's
(a warp's stream depends on its own execution only), and so are the results, to the last bit
(tests/test_stream.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
from numba import njit

from gpusim.timing.compiled import engine as E
from gpusim.timing.compiled import sm as C
from gpusim.timing.static import GLOAD, SMEM

# while the arena holds fewer records than this, a slice emulates all of its group's CTAs, not only the
# ones that need records: the emulator's cost is mostly per step, so CTAs emulated apart cost more
# (dgemm_unroll gtx970 512: a group of 13 + 3 CTAs, the 3 apart: 0.86 M/s end to end, together 1.2)
FREE_RECORDS = 4 << 20
TRIM_EVERY = 20  # arena updates between two `_trim_heap` calls
RECORD_FIELDS = {"pcs": np.int32, "mem_rows": np.int32, "regc": np.int8, "wavef": np.int16, "glines": np.int8}


@dataclass
class Segment:
    """Records of some warps, each warp's contiguous and in order: warp `gids[i]` has `counts[i]` of
    them; `mem_rows` index `sector_start` (the segment's own rows; -1: none); `complete`: the warps
    whose streams end here."""
    gids: np.ndarray
    counts: np.ndarray
    records: dict
    sector_start: np.ndarray
    sector_list: np.ndarray
    complete: np.ndarray


def segment_from_trace(gpu, trace, carry: np.ndarray, complete: np.ndarray, totals: dict) -> Segment:
    """A `Segment` of the warps of `trace` (a piece of each one's stream), with the columns `gpu`
    works out for a whole trace; `carry` (per warp id) continues the reuse cache's state across
    pieces; `totals` (see `GPU.trace_totals`) gets this piece's counts added."""
    from gpusim.timing.gpu import global_sector_rows, mem_exec_masks
    from gpusim.timing.precompute import precompute

    gids = np.asarray(trace.warp_ids, dtype=np.int64)
    piece = carry[gids]
    cols = precompute(gpu.program, trace, **gpu.precompute_rules, reuse_carry=piece)
    carry[gids] = piece
    rec = trace.records
    kinds = gpu.kind_of_pc[rec["pc_index"]]
    sector_start, sector_list = global_sector_rows(trace, kinds, mem_exec_masks(trace), gpu._sector_shift)
    smem = kinds == SMEM
    totals["executed"] += np.bincount(rec["pc_index"], minlength=len(gpu.program))
    totals["smem_accesses"] += int(np.count_nonzero(smem))
    totals["smem_wavefronts"] += int(cols["smem_wavefronts"][smem].sum(dtype=np.int64))
    totals["smem_conflicts"] += int(cols["smem_conflicts"][smem].sum(dtype=np.int64))
    totals["reg_conflict_cycles"] += int(cols["reg_conflict_cycles"].sum(dtype=np.int64))
    totals["reuse_hits"] += int(cols["reuse_hits"].sum(dtype=np.int64))
    totals["global_loads"] += int(np.count_nonzero(kinds == GLOAD))
    counts = np.diff(np.append(trace.warp_starts, len(rec))).astype(np.int64)
    records = {"pcs": rec["pc_index"], "mem_rows": rec["mem_row"], "regc": cols["reg_conflict_cycles"],
               "wavef": cols["smem_wavefronts"], "glines": cols["glines"]}
    return Segment(gids, counts, {k: np.ascontiguousarray(v, dtype=RECORD_FIELDS[k]) for k, v in records.items()},
                   sector_start, sector_list, complete)


def new_totals(n_pc: int) -> dict:
    return {"executed": np.zeros(n_pc, dtype=np.int64), "smem_accesses": 0, "smem_wavefronts": 0, "smem_conflicts": 0,
            "reg_conflict_cycles": 0, "reuse_hits": 0, "global_loads": 0}


def _trim_heap() -> None:
    """Give the C heap's free pages back to the system (glibc's malloc_trim). The arena and the
    slices allocate and free arrays of a few MB all run long; glibc serves such sizes from its heap
    (its mmap threshold rises to 32 MB after frees), which fragments: sgemm_maxas_64 h100 4096 held
    1.5-1.7 GB where trimming every 20 arena updates held 1.0-1.2 GB, at no cost in time."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to do
        pass


def running(st) -> np.ndarray:
    """Per warp slot of the engine state `st`: whether a warp runs there (its CTA slot is in use and
    it has not exited; warp slot w belongs to CTA slot w // warps per CTA)."""
    wpc = int(st.cfg[0]["warps_per_cta"])
    return st.cta["used"][np.arange(len(st.w)) // wpc] & ~st.w["done"]


class Arena:
    """The records the engine can read: per warp id, `begin` .. `end` in the record arrays, and
    whether more will come (`more`); the engine's `warp_begin`, `warp_end`, `warp_more` are these
    arrays themselves. New records go to the arrays' free tail, each warp's still-to-run records
    moved there with them (a warp's records are contiguous); what the warps left behind is garbage,
    dropped when the tail is full (all live records copied to new arrays, with room to grow)."""

    def __init__(self, n_warps: int):
        self.begin = np.zeros(n_warps, dtype=np.int64)
        self.end = np.zeros(n_warps, dtype=np.int64)
        self.more = np.ones(n_warps, dtype=np.bool_)
        self.records = {k: np.zeros(0, dtype=t) for k, t in RECORD_FIELDS.items()}
        self.sector_start = np.zeros(1, dtype=np.int64)  # row r: sector_list[sector_start[r]:sector_start[r + 1]]
        self.sector_list = np.zeros(0, dtype=np.int64)
        self.n = self.n_rows = self.n_sectors = 0  # used: records, rows, sectors
        self.live = 0  # records still to run (kept and new) after the last `add`

    def arrays(self) -> dict:
        return dict(**self.records, warp_begin=self.begin, warp_end=self.end, warp_more=self.more,
                    sector_start=self.sector_start, sector_list=self.sector_list)

    def add(self, segments: list[Segment], st=None, queue_from: np.ndarray | None = None) -> None:
        """Append `segments`, keeping the records still to run (of warps running in the engine state
        `st`: from the one before their position, which a barrier's release reads; of the warps
        `queue_from`, CTAs not launched yet: all). Positions in `st` move with their records."""
        # what stays: (warp id, first record, end)
        if st is not None:
            slots = np.flatnonzero(running(st))
            run_gids = st.w["gid"][slots]
            run_from = np.maximum(st.w["pos"][slots] - 1, self.begin[run_gids])
        else:
            slots = run_gids = run_from = np.zeros(0, dtype=np.int64)
        waiting = np.zeros(0, dtype=np.int64) if queue_from is None else queue_from
        waiting = waiting[self.end[waiting] > self.begin[waiting]]
        kg = np.concatenate([run_gids, waiting])
        ka = np.concatenate([run_from, self.begin[waiting]])
        kb = self.end[kg]
        # what comes: the segments' records (one source, concatenated)
        seg = _concat(segments)
        sg, sa = seg["gids"], seg["starts"]
        sb = sa + seg["counts"]
        incoming = int(seg["counts"].sum())
        live = int((kb - ka).sum())
        self.live = live + incoming
        moving = np.isin(kg, sg)  # warps with new records: their kept records move to the tail
        moved = int((kb - ka)[moving].sum())
        if self.n + moved + incoming > len(self.records["pcs"]):  # full: drop the garbage, leave room
            pieces = (kg, ka, kb, sg, sa, sb)
            capacity = (3 * (live + incoming)) // 2 + (1 << 16)  # (room for about half as much again)
            moved_from = self._write(seg, pieces, fresh=capacity)
        else:
            pieces = (kg[moving], ka[moving], kb[moving], sg, sa, sb)
            moved_from = self._write(seg, pieces)
        # the running warps' positions move with their records
        if len(slots):
            w = st.w
            moved_from = moved_from[run_gids]
            mv = moved_from >= 0  # (warps whose records did not move keep their positions)
            w["pos"][slots[mv]] = self.begin[run_gids[mv]] + (w["pos"][slots[mv]] - moved_from[mv])
            w["end"][slots] = self.end[run_gids]
        for s in segments:
            self.more[s.complete] = False
        if len(slots):
            st.w["more"][slots] = self.more[run_gids]

    def _write(self, seg: dict, pieces, fresh: int | None = None) -> np.ndarray:
        """Copy the pieces (kept ranges of the arena, then segments' ranges; per warp the kept first)
        to the tail, or to new arrays of `fresh` records (then the pieces are every live warp's).
        Per warp id: where its kept records began before the copy (-1: none moved). The copy is
        `_copy_pieces`, record by record (numpy's gathers made index arrays of 8 bytes per record:
        at 4096^3 they held more than the records)."""
        kg, ka, kb, sg, sa, sb = pieces
        pg = np.concatenate([kg, sg])
        pa = np.concatenate([ka, sa])
        pb = np.concatenate([kb, sb])
        part = np.r_[np.zeros(len(kg), dtype=np.int8), np.ones(len(sg), dtype=np.int8)]
        order = np.lexsort((part, pg))
        pg, pa, pb, part = pg[order], pa[order], pb[order], part[order]
        lengths = pb - pa
        out_start = np.r_[0, np.cumsum(lengths)]
        total = int(out_start[-1])
        old, new = self.records, seg["records"]
        n_new_rows, n_sec = _count_rows(pa, pb, part, old["mem_rows"], new["mem_rows"], self.sector_start,
                                        seg["sector_start"])
        if fresh is not None:
            cap_rows = 2 * n_new_rows + (1 << 12)
            cap_sec = 2 * n_sec + (1 << 14)
            self.records = {k: np.empty(max(fresh, total), dtype=t) for k, t in RECORD_FIELDS.items()}
            sector_start, sector_list = np.empty(cap_rows + 1, dtype=np.int64), np.empty(cap_sec, dtype=np.int64)
            sector_start[0] = 0
            self.n = self.n_rows = self.n_sectors = 0
        else:
            sector_start, sector_list = self.sector_start, self.sector_list
            if self.n_rows + n_new_rows + 1 > len(sector_start):
                sector_start = np.empty(2 * (self.n_rows + n_new_rows) + (1 << 12) + 1, dtype=np.int64)
                sector_start[:self.n_rows + 1] = self.sector_start[:self.n_rows + 1]
            if self.n_sectors + n_sec > len(sector_list):
                sector_list = np.empty(2 * (self.n_sectors + n_sec) + (1 << 14), dtype=np.int64)
                sector_list[:self.n_sectors] = self.sector_list[:self.n_sectors]
        at, r0, s0 = self.n, self.n_rows, self.n_sectors
        out = self.records
        _copy_pieces(pa, pb, part, at, r0, s0,
                     old["pcs"], old["mem_rows"], old["regc"], old["wavef"], old["glines"], self.sector_start,
                     self.sector_list,
                     new["pcs"], new["mem_rows"], new["regc"], new["wavef"], new["glines"], seg["sector_start"],
                     seg["sector_list"],
                     out["pcs"], out["mem_rows"], out["regc"], out["wavef"], out["glines"], sector_start, sector_list)
        self.sector_start, self.sector_list = sector_start, sector_list
        self.n, self.n_rows, self.n_sectors = at + total, r0 + n_new_rows, s0 + n_sec
        # each moved warp's new range; where its kept records began (for the running warps' positions)
        first_piece = np.r_[True, pg[1:] != pg[:-1]] if len(pg) else np.zeros(0, dtype=bool)
        last_piece = np.r_[pg[1:] != pg[:-1], True] if len(pg) else np.zeros(0, dtype=bool)
        self.begin[pg[first_piece]] = at + out_start[:-1][first_piece]
        self.end[pg[last_piece]] = at + out_start[1:][last_piece]
        # a running warp's position p in a kept piece that began at a becomes its new begin + (p - a)
        kept_first = first_piece & (part == 0)
        moved_from = np.full(len(self.begin), -1, dtype=np.int64)
        moved_from[pg[kept_first]] = pa[kept_first]
        return moved_from


@njit(cache=True, nogil=True)
def _count_rows(pa, pb, part, old_rows, new_rows, old_start, new_start):
    """(memory rows, their sectors) in the pieces [pa, pb) (part 0: of the arena, 1: of the segments)."""
    n_rows = n_sec = 0
    for i in range(len(pa)):
        rows, start = (old_rows, old_start) if part[i] == 0 else (new_rows, new_start)
        for j in range(pa[i], pb[i]):
            r = rows[j]
            if r >= 0:
                n_rows += 1
                n_sec += start[r + 1] - start[r]
    return n_rows, n_sec


@njit(cache=True, nogil=True)
def _copy_pieces(pa, pb, part, at, r0, s0,
                 o_pcs, o_rows, o_regc, o_wavef, o_glines, o_start, o_list,
                 n_pcs, n_rows, n_regc, n_wavef, n_glines, n_start, n_list,
                 d_pcs, d_rows, d_regc, d_wavef, d_glines, d_start, d_list):
    """Append the pieces' records at `at`, in order, and their memory rows (renumbered from `r0`,
    each row's sectors copied to the sector list from `s0`)."""
    k, r, q = at, r0, s0
    for i in range(len(pa)):
        if part[i] == 0:
            pcs, rows, regc, wavef, glines, start, lst = o_pcs, o_rows, o_regc, o_wavef, o_glines, o_start, o_list
        else:
            pcs, rows, regc, wavef, glines, start, lst = n_pcs, n_rows, n_regc, n_wavef, n_glines, n_start, n_list
        for j in range(pa[i], pb[i]):
            d_pcs[k] = pcs[j]
            d_regc[k] = regc[j]
            d_wavef[k] = wavef[j]
            d_glines[k] = glines[j]
            row = rows[j]
            if row >= 0:
                for x in range(start[row], start[row + 1]):
                    d_list[q] = lst[x]
                    q += 1
                d_rows[k] = r
                r += 1
                d_start[r] = q
            else:
                d_rows[k] = -1
            k += 1


def _concat(segments: list[Segment]) -> dict:
    """The segments as one: warp ids, their records' starts and counts, records, rows, sectors."""
    if not segments:
        return {"gids": np.zeros(0, dtype=np.int64), "starts": np.zeros(0, dtype=np.int64),
                "counts": np.zeros(0, dtype=np.int64), "records": {k: np.zeros(0, dtype=t) for k, t in RECORD_FIELDS.items()},
                "sector_start": np.zeros(1, dtype=np.int64), "sector_list": np.zeros(0, dtype=np.int64)}
    counts = np.concatenate([s.counts for s in segments])
    rows_base = np.cumsum([0] + [len(s.sector_start) - 1 for s in segments])
    sec_base = np.cumsum([0] + [len(s.sector_list) for s in segments])
    records = {}
    for k in RECORD_FIELDS:
        if k == "mem_rows":
            records[k] = np.concatenate([np.where(s.records[k] >= 0, s.records[k].astype(np.int64) + rb, -1)
                                         for s, rb in zip(segments, rows_base)]).astype(RECORD_FIELDS[k])
        else:
            records[k] = np.concatenate([s.records[k] for s in segments])
    sector_start = np.concatenate([s.sector_start[:-1] + b for s, b in zip(segments, sec_base)] + [sec_base[-1:]])
    return {"gids": np.concatenate([s.gids for s in segments]), "starts": np.r_[0, np.cumsum(counts)[:-1]].astype(np.int64),
            "counts": counts, "records": records, "sector_start": sector_start.astype(np.int64),
            "sector_list": np.concatenate([s.sector_list for s in segments]).astype(np.int64, copy=False)}


class EmulatorStream:
    """The emulator's records for a detailed run, group by group of CTAs (launch order), a slice of
    `slice_steps` emulator steps at a time, or less where the emulator's log reaches `slice_bytes`
    (the addresses of memory-bound kernels: a slice's log, its trace and columns are what memory holds
    beside the arena)."""

    def __init__(self, gpu, program, launch, params, memory, ctas: list[int], group: int, slice_steps: int,
                 slice_bytes: int | None = None):
        from gpusim.emu.emulator import Emulator

        self.gpu, self.program = gpu, program
        self.wpc = launch.warps_per_cta
        self.groups = [list(ctas[i:i + group]) for i in range(0, len(ctas), group)]
        if len(self.groups) > 1 and len(self.groups[-1]) < group:  # a last, partial group joins the one before:
            self.groups[-2:] = [self.groups[-2] + self.groups[-1]]  # (the emulator's cost is per step, and per lane)
        self.group_of = {c: i for i, g in enumerate(self.groups) for c in g}
        self._make = lambda cs: Emulator(program, launch, params, memory, ctas=cs)
        self.emus: dict[int, object] = {}
        self.finished: set[int] = set()
        self.slice_steps, self.slice_bytes = slice_steps, slice_bytes
        self.carry = None
        self.totals = new_totals(len(program))
        self.memory, self.launch = memory, launch
        self.warp_instructions = 0
        # wall seconds per stage (bench/speed.py prints them): emulation, trace building, columns
        # (precompute, sectors), the arena, the engine
        self.seconds = {"emulate": 0.0, "trace": 0.0, "columns": 0.0, "arena": 0.0, "engine": 0.0}

    def slice(self, g: int, ctas=None) -> Segment | None:
        """The next slice of group `g`'s CTAs `ctas` (the group's others wait; None: all of them);
        None once the group is finished."""
        from gpusim.timing.precompute import operand_table
        from gpusim.trace import DynamicTrace

        if g in self.finished:
            return None
        emu = self.emus.get(g)
        if emu is None:
            emu = self.emus[g] = self._make(self.groups[g])
        if ctas is None:
            emu.frozen[:] = False
        else:
            emu.frozen[:] = ~np.isin(np.asarray(emu.ctas)[emu.warp_cta], np.fromiter(ctas, dtype=np.int64))
        t0 = time.perf_counter()
        done = emu.run_for(self.slice_steps, self.slice_bytes)
        t1 = time.perf_counter()
        self.seconds["emulate"] += t1 - t0
        if self.carry is None:
            # (per warp: the reuse cache's slots, then the read-port debt: precompute.register_bank_conflicts)
            self.carry = np.full((self.launch.n_ctas * self.wpc, operand_table(self.program)[0].shape[1] + 1), -1,
                                 dtype=np.int32)
        n_local = len(emu.warp_cta)
        gids = np.asarray(emu.ctas, dtype=np.int64)[emu.warp_cta] * self.wpc + np.arange(n_local) % self.wpc
        complete = gids[emu.done]  # (warps that have exited: their streams end with this slice or before)
        if len(emu.log.pcs):
            trace = DynamicTrace.from_emulator(emu)
            emu.take_log()
            t2 = time.perf_counter()
            self.seconds["trace"] += t2 - t1
            seg = segment_from_trace(self.gpu, trace, self.carry, complete, self.totals)
            self.seconds["columns"] += time.perf_counter() - t2
        else:
            seg = Segment(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                          {k: np.zeros(0, dtype=t) for k, t in RECORD_FIELDS.items()},
                          np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64), complete)
        if done:
            self.warp_instructions += emu.warp_instructions
            self.finished.add(g)
            del self.emus[g]
        return seg

    def checked_run(self):
        """What `emu.run.verify` needs of an emulator run: the whole grid's, on the one memory."""
        return SimpleNamespace(program=self.program, launch=self.launch, memory=self.memory,
                               ctas=list(range(self.launch.n_ctas)), warp_instructions=self.warp_instructions,
                               stage_seconds=dict(self.seconds))


def run_streamed(gpu, occ, ctas: list[int]):
    """Detailed mode on the compiled engine, the records streamed from `gpu.records_stream`: (SMs that ran,
    memory counters, totals for `GPU._result`)."""
    stream = gpu.records_stream
    cfg = gpu.cfg
    wpc = gpu.warps_per_cta
    queue = np.asarray(ctas, dtype=np.int64)
    ahead = cfg.sm_count * occ.ctas_per_sm  # CTAs kept ready to launch: a full wave
    arena = Arena(gpu._grid_ctas() * wpc)
    warps = np.arange(wpc)

    adds = [0]

    def ready(cta_index: int) -> bool:
        gids = queue[cta_index] * wpc + warps
        n = arena.end[gids] - arena.begin[gids]
        return bool(((n >= C.LOOKAHEAD) | ~arena.more[gids]).all())

    def fill(st, primed: int) -> int:
        """Slices until no running warp is short of records and a wave of CTAs is ready; how many
        of the queue's CTAs are ready. A slice emulates, of a group with a short warp, its running
        CTAs (all together), and the next CTAs to launch until they are ready; the group's other
        CTAs wait (or go on too while the arena is small: FREE_RECORDS)."""
        nxt = 0 if st is None else int(st.glob[C.G_NEXT])
        while True:
            want: dict[int, set] = {}
            if st is not None:
                streaming = running(st) & st.w["more"]
                short = streaming & (arena.end[st.w["gid"]] - st.w["pos"] < 2 * C.LOOKAHEAD)
                if short.any():
                    # the groups of the short warps go on, all their running CTAs together: the
                    # emulator's batches are warps at one PC, and its fast paths want contiguous warps;
                    # CTAs left out split them (refilling only the CTAs below a few slices' worth,
                    # sgemm_maxas_64 h100 2048 spent 94-170 s emulating, 13 s this way)
                    groups = {stream.group_of[int(c)] for c in np.unique(st.w["gid"][short] // wpc)}
                    for c in np.unique(st.w["gid"][streaming] // wpc):
                        g = stream.group_of[int(c)]
                        if g in groups:
                            want.setdefault(g, set()).add(int(c))
            while primed < len(queue) and ready(primed):
                primed += 1
            for i in range(primed, min(len(queue), nxt + ahead)):
                if not ready(i):
                    c = int(queue[i])
                    want.setdefault(stream.group_of[c], set()).add(c)
            if not want:
                return primed
            roomy = arena.live < FREE_RECORDS  # (then every CTA of a group goes on)
            segments = [s for g in sorted(want) if (s := stream.slice(g, None if roomy else want[g])) is not None]
            t = time.perf_counter()
            waiting = int(np.count_nonzero(arena.more))
            arena.add(segments, st, (queue[nxt:, None] * wpc + warps).ravel())
            adds[0] += 1
            if adds[0] % TRIM_EVERY == 0:
                _trim_heap()
            stream.seconds["arena"] += time.perf_counter() - t
            if not any(len(s.counts) for s in segments) and np.count_nonzero(arena.more) == waiting:
                # (an emulator always moves on: its warps run, or exit, or it reports a deadlock)
                raise RuntimeError(f"streamed trace: groups {sorted(want)} made no records and ended no warps")

    primed = fill(None, 0)
    st = E.build(gpu, occ, ctas, arena.arrays(), primed)
    while True:
        t = time.perf_counter()
        status, m = E._simulate(st)
        stream.seconds["engine"] += time.perf_counter() - t
        if status != C.NEED_TRACE:
            break
        primed = fill(st, int(st.glob[C.G_PRIMED]))
        st.glob[C.G_PRIMED] = primed
        st = st._replace(**arena.arrays())
    sms, memory = E.results(gpu, st, status, m)
    return sms, memory, stream.totals
