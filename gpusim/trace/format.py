"""The dynamic warp trace of one emulated launch (`DynamicTrace`) and its on-disk format.

A trace lists, for every warp of the emulated CTAs, the instructions it executed in order. It is
what the timing model replays; it is produced by the functional emulator (`from_emulator`) or
imported from an Accel-Sim SASS trace (`gpusim.trace.accelsim`).

In memory
---------
``records``: numpy structured array, one row per executed warp instruction, sorted by (warp, seq):

============  ======  ==============================================================================
field         dtype   meaning
============  ======  ==============================================================================
warp          int32   global warp id = cta_linear_id * warps_per_cta + warp_in_cta, where
                      cta_linear_id = x + y*grid.x + z*grid.x*grid.y and warp_in_cta = tid_linear // 32
seq           int32   position of the instruction in that warp's stream (0, 1, 2, ...)
pc_index      int32   index into ``Program.instructions`` (the byte address is ``instructions[i].address``)
active_mask   uint32  lanes active when the warp issued the instruction, before the guard predicate
                      (bit t = lane t)
exec_mask     uint32  lanes that executed it: ``active_mask`` and the guard predicate (what Accel-Sim's
                      tracer calls the mask); equal to ``active_mask`` for unguarded instructions
mem_row       int32   row of ``addresses``/``access_bytes`` for a memory access (LDG/STG/LDS/STS/...),
                      -1 otherwise
============  ======  ==============================================================================

``addresses``: (N_mem, 32) uint64, the byte address of each lane's access; 0 for lanes not in
``exec_mask``. Global accesses carry the emulator's device addresses (``gpusim.emu.memory``),
shared accesses the byte offset in the CTA's shared window as the instruction computed it.
``access_bytes``: (N_mem,) uint8, bytes moved per lane (4, 8, 16).

``header``: dict (JSON) with ``format`` ("gpusim-dynamic-trace"), ``version``, ``arch``, ``kernel``
(mangled), ``fingerprint`` (``Program.fingerprint()``), ``grid``, ``block``, ``dynamic_shared_bytes``,
``warps_per_cta``, ``ctas`` (emulated CTA linear ids, ascending), ``registers``, ``static_shared_bytes``,
``workload``, ``size`` (None if unknown), ``gpusim_version``, ``source`` ("emulator" or
"accelsim:<file>"), ``exec_mask_exact`` (False when the guard effect was not captured, see
recorded by the emulator), ``active_mask_exact`` (False for imported Accel-Sim traces, which carry only
active & guard), ``n_records``, ``n_mem``.

On disk
-------
One ``.npz`` file (``np.savez_compressed``, no pickles) with arrays ``header`` (0-d unicode string:
the JSON header), ``records``, ``addresses``, ``access_bytes``.

Version policy: ``TRACE_FORMAT_VERSION`` is bumped whenever a field is added, removed or changes
meaning; `DynamicTrace.load` accepts only its own version and names the file otherwise (traces are
cheap to regenerate from the listing, so no migration code is kept).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np

from gpusim.errors import TraceFormatError
from gpusim.trace.elide import GLOBAL_LOAD_OPCODES, distinct_sectors, elide_segments
from gpusim.trace.lanes import lane_bits

TRACE_FORMAT = "gpusim-dynamic-trace"
TRACE_FORMAT_VERSION = 1

RECORD_DTYPE = np.dtype([("warp", np.int32), ("seq", np.int32), ("pc_index", np.int32),
                         ("active_mask", np.uint32), ("exec_mask", np.uint32), ("mem_row", np.int32)])
ARRAYS = ("header", "records", "addresses", "access_bytes")


def run_traced(program, launch, params, memory, ctas=None, workload: str | None = None,
               size: int | None = None):
    """Emulate a launch with exact execution masks; returns (emulator, DynamicTrace)."""
    from gpusim.emu.emulator import Emulator

    emu = Emulator(program, launch, params, memory, ctas=ctas, record=True).run()
    return emu, DynamicTrace.from_emulator(emu, workload=workload, size=size)


class DynamicTrace:
    """Per-warp dynamic instruction streams of one launch (see the module docstring for the fields)."""

    def __init__(self, header: dict, records: np.ndarray, addresses: np.ndarray, access_bytes: np.ndarray):
        self.header = dict(header, n_records=int(len(records)), n_mem=int(len(addresses)))
        self.records = records
        self.addresses = addresses
        self.access_bytes = access_bytes
        w = records["warp"]
        if len(w) and (w[1:] >= w[:-1]).all():  # sorted by warp (as built): where each warp starts
            self._starts = np.flatnonzero(np.r_[True, w[1:] != w[:-1]])
            self._warp_ids = w[self._starts]
        else:
            self._warp_ids, self._starts = np.unique(w, return_index=True)
        self._ends = np.append(self._starts[1:], len(records)).astype(np.int64)
        self.elision = None  # an Elision when main-loop iterations were left out (sampled mode)

    # ---- construction --------------------------------------------------------------------------
    @classmethod
    def from_emulator(cls, emu, workload: str | None = None, size: int | None = None,
                      keep_loop: tuple[int, int] | None = None, ctas: list[int] | None = None) -> "DynamicTrace":
        """Build the trace from a finished `Emulator` run with `record=True` (vectorised, see `_LogLayout`).
        `keep_loop=(head, tail)` keeps only the first `head` and last `tail` main-loop iterations of
        each warp (sampled mode; see `gpusim.trace.elide`); the trace's `elision` says what was left out.
        `ctas`: the emulated CTAs to trace (default: all); the others' warps are left out, the trace
        the same as a run of these alone (CTAs emulated beside them for their addresses: a warp's
        records do not depend on another CTA's, unless one reads what the other writes)."""
        log = emu.log
        n_steps = len(log.pcs)
        if n_steps == 0:
            raise TraceFormatError("the emulator recorded no steps (was it run with record=True?)",
                                   emu.program.kernel)
        launch, program = emu.launch, emu.program
        wpc = launch.warps_per_cta
        n_local = len(emu.warp_cta)
        cta_of_local = np.asarray(emu.ctas, dtype=np.int64)[np.asarray(emu.warp_cta)]
        gwarp_of_local = cta_of_local * wpc + np.arange(n_local) % wpc
        traced, n_traced = None, n_local  # per emulated warp, whether the trace has it (None: all)
        if ctas is not None:
            missing = sorted(set(ctas) - set(emu.ctas))
            if missing:
                raise TraceFormatError(f"CTA {missing[0]} was not emulated", program.kernel)
            traced = np.isin(cta_of_local, np.asarray(ctas, dtype=np.int64))
            n_traced = int(traced.sum())
            if not n_traced:
                raise TraceFormatError("no CTA to trace", program.kernel)
            if traced.all():
                traced = None
        exec_exact = log.exec_masks is not None and len(log.exec_masks) == n_steps
        lay = _LogLayout(log, gwarp_of_local, traced)
        mem_steps = np.array(sorted(log.mem), dtype=np.int64)
        step_rows = lay.counts[mem_steps]  # address rows per memory step
        if any(log.mem[s][0].shape[0] != c for s, c in zip(mem_steps, step_rows)):
            raise TraceFormatError("emulator log's address rows do not match its memory records", program.kernel)

        # records to keep (all, or all but the left-out main-loop iterations)
        view, elision = lay, None
        if keep_loop is not None and exec_exact:
            pc_counts = np.bincount(lay.step_pcs, weights=lay.traced_counts, minlength=len(program)).astype(np.int64)
            cut = elide_segments(program, lay.step_pcs, lay._sorted[0], lay.seg_step, lay.length, lay.seg_pos,
                                 pc_counts, n_traced, *keep_loop)
            if cut is not None:
                elision, lo, hi = cut
                elision.load_sectors32 = _load_sectors(program, log, mem_steps, traced)
                view = _Kept(lay, lo, hi)
        moved = view.moved  # trace positions of the full trace in the kept one (-1: left out)

        # the records in trace order (warp, then time); fields filled one at a time
        records = np.empty(view.n, dtype=RECORD_DTYPE)
        records["warp"] = view.warp()
        records["pc_index"] = view.pc()
        records["active_mask"] = view.active()
        exec_mask = records["exec_mask"]
        exec_mask[:] = records["active_mask"]
        if exec_exact:  # steps whose guard left out lanes: their own execution masks (and the active ones)
            steps = np.flatnonzero([e is not m for e, m in zip(log.exec_masks, log.masks)])
            if len(steps):
                at = moved(lay.positions(steps))
                masks = np.concatenate([log.exec_masks[s] for s in steps]).astype(np.uint32)
                exec_mask[at[at >= 0]] &= masks[at >= 0]
        mem_at = moved(lay.positions(mem_steps))  # trace position of each address row (rows numbered in step order)
        n = len(records)
        starts = np.flatnonzero(np.r_[True, records["warp"][1:] != records["warp"][:-1]]) if n else np.zeros(0, int)
        seq = records["seq"]
        seq[:] = np.arange(n, dtype=np.int32)
        seq -= np.repeat(starts.astype(np.int32), np.diff(np.r_[starts, n]))

        # address rows in trace order: row r (step order) becomes row new_row[r]
        is_mem = np.zeros(n, dtype=bool)
        is_mem[mem_at[mem_at >= 0]] = True
        mem_pos = np.flatnonzero(is_mem)
        del is_mem
        mem_row = records["mem_row"]
        mem_row[:] = -1
        mem_row[mem_pos] = np.arange(len(mem_pos), dtype=np.int32)
        new_row = np.where(mem_at >= 0, mem_row[np.maximum(mem_at, 0)], -1) if len(mem_at) else mem_at
        addresses = np.empty((len(mem_pos), 32), dtype=np.uint64)
        access_bytes = np.empty(len(mem_pos), dtype=np.uint8)
        row_start = np.r_[0, np.cumsum(step_rows)]
        some_left_out = elision is not None or traced is not None
        if not some_left_out:
            use = range(len(mem_steps))
        else:  # the steps with kept rows only (with an elision, most are left out)
            before = np.r_[0, np.cumsum(new_row >= 0)]
            use = np.flatnonzero(before[row_start[1:]] > before[row_start[:-1]]).tolist()
        for j in use:
            rows = new_row[row_start[j]:row_start[j + 1]]
            block, nbytes = log.mem[int(mem_steps[j])]
            if some_left_out:
                kept = rows >= 0
                if not kept.all():
                    rows, block = rows[kept], block[kept]
            addresses[rows] = block
            access_bytes[rows] = nbytes
        if not exec_exact:
            # without the guard capture the best evidence for memory lanes is the recorded address
            guarded = np.array([ins.guard is not None and not (ins.guard == 7 and not ins.guard_negated)
                                for ins in program.instructions], dtype=bool)[records["pc_index"][mem_pos]]
            lanes = addresses[guarded] != 0
            exec_mask[mem_pos[guarded]] &= np.packbits(lanes, axis=1, bitorder="little").view(np.uint32).ravel()
        # lanes that did not execute carry address 0
        mem_exec = exec_mask[mem_pos]
        partial = np.flatnonzero(mem_exec != np.uint32(0xFFFFFFFF))
        if len(partial):
            addresses[partial] = np.where(lane_bits(mem_exec[partial]), addresses[partial], np.uint64(0))

        header = make_header(program, launch.grid, launch.block, launch.dynamic_shared_bytes, wpc,
                             sorted(int(c) for c in (emu.ctas if ctas is None else ctas)), workload=workload,
                             size=size, source="emulator",
                             exec_mask_exact=bool(exec_exact), active_mask_exact=True)
        trace = cls(header, records, addresses, access_bytes)
        trace.elision = elision
        return trace

    # ---- queries ---------------------------------------------------------------------------------
    @property
    def n_warp_instructions(self) -> int:
        return len(self.records)

    @property
    def n_thread_instructions(self) -> int:
        """Executed lane-instructions (popcount of the execution masks)."""
        m = self.records["exec_mask"]
        return int(np.unpackbits(m.view(np.uint8)).sum())

    @property
    def warp_ids(self) -> np.ndarray:
        return self._warp_ids

    @property
    def warp_starts(self) -> np.ndarray:
        """Where each warp of `warp_ids` starts in `records` (records are sorted by warp)."""
        return self._starts

    def warp_offsets(self, n_ids: int) -> np.ndarray:
        """(n_ids,) int64: where the records of warp id 0, 1, ..., n_ids - 1 start (for an absent id,
        where they would), i.e. ``np.searchsorted(records["warp"], np.arange(n_ids))``."""
        ends = np.append(self._starts, len(self.records)).astype(np.int64)
        return ends[np.searchsorted(self._warp_ids, np.arange(n_ids))]

    def warp_stream(self, w: int) -> np.ndarray:
        """The records of global warp `w`, in execution order (a view; empty if the warp is absent)."""
        i = int(np.searchsorted(self._warp_ids, w))
        if i == len(self._warp_ids) or self._warp_ids[i] != w:
            return self.records[0:0]
        return self.records[self._starts[i]:self._ends[i]]

    def mem_addresses(self, record) -> tuple[np.ndarray, int] | None:
        """(addresses (32,) uint64, bytes per lane) of one record, or None if it is not a memory access."""
        row = int(record["mem_row"])
        if row < 0:
            return None
        return self.addresses[row], int(self.access_bytes[row])

    def opcode_mix(self, program, by: str = "opcode") -> dict[str, int]:
        """Executed warp instructions per base opcode (by='opcode'), full opcode ('full') or unit ('unit')."""
        keys = {"opcode": lambda i: i.opcode, "full": lambda i: i.full_opcode, "unit": lambda i: i.unit}[by]
        self.check_program(program)
        counts = np.bincount(self.records["pc_index"], minlength=len(program.instructions))
        mix: dict[str, int] = {}
        for ins, n in zip(program.instructions, counts):
            if n:
                k = keys(ins)
                mix[k] = mix.get(k, 0) + int(n)
        return dict(sorted(mix.items(), key=lambda kv: (-kv[1], kv[0])))

    def check_program(self, program, where: str | None = None) -> None:
        fp = program.fingerprint()
        if self.header.get("fingerprint") != fp:
            raise TraceFormatError(
                f"trace is of program {self.header.get('kernel')} (fingerprint {self.header.get('fingerprint')}) "
                f"but the program given is {program.kernel} {program.arch} (fingerprint {fp})",
                where or self.header.get("source"))

    def __eq__(self, other) -> bool:
        return (isinstance(other, DynamicTrace) and self.header == other.header
                and np.array_equal(self.records, other.records) and np.array_equal(self.addresses, other.addresses)
                and np.array_equal(self.access_bytes, other.access_bytes))

    def __repr__(self) -> str:
        h = self.header
        return (f"DynamicTrace({h.get('kernel')} {h.get('arch')}, {len(self._warp_ids)} warps, "
                f"{self.n_warp_instructions} warp instructions, {len(self.addresses)} memory accesses)")

    # ---- files -----------------------------------------------------------------------------------
    def save(self, path) -> Path:
        """Write the trace to `path` (exactly that name; `.npz` recommended)."""
        path = Path(path)
        if self.elision is not None:
            raise TraceFormatError("a trace with left-out loop iterations (sampled mode) cannot be saved; "
                                   "build it without keep_loop", str(path))
        with open(path, "wb") as f:
            np.savez_compressed(f, header=np.array(json.dumps(self.header, sort_keys=True)), records=self.records,
                                addresses=self.addresses, access_bytes=self.access_bytes)
        return path

    @classmethod
    def load(cls, path, program=None) -> "DynamicTrace":
        """Read a trace written by `save`; checks version, completeness and (with `program`) the fingerprint."""
        path = Path(path)
        where = str(path)
        try:
            with np.load(path, allow_pickle=False) as z:
                missing = [a for a in ARRAYS if a not in z.files]
                if missing:
                    raise TraceFormatError(f"not a gpusim trace: array(s) {', '.join(missing)} missing", where)
                header = json.loads(str(z["header"][()]))
                records, addresses, access_bytes = z["records"], z["addresses"], z["access_bytes"]
        except TraceFormatError:
            raise
        except FileNotFoundError:
            raise TraceFormatError("no such trace file", where) from None
        except (zipfile.BadZipFile, EOFError, ValueError, KeyError, OSError, json.JSONDecodeError,
                zipfile.LargeZipFile) as exc:
            raise TraceFormatError(f"truncated or corrupt trace file ({type(exc).__name__}: {exc})", where) from None
        if not isinstance(header, dict) or header.get("format") != TRACE_FORMAT:
            fmt = header.get("format") if isinstance(header, dict) else None
            raise TraceFormatError(f"not a gpusim trace (format {fmt!r})", where)
        if header.get("version") != TRACE_FORMAT_VERSION:
            raise TraceFormatError(f"trace format version {header.get('version')} but this gpusim reads version "
                                   f"{TRACE_FORMAT_VERSION}; regenerate the trace", where)
        if records.dtype != RECORD_DTYPE:
            raise TraceFormatError(f"records have fields {records.dtype} instead of {RECORD_DTYPE}", where)
        if addresses.dtype != np.uint64 or addresses.ndim != 2 or addresses.shape[1:] != (32,) \
                or access_bytes.shape != (addresses.shape[0],):
            raise TraceFormatError(f"address arrays have shapes {addresses.shape}/{access_bytes.shape}", where)
        if header.get("n_records") != len(records) or header.get("n_mem") != len(addresses):
            raise TraceFormatError(f"header says {header.get('n_records')} records / {header.get('n_mem')} memory "
                                   f"rows, file holds {len(records)} / {len(addresses)}", where)
        rows = records["mem_row"]
        if len(rows) and (rows.max() >= len(addresses) or rows.min() < -1):
            raise TraceFormatError("memory row index out of range", where)
        trace = cls(header, records, addresses, access_bytes)
        if program is not None:
            trace.check_program(program, where)
        return trace


def make_header(program, grid, block, dynamic_shared_bytes: int, warps_per_cta: int, ctas: list[int], *,
                workload=None, size=None, source: str, exec_mask_exact: bool, active_mask_exact: bool) -> dict:
    import gpusim

    return {
        "format": TRACE_FORMAT,
        "version": TRACE_FORMAT_VERSION,
        "arch": program.arch,
        "kernel": program.kernel,
        "fingerprint": program.fingerprint(),
        "registers": int(program.registers),
        "static_shared_bytes": int(program.shared_bytes),
        "grid": [int(x) for x in grid],
        "block": [int(x) for x in block],
        "dynamic_shared_bytes": int(dynamic_shared_bytes),
        "warps_per_cta": int(warps_per_cta),
        "ctas": [int(c) for c in ctas],
        "workload": getattr(workload, "name", workload),
        "size": None if size is None else int(size),
        "gpusim_version": gpusim.__version__,
        "source": source,
        "exec_mask_exact": bool(exec_mask_exact),
        "active_mask_exact": bool(active_mask_exact),
    }


class _LogLayout:
    """Where the records of an emulator log go in trace order (each warp's records together, in time order).

    The log has one entry per step: a batch of warps executing one instruction. Consecutive steps of
    one batch (the same warp and mask arrays: a straight-line run of the emulator) are a dense block
    of run length x warps records, so the records of one warp in one run (a *segment*) are one
    contiguous piece of the trace, in the run's step order. Sorting the segments (by global warp,
    then run: a few per run) instead of the records gives every record's position; fields that are
    constant over a segment (warp, active mask) or over a step (PC) are then written run-length.
    `traced` (per emulated warp; None: all) leaves the segments of the other warps out: they have
    no trace position (-1), and `traced_counts` gives each step's traced warps."""

    def __init__(self, log, gwarp_of_local: np.ndarray, traced: np.ndarray | None = None):
        n_steps = len(log.pcs)
        self.counts = np.fromiter(map(len, log.warps), dtype=np.int64, count=n_steps)
        self.step_pcs = np.asarray(log.pcs, dtype=np.int64)
        # runs: a step starts one when its warps or masks are other arrays than the step before's
        # (all logged arrays are alive, so equal ids mean the same array)
        warps_id = np.fromiter(map(id, log.warps), dtype=np.int64, count=n_steps)
        masks_id = np.fromiter(map(id, log.masks), dtype=np.int64, count=n_steps)
        self.run_first = np.flatnonzero(np.r_[True, (warps_id[1:] != warps_id[:-1]) | (masks_id[1:] != masks_id[:-1])])
        run_len = np.diff(np.r_[self.run_first, n_steps])
        run_k = self.counts[self.run_first]
        self.run_seg0 = np.r_[0, np.cumsum(run_k)[:-1]].astype(np.int64)  # first segment of each run
        seg_run = np.repeat(np.arange(len(self.run_first)), run_k)
        seg_local = np.concatenate([log.warps[s] for s in self.run_first]).astype(np.int64)
        seg_warp = gwarp_of_local[seg_local]
        seg_mask = np.concatenate([log.masks[s] for s in self.run_first]).astype(np.uint32)
        order = np.lexsort((seg_run, seg_warp))  # trace order of the segments
        self.traced_counts = self.counts
        if traced is not None:
            order = order[traced[seg_local[order]]]
            self.traced_counts = np.repeat(np.bincount(seg_run[traced[seg_local]], minlength=len(run_len)), run_len)
        self.length = run_len[seg_run[order]]
        start = np.r_[0, np.cumsum(self.length)[:-1]].astype(np.int64)
        self.n = int(self.length.sum())
        self.seg_start = np.full(len(seg_run), -1, dtype=np.int64)  # trace position of each segment's first record
        self.seg_start[order] = start
        self._sorted = (seg_warp[order], seg_mask[order], self.run_first[seg_run[order]] - start)
        self.seg_step, self.seg_pos = self.run_first[seg_run[order]], start  # per segment in trace order
        self.warp_starts = start[np.r_[True, self._sorted[0][1:] != self._sorted[0][:-1]]] if len(start) else start

    def _runs(self, per_segment: np.ndarray) -> np.ndarray:
        return np.repeat(per_segment, self.length)

    def warp(self) -> np.ndarray:
        """Global warp id of each record (int32)."""
        return self._runs(self._sorted[0].astype(np.int32))

    def active(self) -> np.ndarray:
        """Active lane mask of each record (uint32)."""
        return self._runs(self._sorted[1])

    def pc(self) -> np.ndarray:
        """Instruction index of each record (int32): the PC of its step (step = segment's first step + offset)."""
        index = np.int32 if self.n < 2**31 else np.int64
        step = self._runs(self._sorted[2].astype(index))
        step += np.arange(self.n, dtype=index)
        return self.step_pcs.astype(np.int32)[step]

    @staticmethod
    def moved(at: np.ndarray) -> np.ndarray:
        """Positions in the trace of the full trace's positions `at` (all kept)."""
        return at

    def positions(self, steps: np.ndarray) -> np.ndarray:
        """Trace positions of the records of `steps` (ascending), step by step, each step's warps in
        the log's order (the order of its address rows and masks); -1 for warps not traced."""
        if not len(steps):
            return np.zeros(0, dtype=np.int64)
        run = np.searchsorted(self.run_first, steps, side="right") - 1
        k = self.counts[steps]
        first = np.r_[0, np.cumsum(k)[:-1]]
        j = np.arange(int(k.sum()), dtype=np.int64) - np.repeat(first, k)  # index of the warp within its step
        start = self.seg_start[np.repeat(self.run_seg0[run], k) + j]
        return np.where(start >= 0, start + np.repeat(steps - self.run_first[run], k), -1)


class _Kept:
    """The records of a `_LogLayout` but each warp's left-out range [lo, hi) (trace positions of the
    full trace; per warp in trace order): pieces of its segments, at most two per segment (before
    and after the range). The layout's queries over the kept records, and `moved`."""

    def __init__(self, lay: _LogLayout, lo: np.ndarray, hi: np.ndarray):
        self.lay = lay
        pos, length = lay.seg_pos, lay.length
        warp = lay._sorted[0]
        first_seg = np.flatnonzero(np.r_[True, warp[1:] != warp[:-1]])
        per_warp = np.diff(np.r_[first_seg, len(warp)])
        seg_lo, seg_hi = np.repeat(lo, per_warp), np.repeat(hi, per_warp)
        before = np.clip(seg_lo - pos, 0, length)  # records of the segment before the range
        after_at = np.clip(seg_hi - pos, 0, length)  # where its records after the range begin
        seg = np.repeat(np.arange(len(pos)), 2)
        off = np.c_[np.zeros_like(after_at), after_at].ravel()
        n = np.c_[before, length - after_at].ravel()
        some = n > 0
        self._seg, self._off, self._len = seg[some], off[some], n[some]
        self.n = int(self._len.sum())
        self._out = np.r_[0, np.cumsum(self._len)[:-1]].astype(np.int64)  # each piece's first kept position
        self._warp_pos, self._lo, self._hi = pos[first_seg], lo, hi
        self._removed = np.r_[0, np.cumsum(hi - lo)]  # records left out before each warp

    def _runs(self, per_piece: np.ndarray) -> np.ndarray:
        return np.repeat(per_piece, self._len)

    def warp(self) -> np.ndarray:
        return self._runs(self.lay._sorted[0][self._seg].astype(np.int32))

    def active(self) -> np.ndarray:
        return self._runs(self.lay._sorted[1][self._seg])

    def pc(self) -> np.ndarray:
        index = np.int32 if self.n < 2**31 else np.int64
        step = self._runs((self.lay.seg_step[self._seg] + self._off - self._out).astype(index))
        step += np.arange(self.n, dtype=index)
        return self.lay.step_pcs.astype(np.int32)[step]

    def moved(self, at: np.ndarray) -> np.ndarray:
        """Positions in the kept trace of the full trace's positions `at` (-1: left out, or not in
        the full trace)."""
        w = np.searchsorted(self._warp_pos, at, side="right") - 1
        lo, hi = self._lo[w], self._hi[w]
        out = at - self._removed[w] - np.where(at >= hi, hi - lo, 0)
        out[((at >= lo) & (at < hi)) | (at < 0)] = -1
        return out


def _load_sectors(program, log, mem_steps, traced: np.ndarray | None = None) -> np.ndarray:
    """Distinct 32-byte sectors read by every global-load record of the log (kept or not) of the
    traced warps (`traced`: per emulated warp; None: all)."""
    is_load = np.array([ins.opcode in GLOBAL_LOAD_OPCODES for ins in program.instructions], dtype=bool)
    steps = [int(s) for s in mem_steps if is_load[log.pcs[s]]]
    if not steps:
        return np.zeros(0, np.uint64)
    addresses = np.concatenate([log.mem[s][0] for s in steps]).astype(np.uint64, copy=False).reshape(-1, 32)
    masks = np.concatenate([log.exec_masks[s] & log.masks[s] for s in steps]).astype(np.uint32)
    if traced is not None:
        rows = traced[np.concatenate([log.warps[s] for s in steps])]
        addresses, masks = addresses[rows], masks[rows]
    partial = np.flatnonzero(masks != np.uint32(0xFFFFFFFF))  # (rows whose lanes all executed keep their addresses)
    if len(partial):
        addresses[partial] = np.where(lane_bits(masks[partial]), addresses[partial], np.uint64(0))
    return distinct_sectors(addresses)
