"""The fast DFMA (gpusim/emu/fastfp64.py) rounds once, like the hardware: checked against exact
rational arithmetic on random operands and on constructed ties, and against the generic handler
(ops.dfma, golden-tested on the H100) on a whole FP64 GEMM."""

from fractions import Fraction

import numpy as np
import pytest

from gpusim.emu.fastfp64 import fma_round_to_odd


def _exact(a, b, c) -> float:
    return float(Fraction(a) * Fraction(b) + Fraction(c))  # int / int division rounds to nearest even


def _operands(rng, n):
    mant = rng.uniform(1, 2, size=(3, n)) * rng.choice([-1.0, 1.0], size=(3, n))
    exps = rng.integers(-60, 60, size=(3, n))
    exps[2] = exps[0] + exps[1] + rng.integers(-60, 4, size=n)  # the addend near the product: cancellations
    return mant * np.exp2(exps)


def _ties(rng, n):
    """a * b + c exactly halfway between two doubles, and next to halfway: a = 1 + x 2^-52,
    b = 1 + y 2^-52, c = -(1 + (x + y) 2^-52) leaves x y 2^-104 (plus a nudge in c's last bits)."""
    x = rng.integers(1, 2**26, size=n).astype(np.float64)
    y = rng.integers(1, 2**26, size=n).astype(np.float64)
    a, b = 1 + x * 2.0**-52, 1 + y * 2.0**-52
    c = -(1 + (x + y) * 2.0**-52)
    scale = np.exp2(rng.integers(-100, 100, size=n))
    return np.array([a * scale, b, c * scale])


@pytest.mark.parametrize("make", [_operands, _ties])
def test_fma_round_to_odd_is_the_exactly_rounded_fma(make):
    rng = np.random.default_rng(7)
    a, b, c = make(rng, 4000)
    r = fma_round_to_odd(a, b, c)
    assert r is not None
    want = np.array([_exact(*t) for t in zip(a.tolist(), b.tolist(), c.tolist())])
    assert np.array_equal(r.view(np.uint64), want.view(np.uint64))
    # the same with a plain double-rounded a * b + c would differ somewhere: the test can fail
    assert not np.array_equal((a * b + c).view(np.uint64), want.view(np.uint64))


def test_out_of_range_lanes_are_left_to_the_generic_path():
    one = np.ones(4)
    assert fma_round_to_odd(one, one, -one) is None  # an exact zero (sign rules)
    assert fma_round_to_odd(one * 2.0**-600, one * 2.0**-400, one) is None  # an underflowing product
    assert fma_round_to_odd(one * np.inf, one, one) is None


def test_dgemm_emulation_is_identical_with_and_without_the_fast_path(monkeypatch):
    from gpusim.emu import fast, fastfp64
    from gpusim.emu.run import emulate
    from gpusim.workloads import find_workload

    taken = []

    def counted(*args):
        r = fma_round_to_odd(*args)
        taken.append(r is not None)
        return r

    monkeypatch.setattr(fastfp64, "fma_round_to_odd", counted)
    wl = find_workload("dgemm_unroll_db_128b")
    fast_emu, _ = emulate(wl, "sm_90", 128)
    assert sum(taken) > 0.9 * len(taken) > 0  # the fast path ran (not only its fallback)
    monkeypatch.delitem(fast._MAKERS, "DFMA")
    slow_emu, _ = emulate(wl, "sm_90", 128)
    out = [a.name for a in wl.args if a.kind == "buffer" and a.output]
    assert out
    for name in out:
        assert np.array_equal(fast_emu.memory.read_buffer(name), slow_emu.memory.read_buffer(name)), name
