"""Detailed mode on the compiled engine: the state arrays built from a `GPU`, the event order of
`GPU._simulate` (simpy's), and results in the shape `GPU._result` reads.

`GPU._simulate` runs one simpy process per SM; an SM runs ahead by `SM.QUANTUM` cycles and then
yields, and simpy resumes the processes in order of (time, priority, scheduling order). The
compiled loop (`simulate`) keeps the same order with a heap of (time, priority, sequence, SM), so
that the SMs meet L2, DRAM and the grid's CTA queue in the same order as in the object model.
"""

from __future__ import annotations

import heapq
from collections import namedtuple
from types import SimpleNamespace

import numba
import numpy as np
from numba import njit, types
from numba.experimental import structref
from numba.extending import intrinsic

from gpusim.errors import GpusimError
from gpusim.timing import stalls as S
from gpusim.timing.compiled import loops as P
from gpusim.timing.compiled import lru as L
from gpusim.timing.compiled import sm as C
from gpusim.timing.mem import L1, MemorySystem
from gpusim.timing.gpu import sector_deltas
from gpusim.timing.mem.l2 import memory_counters
from gpusim.timing.static import queue_stores
from gpusim.timing.sm import SM

SB_CAPACITY = 32  # pending releases kept per scoreboard (see sm.sb_push)
MISS_CAPACITY = 64  # outstanding L1 misses kept per warp (the per-warp byte limit keeps them far fewer)
BOOK_CAPACITY = 4096  # booked intervals kept per SM's data stage (those not over yet: a few per queued access)
DEPENDENCY_IDS = 384  # register scoreboard ids: R 0-255, P 256+, UR 300+, UP 370+ (static._ids)

CONFIG = np.dtype([("control_mode", "?"), ("dual", "i8"), ("policy", "i8"), ("two_level_n", "i8"),
                   ("smem_latency", "f8"), ("mio_read", "f8"), ("lsu_read", "f8"), ("const_latency", "f8"),
                   ("branch_latency", "f8"), ("watchdog", "f8"), ("quantum", "f8"), ("n_sp", "i8"),
                   ("warps_per_cta", "i8"), ("ctas_per_sm", "i8"), ("cta_launch_cycles", "f8"),
                   # `sm.shared_access_queue` (`SM._queue_full`): places in all, a shared and a global access's share
                   ("shared_queue", "?"), ("queue_places", "i8"), ("share_smem", "i8"), ("share_global", "i8"),
                   ("unified_stage", "?"), ("booked_stage", "?"), ("read_ports", "?"), ("read_at_issue", "?"),
                   # sampled mode (compiled/sampled.py): the SMs' own CTA queues, residences, stored rows
                   # and made-up loop iterations; the arrays' room one cycle step may need for those
                   ("sampled", "?"), ("sector_shift", "i8"), ("loop_branch", "i8"), ("room_records", "i8"),
                   ("room_rows", "i8"), ("room_sectors", "i8"), ("room_strides", "i8")])
MEMORY = np.dtype([("sector_bytes", "i8"), ("l2_latency", "f8"), ("l2_bpc", "f8"), ("write_cost", "f8"),
                   ("line_sectors", "f8"), ("sectors_per_line", "i8"), ("fetch_sectors", "i8"), ("dram_bpc", "f8"), ("dram_latency", "f8"),
                   ("l1_latency", "f8"), ("miss_limit", "i8"), ("reach", "i8"),
                   ("l2q_free", "f8"), ("dram_free", "f8"), ("l2_queue_bytes", "f8"), ("l2_bytes", "i8"),
                   ("dram_read", "i8"), ("dram_write", "i8"),
                   # sampled mode: the share of L2 misses that move DRAM bytes (-1: all) and its credit
                   ("dram_fraction", "f8"), ("dram_credit", "f8"),
                   # DRAM's latency under load (`Dram.wait`): its parameters, the window and its bytes booked
                   ("dram_wait_c", "f8"), ("dram_window", "f8"), ("dram_rho_max", "f8"), ("dram_bucket", "f8"),
                   ("dram_cur", "f8"), ("dram_prev", "f8"),
                   # the same for write-backs (`Dram.wait`'s write term)
                   ("dram_wwait_c", "f8"), ("dram_cur_w", "f8"), ("dram_prev_w", "f8"),
                   # the write term spread over lines (`memory.dram.write_wait_spread`, mem/dram.py `spread`)
                   ("dram_wspread", "f8"),
                   # the read latency's spread over blocks (`memory.dram.read_spread_cycles`, mem/dram.py `jitter`)
                   ("dram_rspread", "f8"), ("dram_rshift", "i8"),
                   # reads and writes mixing (`memory.dram.turnaround`): its factor and the window's read bytes;
                   # stores waiting for the write-backs they cause (`memory.dram.write_backpressure`)
                   ("dram_turn", "f8"), ("dram_cur_r", "f8"), ("dram_prev_r", "f8"), ("backpressure", "?"),
                   ("dram_drained", "f8"), ("dram_busy", "f8")])  # (`Dram.busy_bytes`)
WARP = np.dtype([("gid", "i8"), ("cta", "i8"), ("sp", "i8"), ("pos", "i8"), ("end", "i8"), ("more", "?"),
                 ("ready_at", "f8"), ("reason", "i8"), ("since", "f8"), ("done", "?"), ("at_barrier", "?"),
                 ("age", "i8"),
                 # sampled mode (compiled/loops.py): the sampler's position minus `pos`; where the warp
                 # reaches left-out loop iterations, where a made-up one ends and where it goes on
                 ("shift", "i8"), ("gap_at", "i8"), ("jump_at", "i8"), ("jump_to", "i8"),
                 ("active", "?"),  # two_level_sticky: in its sub-partition's active set
                 ("stores_done", "f8"),  # the cycle its global stores so far have left the SM (`SM._exit`'s drain)
                 ("copies_done", "f8"),  # the cycle its cp.async copies since its last LDGDEPBAR are done
                 ("sreg_due", "f8")])  # an S2R waiting for the MIO queues (`SM._sreg_wait`): the cycle it may issue, -1: none
CTA = np.dtype([("cid", "i8"), ("live", "i8"), ("arrived", "i8"), ("launched", "f8"), ("used", "?"),
                ("drained", "f8")])  # the cycle its exited warps' stores have left the SM
SUB_PARTITION = np.dtype([("dispatch_free", "f8"), ("last", "i8"), ("wake", "f8"), ("dirty", "?"), ("nw", "i8"),
                          # `sm.shared_access_queue`: its ring of places (slot_buf: release, share), shares held
                          ("slot_head", "i8"), ("slot_n", "i8"), ("held", "i8")])
SLOTS = 128  # places a sub-partition's ring holds at most (the queues hold 36 + 30 at most)
SM_STATE = np.dtype([("now", "f8"), ("last_progress", "f8"), ("issued", "i8"), ("changed", "?"), ("finish", "f8"),
                     ("last_done", "f8"), ("smem_wavefronts", "i8"), ("age", "i8"), ("n_warps", "i8"),
                     ("started", "?"), ("ran", "?"), ("clock", "f8"), ("starved", "?"),
                     # sampled mode: the sampler's next look (inf: none), the cycles it fast-forwarded,
                     # the step's earliest wake kept over a look, whether the SM stopped for one; its own
                     # CTA queue (cta_queue[qnext:qend]), finished CTAs (`res`), iterations made up
                     ("next_check", "f8"), ("extrapolated", "f8"), ("best", "f8"), ("checking", "?"),
                     ("qnext", "i8"), ("qend", "i8"), ("n_res", "i8"), ("synthesized", "i8")])
# sampled mode, per warp id: `LoopState` (compiled/loops.py)
LOOP = np.dtype([("consumed", "i8"), ("cinstr", "i8"), ("cut", "i8"), ("g_lo", "i8"), ("g_hi", "i8"), ("length", "i8"),
                 ("head", "i8"), ("at0", "i8"), ("nsyn", "i8"), ("boff", "i8"), ("bn", "i8")])
# a sub-partition's queue (`AccessQueue`): its ring of leaving cycles is `q_buf`, its stores' `qs_buf`
# (sdepth: store slots, 0 for no limit; shead, sn: that ring's head and length)
QUEUE = np.dtype([("depth", "i8"), ("rate", "f8"), ("free", "f8"), ("head", "i8"), ("n", "i8"),
                  ("sdepth", "i8"), ("shead", "i8"), ("sn", "i8")])
STAGE = np.dtype([("rate", "f8"), ("free", "f8"),
                  # the SM's unified data stage (`DataStage`): its rate and the cycle it was last brought
                  # up to in the MIO row, each kind's work and last access's units in its own row
                  ("data_rate", "f8"), ("work", "f8"), ("size", "f8"), ("at", "f8")])

State = namedtuple("State", [
    "cfg", "mem", "w", "cta", "sp", "sm", "q", "q_buf", "qs_buf", "slot_buf", "stage",
    # the booked data stage (`DataStage.book`): per SM its booked intervals (start, end) in order, and how many
    "book", "book_n",
    # the trace: per record (pcs, mem_rows, regc, wavef, glines), per warp (where its loaded records begin
    # and end, whether more will come: streaming), per global access row its sectors (sector_base[row] +
    # sector_list[sector_start[row]:sector_start[row + 1]]: 32-bit distances from the row's first, gpu.sector_deltas)
    "pcs", "mem_rows", "regc", "wavef", "glines", "warp_begin", "warp_end", "warp_more", "sector_start",
    "sector_list", "sector_base",
    # per static instruction (static.IssueFacts)
    "kind", "pipe", "occupancy", "latency", "stall", "wbar", "rbar", "writes", "l1_cached", "copy_role",
    "copy_mio", "warp_bytes", "smem_extra",
    "result_reason", "is_mem", "queue", "qstore", "busy_reason", "operand_wait", "wait_mask", "depbar_b", "depbar_k",
    "pairs", "second_ok", "deps_start", "deps_ids", "dsts_start", "dsts_ids",
    # per sub-partition, SM, warp slot
    "sp_pipes", "sp_busy", "sp_warps", "stalls", "sb_rel", "sb_long", "sb_n", "rr_t", "rr_r", "miss_t", "miss_b",
    "miss_n",
    # caches
    "l1_slots", "l1_links", "l1_keys", "l1_vals", "l1_meta", "l1_free", "l1_counts", "l2", "l2_counts", "dirty", "reach",
    # the grid's CTA queue (glob[0]: the next to hand out), the chip's CTA retirement (cycles per CTA,
    # the cycle it is free, the last CTA's retirement: `GPU.cta_retire`) and scratch space
    "cta_queue", "glob", "retire", "order_buf", "scratch_sectors", "scratch_pend", "scratch_fill", "heap_buf",
    # sampled mode: per warp id its loop (`LOOP`, back edges, strides per parity), stride entries, the
    # trace's addresses and exec masks per row, rows stores wrote, per SM its finished CTAs' residences
    "lp", "lp_backs", "lp_sv", "lp_soff", "lp_sn", "str_off", "str_row", "str_stride", "addr", "mem_exec",
    "row_stored", "res"])


def _ragged(lists):
    starts = np.zeros(len(lists) + 1, dtype=np.int64)
    starts[1:] = np.cumsum([len(x) for x in lists])
    ids = np.fromiter((i for x in lists for i in x), dtype=np.int64, count=int(starts[-1]))
    return starts, ids


def _lru_from(od, capacity: int):
    """An LRU holding the entries of OrderedDict `od` in its order (values: fill cycles or None)."""
    lru = L.new_lru(capacity)
    if od:
        _insert_all(lru, np.fromiter(od.keys(), dtype=np.int64, count=len(od)),
                    np.array([0.0 if v is None else v for v in od.values()], dtype=np.float64))
    return lru


@njit(cache=True)
def _insert_all(lru, keys, vals):
    for i in range(len(keys)):
        L.insert(lru, keys[i], vals[i])


MAX_SECTORS = 64  # scratch room for one access's sectors (one per lane: at most 32)


def trace_arrays(gpu) -> dict:
    """`gpu`'s whole trace as the engine's record arrays (see `State`): every warp's records loaded."""
    rec = gpu.trace.records
    if gpu._sector_start is None:
        gpu._global_sectors()
    starts = np.asarray(gpu._warp_start, dtype=np.int64)
    if starts[-1] >= 1 << 31:
        raise RuntimeError("compiled engine: a trace of more than 2^31 records (warp positions are 32-bit)")
    starts = starts.astype(np.int32)
    return dict(pcs=np.ascontiguousarray(rec["pc_index"], dtype=np.int32),
                mem_rows=np.ascontiguousarray(rec["mem_row"], dtype=np.int32),
                regc=np.ascontiguousarray(gpu.cols["reg_conflict_cycles"], dtype=np.int8),
                wavef=np.ascontiguousarray(gpu.cols["smem_wavefronts"], dtype=np.int16),
                glines=np.ascontiguousarray(gpu.cols["glines"], dtype=np.int8),
                warp_begin=starts[:-1].copy(), warp_end=starts[1:].copy(), warp_more=np.zeros(len(starts) - 1, dtype=np.bool_),
                sector_start=np.asarray(gpu._sector_start, dtype=np.int64),
                **dict(zip(("sector_base", "sector_list"), sector_deltas(gpu._sector_start, gpu._sector_list))))


def build(gpu, occ, ctas, arrays: dict, primed: int | None = None, sampled: dict | None = None) -> State:
    """The engine's state for running `ctas` of `gpu`'s trace on all its SMs, `occ.ctas_per_sm` at a
    time, from the record arrays `arrays` (`trace_arrays`, or a stream's first records: then the
    first `primed` CTAs of `ctas` have theirs). Sampled mode (`sampled`, from compiled/sampled.py):
    its SMs (`queues`: each one's own CTAs), `memory` (its `MemorySystem`, warm where it is), the
    per warp id loop arrays and room sizes of its made-up iterations (`loops`, `room`)."""
    cfg, facts, static = gpu.cfg, gpu.issue_facts, gpu.static
    n_sm = cfg.sm_count if sampled is None else len(sampled["queues"])
    n_sp = cfg.sm.sub_partitions
    sched = cfg.sm.scheduler
    room = (0, 0, 0, 0) if sampled is None else sampled["room"]
    c = np.zeros(1, dtype=CONFIG)
    c[0] = (gpu.control_mode, {"none": C.DUAL_NONE, "control_codes": C.DUAL_CONTROL, "kepler": C.DUAL_KEPLER}[sched.dual_issue],
            {"gto": C.GTO, "lrr": C.LRR, "two_level": C.TWO_LEVEL, "two_level_sticky": C.STICKY}[sched.policy], sched.two_level_active_warps,
            cfg.sm.shared_memory.latency_cycles, cfg.sm.mio_register_read_cycles, cfg.sm.lsu_register_read_cycles,
            cfg.memory.constant_latency_cycles, sched.branch_latency_cycles, cfg.watchdog_cycles, SM.QUANTUM, n_sp,
            gpu.warps_per_cta, occ.ctas_per_sm, cfg.sm.cta_launch_cycles, cfg.sm.shared_access_queue,
            cfg.sm.mio_queue_depth * cfg.sm.lsu_queue_depth, cfg.sm.lsu_queue_depth, cfg.sm.mio_queue_depth, cfg.memory.l1.unified_data_stage,
            cfg.memory.l1.data_stage == "booked", cfg.sm.register_file.read_ports is not None, cfg.sm.access_registers_read_at == "issue", sampled is not None, gpu._sector_shift, -1 if gpu.trace.elision is None else gpu.trace.elision.branch,
            *room)
    # the memory path's parameters, derived as the object model derives them (and a warm L2 as it fills it)
    if sampled is None:
        memory = MemorySystem(cfg, cfg.clock_mhz)
        gpu._warm(memory)
    else:
        memory = sampled["memory"]
    l1 = L1(cfg, memory)
    mem = np.zeros(1, dtype=MEMORY)
    mem[0] = (memory.sector_bytes, memory.l2_latency, memory.l2_queue.bytes_per_cycle, memory.write_cost,
              memory.line_sectors or 0.0, memory.sectors_per_line, memory.fetch_sectors, memory.dram.queue.bytes_per_cycle, memory.dram.latency,
              l1.latency, -1 if l1.miss_limit is None else l1.miss_limit, memory.reach_capacity,
              0, 0, 0, 0, 0, 0, -1.0 if memory.dram_fraction is None else memory.dram_fraction, 0.0,
              memory.dram.load_wait, memory.dram.window, memory.dram.rho_max, 0.0, 0.0, 0.0,
              memory.dram.write_wait, 0.0, 0.0, memory.dram.write_spread, memory.dram.read_spread,
              memory.dram.spread_shift, memory.dram.turnaround, 0.0, 0.0, memory.backpressure, 0.0, 0.0)
    # per static instruction
    ex = facts.execute
    col = lambda i, dt: np.array([e[i] for e in ex], dtype=dt)  # noqa: E731
    deps_start, deps_ids = _ragged(facts.deps)
    dsts_start, dsts_ids = _ragged([s.dsts for s in static])
    # queues: depth, rate (-1: none)
    n_sps = n_sm * n_sp
    q = np.zeros(n_sps * 2, dtype=QUEUE)
    for kind, depth, rate, sdepth in (
            (0, cfg.sm.mio_queue_depth, cfg.sm.mio_sub_partition_rate, cfg.sm.mio_store_queue_depth),
            (1, cfg.sm.lsu_queue_depth, cfg.sm.lsu_sub_partition_rate, cfg.sm.lsu_store_queue_depth)):
        q["depth"][kind::2] = depth
        q["rate"][kind::2] = -1.0 if rate is None else rate
        q["sdepth"][kind::2] = sdepth or 0
    stage = np.zeros(n_sm * 2, dtype=STAGE)
    stage["rate"][0::2] = cfg.sm.shared_memory.wavefronts_per_cycle
    stage["rate"][1::2] = cfg.memory.l1.lines_per_cycle
    stage["data_rate"][0::2] = cfg.memory.l1.lines_per_cycle
    slots = n_sm * occ.ctas_per_sm * gpu.warps_per_cta
    sp = np.zeros(n_sps, dtype=SUB_PARTITION)
    sp["last"] = -1
    n_pc, n_pipes = len(static), len(facts.pipe_names)
    l1_cap = l1.cache.capacity
    node = l1_cap + 2
    scoreboard_slots = 1 if gpu.control_mode else slots
    sm = np.zeros(n_sm, dtype=SM_STATE)
    sm["next_check"] = np.inf
    glob = np.array([0, len(ctas) if primed is None else primed, 0, -1, 0, 0, 0, 0, 0, 0], dtype=np.int64)
    if sampled is None:
        cta_queue = np.asarray(ctas, dtype=np.int64)
        loops = dict(lp=np.zeros(0, dtype=LOOP), lp_backs=np.zeros(0, dtype=np.int64),
                     lp_sv=np.zeros((0, 2), dtype=np.int64), lp_soff=np.zeros((0, 2), dtype=np.int64),
                     lp_sn=np.zeros((0, 2), dtype=np.int64), str_off=np.zeros(0, dtype=np.int64),
                     str_row=np.zeros(0, dtype=np.int64), str_stride=np.zeros(0, dtype=np.int64),
                     addr=np.zeros((0, 32), dtype=np.uint64), mem_exec=np.zeros(0, dtype=np.uint32),
                     row_stored=np.zeros(0, dtype=np.uint8))
        res = np.zeros((n_sm, 0, 2))
    else:
        queues = sampled["queues"]
        cta_queue = np.asarray([cid for own in queues for cid in own], dtype=np.int64)
        lengths = np.array([len(own) for own in queues], dtype=np.int64)
        sm["qnext"], sm["qend"] = np.cumsum(lengths) - lengths, np.cumsum(lengths)
        sm["next_check"] = sampled["next_check"]
        loops = sampled["loops"]
        glob[P.G_NREC], glob[P.G_NROWS], glob[P.G_NSEC], glob[P.G_NSTR] = sampled["used"]
        res = np.zeros((n_sm, max(1, int(lengths.max(initial=0))), 2))
    return _contiguous(State(
        cfg=c, mem=mem, w=np.zeros(slots, dtype=WARP), cta=np.zeros(n_sm * occ.ctas_per_sm, dtype=CTA), sp=sp,
        sm=sm, q=q, q_buf=np.zeros((n_sps * 2, max(cfg.sm.mio_queue_depth,
                                                                             cfg.sm.lsu_queue_depth) + 2)),
        qs_buf=np.zeros((n_sps * 2, max(cfg.sm.mio_store_queue_depth or 0, cfg.sm.lsu_store_queue_depth or 0) + 2)),
        slot_buf=np.zeros((n_sps, SLOTS, 2)),
        stage=stage, book=np.zeros((n_sm, BOOK_CAPACITY, 2)), book_n=np.zeros(n_sm, dtype=np.int64), **arrays,
        kind=col(0, np.int64), pipe=col(1, np.int64), occupancy=col(2, np.float64), latency=col(3, np.float64),
        stall=col(4, np.float64), wbar=np.array([-1 if e[5] is None else e[5] for e in ex], dtype=np.int64),
        rbar=np.array([-1 if e[6] is None else e[6] for e in ex], dtype=np.int64), writes=col(7, np.bool_),
        l1_cached=col(8, np.bool_),
        copy_role=np.array([s.copy_role for s in static], dtype=np.int64),
        copy_mio=np.array([s.copy_mio for s in static], dtype=np.float64),
        warp_bytes=np.array([s.warp_bytes for s in static], dtype=np.int64),
        smem_extra=np.array([s.smem_extra for s in static], dtype=np.float64),
        result_reason=col(10, np.int64), is_mem=col(11, np.bool_),
        queue=np.array([a[1] for a in facts.attempt], dtype=np.int64), qstore=np.array(queue_stores(static), dtype=np.bool_),
        busy_reason=np.array([a[2] for a in facts.attempt], dtype=np.int64),
        operand_wait=np.array(facts.operand_wait, dtype=np.bool_),
        wait_mask=np.array([s.wait_mask for s in static], dtype=np.int64),
        depbar_b=np.array([-1 if d is None else d[0] for d in facts.depbars], dtype=np.int64),
        depbar_k=np.array([0 if d is None else d[1] for d in facts.depbars], dtype=np.int64),
        pairs=np.array(facts.pairs, dtype=np.bool_), second_ok=np.array(facts.second_ok, dtype=np.bool_),
        deps_start=deps_start, deps_ids=deps_ids, dsts_start=dsts_start, dsts_ids=dsts_ids,
        sp_pipes=np.zeros((n_sps, n_pipes)), sp_busy=np.zeros((n_sps, n_pipes)),
        sp_warps=np.zeros((n_sps, occ.ctas_per_sm * gpu.warps_per_cta), dtype=np.int64),
        stalls=np.zeros((n_sm, len(S.REASONS), n_pc)),
        sb_rel=np.zeros((slots, 8, SB_CAPACITY)), sb_long=np.zeros((slots, 8, SB_CAPACITY), dtype=np.bool_),
        sb_n=np.zeros((slots, 8), dtype=np.int64),
        rr_t=np.full((scoreboard_slots, DEPENDENCY_IDS), -np.inf), rr_r=np.zeros((scoreboard_slots, DEPENDENCY_IDS),
                                                                                 dtype=np.int64),
        miss_t=np.zeros((slots, MISS_CAPACITY)), miss_b=np.zeros((slots, MISS_CAPACITY), dtype=np.int64),
        miss_n=np.zeros(slots, dtype=np.int64),
        l1_slots=np.zeros((n_sm, 1 << L.table_bits(l1_cap)), dtype=np.int32),  # (each SM's row: an LRU of lru.py)
        l1_links=np.zeros((n_sm, node, 2), dtype=np.int32), l1_keys=np.zeros((n_sm, node), dtype=np.int64),
        l1_vals=np.zeros((n_sm, node)),
        l1_meta=np.tile(np.array([0, l1_cap, 0, L.table_bits(l1_cap)], dtype=np.int64), (n_sm, 1)),
        l1_free=np.zeros((n_sm, node + 1), dtype=np.int32), l1_counts=np.zeros((n_sm, 2), dtype=np.int64),
        l2=_lru_from(memory.l2.sectors, memory.l2.capacity), l2_counts=np.zeros(3, dtype=np.int64),
        dirty=_lru_from(memory.dirty, memory.dirty_capacity),
        reach=_lru_from(memory.reach, max(1, memory.reach_capacity)),
        cta_queue=cta_queue, glob=glob, retire=np.array([gpu.retire_interval, 0.0, 0.0]),
        order_buf=np.zeros(occ.ctas_per_sm * gpu.warps_per_cta, dtype=np.int64),
        scratch_sectors=np.zeros(MAX_SECTORS, dtype=np.int64), scratch_pend=np.zeros(SB_CAPACITY),
        scratch_fill=np.zeros(4, dtype=np.int64), heap_buf=np.zeros((n_sm + 1, 4)), **loops, res=res))


def _contiguous(st: State) -> State:
    """Every array C-contiguous: the engine is compiled for one layout per field."""
    def c(v):
        return tuple(c(x) for x in v) if isinstance(v, tuple) else np.ascontiguousarray(v)
    return State(*(c(v) for v in st))


@intrinsic
def _borrowed(typingctx, arr):
    """`arr` without its reference count: the same data, shape and strides, no meminfo. numba counts
    references to the arrays a compiled function gets from Python with atomic operations, at every
    access through the state tuple, and its pruning pass does not remove them from a loop this
    branchy: they took half of the engine's time. The arrays stay alive in the Python `State`."""
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, sig, args):
        src = context.make_array(arr)(context, builder, value=args[0])
        dst = context.make_array(arr)(context, builder)
        context.populate_array(dst, data=src.data, shape=src.shape, strides=src.strides, itemsize=src.itemsize,
                               meminfo=None, parent=None)
        return dst._getvalue()

    return arr(arr), codegen


@structref.register
class StateType(types.StructRef):
    """The engine's state as one reference: every function of the engine takes it. (A tuple of
    arrays is passed by value, field by field: hundreds of arguments per call, most of the engine's
    time before this.)"""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(t)) for name, t in fields)


STATE_TYPE = None  # StateType of `State`'s field types: set by `run` before the engine compiles


def _state_type(owned: State) -> StateType:
    return StateType(list(zip(State._fields, numba.typeof(owned).types)))


@njit(cache=True)
def _as_state(owned):
    """The state as a `StateType` reference, every array `_borrowed` (the LRUs are tuples of arrays)."""
    st = structref.new(STATE_TYPE)
    st.cfg = _borrowed(owned.cfg)
    st.mem = _borrowed(owned.mem)
    st.w = _borrowed(owned.w)
    st.cta = _borrowed(owned.cta)
    st.sp = _borrowed(owned.sp)
    st.sm = _borrowed(owned.sm)
    st.q = _borrowed(owned.q)
    st.q_buf = _borrowed(owned.q_buf)
    st.qs_buf = _borrowed(owned.qs_buf)
    st.slot_buf = _borrowed(owned.slot_buf)
    st.stage = _borrowed(owned.stage)
    st.book = _borrowed(owned.book)
    st.book_n = _borrowed(owned.book_n)
    st.pcs = _borrowed(owned.pcs)
    st.mem_rows = _borrowed(owned.mem_rows)
    st.regc = _borrowed(owned.regc)
    st.wavef = _borrowed(owned.wavef)
    st.glines = _borrowed(owned.glines)
    st.warp_begin = _borrowed(owned.warp_begin)
    st.warp_end = _borrowed(owned.warp_end)
    st.warp_more = _borrowed(owned.warp_more)
    st.sector_start = _borrowed(owned.sector_start)
    st.sector_list = _borrowed(owned.sector_list)
    st.sector_base = _borrowed(owned.sector_base)
    st.kind = _borrowed(owned.kind)
    st.pipe = _borrowed(owned.pipe)
    st.occupancy = _borrowed(owned.occupancy)
    st.latency = _borrowed(owned.latency)
    st.stall = _borrowed(owned.stall)
    st.wbar = _borrowed(owned.wbar)
    st.rbar = _borrowed(owned.rbar)
    st.writes = _borrowed(owned.writes)
    st.l1_cached = _borrowed(owned.l1_cached)
    st.copy_role = _borrowed(owned.copy_role)
    st.copy_mio = _borrowed(owned.copy_mio)
    st.warp_bytes = _borrowed(owned.warp_bytes)
    st.smem_extra = _borrowed(owned.smem_extra)
    st.result_reason = _borrowed(owned.result_reason)
    st.is_mem = _borrowed(owned.is_mem)
    st.queue = _borrowed(owned.queue)
    st.qstore = _borrowed(owned.qstore)
    st.busy_reason = _borrowed(owned.busy_reason)
    st.operand_wait = _borrowed(owned.operand_wait)
    st.wait_mask = _borrowed(owned.wait_mask)
    st.depbar_b = _borrowed(owned.depbar_b)
    st.depbar_k = _borrowed(owned.depbar_k)
    st.pairs = _borrowed(owned.pairs)
    st.second_ok = _borrowed(owned.second_ok)
    st.deps_start = _borrowed(owned.deps_start)
    st.deps_ids = _borrowed(owned.deps_ids)
    st.dsts_start = _borrowed(owned.dsts_start)
    st.dsts_ids = _borrowed(owned.dsts_ids)
    st.sp_pipes = _borrowed(owned.sp_pipes)
    st.sp_busy = _borrowed(owned.sp_busy)
    st.sp_warps = _borrowed(owned.sp_warps)
    st.stalls = _borrowed(owned.stalls)
    st.sb_rel = _borrowed(owned.sb_rel)
    st.sb_long = _borrowed(owned.sb_long)
    st.sb_n = _borrowed(owned.sb_n)
    st.rr_t = _borrowed(owned.rr_t)
    st.rr_r = _borrowed(owned.rr_r)
    st.miss_t = _borrowed(owned.miss_t)
    st.miss_b = _borrowed(owned.miss_b)
    st.miss_n = _borrowed(owned.miss_n)
    st.l1_slots = _borrowed(owned.l1_slots)
    st.l1_links = _borrowed(owned.l1_links)
    st.l1_keys = _borrowed(owned.l1_keys)
    st.l1_vals = _borrowed(owned.l1_vals)
    st.l1_meta = _borrowed(owned.l1_meta)
    st.l1_free = _borrowed(owned.l1_free)
    st.l1_counts = _borrowed(owned.l1_counts)
    st.l2 = (_borrowed(owned.l2[0]), _borrowed(owned.l2[1]), _borrowed(owned.l2[2]), _borrowed(owned.l2[3]), _borrowed(owned.l2[4]), _borrowed(owned.l2[5]))
    st.l2_counts = _borrowed(owned.l2_counts)
    st.dirty = (_borrowed(owned.dirty[0]), _borrowed(owned.dirty[1]), _borrowed(owned.dirty[2]), _borrowed(owned.dirty[3]), _borrowed(owned.dirty[4]), _borrowed(owned.dirty[5]))
    st.reach = (_borrowed(owned.reach[0]), _borrowed(owned.reach[1]), _borrowed(owned.reach[2]), _borrowed(owned.reach[3]), _borrowed(owned.reach[4]), _borrowed(owned.reach[5]))
    st.cta_queue = _borrowed(owned.cta_queue)
    st.glob = _borrowed(owned.glob)
    st.retire = _borrowed(owned.retire)
    st.order_buf = _borrowed(owned.order_buf)
    st.scratch_sectors = _borrowed(owned.scratch_sectors)
    st.scratch_pend = _borrowed(owned.scratch_pend)
    st.scratch_fill = _borrowed(owned.scratch_fill)
    st.heap_buf = _borrowed(owned.heap_buf)
    st.lp = _borrowed(owned.lp)
    st.lp_backs = _borrowed(owned.lp_backs)
    st.lp_sv = _borrowed(owned.lp_sv)
    st.lp_soff = _borrowed(owned.lp_soff)
    st.lp_sn = _borrowed(owned.lp_sn)
    st.str_off = _borrowed(owned.str_off)
    st.str_row = _borrowed(owned.str_row)
    st.str_stride = _borrowed(owned.str_stride)
    st.addr = _borrowed(owned.addr)
    st.mem_exec = _borrowed(owned.mem_exec)
    st.row_stored = _borrowed(owned.row_stored)
    st.res = _borrowed(owned.res)
    return st


@njit(cache=True)
def simulate(owned):
    """`GPU._simulate`: fill the SMs round robin, `ctas_per_sm` rounds, then run the SMs that got
    work in simpy's order until all are done. (status, SM): C.DONE, the SM that stopped (WATCHDOG,
    DEADLOCK), or C.NEED_TRACE: the run stopped for more records and goes on where it stopped when
    called again with them (its event heap is kept in `heap_buf`, in the order simpy pops events);
    sampled mode stops alike for the sampler's look at an SM (C.CHECK) and for room (C.NEED_ROOM)."""
    st = _as_state(owned)
    c = st.cfg[0]
    g = st.glob
    n_sm = len(st.sm)
    heap = [(0.0, 0, 0, 0)]  # (time, priority: 0 a process's start, 1 a timeout; order scheduled, SM)
    heap.pop()
    if not g[C.G_STARTED]:
        g[C.G_STARTED] = 1
        for _ in range(c.ctas_per_sm):
            for m in range(n_sm):
                C.launch_next(st, m, 0.0)
        for m in range(n_sm):
            if st.sm[m].n_warps > 0 or st.sm[m].issued > 0:
                st.sm[m].ran = True
                heap.append((0.0, 0, g[C.G_SEQ], m))
                g[C.G_SEQ] += 1
    else:
        for i in range(g[C.G_HEAP_N]):
            e = st.heap_buf[i]
            heap.append((e[0], np.int64(e[1]), np.int64(e[2]), np.int64(e[3])))
        heapq.heapify(heap)  # (the entries are distinct: any heap of them pops in the same order)
    m = g[C.G_RESUME]
    t = 0.0
    resume = m >= 0
    while resume or len(heap) > 0:
        if not resume:
            t, _, _, m = heapq.heappop(heap)
        status = C.run(st, m, t, resume)
        resume = False
        if status == C.YIELD:
            heapq.heappush(heap, (st.sm[m].now, 1, g[C.G_SEQ], m))
            g[C.G_SEQ] += 1
        elif status == C.NEED_TRACE or status == C.CHECK or status == C.NEED_ROOM:
            g[C.G_RESUME] = m
            g[C.G_HEAP_N] = len(heap)
            for i in range(len(heap)):
                e = heap[i]
                st.heap_buf[i, 0], st.heap_buf[i, 1], st.heap_buf[i, 2], st.heap_buf[i, 3] = e[0], e[1], e[2], e[3]
            return status, m
        elif status != C.DONE:
            return status, m
    g[C.G_RESUME] = -1
    return C.DONE, -1


@njit(cache=True)
def sampler_positions(owned, m, out):
    """Sampled mode, for `Sampler.positions`: SM `m`'s resident warps in launch order (`SM.warps`),
    into the rows of `out` (slot, warp id, CTA id, completed iterations, total iterations; float:
    progress, `out[:, 5]`); how many."""
    st = _as_state(owned)
    n_sp = st.cfg[0].n_sp
    n = 0
    for sp in range(m * n_sp, (m + 1) * n_sp):
        for i in range(st.sp[sp].nw):
            w = st.sp_warps[sp, i]
            j = n  # insertion by age
            while j > 0 and st.w[np.int64(out[j - 1, 0])].age > st.w[w].age:
                out[j] = out[j - 1]
                j -= 1
            out[j, 0] = w
            n += 1
    for j in range(n):
        wr = st.w[np.int64(out[j, 0])]
        v = wr.pos + wr.shift
        out[j, 1] = wr.gid
        out[j, 2] = st.cta[wr.cta].cid
        out[j, 3] = P.iterations(st, wr.gid, v)
        out[j, 4] = P.total(st, wr.gid)
        out[j, 5] = P.progress(st, wr.gid, v)
    return n


@njit(cache=True)
def sampler_moves(owned, m, slots, done, moves):
    """Sampled mode, `Sampler.move_all`: move each warp slot `slots[j]` (`done[j]` iterations done) on
    by `moves[j]` iterations, its L1 rewarmed (`Sampler.rewarm_l1`); the instructions passed over."""
    st = _as_state(owned)
    skipped = 0
    for j in range(len(slots)):
        k, offset = P.move(st, m, slots[j], done[j], moves[j])
        P.rewarm_l1(st, m, slots[j], offset)
        skipped += k
    return skipped


def run(gpu, occ, ctas):
    """Simulate `ctas` in detailed mode on the compiled engine: (SMs that ran, in the shape
    `GPU._result` reads; the memory system's counters)."""
    st = build(gpu, occ, ctas, trace_arrays(gpu))
    status, m = _simulate(st)
    return results(gpu, st, status, m)


def _simulate(st: State):
    global STATE_TYPE
    if STATE_TYPE is None:
        STATE_TYPE = _state_type(st)
    return simulate(st)


def results(gpu, st: State, status: int, m: int):
    """(SMs that ran, in the shape `GPU._result` reads; the memory system's counters) of a finished
    run, or the error that stopped it."""
    used = np.flatnonzero(st.sm["ran"]).tolist()
    cfg = gpu.cfg
    if status == C.WATCHDOG:
        raise GpusimError(f"watchdog: SM {m} made no progress for {cfg.watchdog_cycles} cycles at cycle "
                          f"{st.sm[m]['now']:.0f} ({st.sm[m]['n_warps']} warps resident)")
    if status == C.DEADLOCK:
        raise GpusimError(f"deadlock: SM {m}: every resident warp waits at a barrier")
    names = gpu.issue_facts.pipe_names
    n_sp = cfg.sm.sub_partitions
    sms = []
    for m in used:
        row = st.sm[m]
        sps = [SimpleNamespace(pipe_busy={name: b for name, b in zip(names, st.sp_busy[m * n_sp + i].tolist()) if b})
               for i in range(n_sp)]
        cache = SimpleNamespace(hits=int(st.l1_counts[m, 0]), misses=int(st.l1_counts[m, 1]))
        sms.append(SimpleNamespace(index=m, finish=float(row["finish"]), issued=int(row["issued"]),
                                   stalls=SimpleNamespace(rows=st.stalls[m].tolist()), sps=sps,
                                   l1=SimpleNamespace(cache=cache), smem_wavefronts=int(row["smem_wavefronts"]),
                                   timeline=None))
    mem = st.mem[0]
    counters = memory_counters(int(st.l2_counts[0]), int(st.l2_counts[1]), int(mem["l2_bytes"]), int(mem["dram_read"]),
                               int(mem["dram_write"]), int(st.l2_counts[2]))
    return sms, SimpleNamespace(counters=lambda: counters)


def precompile() -> None:
    """Compile the engine now, or load it from numba's cache beside the sources: a fresh checkout's
    first detailed run pays the compilation otherwise (about 45 s on 2 busy cores; then about a
    second per process to load). Any detailed run compiles all of it: numba compiles by types, not
    by the paths a run takes."""
    from gpusim.timing.driver import run_workload

    run_workload("copy_float4", "h100", 64)
