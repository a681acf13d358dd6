"""Sampled mode agrees with detailed mode within 2% where both run; extrapolation waits for convergence."""

import pytest

from gpusim.timing.driver import run_workload
from gpusim.timing.sampling import Sampler

CASES = [("sgemm_maxas_64", "h100", 256), ("dgemm_unroll", "gtx970", 256), ("coalescedMultiply", "h100", 256),
         ("simpleMatMatMul_corrected", "h100", 128)]


@pytest.mark.parametrize("name,card,n", CASES, ids=[f"{a}-{b}-{c}" for a, b, c in CASES])
def test_sampled_within_two_percent_of_detailed(name, card, n):
    detailed = run_workload(name, card, n)
    sampled = run_workload(name, card, n, mode="sampled")
    assert abs(sampled.cycles - detailed.cycles) <= 0.02 * detailed.cycles, (sampled.cycles, detailed.cycles)
    assert sampled.mode == "sampled" and sampled.sampling["what"]
    assert sampled.warp_instructions == pytest.approx(detailed.warp_instructions, rel=0.02)
    # stall cycles are the grid's in both modes (sampled: SM 0's, scaled to every busy SM)
    assert sampled.stalls["selected"] == pytest.approx(detailed.stalls["selected"], rel=0.05)
    assert sum(sampled.stalls.values()) == pytest.approx(sum(detailed.stalls.values()), rel=0.1)


def test_fast_forward_used_on_long_loops():
    r = run_workload("dgemm_unroll", "gtx970", 256, mode="sampled")
    assert r.sampling["fast_forwards"] >= 1 and r.sampling["extrapolated_loop_cycles"] > 0


class _Warp:
    def __init__(self, gid, pcs, pos):
        self.gid, self.pcs, self.pos, self.done = gid, pcs, pos, False


class _SM:
    def __init__(self, warps):
        self.warps = warps
        self.issued = 0

        class T:
            rows = [[0.0]]
        self.stalls = T()


def test_extrapolation_never_fires_before_convergence():
    """Feed the sampler windows whose rates disagree, then agree: it may only fast-forward after
    `converge` agreeing windows, and never past the loop exit."""
    prog = type("P", (), {"instructions": []})()
    s = Sampler(prog, tolerance=0.02, converge=3, min_window=1)
    body = 10
    pcs = [0] * 5 + ([1] * (body - 1) + [99]) * 100 + [2] * 5  # 99 = the back edge, 100 iterations
    s.branch = 99
    w = _Warp(0, pcs, 5 + 2 * body)  # in the loop, past its first iteration
    sm = _SM([w])
    t = 0.0
    steps = [10, 20, 10, 10, 10, 10]  # instructions per 100-cycle window: disagree, then agree
    fired_at = None
    for i, step in enumerate(steps):
        s.check(sm, t)
        if s.fast_forwards and fired_at is None:
            fired_at = i
        w.pos += step
        t += 100
    s.check(sm, t)
    fired_at = fired_at if fired_at is not None else (len(steps) if s.fast_forwards else None)
    assert fired_at is not None and fired_at >= 5  # windows 3..5 are the first three that agree
    assert s.iterations(w) <= 100 - s.margin  # never past the loop exit
    assert s.extrapolated_cycles > 0


# ---- main-loop elision: the sampled trace leaves out the iterations it fast-forwards over -------------

def _trace_pair(name, card, n, head, tail):
    from gpusim.config import load_gpu
    from gpusim.emu.run import emulate
    from gpusim.timing.driver import sampled_ctas
    from gpusim.trace import DynamicTrace
    from gpusim.workloads import find_workload

    cfg, wl = load_gpu(card), find_workload(name)
    emu, _ = emulate(wl, cfg.arch, n, ctas=sampled_ctas(wl, n, cfg))
    return emu, DynamicTrace.from_emulator(emu), DynamicTrace.from_emulator(emu, keep_loop=(head, tail))


def test_elided_trace_is_the_full_trace_without_the_middle_iterations():
    import numpy as np

    emu, full, short = _trace_pair("sgemm_maxas_64", "h100", 512, 10, 7)
    el = short.elision
    assert el is not None and el.warps
    fr, sr = full.records, short.records
    assert len(fr) - len(sr) == int(el.pc_counts.sum())
    for gid, (at, iters, skipped) in el.warps.items():
        f, s = full.warp_stream(gid), short.warp_stream(gid)
        backs = np.flatnonzero(f["pc_index"] == el.branch)
        assert iters == len(backs) - 10 - 7
        assert at == backs[9] + 1 and skipped == backs[len(backs) - 8] - backs[9]  # whole iterations 10..n-8
        keep = np.r_[np.arange(at), np.arange(at + skipped, len(f))]
        for field in ("pc_index", "active_mask", "exec_mask"):
            assert np.array_equal(f[field][keep], s[field])
        assert np.array_equal(s["seq"], np.arange(len(s)))
        fm, sm_ = f["mem_row"][keep], s["mem_row"]
        assert np.array_equal(fm >= 0, sm_ >= 0)
        assert np.array_equal(full.addresses[fm[fm >= 0]], short.addresses[sm_[sm_ >= 0]])
    # the load sectors of the whole run are kept for the DRAM estimate
    loads = np.array([i.opcode == "LDG" for i in emu.program.instructions])[fr["pc_index"]] & (fr["mem_row"] >= 0)
    a = full.addresses[fr["mem_row"][loads]].ravel()
    assert np.array_equal(el.load_sectors32, np.unique(a[a != 0] >> np.uint64(5)))
    with pytest.raises(Exception, match="cannot be saved"):
        short.save("/tmp/never-written.npz")


def test_sampled_result_is_the_same_with_and_without_elision(monkeypatch):
    import gpusim.timing.sampling as sampling

    elided = run_workload("sgemm_maxas_64", "h100", 1024, mode="sampled")  # 128 iterations, 96 kept
    monkeypatch.setattr(sampling, "KEEP_HEAD", 10_000)  # keeps everything
    with_gap = run_workload("sgemm_maxas_64", "h100", 1024, mode="sampled")
    assert with_gap.sampling["trace_left_out_instructions"] == 0
    assert elided.sampling["trace_left_out_instructions"] > 30_000  # 4 warps x 32 iterations x ~570
    assert elided.cycles == with_gap.cycles
    assert elided.warp_instructions == with_gap.warp_instructions
    assert [(p.address, p.executed) for p in elided.stalls_per_pc] == \
        [(p.address, p.executed) for p in with_gap.stalls_per_pc]
    assert elided.shared["wavefronts"] == pytest.approx(with_gap.shared["wavefronts"], rel=0.01)


def test_a_loop_that_converges_too_late_for_the_kept_iterations_falls_back_to_the_full_trace(monkeypatch):
    import gpusim.timing.sampling as sampling

    full = run_workload("sgemm_maxas_64", "h100", 512, mode="sampled")
    monkeypatch.setattr(sampling, "KEEP_HEAD", 2)  # too few to converge in
    monkeypatch.setattr(sampling, "KEEP_TAIL", 24)
    r = run_workload("sgemm_maxas_64", "h100", 512, mode="sampled")
    assert r.sampling["trace_left_out_instructions"] == 0 and r.cycles == full.cycles
