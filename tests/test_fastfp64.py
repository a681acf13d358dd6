"""The fast DFMA (gpusim/emu/fastfp64.py) rounds once, like the hardware: checked against exact
rational arithmetic on random operands and on constructed ties, and against the generic handler
(ops.dfma, golden-tested on the H100) on a whole FP64 GEMM."""

from fractions import Fraction

import numpy as np
import pytest

from gpusim.emu.fastfp64 import BIG, fma_round_to_odd


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


def _near_half_ulp(rng, n):
    """a * b just off half an ulp of c: the sum's low part is far below the high part's last bit, so
    that rounding it to odd must step towards the low part's sign (s + e rounds back to s). E.g.
    a = c = 1 + 2^-52, b = 2^-53 (1 - 2^-52): fma = 1 + 2^-52, the exact sum lying just below halfway
    to 1 + 2^-51; without the step to odd the halfway tie goes to the even 1 + 2^-51."""
    x = rng.integers(1, 4, size=n).astype(np.float64)
    y = rng.integers(1, 4, size=n).astype(np.float64)
    sign = rng.choice([-1.0, 1.0], size=n)
    a = 1 + x * 2.0**-52
    b = sign * 2.0**-53 * (1 - y * 2.0**-52)
    c = 1 + rng.integers(1, 2**40, size=n).astype(np.float64) * 2.0**-52
    scale = np.exp2(rng.integers(-100, 100, size=n))
    return np.array([a * scale, b, c * scale])


def test_the_example_that_rounding_to_odd_towards_s_plus_e_missed():
    a, b, c = 1 + 2.0**-52, 2.0**-53 * (1 - 2.0**-52), 1 + 2.0**-52
    r = fma_round_to_odd(np.array([a]), np.array([b]), np.array([c]))
    assert r[0] == _exact(a, b, c) == 1.0000000000000002


@pytest.mark.parametrize("make", [_operands, _ties, _near_half_ulp])
def test_fma_round_to_odd_is_the_exactly_rounded_fma(make):
    rng = np.random.default_rng(7)
    a, b, c = make(rng, 4000)
    r = fma_round_to_odd(a, b, c)
    assert r is not None
    want = np.array([_exact(*t) for t in zip(a.tolist(), b.tolist(), c.tolist())])
    assert np.array_equal(r.view(np.uint64), want.view(np.uint64))
    # the same with a plain double-rounded a * b + c would differ somewhere: the test can fail (near
    # half an ulp, a * b + c rounds right; there stepping the wrong way would not: see the example)
    if make is not _near_half_ulp:
        assert not np.array_equal((a * b + c).view(np.uint64), want.view(np.uint64))


def test_out_of_range_lanes_are_left_to_the_generic_path():
    one = np.ones(4)
    assert fma_round_to_odd(one, one, -one) is None  # an exact zero (sign rules)
    assert fma_round_to_odd(one * 2.0**-600, one * 2.0**-400, one) is None  # an underflowing product
    assert fma_round_to_odd(one * np.inf, one, one) is None


def _in_registers(a, b, c):
    """A register file holding a, b, c as the pairs R0:R1, R2:R3, R4:R5 (lanes along the rows)."""
    R = np.zeros((9, len(a)), np.uint32)
    for row, v in zip((0, 2, 4), (a, b, c)):
        words = np.ascontiguousarray(v, dtype=np.float64).view(np.uint32).reshape(-1, 2)
        R[row], R[row + 1] = words[:, 0], words[:, 1]
    return R


def _edge_lanes():
    """Operand triples at and beyond the edges of the round-to-odd algorithm's range."""
    big, tiny, inf, nan = 2.0**995, 2.0**-960, np.inf, np.nan
    return [(1.0, 1.0, -1.0), (2.0**-600, 2.0**-400, 1.0), (inf, 1.0, 1.0), (1.0, nan, 1.0), (nan, 1.0, 1.0),
            (1.0, 1.0, nan), (1.0, 1.0, inf), (big, 1.0, 0.5), (np.nextafter(big, 0), 1.0, 0.5),
            (1.0, -big, 0.5), (2.0**500, 2.0**500, 1.0), (tiny, 1.0, 0.0), (np.nextafter(tiny, 0), 1.0, 1.0),
            (tiny, 1.0, -tiny * (1 - 2.0**-52)), (-3.0, 0.1, 0.3), (0.0, 1.0, 1.0), (1.0, 1.0, -0.0)]


@pytest.mark.parametrize("make", [_operands, _ties, _near_half_ulp])
def test_compiled_dfma_is_fma_round_to_odd(make):
    """compiled.dfma (the handler's loop) gives fma_round_to_odd's bits, and takes the generic path
    (False, nothing written) exactly where the handler's numpy route did (factors below BIG, then
    fma_round_to_odd not None): for random operands, ties, and batches with one
    lane at or beyond the edges of the range."""
    from gpusim.emu import compiled

    rng = np.random.default_rng(11)
    a, b, c = make(rng, 4000)
    batches = [(a, b, c)]
    for edge in _edge_lanes():
        lanes = np.array([a[:5], b[:5], c[:5]])
        lanes[:, 2] = edge
        batches.append(tuple(lanes))
    for a, b, c in batches:
        R = _in_registers(a, b, c)
        before = R.copy()
        with np.errstate(invalid="ignore"):  # the handler's numpy route before: factors beyond BIG, generic
            want = fma_round_to_odd(a, b, c) if max(np.abs(a).max(), np.abs(b).max()) < BIG else None
        took = compiled.dfma(R, 0, 2, 4, 6, 0, len(a), np.empty(len(a)))
        assert took == (want is not None), (a, b, c)
        if took:
            got = (R[6].astype(np.uint64) | R[7].astype(np.uint64) << np.uint64(32))
            assert np.array_equal(got, want.view(np.uint64))
        else:
            assert np.array_equal(R, before)
    # the destination may be the addend (the GEMM accumulator) and a lane range a part of the rows
    a, b, c = _operands(rng, 64)
    R = _in_registers(a, b, c)
    assert compiled.dfma(R, 0, 2, 4, 4, 32, 64, np.empty(32))
    got = (R[4].astype(np.uint64) | R[5].astype(np.uint64) << np.uint64(32)).view(np.float64)
    assert np.array_equal(got[:32].view(np.uint64), c[:32].view(np.uint64))
    assert np.array_equal(got[32:].view(np.uint64), fma_round_to_odd(a[32:], b[32:], c[32:]).view(np.uint64))


def test_dgemm_emulation_is_identical_with_and_without_the_fast_path(monkeypatch):
    from gpusim.emu import compiled, fast
    from gpusim.emu.run import emulate
    from gpusim.workloads import find_workload

    taken = []
    loop, block = compiled.dfma, compiled.block

    def counted(*args):
        r = loop(*args)
        taken.append(r)
        return r

    def counted_block(R, F, kinds, args, pc, k, *rest):  # (DFMAs run in a straight-line run, compiled.block)
        r = block(R, F, kinds, args, pc, k, *rest)
        taken.extend([True] * int(np.count_nonzero(kinds[pc:pc + r] == compiled.BLOCK_DFMA)))
        return r

    monkeypatch.setattr(compiled, "dfma", counted)
    monkeypatch.setattr(compiled, "block", counted_block)
    wl = find_workload("dgemm_unroll_db_128b")
    fast_emu, _ = emulate(wl, "sm_90", 128)
    assert sum(taken) > 0.9 * len(taken) > 0  # the fast path ran (not only its fallback)
    monkeypatch.delitem(fast._MAKERS, "DFMA")
    slow_emu, _ = emulate(wl, "sm_90", 128)
    out = [a.name for a in wl.args if a.kind == "buffer" and a.output]
    assert out
    for name in out:
        assert np.array_equal(fast_emu.memory.read_buffer(name), slow_emu.memory.read_buffer(name)), name
