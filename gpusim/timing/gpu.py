"""The whole GPU: CTA dispatch over SMs (occupancy, waves, the tail), the shared memory system, the
event engine (simpy), and the collection of results."""

from __future__ import annotations

import numpy as np
import simpy

from gpusim.errors import GpusimError
from gpusim.timing import stalls as S
from gpusim.timing.mem import L1, MemorySystem
from gpusim.timing.occupancy import occupancy
from gpusim.timing.precompute import SHARED_RULES, precompute
from gpusim.timing.results import PcStalls, SimResult, event_time_s
from gpusim.timing.sampling import Sampler
from gpusim.timing.sm import SM
from gpusim.timing.static import GLOAD, GSTORE, SMEM, IssueFacts, static_info
from gpusim.trace.elide import distinct_sectors
from gpusim.trace.lanes import lane_bits


_MASK64 = (1 << 64) - 1


class GPU:
    sampler_options: dict = {}  # keyword arguments for sampled mode's Sampler (benchmarks vary them)
    # detailed and sampled mode without a timeline run on the compiled engine (gpusim/timing/compiled),
    # the same model to the last bit; "objects" runs the object model (sm.py, mem/) it mirrors
    engine = "compiled"

    def __init__(self, program, trace, cfg, honour_control_codes: bool | None = None, window=None,
                 mode: str = "detailed", footprint_bytes: int | None = None, grid=None,
                 buffers: tuple[int, int] | None = None):
        if trace.header["arch"] != cfg.arch:
            raise GpusimError(f"trace is for {trace.header['arch']} but GPU '{cfg.card}' runs {cfg.arch} code")
        self.program, self.trace, self.cfg = program, trace, cfg
        honour = cfg.sm.scheduler.honour_control_codes if honour_control_codes is None else honour_control_codes
        self.control_mode = honour and program.control_decoded
        self.static = static_info(program, cfg)
        # what the SMs' issue loops read per instruction; their clock is a float (faster arithmetic with
        # the float latencies and queue times), an int with a timeline (integer cycle numbers in events)
        self.issue_facts = IssueFacts(self.static, self.control_mode, cfg.sm.scheduler.dual_issue,
                                      int if window is not None else float)
        self.warps_per_cta = trace.header["warps_per_cta"]
        rf, sh, l1 = cfg.sm.register_file, cfg.sm.shared_memory, cfg.memory.l1
        # the phase size and Hopper's pair packing are properties of the architecture's shared-memory
        # path (precompute.SHARED_RULES); banks and widths come from the config, so studies can vary them
        arch_rules = SHARED_RULES[program.arch]
        self.precompute_rules = dict(reg_banks=rf.banks, reg_bank_width_bits=rf.bank_width_bits,
                                     reg_read_ports=rf.read_ports, reuse_cache=rf.reuse_cache, smem_banks=sh.banks,
                                     smem_bank_width_bytes=sh.bank_width_bytes, sector_bytes=l1.sector_bytes,
                                     line_bytes=l1.line_bytes, load_lane_bytes=l1.load_lane_bytes_per_cycle,
                                     tag_lines_per_cycle=l1.tag_lines_per_cycle,
                                     smem_phase_bytes=arch_rules["smem_phase_bytes"],
                                     smem_pack_uniform_pairs=arch_rules["smem_pack_uniform_pairs"])
        self.cols = precompute(program, trace, **self.precompute_rules)
        rec = trace.records
        self.kind_of_pc = np.array([s.kind for s in self.static], dtype=np.int8)
        self._record_kinds = self.kind_of_pc[rec["pc_index"]]  # static.ALU, SMEM, ...
        self._warp_start = trace.warp_offsets(int(trace.warp_ids[-1]) + 2 if len(rec) else 1)
        self._mem_exec = mem_exec_masks(trace)
        self._sector_start = self._sector_list = None  # see sectors()
        self._executed_counts = self._weights = None  # see _executed(), _record_weights()
        self._sector_shift = int(np.log2(l1.sector_bytes))
        self.cta_queue: list[int] = []
        self.own_queues: dict[int, list[int]] | None = None  # sampled mode: per simulated SM
        # the chip's CTA retirement (`cta_retire`): cycles each CTA takes it, the cycle it is free again
        self.retire_interval = cfg.cta_retire_cycles
        self.retire_free = 0.0
        self.mode = mode
        self.footprint_bytes = footprint_bytes  # bytes of the input buffers (sampled mode's DRAM estimate)
        self.buffers = buffers  # (bytes of all buffers, of the writable ones), or None (`_stores_stay`)
        self.grid_footprint = grid  # sampled mode: the whole grid's footprints (mem/grid.py), or None
        # sampled mode, cold L2: (DRAM bytes read, bytes written back, L2 block fills) of the grid's waves
        self.grid_traffic = None
        self.grid_found = None  # sampled mode, warm L2: the share of the grid's load sectors found (`_grid_traffic`)
        # timeline recording window: (first cycle, last cycle, set of CTA ids or None), or None for no timeline
        self.window = None if window is None else (window[0], window[1], None if window[2] is None else set(window[2]))
        self.records_stream = None  # detailed mode's records made as the run needs them (compiled/stream.py), else None

    # ---- trace access -----------------------------------------------------------------------------
    def stream(self, gid: int):
        if gid + 1 >= len(self._warp_start):
            return [], [], [], [], []
        a, b = int(self._warp_start[gid]), int(self._warp_start[gid + 1])
        rec = self.trace.records
        regc = self.cols["reg_conflict_cycles"][a:b]
        wavef = self.cols["smem_wavefronts"][a:b]
        glines = self.cols["glines"][a:b]
        return (rec["pc_index"][a:b].tolist(), rec["mem_row"][a:b].tolist(), regc.tolist(), wavef.tolist(),
                glines.tolist())

    def sectors(self, row: int) -> list:
        """The distinct sectors (address >> log2 sector bytes, ascending) that the executing lanes of
        global access `row` touch; worked out for all global accesses at once, on first use."""
        if self._sector_start is None:
            self._global_sectors()
        return self._sector_list[self._sector_start[row]:self._sector_start[row + 1]]

    def _exec_lanes(self, rows) -> np.ndarray:
        """Which of the 32 lanes executed global access `rows` (a row id, or an array of them)."""
        return exec_lanes(self._mem_exec, rows)

    def _global_sectors(self) -> None:
        starts, sectors = global_sector_rows(self.trace, self._record_kinds, self._mem_exec, self._sector_shift)
        self._sector_list = sectors.tolist()
        self._sector_start = starts.tolist()

    # ---- made-up loop iterations (sampled mode, see sampling.Sampler.synthesize) ---------------------
    def is_global(self, pc: int) -> bool:
        return self.static[pc].kind in (GLOAD, GSTORE)

    def row_stride(self, row0: int, row: int) -> int | None:
        """The byte distance by which every executing lane of global access `row` is past the same
        lane of `row0`, or None if the lanes differ (or differ in which execute)."""
        if self._mem_exec[row0] != self._mem_exec[row]:
            return None
        lanes = self._exec_lanes(row)
        if not lanes.any():
            return 0
        d = self.trace.addresses[row][lanes].astype(np.int64) - self.trace.addresses[row0][lanes].astype(np.int64)
        return int(d[0]) if (d == d[0]).all() else None

    def moved_row(self, row: int, delta: int) -> int:
        """A new access row: global access `row` with every address moved by `delta` bytes (its
        sectors are worked out now; the row id is past the trace's)."""
        if self._sector_start is None:
            self._global_sectors()
        # distinct_sectors of the moved addresses, in plain Python (32 lanes: numpy's per-call cost
        # was most of it): executing lanes, address + delta modulo 2^64, 0 marking none
        lanes, shift = int(self._mem_exec[row]), self._sector_shift
        moved = ((a + delta) & _MASK64 for i, a in enumerate(self.trace.addresses[row].tolist()) if lanes >> i & 1)
        self._sector_list.extend(sorted({a >> shift for a in moved if a}))
        self._sector_start.append(len(self._sector_list))
        return len(self._sector_start) - 2

    def _dram_fraction(self, active: int, traced: float) -> float | None:
        """Sampled mode: the share of the simulated SMs' L2 misses that move DRAM bytes: their part of
        the grid's DRAM reads over the distinct sectors they load. Their part is the traced CTAs' share
        (`traced`) of the grid's waves' reads (`_grid_traffic`), else that of their SMs (1 / `active`)
        of the input footprint (read once)."""
        n = self._load_sectors_touched()
        if not n:
            return None
        if self.grid_traffic is not None:
            return min(1.0, self.grid_traffic[0] / self.cfg.memory.l1.sector_bytes * traced / n)
        if not self.footprint_bytes:
            return None
        return min(1.0, self.footprint_bytes / self.cfg.memory.l1.sector_bytes / active / n)

    def _grid_traffic(self, occ, active: int) -> tuple[tuple[int, int, int] | None, float | None]:
        """Sampled mode: (DRAM bytes read, bytes written back during the kernel, sectors filled
        alongside a miss) of the whole grid, replayed wave by wave from its footprints (mem/grid.py),
        or None without them; and from a warm L2, where the grid is replayed after itself (`waves`'
        `after_itself`), the share of its waves' load sectors found in L2 (else None)."""
        fp = self.grid_footprint
        if fp is None:
            return None, None
        from gpusim.timing.mem.grid import waves
        from gpusim.timing.mem.l2 import fetch_sectors

        l2, sb = self.cfg.memory.l2, self.cfg.memory.l1.sector_bytes
        sectors = (lambda b: None if b is None else int(b) // sb)
        r = waves(fp, self._grid_ctas(), active * max(1, occ.ctas_per_sm), sectors(l2.effective_size_bytes or l2.size_bytes),
                   sectors(l2.dirty_limit_bytes), sectors(l2.dirty_reach_bytes), fetch_sectors(self.cfg.memory),
                   after_itself=l2.initial == "warm")
        found = 1.0 - r.reads / r.lookups if l2.initial == "warm" and r.lookups else None
        return (r.reads * sb, r.writes * sb, r.fills), found

    def _load_sectors_touched(self) -> int:
        """Distinct sectors read by the global loads of the traced CTAs, including any loop iterations
        the trace left out (their 32-byte sectors are kept with the elision)."""
        shift, el = self._sector_shift, self.trace.elision
        if el is not None and shift >= 5:
            sec = el.load_sectors32 >> np.uint64(shift - 5)  # ascending, so distinct = changes + 1
            return int(np.count_nonzero(sec[1:] != sec[:-1])) + 1 if len(sec) else 0
        return self._distinct_sectors(GLOAD)

    def _distinct_sectors(self, kind: int) -> int:
        """Distinct sectors touched by the traced records of `kind` (GLOAD or GSTORE)."""
        rec = self.trace.records
        rows = rec["mem_row"][(self._record_kinds == kind) & (rec["mem_row"] >= 0)]
        if not len(rows):
            return 0
        addresses = np.where(self._exec_lanes(rows), self.trace.addresses[rows], np.uint64(0))
        return len(distinct_sectors(addresses, self._sector_shift))

    def _access_sectors(self) -> tuple[float, float, float]:
        """The sectors the traced CTAs' global accesses touch, each record weighted by the executions
        it stands for (`_record_weights`: left-out loop iterations touch as many as the kept ones of
        the same instruction): (those of loads looked up in L1, of loads L1 does not cache, of
        stores). Detailed mode's L1 lookups, L2 load lookups and L2 bytes count these (mem/l1.py)."""
        if self._sector_start is None:
            self._global_sectors()
        rec, kinds = self.trace.records, self._record_kinds
        rows = rec["mem_row"]
        glob = ((kinds == GLOAD) | (kinds == GSTORE)) & (rows >= 0)
        starts = np.asarray(self._sector_start[:len(self.trace.addresses) + 1], dtype=np.int64)
        touched = np.zeros(len(rows))
        touched[glob] = (starts[rows[glob] + 1] - starts[rows[glob]]) * self._record_weights()[glob]
        cached = np.array([s.l1_cached for s in self.static], dtype=bool)[rec["pc_index"]]
        load = kinds == GLOAD
        return float(touched[cached].sum()), float(touched[load & ~cached].sum()), float(touched[kinds == GSTORE].sum())

    def _executed(self) -> np.ndarray:
        """Warp instructions executed per instruction index (the trace's, plus any it left out;
        worked out once, read only)."""
        if self._executed_counts is None:
            executed = np.bincount(self.trace.records["pc_index"], minlength=len(self.program))
            el = self.trace.elision
            self._executed_counts = executed if el is None else executed + el.pc_counts
            self._executed_counts.setflags(write=False)
        return self._executed_counts

    def _record_weights(self) -> np.ndarray:
        """Per trace record: how many executed instructions it stands for. 1 for a full trace; with
        left-out loop iterations, a record of instruction i stands for executed[i] / recorded[i] (the
        left-out executions are assumed to cost what the recorded ones of the same instruction cost).
        Worked out once, read only."""
        if self._weights is None:
            pcs = self.trace.records["pc_index"]
            if self.trace.elision is None:
                self._weights = np.ones(len(pcs))
            else:
                recorded = np.bincount(pcs, minlength=len(self.program))
                self._weights = (self._executed() / np.maximum(recorded, 1))[pcs]
            self._weights.setflags(write=False)
        return self._weights

    def _ctas_of_sm(self, index: int) -> int:
        """How many CTAs SM `index` runs when the dispatcher hands them out round robin."""
        return len(range(index, self._grid_ctas(), self.cfg.sm_count))

    def _grid_ctas(self) -> int:
        g = self.trace.header["grid"]
        return g[0] * g[1] * g[2]

    def make_sampler(self):
        if self.mode != "sampled":
            return None
        return Sampler(self.program, elision=self.trace.elision, gpu=self, **self.sampler_options)

    def cta_retire(self, exited: float) -> float:
        """The cycle a CTA whose last warp exited at `exited` is retired: its slot is free again and the
        kernel may end. The chip retires one CTA per `cta_retire_cycles`, whichever SM it ran on. H100:
        grids of 64 to 4,096 empty CTAs per SM take 1.19 cycles per CTA (the first wave's too), as long
        with 33 or 66 of the 132 SMs held by other CTAs, while a first wave of 8 CTAs per SM starts within
        300-440 cycles (validation/h100/micro/cta_rate_h100.json, bench/micro/cta_rate.py). Sampled mode's few
        SMs get their share of it (`retire_interval` = cycles x busy SMs / simulated SMs)."""
        if self.retire_interval <= 0:
            return exited
        done = exited if exited > self.retire_free else self.retire_free
        self.retire_free = done + self.retire_interval
        return done

    def next_cta(self, sm):
        """The CTA `sm` launches next: from the grid's queue, or in sampled mode from the SM's own
        (SM j runs CTAs j, j + S, ..., as the dispatcher gives them to symmetric SMs; with only some
        SMs simulated, a shared queue would let one take another's CTAs)."""
        queue = self.cta_queue if self.own_queues is None else self.own_queues[sm.index]
        return queue.pop(0) if queue else None

    # ---- the run -------------------------------------------------------------------------------------
    def run(self, workload: str | None = None, size: int | None = None) -> SimResult:
        cfg, h = self.cfg, self.trace.header
        block = h["block"]
        threads = block[0] * block[1] * block[2]
        shared = self.program.shared_bytes - self.program.reserved_shared_bytes + h.get("dynamic_shared_bytes", 0)
        occ = occupancy(cfg, threads, self.program.registers, shared)
        if occ.ctas_per_sm < 1:
            raise GpusimError(f"kernel does not fit on an SM of {cfg.card} (limited by {occ.limiter})")
        ctas = list(h["ctas"])
        self.retire_interval = cfg.cta_retire_cycles  # (sampled mode: the simulated SMs' share)
        if self.mode == "sampled":
            return self._run_sampled(ctas, occ, workload, size)
        totals = None
        if self.records_stream is not None:
            from gpusim.timing.compiled.stream import run_streamed

            used, memory, totals = run_streamed(self, occ, ctas)
        elif self.engine == "compiled" and self.window is None:
            from gpusim.timing.compiled.engine import run as run_compiled

            used, memory = run_compiled(self, occ, ctas)
        else:
            memory = MemorySystem(cfg, cfg.clock_mhz)
            self._warm(memory)
            used = self._simulate([SM(i, self, L1(cfg, memory)) for i in range(cfg.sm_count)], ctas, occ)
        return self._result(used, memory, occ, len(ctas), workload, size, totals)

    def _warm(self, memory: MemorySystem, share: float = 1.0) -> bool:
        """`memory.l2.initial: warm`: fill L2 as the previous launch of this kernel on the same buffers
        left it: the sectors of the trace's global accesses (`share` of them, the last touched, at most
        the capacity), stored ones dirty. "Last touched" follows the records' order, CTA by CTA and warp
        by warp (CTAs launch in id order), not the interleaving in time. Whether it did."""
        if self.cfg.memory.l2.initial != "warm":
            return False
        rec, kinds = self.trace.records, self._record_kinds
        sel = ((kinds == GLOAD) | (kinds == GSTORE)) & (rec["mem_row"] >= 0)
        rows = rec["mem_row"][sel]
        if not len(rows):
            return True
        if self._sector_start is None:
            self._global_sectors()
        starts = np.asarray(self._sector_start, dtype=np.int64)
        counts = starts[rows + 1] - starts[rows]
        first = np.repeat(starts[rows], counts)
        within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        secs = np.asarray(self._sector_list, dtype=np.uint64)[first + within]
        stored = np.repeat(kinds[sel] == GSTORE, counts)
        k = memory.fetch_sectors
        if k > 1:  # its read misses brought their blocks' other sectors too (`dram_fetch_bytes`), clean
            pos = np.arange(len(secs))
            load = ~stored
            blocks = (secs[load] - secs[load] % np.uint64(k))[:, None] + np.arange(k, dtype=np.uint64)
            by_pos = np.argsort(np.concatenate([pos[stored], np.repeat(pos[load], k)]), kind="stable")
            secs = np.concatenate([secs[stored], blocks.ravel()])[by_pos]
            stored = np.concatenate([np.ones(int(stored.sum()), bool), np.zeros(blocks.size, bool)])[by_pos]
        _, last_rev = np.unique(secs[::-1], return_index=True)  # each sector's last occurrence ...
        order = np.sort(len(secs) - 1 - last_rev)  # ... in the order of last touch
        keep = order[-min(memory.l2.capacity, max(1, int(len(order) * share))):]
        dirty = np.isin(secs[keep], secs[stored])
        memory.warm(secs[keep].tolist(), dirty.tolist())
        return True

    def _warm_sampled(self, memory: MemorySystem, n_traced: int, total: int) -> None:
        """Sampled mode's `initial: warm`. The traced CTAs are the grid's first; the previous launch
        left in L2 the last of what the whole grid touched (an LRU, as detailed mode fills it).
        - Streamed inputs (each input sector read by fewer than 2 CTAs, on the grid's average, as a
          copy or a transpose reads them) in a launch whose inputs and outputs together exceed the
          L2: the first CTAs' sectors were the first evicted, so none is there. The previous launch's
          last outputs are, dirty (up to the dirty limit), and are written back as this launch's data
          push them out: the traced CTAs' share of them starts in the dirty order. (copy_float4 h100
          1024, 64 MiB in and out: detailed mode's warm run takes 90,109 cycles and writes back 62
          MiB, its cold run 77,834; the hardware's warm event time, 48.6 us, is above its cold Nsight
          duration, 42.6 us. Sampled mode found 56% of its inputs in L2 here and took 66,400.)
        - Otherwise the simulated SMs find the share of their sectors that the grid's replay after
          itself finds (`grid_found`, `_grid_traffic`), where there is one, else the share the grid's
          inputs leave room for (capacity / input bytes, at most all). A GEMM whose inputs and output
          exceed the L2 (FP32 at n = 2048: 32 + 16 MiB) reads them in the same order every launch, so
          the previous launch's last data are gone before this one gets to them: the H100's warm event
          times of sgemm_maxas_128 / sgemm_warptile there are 1% / 0.2% under their cold Nsight
          cycles, where the share (all of the inputs) made the warm runs 13% faster than the cold.
        Returns the share of the traced sectors put in L2 (None where the streamed rule above applied)."""
        sb, capacity = memory.sector_bytes, memory.l2.capacity * memory.sector_bytes
        inputs = self.footprint_bytes or 0
        share = min(1.0, capacity / max(1, inputs))
        if self.grid_found is not None:
            share = min(share, self.grid_found)
        if self.cfg.memory.l2.initial != "warm" or not inputs:
            self._warm(memory, share)
            return share
        per_traced = total / max(1, n_traced)
        reads_per_sector = self._load_sectors_touched() * per_traced * sb / inputs
        written = self._distinct_sectors(GSTORE) * per_traced * sb
        if reads_per_sector >= 2 or inputs + written <= capacity:
            self._warm(memory, share)
            return share
        l2 = self.cfg.memory.l2
        left = min(written, l2.dirty_limit_bytes if l2.dirty_limit_bytes is not None else capacity)
        n = min(memory.dirty_capacity, int(left / per_traced) // sb)
        base = 1 << 58  # sector numbers no buffer has (addresses past 2^63)
        memory.warm(range(base, base + n), [True] * n)
        return None

    def _simulate(self, sms, ctas, occ):
        """Run `ctas` on `sms` (the dispatcher fills SMs round robin, then refills as CTAs finish)."""
        self.cta_queue = list(ctas)
        self.retire_free = 0.0
        if self.mode == "sampled":
            self.own_queues = {sm.index: [c for c in ctas if c % self.cfg.sm_count == sm.index] for sm in sms}
        env = simpy.Environment()
        for _ in range(occ.ctas_per_sm):
            for sm in sms:
                c = self.next_cta(sm)
                if c is not None:
                    sm.launch(c, 0.0)
        used = [sm for sm in sms if sm.warps or sm.issued]
        for sm in used:
            env.process(sm.run(env))
        env.run()
        return used

    def _run_sampled(self, ctas, occ, workload, size) -> SimResult:
        """Sampled mode: SMs 0 .. G - 1 (G from the trace: `driver.sampled_ctas`) each run
        ceil(grid / SMs) CTAs, `ctas_per_sm` at a time, refilled as they finish. The trace holds
        their CTAs (all of them up to three waves, else two); they are simulated with the real
        refill dynamics, and the SMs see G / busy SMs of the L2/DRAM bandwidth. If an SM has more
        CTAs, the rest are extrapolated at its steady CTA throughput (`_cycles_per_cta`). The
        kernel ends with the last of the simulated SMs. The SMs run on the compiled engine
        (compiled/sampled.py, the same results) unless `engine` is "objects" or a timeline is
        recorded."""
        cfg = self.cfg
        total = self._grid_ctas()
        active = min(cfg.sm_count, total)
        g = len({c % cfg.sm_count for c in ctas})
        # the simulated CTAs get their share of the dirty room, unless no store can leave L2 (`_stores_stay`)
        memory = MemorySystem(cfg, cfg.clock_mhz, share=g / active, dirty_share=1.0 if self._stores_stay() else len(ctas) / total,
                              track_stores=True, reach_rule=False)  # (see MemorySystem: the reach is detailed mode's)
        self.grid_traffic, self.grid_found = self._grid_traffic(occ, active)
        memory.dram_fraction = self._dram_fraction(active / g, len(ctas) / total)
        self.retire_interval = cfg.cta_retire_cycles * active / g  # (the simulated SMs' share)
        warm_share = self._warm_sampled(memory, len(ctas), total)
        if self.grid_found is not None and memory.dram_fraction is not None and warm_share is not None and warm_share < 1:
            # the grid's reads after itself fall on the simulated SMs' misses: the sectors not put in L2
            memory.dram_fraction = min(1.0, memory.dram_fraction / (1.0 - warm_share))
        if self.engine == "compiled" and self.window is None:
            from gpusim.timing.compiled.sampled import run_sampled

            sms, memory = run_sampled(self, occ, ctas, memory, g)
        else:
            sms = self._simulate([SM(j, self, L1(cfg, memory)) for j in range(g)], ctas, occ)
        ends, repeats = [], []
        # (the chip retires an SM's CTAs no faster than one per its cycles x busy SMs)
        floor = max(self._bandwidth_floor(memory, sms), self._stage_floor(len(ctas)), cfg.cta_retire_cycles * active)
        for sm in sms:
            remaining = self._ctas_of_sm(sm.index) - len(sm.cta_residence)
            repeat = remaining * max(self._cycles_per_cta(sm, occ.ctas_per_sm), floor) if remaining > 0 else 0.0
            ends.append(sm.finish + sm.sampler.extrapolated_cycles + repeat)
            repeats.append(repeat)
        last = int(np.argmax(ends))
        return self._result_sampled(sms, memory, occ, workload, size, active, ends, len(ctas), repeats[last], last)

    def _stores_stay(self) -> bool:
        """Sampled mode: whether no store can be written back during the kernel, because all of its
        buffers fit within L2 (its effective size, and the dirty reach where the card has one: nothing
        can push a dirty sector out) and the writable ones within the dirty limit. Detailed mode and the
        grid's replay then write nothing back; the simulated CTAs' share of the dirty room, which
        assumes that the grid's CTAs store to places of their own, would write back where CTAs store
        to the same places (indices masked into a ring, atomics into a small table: the transpose
        skeleton tp_l2 h200 1024, 64 MiB of stores into 8 MiB, wrote back 38 MiB, detailed mode 0)."""
        if self.buffers is None:
            return False
        total, writable = self.buffers
        l2 = self.cfg.memory.l2
        room = l2.effective_size_bytes or l2.size_bytes
        if l2.dirty_reach_bytes is not None:
            room = min(room, l2.dirty_reach_bytes)
        limit = l2.dirty_limit_bytes if l2.dirty_limit_bytes is not None else room
        return total <= room and writable <= limit

    def _memory_scaled(self, memory: dict, sms, scale: float, stored: int = 0, room: int | None = None) -> dict:
        """Sampled mode's cache and traffic counters, scaled to the grid. The simulated SMs count only
        the accesses they simulated, so their DRAM traffic is scaled by the instructions fast-forwarded
        over (issued / simulated) and by grid CTAs / traced CTAs (before this they were the simulated
        part's own: a 4096^3 SGEMM showed 0.2 MB of DRAM traffic). (Scaling each SM's traffic in the
        window before a fast-forward instead fails where a loop's global loads come less often than a
        window: dgemm_unroll gtx970 256 had none in its windows.)
        What L1 and L2 are asked for is the trace's (`_access_sectors`), scaled by CTAs only, as are
        global load instructions: L1 lookups split into hits and misses at the simulated SMs' hit rate;
        L2 lookups are L1's misses and the loads it does not cache; L2 bytes those and the stores'
        sectors. (Scaled by issued / simulated, the lookups came out up to 7% low at n=1024, the
        fast-forwarded iterations holding more loads per instruction than the prologue and epilogue,
        and L2 bytes 17-131% high: the epilogue's stores were scaled as if the loop repeated them;
        bench/results/sampled_counters.txt.)"""
        issued = sum(sm.issued for sm in sms)
        simulated = issued - sum(sm.sampler.extrapolated_instructions for sm in sms)
        factor = scale * (issued / simulated if simulated > 0 else 1.0)
        out = {k: (round(v * scale) if k == "global_load_instructions" else round(v * factor))
               for k, v in memory.items()}
        cached, uncached, stores = (round(x * scale) for x in self._access_sectors())
        looked = memory["l1_hits"] + memory["l1_misses"]
        out["l1_hits"] = round(cached * memory["l1_hits"] / looked) if looked else 0
        out["l1_misses"] = cached - out["l1_hits"]
        lookups = out["l1_misses"] + uncached  # L2's, by loads (stores are not looked up)
        out["l2_bytes"] = (lookups + stores) * self.cfg.memory.l1.sector_bytes
        # write-backs cannot exceed what the grid stores (each CTA's stores once, scaled by CTAs only:
        # the fast-forwarded loop iterations of GEMMs store nothing); scaled like the loads, the
        # simulated SMs' write-backs came to 3-6x the 32 MB a 2048^2 DGEMM writes. Write-backs are scaled
        # by CTAs only too: the dirty room they leave (dirty_share) is the traced CTAs' share already
        # (scaled by issued / simulated, dgemm_unroll h100 2048 wrote back 32 MiB against 18.8 measured; now 16)
        written = memory["dram_write_bytes"]
        # stores the sampler fast-forwarded over (a grid-stride loop stores in its main loop; a GEMM's
        # fast-forwarded iterations store nothing) are the trace's stored sectors the simulated SMs did
        # not store: each pushes a dirty sector out once the simulated SMs' dirty room (`room`) is full
        # (copy1_gs h100, 256 MiB: 106 MiB written back without them, 235 with them, 236 measured)
        missing = max(0, self._distinct_sectors(GSTORE) * self.cfg.memory.l1.sector_bytes - stored) \
            if stored and simulated < issued else 0
        if missing and room is not None:
            written += missing if written > 0 else max(0, stored + missing - room)
            stored += missing
        out["dram_write_bytes"] = 0 if self._stores_stay() else min(round(written * scale), round(stored * scale))
        out["dram_bytes"] = out["dram_read_bytes"] + out["dram_write_bytes"]
        l2 = self.cfg.memory.l2
        if self.grid_traffic is not None:
            # the grid's waves (mem/grid.py): detailed mode's reads and write-backs where the CTAs of a
            # wave run in step (dgemm_unroll gtx970 1024: both to the byte), which the simulated SMs'
            # own traffic scaled up cannot give (their L2 does not see the other SMs': -26% there)
            out["dram_read_bytes"], out["dram_write_bytes"], out["l2_block_fills"] = self.grid_traffic
            out["dram_bytes"] = out["dram_read_bytes"] + out["dram_write_bytes"]
        elif self.footprint_bytes and self.footprint_bytes <= (l2.effective_size_bytes or l2.size_bytes):
            # inputs that fit in L2 come from DRAM once (a cold L2), or not at all (warm): the grid's
            # compulsory traffic, which detailed mode shows on every such case of tests/test_sampling.py
            # (within 1.5%; the simulated SMs' own traffic scaled up was off by up to +75%)
            out["dram_read_bytes"] = 0 if l2.initial == "warm" else self.footprint_bytes
            out["dram_bytes"] = out["dram_read_bytes"] + out["dram_write_bytes"]
        # and the sectors misses brought alongside: the grid's (mem/grid.py `waves`; the simulated SMs'
        # own, scaled as traffic, were 1.9-2x detailed mode's on the H100 DGEMMs at n=1024, exact with
        # the grid's: bench/results/sampled_counters.txt), else the simulated SMs' own, scaled
        lookups += out.get("l2_block_fills", 0)
        # the simulated SMs' L2 cannot hold the other SMs' fills: a load that waits for another
        # SM's fill is a hit in detailed mode. Misses are the sectors DRAM delivers (the grid's
        # estimate, `MemorySystem._to_dram`), hits the rest of the lookups.
        out["l2_misses"] = min(lookups, round(out["dram_read_bytes"] / self.cfg.memory.l1.sector_bytes))
        out["l2_hits"] = lookups - out["l2_misses"]
        return out

    @staticmethod
    def _bandwidth_floor(memory: MemorySystem, sms) -> float:
        """Sampled mode: the cycles per CTA an SM's further CTAs need at least: the DRAM and L2 bytes
        the simulated CTAs moved, per CTA, at one SM's share of each bandwidth. The simulated window
        starts with idle queues, so its CTAs can run faster than the bandwidth lets the steady state
        run (copy_float4 n=1024 on the H100: 295 cycles per CTA for 8 KB, 2.4x one SM's DRAM share;
        detailed mode is DRAM-bound and within 8% of the hardware). DRAM's bytes are what its queue
        carried (`Dram.busy_bytes`: written bytes at their turnaround cost): counting the bytes alone,
        copy_float4 n=1024 came out 6% under detailed mode with `memory.dram.turnaround` on."""
        done = sum(len(sm.cta_residence) for sm in sms)
        if not done:
            return 0.0
        per_sm = len(sms)  # the queues' bandwidth is the simulated SMs' share
        dram = memory.dram.busy_bytes / done / (memory.dram.queue.bytes_per_cycle / per_sm)
        l2 = memory.l2_queue_bytes / done / (memory.l2_queue.bytes_per_cycle / per_sm)
        return max(dram, l2)

    def _stage_floor(self, n_traced: int) -> float:
        """Sampled mode: the cycles per CTA an SM needs at least to pass a CTA's shared-memory
        wavefronts and global-access lines through its SM-wide stages, at their rates
        (`sm.shared_memory.wavefronts_per_cycle`, `memory.l1.lines_per_cycle`; the units counted as
        `SM._access` counts them: at least one per access, and L1-allocating copies' passes; with a unified data stage, both kinds'
        units at its rate). The CTAs of the simulated window can
        finish faster than that, their wavefronts left queued: transpose_smem h100 1024 came out at
        102 k cycles for 131 k wavefronts per SM, 26% short of detailed mode (137.6 k)."""
        if n_traced < 1:
            return 0.0
        weight = self._record_weights()
        kinds = self._record_kinds
        smem = kinds == SMEM
        glob = (kinds == GLOAD) | (kinds == GSTORE)
        wavefronts = float((np.maximum(self.cols["smem_wavefronts"][smem], 1) * weight[smem]).sum())
        copy_mio = np.array([s.copy_mio for s in self.static])
        if copy_mio.any():  # and L1-allocating cp.async copies' passes (static.copy_mio)
            wavefronts += float((self.cols["smem_wavefronts"] * copy_mio[self.trace.records["pc_index"]] * weight)[glob].sum())
        lines = float((np.maximum(self.cols["glines"][glob], 1) * weight[glob]).sum())
        if self.cfg.memory.l1.unified_data_stage:  # both pass the data stage too (mem/lsu.py `DataStage`)
            return (wavefronts + lines) / self.cfg.memory.l1.lines_per_cycle / n_traced
        return max(wavefronts / self.cfg.sm.shared_memory.wavefronts_per_cycle,
                   lines / self.cfg.memory.l1.lines_per_cycle) / n_traced

    @staticmethod
    def _cycles_per_cta(sm, k: int) -> float:
        """Sampled mode: cycles per CTA of an SM kept full with `k` CTAs (Little's law: k CTAs
        resident, each for the mean residence time, complete at k / residence per cycle). The
        residence is measured on the CTAs that ran only while the SM was full (finished by the
        last launch): the CTAs that run as the SM drains share it with fewer and finish faster; and,
        where k of them or more were launched after the first wave, on those alone: the first wave
        starts at once, on idle L2 and DRAM queues and with no DRAM load behind it (`Dram.wait`)."""
        last_launch = max(launched for launched, _ in sm.cta_residence)
        full = [done - launched for launched, done in sm.cta_residence if done <= last_launch]
        later = [done - launched for launched, done in sm.cta_residence if 0 < launched and done <= last_launch]
        if len(later) >= k:  # the first wave started at once on idle queues: the later CTAs tell the steady state
            full = later
        if not full:  # a single wave: the whole SM's time per wave
            full = [max(done for _, done in sm.cta_residence)]
        return float(np.mean(full)) / k

    def trace_totals(self) -> dict:
        """What the results count over the trace's records (each weighted by the executions it stands
        for): executions per instruction, shared accesses, their wavefronts and bank conflicts,
        register-bank conflict cycles, reuse-cache hits, global load instructions; and, unweighted (the
        note reads their ratio), the (warp, sector) pairs stores write and those written in part
        (`store_sector_counts`)."""
        executed = self._executed()
        weight = self._record_weights()
        smem, gl = self._record_kinds == SMEM, self._record_kinds == GLOAD
        whole, part = store_sector_counts(self.trace, self._record_kinds, self.cfg.memory.l1.sector_bytes)
        return {"executed": executed, "smem_accesses": float(weight[smem].sum()),
                "smem_wavefronts": float((self.cols["smem_wavefronts"] * weight)[smem].sum()),
                "smem_conflicts": float((self.cols["smem_conflicts"] * weight)[smem].sum()),
                "reg_conflict_cycles": float((self.cols["reg_conflict_cycles"] * weight).sum()),
                "reuse_hits": float((self.cols["reuse_hits"] * weight).sum()), "global_loads": float(weight[gl].sum()),
                "store_sectors": whole, "partial_store_sectors": part}

    def _result(self, sms, memory, occ, n_ctas, workload, size, totals: dict | None = None) -> SimResult:
        cfg, prog = self.cfg, self.program
        cycles = max((sm.finish for sm in sms), default=0.0) + cfg.kernel_overhead_cycles
        table = S.StallTable(len(prog))
        for sm in sms:
            table.add(sm.stalls)
        issued = sum(sm.issued for sm in sms)
        tot = self.trace_totals() if totals is None else totals
        executed = tot["executed"]
        per_pc = [PcStalls(address=prog.instructions[pc].address, text=prog.instructions[pc].text,
                           executed=int(executed[pc]), stalls={k: round(v, 1) for k, v in reasons.items()})
                  for pc, reasons in sorted(table.per_pc().items())]
        pipes: dict[str, float] = {}
        n_sp = max(1, len(sms) * cfg.sm.sub_partitions)
        for sm in sms:
            for sp in sm.sps:
                for p, busy in sp.pipe_busy.items():
                    pipes[p] = pipes.get(p, 0.0) + busy
        wavefronts = round(tot["smem_wavefronts"])
        conflicts = round(tot["smem_conflicts"])
        l1h = sum(sm.l1.cache.hits for sm in sms)
        l1m = sum(sm.l1.cache.misses for sm in sms)
        return SimResult(
            workload=workload, size=size, card=cfg.card, arch=cfg.arch, kernel=prog.kernel, cycles=cycles,
            time_s=event_time_s(cycles, cfg.clock_mhz, cfg), clock_mhz=cfg.clock_mhz,
            warp_instructions=issued if self.mode == "detailed" else round(issued * self._grid_ctas() / max(1, n_ctas)),
            ipc=issued / cycles / max(1, len(sms)) if cycles else 0.0, sms_used=len(sms), ctas=n_ctas,
            waves=n_ctas / (occ.ctas_per_sm * cfg.sm_count),
            occupancy={"ctas_per_sm": occ.ctas_per_sm, "warps_per_sm": occ.warps_per_sm, "limiter": occ.limiter},
            stalls={k: round(v, 1) for k, v in table.totals().items()}, stalls_per_pc=per_pc,
            pipe_utilisation={p: round(b / (cycles * n_sp), 4) if cycles else 0.0 for p, b in sorted(pipes.items())},
            shared={"accesses": round(tot["smem_accesses"]), "wavefronts": wavefronts, "bank_conflicts": conflicts,
                    "simulated_wavefronts": int(sum(sm.smem_wavefronts for sm in sms))},
            registers={"bank_conflict_cycles": round(tot["reg_conflict_cycles"]), "reuse_hits": round(tot["reuse_hits"])},
            memory={"global_load_instructions": round(tot["global_loads"]), "l1_hits": l1h, "l1_misses": l1m,
                    **memory.counters()},
            mode=self.mode,
            timeline=[e for sm in sms for e in (sm.timeline or [])] if self.window is not None else None,
            notes=([] if self.control_mode else ["dependencies from a register scoreboard (control codes not used)"])
            + partial_store_notes(tot, cfg))


    def _result_sampled(self, sms, memory, occ, workload, size, active, ends, n_traced, repeat_cycles,
                        last) -> SimResult:
        """The simulated SMs' CTAs scaled to the kernel: their remaining CTAs at the steady
        throughput, the other SMs alike (counters scaled from the traced CTAs to the grid). The
        kernel's cycles are those of the SM that ends last (`last`)."""
        cfg = self.cfg
        cycles = max(ends) + cfg.kernel_overhead_cycles
        base = self._result(sms, memory, occ, n_traced, workload, size)
        # warp-cycles of the whole grid, as detailed mode sums them over SMs: each simulated SM's
        # untraced CTAs behave like its traced ones (its time scaled to its end), and the grid's
        # CTAs like the simulated SMs' (scaled by CTA counts: SMs may run one CTA more than others)
        table = S.StallTable(len(self.program))
        represented = sum(self._ctas_of_sm(sm.index) for sm in sms)
        for sm, end in zip(sms, ends):
            sim_cycles = sm.finish + sm.sampler.extrapolated_cycles
            factor = (end / sim_cycles if sim_cycles else 1.0) * self._grid_ctas() / represented
            for row, own in zip(table.rows, sm.stalls.rows):
                for i, v in enumerate(own):
                    row[i] += v * factor
        scale = self._grid_ctas() / max(1, n_traced)  # counters of the traced CTAs -> the grid
        executed = self._executed()
        per_pc = [PcStalls(address=self.program.instructions[pc].address, text=self.program.instructions[pc].text,
                           executed=int(round(executed[pc] * scale)), stalls={k: round(v, 1) for k, v in r.items()})
                  for pc, r in sorted(table.per_pc().items())]
        issued = sum(sm.issued for sm in sms)
        smp = sms[last].sampler
        sim_cycles = sms[last].finish + smp.extrapolated_cycles
        sampling = {"sms_simulated": len(sms), "busy_sms": active,
                    "ctas_per_sm": self._ctas_of_sm(0), "ctas_simulated": n_traced,
                    "ctas_in_grid": self._grid_ctas(),
                    "extrapolated_loop_cycles": round(smp.extrapolated_cycles, 1),
                    "extrapolated_cta_cycles": round(repeat_cycles, 1),
                    "extrapolated_fraction": round((smp.extrapolated_cycles + repeat_cycles) / cycles, 4) if cycles else 0.0,
                    "fast_forwards": sum(sm.sampler.fast_forwards for sm in sms),
                    "synthesized_iterations": sum(sm.sampler.synthesized for sm in sms),
                    "trace_left_out_instructions": 0 if self.trace.elision is None else int(self.trace.elision.pc_counts.sum()),
                    "error_estimate": round(smp.error_estimate(sim_cycles), 4),
                    "what": "SMs 0 .. sms_simulated - 1 simulated with their CTAs (all up to three waves, else two; "
                            "refilled as they finish), sharing sms_simulated / busy SMs of L2/DRAM bandwidth; "
                            "main-loop iterations fast-forwarded once the iteration rate converged (each CTA at "
                            "its own rate, never across a loop exit); further CTAs at each SM's steady CTA "
                            "throughput; the kernel ends with the last of them; the other SMs alike. The trace "
                            "leaves out the main-loop iterations that are fast-forwarded over (any that are "
                            "simulated are made up from the kept ones; their shared/register counters are "
                            "estimated per instruction from the recorded iterations)"}
        return base.model_copy(update={
            "cycles": cycles, "time_s": event_time_s(cycles, cfg.clock_mhz, cfg),
            "warp_instructions": round(issued * scale),
            "ipc": issued * scale / active / cycles if cycles else 0.0,
            "sms_used": active, "ctas": self._grid_ctas(),
            "waves": self._grid_ctas() / (occ.ctas_per_sm * cfg.sm_count),
            "stalls": {k: round(v, 1) for k, v in table.totals().items()}, "stalls_per_pc": per_pc,
            "shared": {k: (round(v * scale) if isinstance(v, int) else v) for k, v in base.shared.items()},
            "registers": {k: round(v * scale) for k, v in base.registers.items()},
            "memory": self._memory_scaled(base.memory, sms, scale, len(memory.stored) * memory.sector_bytes,
                                          memory.dirty_capacity * memory.sector_bytes),
            "sampling": sampling, "mode": "sampled"})


def mem_exec_masks(trace) -> np.ndarray:
    """Per address row of `trace`: the lanes that executed the access (its record's exec mask)."""
    rec = trace.records
    out = np.zeros(len(trace.addresses), dtype=np.uint32)
    mem = rec["mem_row"] >= 0
    out[rec["mem_row"][mem]] = rec["exec_mask"][mem]
    return out


def exec_lanes(mem_exec: np.ndarray, rows) -> np.ndarray:
    """Which of the 32 lanes executed address row(s) `rows` (bool, `rows`' shape x 32)."""
    return lane_bits(mem_exec[rows])


def global_sector_rows(trace, record_kinds, mem_exec, shift: int, chunk: int = 65536):
    """(starts, sectors): the distinct sectors (address >> shift, ascending) that the executing lanes
    (`mem_exec`, per address row) of each global access row touch are sectors[starts[r]:starts[r + 1]]
    (no sectors for other rows)."""
    rec = trace.records
    rows = np.sort(rec["mem_row"][((record_kinds == GLOAD) | (record_kinds == GSTORE)) & (rec["mem_row"] >= 0)])
    counts = np.zeros(len(trace.addresses), dtype=np.int64)
    parts = []
    never = np.uint64(np.iinfo(np.uint64).max)  # marks lanes that did not execute
    for i in range(0, len(rows), chunk):
        r = rows[i:i + chunk]
        sec = np.where(exec_lanes(mem_exec, r), trace.addresses[r] >> np.uint64(shift), never)
        sec.sort(axis=1)
        first = np.ones(sec.shape, dtype=bool)
        first[:, 1:] = sec[:, 1:] != sec[:, :-1]
        first &= sec != never
        counts[r] = first.sum(axis=1)
        parts.append(sec[first])  # row-major: row by row, each ascending
    sectors = np.concatenate(parts).view(np.int64) if parts else np.zeros(0, dtype=np.int64)  # (addresses < 2^63)
    return np.r_[0, np.cumsum(counts)].astype(np.int64), sectors  # rows are ascending, so are their runs


def sector_deltas(starts, sectors) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ascending sectors (row r: sectors[starts[r]:starts[r + 1]]) as the compiled engine
    keeps them: each row's first sector (int64, 0 for a row without sectors) and each sector's
    distance from it (int32: half the memory of 64-bit sectors; memory-bound kernels touch 32 per
    access). A row that spans 2^31 sectors or more (64 GiB of addresses: generic addresses in two
    spaces) does not fit: GpusimError."""
    starts = np.asarray(starts, dtype=np.int64)
    sectors = np.asarray(sectors, dtype=np.int64)
    counts = np.diff(starts)
    bases = np.zeros(len(counts), dtype=np.int64)
    bases[counts > 0] = sectors[starts[:-1][counts > 0]]
    deltas = sectors - np.repeat(bases, counts)
    if len(deltas) and int(deltas.max()) >= 1 << 31:
        r = int(np.searchsorted(starts, int(np.argmax(deltas)), side="right")) - 1
        raise GpusimError(f"a global access (address row {r}) spans {int(deltas.max()):,} sectors: the compiled "
                          "engine keeps a row's sectors within 2^31 of its first")
    return bases, deltas.astype(np.int32)


def store_sector_counts(trace, record_kinds, sector_bytes: int = 32, chunk: int = 65536) -> tuple[int, int]:
    """(pairs, partial): the (warp, sector) pairs the global stores of `trace` write, and how many of
    them the warp's own stores leave incomplete (fewer than `sector_bytes` bytes: the rest of the
    sector comes from other warps, as in a naive transpose). A sector a warp fills with two stores of
    16 bytes a lane is whole. Records are taken `chunk` at a time, a warp split between two chunks
    counted in each."""
    rec = trace.records
    st = np.flatnonzero((record_kinds == GSTORE) & (rec["mem_row"] >= 0))
    if not len(st):
        return 0, 0
    warp_of = np.searchsorted(np.asarray(trace.warp_starts, dtype=np.int64), st, side="right") - 1
    shift = np.uint64(int(np.log2(sector_bytes)))
    pairs = partial = 0
    for i in range(0, len(st), chunk):
        r = rec["mem_row"][st[i:i + chunk]]
        lanes = lane_bits(rec["exec_mask"][st[i:i + chunk]])
        sec = (trace.addresses[r] >> shift)[lanes].view(np.int64)
        if not len(sec):  # stores whose guard held in no lane (`@!P0 STG` that never writes)
            continue
        warp = np.broadcast_to(warp_of[i:i + chunk, None], lanes.shape)[lanes]
        width = np.broadcast_to(trace.access_bytes[r].astype(np.int64)[:, None], lanes.shape)[lanes]
        order = np.lexsort((sec, warp))
        sec, warp, width = sec[order], warp[order], width[order]
        first = np.flatnonzero(np.r_[True, (sec[1:] != sec[:-1]) | (warp[1:] != warp[:-1])])
        written = np.add.reduceat(width, first)
        pairs += len(first)
        partial += int(np.count_nonzero(written < sector_bytes))
    return pairs, partial


# Stores that write sectors in pieces (4 bytes a lane into 32 lines: a naive transpose) cost the H100 a
# DRAM read and a DRAM write for 3-4% of those sectors when the lines a warp writes are next to each
# other, 10-27% when they lie 3 or more lines apart (8 CTAs per SM; ~0 at 1-2 CTAs per SM):
# validation/h100/micro/dram_pstride_h100.json; up to a third when more lines are held partly written
# at once (dram_popen_h100.json). The model writes whole sectors; the note says so.
PARTIAL_STORE_NOTE_FRACTION = 0.25


def partial_store_notes(tot: dict, cfg) -> list[str]:
    """A note when at least `PARTIAL_STORE_NOTE_FRACTION` of the (warp, sector) pairs global stores write
    are sectors the warp writes only in part, on a card whose DRAM traffic for them was measured (sm_90)."""
    whole, part = tot.get("store_sectors", 0), tot.get("partial_store_sectors", 0)
    if cfg.arch != "sm_90" or not whole or part < PARTIAL_STORE_NOTE_FRACTION * whole:
        return []
    return [f"{part / whole:.0%} of the sectors global stores write are written in part by each warp (the rest by others); the "
            "H100 adds a DRAM read and a DRAM write for 3-34% of such sectors (more the more partly written lines "
            "the chip holds at once, and a warp's lines 3 or more lines apart; validation/h100/micro/dram_pstride_h100.json, "
            "dram_popen_h100.json), which gpusim does not "
            "model: its DRAM bytes are low by up to that share of these sectors, and its time where DRAM limits the kernel"]


def simulate(program, trace, cfg, workload: str | None = None, size: int | None = None,
             honour_control_codes: bool | None = None, window=None, mode: str = "detailed",
             footprint_bytes: int | None = None, grid=None, buffers: tuple[int, int] | None = None) -> SimResult:
    """Time `trace` of `program` on `cfg`. `window` = (first cycle, last cycle, CTA ids or None)
    records a timeline of issue and stall slices for those CTAs and cycles (for `gpusim viz`)."""
    return GPU(program, trace, cfg, honour_control_codes, window, mode, footprint_bytes, grid, buffers).run(workload, size)
