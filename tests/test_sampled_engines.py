"""Sampled mode on the compiled engine (gpusim/timing/compiled/sampled.py) gives the object model's
results to the last bit: each case emulates the sampled CTAs once, times them in sampled mode on
both engines and compares every field of the result (cycles, stalls per PC, pipes, memory counters,
the sampler's extrapolated cycles, fast-forwards, made-up iterations and error estimate).

The cases cover fast-forwards (each CTA at its own rate) on the Hopper, Maxwell and Kepler SMs,
left-out main-loop iterations that warps simulate into or land in and that are made up from the
kept ones (a short kept head and tail: `keep`), a double-buffered loop (two template parities),
several simulated SMs sharing L2/DRAM, a warm L2 with its share, warps moved while they wait at a
barrier, stores with a tight dirty limit (write-backs from the dirty share), and a kept head too
short to make iterations up from (both engines give up the elided trace and time the full one).
"""

from __future__ import annotations

import pytest

import gpusim.timing.sampling as sampling
from gpusim.config import apply_overrides, load_gpu
from gpusim.emu.run import emulate
from gpusim.timing.driver import sampled_ctas, time_emulated
from gpusim.timing.gpu import GPU
from gpusim.workloads import find_workload

# id: (workload, gpu, size, overrides, iterations kept at each end of the main loop)
CASES = {
    "hopper-sgemm-synthesized": ("sgemm_maxas_64", "h100", 512, {}, 8),  # 4 SMs
    "hopper-dgemm-double-buffered": ("dgemm_unroll_db_128b", "h100", 256, {}, 8),
    # two SMs of 14 CTAs, two waves of 7 simulated: further CTAs at the steady CTA throughput, from
    # residences that fast-forwards lengthen
    "maxwell-sgemm-fast-forward-synthesized": ("sgemm_maxas_64", "gtx970", 512, {"sm_count": 2}, 8),
    "maxwell-dgemm-fast-forward": ("dgemm_unroll", "gtx970", 256, {}, sampling.KEEP_HEAD),
    "kepler-sgemm-synthesized": ("sgemm_maxas_64", "k40", 512, {"sm_count": 2}, 8),
    "hopper-warm-l2": ("sgemm_maxas_64", "h100", 256, {"memory.l2.initial": "warm"}, sampling.KEEP_HEAD),
    # a fast-forward moves warps that wait at a barrier to where the record before them is another
    # instruction than the barrier (the loop's iterations differ): the release reads that record
    "hopper-moved-at-barrier": ("naiveMatMatMul", "h100", 512, {"memory.l2.initial": "warm"}, sampling.KEEP_HEAD),
    "hopper-stores-dirty-limit": ("copy_float4", "h100", 512, {"memory.l2.dirty_limit_bytes": 65536}, sampling.KEEP_HEAD),
    "hopper-cta-retire": ("copy_float4", "h100", 512, {"cta_retire_cycles": 40.0}, sampling.KEEP_HEAD),
    # reads waiting behind write-backs made large (a tiny L2 writes back every store); 8 waves of a loop-less kernel
    "hopper-write-wait": ("copy_float4", "h100", 512, {"memory.l2.effective_size_bytes": 65536,
                                                       "memory.l2.dirty_limit_bytes": 16384,
                                                       "memory.dram.write_wait_cycles": 5000.0}, sampling.KEEP_HEAD),
    # the read latency's spread over 2 KiB blocks and cycles made wide (memory.dram.read_spread_cycles; GH100 175,
    # at most a third of the latency): the naive SGEMM's 32-line loads of A wait for the latest of their blocks' draws
    "hopper-read-spread": ("sgemm_naive_rowmajor", "h100", 256, {"memory.dram.read_spread_cycles": 225.0}, sampling.KEEP_HEAD),
    # the same with all of the write wait drawn per line (memory.dram.write_wait_spread; GH100 0.5)
    "hopper-write-spread": ("copy_float4", "h100", 512, {"memory.l2.effective_size_bytes": 65536,
                                                         "memory.l2.dirty_limit_bytes": 16384, "memory.dram.write_wait_cycles": 5000.0,
                                                         "memory.dram.write_wait_spread": 1.0}, sampling.KEEP_HEAD),
    "maxwell-head-too-short": ("sgemm_maxas_64", "gtx970", 256, {}, 3),
}


def _timed(emu, wl, cfg, size, engine):
    GPU.engine = engine
    try:
        return time_emulated(emu, wl, cfg, size, "sampled").model_dump()
    finally:
        GPU.engine = "compiled"


@pytest.mark.parametrize("case", list(CASES))
def test_sampled_mode_compiled_engine_replays_the_object_model(case, monkeypatch):
    name, gpu, size, overrides, keep = CASES[case]
    monkeypatch.setattr(sampling, "KEEP_HEAD", keep)
    monkeypatch.setattr(sampling, "KEEP_TAIL", keep)
    cfg = load_gpu(gpu)
    if overrides:
        cfg = apply_overrides(cfg, overrides)
    wl = find_workload(name)
    emu, _ = emulate(wl, cfg.arch, size, ctas=sampled_ctas(wl, size, cfg))
    compiled = _timed(emu, wl, cfg, size, "compiled")
    objects = _timed(emu, wl, cfg, size, "objects")
    assert compiled["mode"] == "sampled" and compiled["warp_instructions"] > 0
    differ = {k: (compiled[k], objects[k]) for k in objects if compiled[k] != objects[k]}
    assert not differ, f"the engines disagree on {sorted(differ)}"


def test_arrays_grown_between_steps_replay_the_object_model(monkeypatch):
    """Made-up iterations fill the record arrays, which grow between cycle steps (the engine stops,
    sm.NEED_ROOM, and goes on): arrays grown to just what a step needs stop it again and again,
    with the same results."""
    from gpusim.timing.compiled import sampled as compiled_sampled

    monkeypatch.setattr(sampling, "KEEP_HEAD", 8)
    monkeypatch.setattr(sampling, "KEEP_TAIL", 8)
    monkeypatch.setattr(compiled_sampled, "GROWTH", 1.0)
    stops = []
    simulate = compiled_sampled.SampledRun.simulate

    def counted(run):
        out = simulate(run)
        stops.append(run.stops)
        return out

    monkeypatch.setattr(compiled_sampled.SampledRun, "simulate", counted)
    cfg = apply_overrides(load_gpu("gtx970"), {"sm_count": 2})
    wl = find_workload("sgemm_maxas_64")
    emu, _ = emulate(wl, cfg.arch, 512, ctas=sampled_ctas(wl, 512, cfg))
    compiled = _timed(emu, wl, cfg, 512, "compiled")
    objects = _timed(emu, wl, cfg, 512, "objects")
    assert stops and stops[0] > 10 and compiled["sampling"]["synthesized_iterations"] > 10
    differ = {k: (compiled[k], objects[k]) for k in objects if compiled[k] != objects[k]}
    assert not differ, f"the engines disagree on {sorted(differ)}"


def test_the_cases_reach_what_they_cover(monkeypatch):
    """The cases above do what they are there for: fast-forwards, made-up iterations, CTAs beyond
    the simulated ones."""
    monkeypatch.setattr(sampling, "KEEP_HEAD", 8)
    monkeypatch.setattr(sampling, "KEEP_TAIL", 8)
    cfg = apply_overrides(load_gpu("gtx970"), {"sm_count": 2})
    wl = find_workload("sgemm_maxas_64")
    emu, _ = emulate(wl, cfg.arch, 512, ctas=sampled_ctas(wl, 512, cfg))
    r = time_emulated(emu, wl, cfg, 512, "sampled")
    assert r.sampling["fast_forwards"] > 0 and r.sampling["synthesized_iterations"] > 0
    assert r.sampling["trace_left_out_instructions"] > 0 and r.sampling["extrapolated_cta_cycles"] > 0
