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
