"""The compiled engine (gpusim/timing/compiled) is the object model (sm.py, mem/) written again over
arrays: both must give the same results to the last bit. Each case runs one trace through both
engines and compares every field of the result (cycles, stalls per PC, pipes, memory counters).

The cases cover the paths of the model: Hopper with L1-cached loads and the per-warp miss limit,
stores through L2 with write-back, a warm L2, shared-memory queues and conflicts, Maxwell control
codes with dual issue, DEPBAR and the FP64 pipe, Kepler's register scoreboard and dual issue,
control codes ignored, the lrr and two_level policies, several CTA waves, and a tight L2 and
dirty limit (evictions and write-backs of dirty sectors), a short reach of dirty data, L2 misses
that bring a block of sectors from DRAM (`dram_fetch_bytes`), DRAM's read/write turnaround and stores
held back by their write-backs, and shared
and global accesses on one data stage (the H100's) or on stages of their own.
"""

from __future__ import annotations

import pytest

from gpusim.config import apply_overrides, load_gpu
from gpusim.emu.run import emulate
from gpusim.timing.driver import input_bytes
from gpusim.timing.gpu import GPU
from gpusim.trace import DynamicTrace
from gpusim.workloads import find_workload

# id: (workload, gpu, size, overrides, GPU() keywords)
CASES = {
    "hopper-sgemm": ("sgemm_maxas_64", "h100", 128, {}, {}),
    "hopper-coalesced": ("coalescedMultiply", "h100", 64, {}, {}),
    "hopper-copy-stores": ("copy_float4", "h100", 128, {}, {}),
    "hopper-warm-l2": ("coalescedMultiply", "h100", 64, {"memory.l2.initial": "warm"}, {}),
    "hopper-smem-conflicts": ("sgemm_smem", "h100", 64, {}, {}),
    "hopper-scoreboard": ("sgemm_maxas_64", "h100", 64, {}, {"honour_control_codes": False}),
    "hopper-lrr": ("sgemm_maxas_64", "h100", 64, {"sm.scheduler.policy": "lrr"}, {}),
    "hopper-tiny-l2": ("copy_float4", "h100", 128, {"memory.l2.effective_size_bytes": 65536,
                                                    "memory.l2.dirty_limit_bytes": 16384}, {}),
    "hopper-dirty-reach": ("coalescedMultiply", "h100", 128, {"memory.l2.dirty_reach_bytes": 4096}, {}),
    "hopper-fetch-block": ("sgemm_naive_rowmajor", "h100", 64, {"memory.l2.dram_fetch_bytes": 128}, {}),  # one sector a lane
    "hopper-few-sms": ("sgemm_maxas_128", "h100", 256, {"sm_count": 3}, {}),
    "hopper-cta-refills": ("dgemm_unroll", "h100", 256, {"sm_count": 1}, {}),  # 4 CTAs one after another: sm.cta_launch_cycles
    # 64 CTAs on 4 SMs of 8 slots, the chip retiring one per 300 cycles: refills wait for it, the kernel's end too
    "hopper-cta-retire": ("copy_float4", "h100", 64, {"sm_count": 4, "cta_retire_cycles": 300.0}, {}),
    # reads waiting behind write-backs (memory.dram.write_wait_cycles) made large: a tiny L2 writes back every store,
    # 4 SMs take 256 CTAs in 8 waves (a wave's reads wait behind the last one's write-backs)
    "hopper-write-wait": ("copy_float4", "h100", 128, {"sm_count": 4, "memory.l2.effective_size_bytes": 65536,
                                                       "memory.l2.dirty_limit_bytes": 16384,
                                                       "memory.dram.write_wait_cycles": 5000.0}, {}),
    # the read latency's spread over 2 KiB blocks and cycles made wide (memory.dram.read_spread_cycles; GH100 175,
    # at most a third of the latency): the naive SGEMM's 32-line loads of A wait for the latest of their blocks' draws
    "hopper-read-spread": ("sgemm_naive_rowmajor", "h100", 64, {"memory.dram.read_spread_cycles": 225.0}, {}),
    # the same with all of the write wait drawn per line (memory.dram.write_wait_spread; GH100 0.5)
    "hopper-write-spread": ("copy_float4", "h100", 128, {"sm_count": 4, "memory.l2.effective_size_bytes": 65536,
                                                         "memory.l2.dirty_limit_bytes": 16384, "memory.dram.write_wait_cycles": 5000.0,
                                                         "memory.dram.write_wait_spread": 1.0}, {}),
    # reads and writes mixing (memory.dram.turnaround, H100 0.218, made large) and stores waiting for the
    # write-backs they cause (memory.dram.write_backpressure): a tiny L2 writes back every store
    "hopper-turnaround": ("copy_float4", "h100", 128, {"sm_count": 4, "memory.l2.effective_size_bytes": 65536,
                                                       "memory.l2.dirty_limit_bytes": 16384, "memory.dram.turnaround": 2.0,
                                                       "memory.dram.write_backpressure": True}, {}),
    # new CTAs' S2R SR_TID waiting for the SM's queues of 32-way conflicting LDS (sm.thread_sreg_waits_for_mio),
    # 3 SMs so that later CTAs launch beside the queued loads of earlier ones
    "hopper-sreg-wait": ("transpose_smem", "h100", 64, {"sm_count": 3}, {}),
    "hopper-unified-stage": ("naiveMatMatMul", "h100", 64, {"memory.l1.unified_data_stage": True}, {}),  # LDS and 32-line LDGs on one stage
    "hopper-separate-stages": ("naiveMatMatMul", "h100", 64, {}, {}),
    "maxwell-dgemm": ("dgemm_unroll_db_128b_prefsmem", "gtx970", 128, {}, {}),
    "maxwell-naive": ("naiveMatMatMul", "gtx970", 64, {}, {}),
    "maxwell-two-level": ("dgemm_unroll", "gtx970", 128, {"sm.scheduler.policy": "two_level", "watchdog_cycles": 20000}, {}),
    "kepler-sgemm": ("sgemm_maxas_64", "k40", 64, {}, {}),
    "kepler-simple": ("simpleMultiply", "k40", 64, {}, {}),
}


def _run(trace, program, cfg, wl, size, engine, kw):
    GPU.engine = engine
    try:
        return GPU(program, trace, cfg, footprint_bytes=input_bytes(wl, size), **kw).run(wl.name, size).model_dump()
    finally:
        GPU.engine = "compiled"


@pytest.mark.parametrize("case", list(CASES))
def test_compiled_engine_replays_the_object_model(case):
    name, gpu, size, overrides, kw = CASES[case]
    cfg = load_gpu(gpu)
    if overrides:
        cfg = apply_overrides(cfg, overrides)
    wl = find_workload(name)
    emu, _ = emulate(wl, cfg.arch, size)
    trace = DynamicTrace.from_emulator(emu, workload=wl.name, size=size)
    compiled = _run(trace, emu.program, cfg, wl, size, "compiled", kw)
    objects = _run(trace, emu.program, cfg, wl, size, "objects", kw)
    assert compiled["warp_instructions"] > 0
    differ = {k: (compiled[k], objects[k]) for k in objects if compiled[k] != objects[k]}
    assert not differ, f"the engines disagree on {sorted(differ)}"
