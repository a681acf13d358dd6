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
(tests/test_stream.py). The slices may be made in a second process, on another core (`producer.py`).
"""

from __future__ import annotations

import time
from collections import deque
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
BACKLOG_RECORDS = 8 << 20  # live records past which only CTAs below BACKLOG_KEEP records per warp are fed
BACKLOG_KEEP = 4096
TRIM_EVERY = 20  # arena updates between two `_trim_heap` calls
AHEAD_BATCHES = 2  # with a second process: batches asked ahead that the engine runs with (`run_streamed`)
RELEASE_WARPS = 1 << 20  # the arena's per-warp entries of finished CTAs go back to the system this many at a time
RECORD_FIELDS = {"pcs": np.int32, "mem_rows": np.int32, "regc": np.int8, "wavef": np.int16, "glines": np.int8}


@dataclass
class Segment:
    """Records of some warps, each warp's contiguous and in order: warp `gids[i]` has `counts[i]` of
    them; `mem_rows` index `sector_start` (the segment's own rows; -1: none; row r's sectors are
    sector_base[r] + sector_list[sector_start[r]:sector_start[r + 1]], `gpu.sector_deltas`);
    `complete`: the warps whose streams end here."""
    gids: np.ndarray
    counts: np.ndarray
    records: dict
    sector_start: np.ndarray
    sector_list: np.ndarray
    sector_base: np.ndarray
    complete: np.ndarray


def segment_from_trace(gpu, trace, carry: np.ndarray, complete: np.ndarray, totals: dict, first_gid: int = 0) -> Segment:
    """A `Segment` of the warps of `trace` (a piece of each one's stream), with the columns `gpu`
    works out for a whole trace; `carry` (row g - `first_gid` for warp id g) continues the reuse
    cache's state across pieces; `totals` (see `GPU.trace_totals`) gets this piece's counts added."""
    from gpusim.timing.gpu import global_sector_rows, mem_exec_masks, sector_deltas, store_sector_counts
    from gpusim.timing.precompute import precompute

    gids = np.asarray(trace.warp_ids, dtype=np.int64)
    piece = carry[gids - first_gid]
    cols = precompute(gpu.program, trace, **gpu.precompute_rules, reuse_carry=piece, no_reuse=False)
    carry[gids - first_gid] = piece
    rec = trace.records
    kinds = gpu.kind_of_pc[rec["pc_index"]]
    sector_start, sector_list = global_sector_rows(trace, kinds, mem_exec_masks(trace), gpu._sector_shift)
    sector_base, sector_list = sector_deltas(sector_start, sector_list)
    smem = kinds == SMEM
    totals["executed"] += np.bincount(rec["pc_index"], minlength=len(gpu.program))
    totals["smem_accesses"] += int(np.count_nonzero(smem))
    totals["smem_wavefronts"] += int(cols["smem_wavefronts"][smem].sum(dtype=np.int64))
    totals["smem_conflicts"] += int(cols["smem_conflicts"][smem].sum(dtype=np.int64))
    totals["reg_conflict_cycles"] += int(cols["reg_conflict_cycles"].sum(dtype=np.int64))
    totals["reuse_hits"] += int(cols["reuse_hits"].sum(dtype=np.int64))
    totals["global_loads"] += int(np.count_nonzero(kinds == GLOAD))
    whole, part = store_sector_counts(trace, kinds, gpu.cfg.memory.l1.sector_bytes)
    totals["store_sectors"] += whole
    totals["partial_store_sectors"] += part
    counts = np.diff(np.append(trace.warp_starts, len(rec))).astype(np.int64)
    records = {"pcs": rec["pc_index"], "mem_rows": rec["mem_row"], "regc": cols["reg_conflict_cycles"],
               "wavef": cols["smem_wavefronts"], "glines": cols["glines"]}
    return Segment(gids, counts, {k: np.ascontiguousarray(v, dtype=RECORD_FIELDS[k]) for k, v in records.items()},
                   sector_start, sector_list, sector_base, complete)


def new_totals(n_pc: int) -> dict:
    return {"executed": np.zeros(n_pc, dtype=np.int64), "smem_accesses": 0, "smem_wavefronts": 0, "smem_conflicts": 0,
            "reg_conflict_cycles": 0, "reuse_hits": 0, "global_loads": 0, "store_sectors": 0, "partial_store_sectors": 0}


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


def _give_back(a: np.ndarray, lo: int, hi: int) -> None:
    """Give the whole pages of a[lo:hi] back to the system (madvise MADV_DONTNEED: they read as zeros
    after); nothing where that is not available."""
    try:
        import ctypes
        import mmap

        page = mmap.PAGESIZE
        start = -(-(a.ctypes.data + lo * a.itemsize) // page) * page
        end = (a.ctypes.data + hi * a.itemsize) // page * page
        if end > start:
            libc = ctypes.CDLL(None)
            libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
            libc.madvise(ctypes.c_void_p(start), ctypes.c_size_t(end - start), 4)  # MADV_DONTNEED (Linux, BSD)
    except (OSError, AttributeError, ValueError):
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
    moved there with them (a warp's records are contiguous); what the warps left behind is garbage.
    When the tail is full, the live records are moved down over the garbage, in place, in the order
    they lie (each lands at or below where it was); only when that leaves too little room do the
    arrays grow (to 1.5x what is needed). Records, their rows and sectors are copied piece by piece
    (`_copy_pieces`), with no temporary the size of what is copied."""

    def __init__(self, n_warps: int):
        self.begin = np.zeros(n_warps, dtype=np.int32)  # (32-bit: 64 MB instead of 128 at 16384^2 AA^T's 8.4 M warps)
        self.end = np.zeros(n_warps, dtype=np.int32)
        self.more = np.ones(n_warps, dtype=np.bool_)
        self.records = {k: np.zeros(0, dtype=t) for k, t in RECORD_FIELDS.items()}
        self.sector_start = np.zeros(1, dtype=np.int64)  # row r: sector_list[sector_start[r]:sector_start[r + 1]]
        self.sector_list = np.zeros(0, dtype=np.int32)  # (+ sector_base[r]: the row's sectors)
        self.sector_base = np.zeros(0, dtype=np.int64)
        self.n = self.n_rows = self.n_sectors = 0  # used: records, rows, sectors
        self.live = 0  # records still to run after the last `add`
        self.released = 0  # the warps whose `begin`, `end`, `more` pages went back to the system

    def release(self, below: int) -> None:
        """The warps below `below` (warp ids) are done and read no more (their CTAs finished; none
        runs or waits to launch): give their pages of `begin`, `end` and `more` back, a million
        warps at a time (these fill as a run goes on: 72 MB at 16384^2 AA^T's 8.4 M warps)."""
        if below - self.released < RELEASE_WARPS:
            return
        for a in (self.begin, self.end, self.more):
            _give_back(a, 0, below)  # (from the start: pages given back before cost nothing, a page cut off is whole now)
        self.released = below

    def arrays(self) -> dict:
        return dict(**self.records, warp_begin=self.begin, warp_end=self.end, warp_more=self.more,
                    sector_start=self.sector_start, sector_list=self.sector_list, sector_base=self.sector_base)

    def add(self, segments: list[Segment], st=None, queue_from: np.ndarray | None = None) -> None:
        """Append `segments`, keeping the records still to run (of warps running in the engine state
        `st`: from the one before their position, which a barrier's release reads; of the warps
        `queue_from`, CTAs not launched yet: all of those that have some). Positions in `st` move
        with their records."""
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
        ka = np.concatenate([run_from, self.begin[waiting]]).astype(np.int64)
        kb = self.end[kg].astype(np.int64)
        # what comes: the segments' records, each segment a source of its own (source 0: the arena)
        none = np.zeros(0, dtype=np.int64)
        sg = np.concatenate([s.gids for s in segments]) if segments else none
        ss = np.concatenate([np.full(len(s.gids), i + 1, dtype=np.int64) for i, s in enumerate(segments)]) \
            if segments else none
        sa = np.concatenate([np.r_[0, np.cumsum(s.counts)[:-1]].astype(np.int64) for s in segments]) if segments else none
        sb = sa + (np.concatenate([s.counts for s in segments]) if segments else none)
        sources = [None] + [(s.records, s.sector_start, s.sector_list, s.sector_base) for s in segments]
        self.live = int((kb - ka).sum() + (sb - sa).sum())
        moving = np.isin(kg, sg)  # warps with new records: their kept records move to the tail
        mg, ma, mb = kg[moving], ka[moving], kb[moving]
        kept_rows, kept_secs = _piece_sizes(self._sources(sources), np.zeros(len(mg), dtype=np.int64), ma, mb)
        new_rows, new_secs = _piece_sizes(self._sources(sources), ss, sa, sb)
        tail = (int((mb - ma).sum() + (sb - sa).sum()), int(kept_rows.sum() + new_rows.sum()),
                int(kept_secs.sum() + new_secs.sum()))
        if not self._room(tail):  # full: the live records down over the garbage
            self._compact(kg, ka, kb, st, slots, run_gids)
            ma, mb = self.begin[mg].astype(np.int64), self.end[mg].astype(np.int64)
            if not self._room(tail):
                self._grow(tail)
        pieces = (np.concatenate([mg, sg]), np.concatenate([np.zeros(len(mg), dtype=np.int64), ss]),
                  np.concatenate([ma, sa]), np.concatenate([mb, sb]),
                  np.concatenate([kept_rows, new_rows]), np.concatenate([kept_secs, new_secs]))
        moved_gids, moved_from = self._write(self._sources(sources), pieces)
        self._follow(st, slots, run_gids, moved_gids, moved_from)
        for s in segments:
            self.more[s.complete] = False
        if len(slots):
            st.w["more"][slots] = self.more[run_gids]

    def _sources(self, sources: list) -> list:
        """The sources with the arena itself, as it is now, for source 0."""
        return [(self.records, self.sector_start, self.sector_list, self.sector_base)] + sources[1:]

    def _room(self, need: tuple) -> bool:
        return (self.n + need[0] <= len(self.records["pcs"]) and self.n_rows + need[1] + 1 <= len(self.sector_start)
                and self.n_sectors + need[2] <= len(self.sector_list))

    def _follow(self, st, slots, run_gids, moved_gids, moved_from) -> None:
        """The running warps' positions follow their records (`moved_gids`, ascending, whose first
        kept record was at `moved_from` and is now at their `begin`)."""
        if not len(slots):
            return
        w = st.w
        if len(moved_gids):
            at = np.minimum(np.searchsorted(moved_gids, run_gids), len(moved_gids) - 1)
            mv = moved_gids[at] == run_gids
            w["pos"][slots[mv]] = self.begin[run_gids[mv]] + (w["pos"][slots[mv]] - moved_from[at[mv]])
        w["end"][slots] = self.end[run_gids]

    def _compact(self, kg, ka, kb, st, slots, run_gids) -> None:
        """Move the kept pieces (warp, first record, end) to the arrays' start, in the order they
        lie: each lands at or below where it was, so that copying forward never overwrites what is
        still to be read."""
        order = np.argsort(ka, kind="stable")
        kg, ka, kb = kg[order], ka[order], kb[order]
        src = np.zeros(len(kg), dtype=np.int64)
        rows, secs = _piece_sizes(self._sources([None]), src, ka, kb)
        self.n = self.n_rows = self.n_sectors = 0
        moved_gids, moved_from = self._write(self._sources([None]), (kg, src, ka, kb, rows, secs), sort=False)
        self._follow(st, slots, run_gids, moved_gids, moved_from)

    def _grow(self, need: tuple) -> None:
        """Arrays of 1.5x what the records kept and `need` take (same places)."""
        total = (self.n + need[0], self.n_rows + need[1], self.n_sectors + need[2])
        if total[0] >= 1 << 31:
            raise RuntimeError("streamed arena: more than 2^31 records to keep")
        records = {}
        for k, t in RECORD_FIELDS.items():
            records[k] = np.empty((3 * total[0]) // 2 + (1 << 16), dtype=t)
            records[k][:self.n] = self.records[k][:self.n]
        self.records = records
        sector_start = np.empty((3 * total[1]) // 2 + (1 << 12) + 1, dtype=np.int64)
        sector_start[:self.n_rows + 1] = self.sector_start[:self.n_rows + 1]
        self.sector_start = sector_start
        sector_base = np.empty(len(sector_start) - 1, dtype=np.int64)
        sector_base[:self.n_rows] = self.sector_base[:self.n_rows]
        self.sector_base = sector_base
        sector_list = np.empty((3 * total[2]) // 2 + (1 << 14), dtype=np.int32)
        sector_list[:self.n_sectors] = self.sector_list[:self.n_sectors]
        self.sector_list = sector_list

    def _write(self, sources, pieces, sort: bool = True):
        """Copy the pieces (warp id, source, first record, end, rows, sectors: ranges of the arena,
        source 0, and of segments) to the tail, each warp's in order (`sort`: by warp, its kept
        piece first; else in the order given). (the warps whose source-0 piece moved, ascending;
        where that piece began)."""
        pg, src, pa, pb, rows, secs = pieces
        if sort:
            order = np.lexsort((src, pg))
            pg, src, pa, pb, rows, secs = pg[order], src[order], pa[order], pb[order], rows[order], secs[order]
        lengths = pb - pa
        out_start = np.r_[0, np.cumsum(lengths)]
        row_start = np.r_[0, np.cumsum(rows)]
        sec_start = np.r_[0, np.cumsum(secs)]
        at, r0, s0 = self.n, self.n_rows, self.n_sectors
        d = self.records
        for i, (records, sector_start, sector_list, sector_base) in enumerate(sources):
            mine = np.flatnonzero(src == i)
            if not len(mine):
                continue
            _copy_pieces(pa[mine], pb[mine], at + out_start[mine], r0 + row_start[mine], s0 + sec_start[mine],
                         records["pcs"], records["mem_rows"], records["regc"], records["wavef"], records["glines"],
                         sector_start, sector_list, sector_base, d["pcs"], d["mem_rows"], d["regc"], d["wavef"],
                         d["glines"], self.sector_start, self.sector_list, self.sector_base)
        self.n, self.n_rows, self.n_sectors = at + int(out_start[-1]), r0 + int(row_start[-1]), s0 + int(sec_start[-1])
        # each warp's new range (a warp's pieces are consecutive); where its source-0 piece began
        first_piece = np.r_[True, pg[1:] != pg[:-1]] if len(pg) else np.zeros(0, dtype=bool)
        last_piece = np.r_[pg[1:] != pg[:-1], True] if len(pg) else np.zeros(0, dtype=bool)
        self.begin[pg[first_piece]] = at + out_start[:-1][first_piece]
        self.end[pg[last_piece]] = at + out_start[1:][last_piece]
        kept = first_piece & (src == 0)
        order = np.argsort(pg[kept], kind="stable")
        return pg[kept][order], pa[kept][order]


def _piece_sizes(sources, src: np.ndarray, pa: np.ndarray, pb: np.ndarray):
    """Per piece (source, first record, end): its rows (global accesses) and their sectors."""
    rows = np.zeros(len(pa), dtype=np.int64)
    secs = np.zeros(len(pa), dtype=np.int64)
    for i, (records, sector_start, _, _) in enumerate(sources):
        mine = np.flatnonzero(src == i)
        if len(mine):
            _count_pieces(pa[mine], pb[mine], records["mem_rows"], sector_start, mine, rows, secs)
    return rows, secs


@njit(cache=True)
def _count_pieces(pa, pb, mem_rows, sector_start, where, rows, secs):
    for i in range(len(pa)):
        r = 0
        c = 0
        for j in range(pa[i], pb[i]):
            m = mem_rows[j]
            if m >= 0:
                r += 1
                c += sector_start[m + 1] - sector_start[m]
        rows[where[i]] = r
        secs[where[i]] = c


@njit(cache=True)
def _copy_pieces(pa, pb, at, row_at, sec_at, pcs, mem_rows, regc, wavef, glines, sector_start, sector_list,
                 sector_base, d_pcs, d_mem_rows, d_regc, d_wavef, d_glines, d_sector_start, d_sector_list,
                 d_sector_base):
    """Records pa[i]:pb[i] of a source to at[i].., their rows numbered from row_at[i], their sectors
    to sec_at[i].. (d_sector_start[row + 1]: the end of each row's sectors)."""
    for i in range(len(pa)):
        o = at[i]
        r = row_at[i]
        s = sec_at[i]
        for j in range(pa[i], pb[i]):
            d_pcs[o] = pcs[j]
            d_regc[o] = regc[j]
            d_wavef[o] = wavef[j]
            d_glines[o] = glines[j]
            m = mem_rows[j]
            if m < 0:
                d_mem_rows[o] = -1
            else:
                d_mem_rows[o] = r
                d_sector_base[r] = sector_base[m]
                for c in range(sector_start[m], sector_start[m + 1]):
                    d_sector_list[s] = sector_list[c]
                    s += 1
                r += 1
                d_sector_start[r] = s
            o += 1


class EmulatorStream:
    """The emulator's records for a detailed run, group by group of CTAs (launch order), a slice of
    `slice_steps` emulator steps at a time, or less where the emulator's log reaches `slice_bytes`
    (the addresses of memory-bound kernels: a slice's log, its trace and columns are what memory holds
    beside the arena); made in this process or, `processes` 2, in a second one (`producer.py`, whose
    emulators write `memory`: it must be shared)."""

    def __init__(self, gpu, program, launch, params, memory, ctas: list[int], group: int, slice_steps: int,
                 slice_bytes: int | None = None, processes: int = 1):
        from gpusim.emu.emulator import Emulator

        self.gpu, self.program = gpu, program
        self.wpc = launch.warps_per_cta
        self.ctas = np.asarray(ctas, dtype=np.int64)
        if len(self.ctas) and not (np.diff(self.ctas) == 1).all():
            raise ValueError("a streamed run emulates consecutive CTAs in launch order")
        # group g: CTAs ctas[g * group:(g + 1) * group]; a last, partial group joins the one before
        # (the emulator's cost is per step, and per lane)
        self.group, self.n_groups = group, max(1, len(ctas) // group)
        self._make = lambda cs: Emulator(program, launch, params, memory, ctas=cs)
        self.emus: dict[int, object] = {}
        self.finished: set[int] = set()
        self.slice_steps, self.slice_bytes, self.processes = slice_steps, slice_bytes, processes
        self.carry: dict[int, np.ndarray] = {}  # per group being emulated: its warps' reuse-cache state
        self.totals = new_totals(len(program))
        self.memory, self.launch = memory, launch
        self.warp_instructions = 0
        # wall seconds per stage (bench/speed.py prints them): emulation, trace building, columns
        # (precompute, sectors), the arena, the engine; with a second process, the first three are
        # its own, and `wait` is the engine's process waiting for its slices
        self.seconds = {"emulate": 0.0, "trace": 0.0, "columns": 0.0, "arena": 0.0, "engine": 0.0}
        if processes == 2:
            self.seconds["wait"] = 0.0

    def slice(self, g: int, ctas=None) -> Segment | None:
        """The next slice of group `g`'s CTAs `ctas` (the group's others wait; None: all of them);
        None once the group is finished."""
        from gpusim.timing.precompute import operand_table
        from gpusim.trace import DynamicTrace

        if g in self.finished:
            return None
        lo, hi = self.span(g)
        emu = self.emus.get(g)
        if emu is None:
            emu = self.emus[g] = self._make([int(c) for c in self.ctas[lo:hi]])
            # per warp: the reuse cache's slots, then the read-port debt (precompute.register_bank_conflicts)
            self.carry[g] = np.full(((hi - lo) * self.wpc, operand_table(self.program)[0].shape[1] + 1), -1,
                                    dtype=np.int32)
        if ctas is None:
            emu.frozen[:] = False
        else:
            emu.frozen[:] = ~np.isin(np.asarray(emu.ctas)[emu.warp_cta], np.fromiter(ctas, dtype=np.int64))
        t0 = time.perf_counter()
        done = emu.run_for(self.slice_steps, self.slice_bytes)
        t1 = time.perf_counter()
        self.seconds["emulate"] += t1 - t0
        n_local = len(emu.warp_cta)
        gids = np.asarray(emu.ctas, dtype=np.int64)[emu.warp_cta] * self.wpc + np.arange(n_local) % self.wpc
        complete = gids[emu.done]  # (warps that have exited: their streams end with this slice or before)
        if len(emu.log.pcs):
            trace = DynamicTrace.from_emulator(emu)
            emu.take_log()
            t2 = time.perf_counter()
            self.seconds["trace"] += t2 - t1
            seg = segment_from_trace(self.gpu, trace, self.carry[g], complete, self.totals, int(self.ctas[lo]) * self.wpc)
            self.seconds["columns"] += time.perf_counter() - t2
        else:
            seg = Segment(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                          {k: np.zeros(0, dtype=t) for k, t in RECORD_FIELDS.items()},
                          np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int64), complete)
        if done:
            self.warp_instructions += emu.warp_instructions
            self.finished.add(g)
            del self.emus[g], self.carry[g]
        return seg

    def span(self, g: int) -> tuple[int, int]:
        """Group g's CTAs: ctas[first:end]."""
        return g * self.group, len(self.ctas) if g == self.n_groups - 1 else (g + 1) * self.group

    def group_of(self, cta: int) -> int:
        return min((cta - int(self.ctas[0])) // self.group, self.n_groups - 1)

    def checked_run(self):
        """What `emu.run.verify` needs of an emulator run: the whole grid's, on the one memory."""
        return SimpleNamespace(program=self.program, launch=self.launch, memory=self.memory,
                               ctas=list(range(self.launch.n_ctas)), warp_instructions=self.warp_instructions,
                               stage_seconds=dict(self.seconds))


def run_streamed(gpu, occ, ctas: list[int]):
    """Detailed mode on the compiled engine, the records streamed from `gpu.records_stream`: (SMs that ran,
    memory counters, totals for `GPU._result`). The slices are made here or in a second process
    (`producer.py`); with one, the engine's stops also ask ahead for slices later ones will likely
    need (`wanted_next`, see `fill`), made while the engine runs and taken, whether needed or not, at
    a stop this process chooses: what the engine sees at each stop does not depend on the two
    processes' speeds."""
    from gpusim.timing.compiled import producer

    stream = gpu.records_stream
    cfg = gpu.cfg
    wpc = gpu.warps_per_cta
    queue = np.asarray(ctas, dtype=np.int64)
    if not np.array_equal(queue, stream.ctas):
        raise RuntimeError("streamed run: the CTA queue is not the stream's CTAs")
    ahead = cfg.sm_count * occ.ctas_per_sm  # CTAs kept ready to launch: a full wave
    arena = Arena(gpu._grid_ctas() * wpc)
    warps = np.arange(wpc)
    maker = producer.start(stream)
    # the CTAs (of the queue, from the first) of the groups asked for so far; the batches asked
    # ahead, not taken yet (their slice counts); arena updates
    state = {"started": 0, "asked": deque(), "adds": 0}

    def ready(cta_index: int) -> bool:
        gids = queue[cta_index] * wpc + warps
        n = arena.end[gids] - arena.begin[gids]
        return bool(((n >= C.LOOKAHEAD) | ~arena.more[gids]).all())

    def launching(primed: int, end: int, want: dict) -> dict:
        """`want` with the queue's CTAs from `primed` to `end` that are not ready."""
        for i in range(primed, min(len(queue), end)):
            if not ready(i):
                c = int(queue[i])
                want.setdefault(stream.group_of(c), set()).add(c)
        return want

    def wanted(st, nxt: int, primed: int) -> dict[int, set]:
        """Per group, the CTAs to emulate on now: of the groups with a short warp (fewer than 2 x
        LOOKAHEAD records left), their running CTAs (but past BACKLOG_RECORDS those holding plenty),
        and the next wave of CTAs to launch not ready."""
        want: dict[int, set] = {}
        if st is not None:
            streaming = running(st) & st.w["more"]
            short = streaming & (arena.end[st.w["gid"]] - st.w["pos"] < 2 * C.LOOKAHEAD)
            if short.any():
                # the groups of the short warps go on, all their running CTAs together: the
                # emulator's batches are warps at one PC, and its fast paths want contiguous warps;
                # CTAs left out split them (refilling only the CTAs below a few slices' worth,
                # sgemm_maxas_64 h100 2048 spent 94-170 s emulating, 13 s this way)
                groups = {stream.group_of(int(c)) for c in np.unique(st.w["gid"][short] // wpc)}
                cta = st.w["gid"][streaming] // wpc
                left = (arena.end[st.w["gid"]] - st.w["pos"])[streaming]
                order = np.lexsort((left, cta))  # per CTA, its warp with the fewest records first
                first = np.r_[True, cta[order][1:] != cta[order][:-1]] if len(order) else np.zeros(0, bool)
                # past BACKLOG_RECORDS a group's CTAs that still hold plenty wait: under the measured
                # LRR policy a group's CTAs run at more spread rates, and their backlog grew with
                # each refill (sgemm_maxas_64 h100 2048: 23.8 M live records against 12.0 M under GTO)
                backlog = arena.live >= BACKLOG_RECORDS
                for c, fewest in zip(cta[order][first].tolist(), left[order][first].tolist()):
                    g = stream.group_of(int(c))
                    if g in groups and not (backlog and fewest > BACKLOG_KEEP):
                        want.setdefault(g, set()).add(int(c))
        return launching(primed, nxt + ahead, want)

    def wanted_next(st, nxt: int, primed: int) -> dict[int, set]:
        """What to ask ahead at a stop (with a second process), for the next: the next wave and group
        of CTAs to launch not ready, and, while the arena holds fewer than BACKLOG_RECORDS, a slice
        of the group of the running warp with the fewest records left (its running CTAs)."""
        want = launching(primed, nxt + ahead + stream.group, {})
        if arena.live >= BACKLOG_RECORDS:
            return want
        if st is None:  # (the first wave's groups)
            for c in queue[nxt:nxt + ahead].tolist():
                want.setdefault(stream.group_of(c), set()).add(c)
        else:
            streaming = np.flatnonzero(running(st) & st.w["more"])
            if len(streaming):
                gid = st.w["gid"][streaming]
                g = stream.group_of(int(gid[np.argmin(arena.end[gid] - st.w["pos"][streaming])]) // wpc)
                cta = np.unique(gid // wpc)
                want.setdefault(g, set()).update(int(c) for c in cta if stream.group_of(int(c)) == g)
        return want

    def ask_next(st, nxt: int, primed: int) -> bool:
        """Ask ahead (`wanted_next`) as if the batches asked ahead were there; whether anything was."""
        want = wanted_next(st, nxt, primed)
        if want:
            state["asked"].append(ask(want))
        return bool(want)

    def ask(want: dict) -> int:
        """Ask for a slice of each group of `want` (its CTAs; all of them while the arena is small:
        FREE_RECORDS); how many."""
        roomy = arena.live < FREE_RECORDS
        plan = [(g, None if roomy else want[g]) for g in sorted(want)]
        for g, _ in plan:
            state["started"] = max(state["started"], stream.span(g)[1])
        maker.ask(plan)
        return len(plan)

    def take(st, nxt: int) -> bool:
        """The next slice asked for into the arena (one slice's records in memory at a time);
        whether it had records."""
        seg = maker.take()
        if seg is None:
            return False
        t = time.perf_counter()
        # (the CTAs not launched yet that may have records: those of the groups started)
        arena.add([seg], st, (queue[nxt:max(nxt, state["started"]), None] * wpc + warps).ravel())
        state["adds"] += 1
        if state["adds"] % TRIM_EVERY == 0:
            _trim_heap()
        stream.seconds["arena"] += time.perf_counter() - t
        return len(seg.counts) > 0

    def fill(st, primed: int) -> int:
        """Slices until no running warp is short of records and a wave of CTAs is ready; how many of
        the queue's CTAs are ready. A slice emulates, of a group with a short warp, its running CTAs
        (all together), and the next CTAs to launch until they are ready; the group's other CTAs
        wait (or go on too while the arena is small: FREE_RECORDS). With a second process, batches
        are asked ahead (`wanted_next`): at the start up to AHEAD_BATCHES + 1 in flight, before the
        oldest are taken down to AHEAD_BATCHES (so that the child always has one to make), and at the
        end up to AHEAD_BATCHES again; such a batch is taken whole, in the order asked, at a later
        stop or first thing when records are short."""
        nxt = 0 if st is None else int(st.glob[C.G_NEXT])
        asked = state["asked"]
        while maker.ahead and len(asked) <= AHEAD_BATCHES and ask_next(st, nxt, primed):
            pass
        while len(asked) > AHEAD_BATCHES:
            for _ in range(asked.popleft()):
                take(st, nxt)
        while True:
            while primed < len(queue) and ready(primed):
                primed += 1
            want = wanted(st, nxt, primed)
            if not want:
                break
            if asked:
                for _ in range(asked.popleft()):
                    take(st, nxt)
                continue
            waiting = int(np.count_nonzero(arena.more))
            made = False
            for _ in range(ask(want)):
                made |= take(st, nxt)
            if not made and np.count_nonzero(arena.more) == waiting:
                # (an emulator always moves on: its warps run, or exit, or it reports a deadlock)
                raise RuntimeError(f"streamed trace: groups {sorted(want)} made no records and ended no warps")
        while maker.ahead and len(asked) < AHEAD_BATCHES and ask_next(st, nxt, primed):
            pass
        return primed

    try:
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
            nxt, run = int(st.glob[C.G_NEXT]), st.w["gid"][running(st)]
            arena.release(min(int(queue[nxt]) * wpc if nxt < len(queue) else len(arena.begin),
                              int(run.min()) if len(run) else len(arena.begin)))
            st = st._replace(**arena.arrays())
    except BaseException:
        maker.close(ok=False)
        raise
    for _ in range(sum(state["asked"])):  # (asked ahead, not needed: the run ended)
        maker.take()
    maker.close()
    sms, memory = E.results(gpu, st, status, m)
    return sms, memory, stream.totals
