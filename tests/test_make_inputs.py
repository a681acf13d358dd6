"""make_inputs draws its random arrays a block at a time: the values must be those of one draw of
the whole array (the arrays every timing, check and golden file was made with)."""

from __future__ import annotations

import numpy as np
import pytest

import gpusim.workloads.spec as spec
from gpusim.workloads import find_workload, list_workloads


def one_draw(wl, n, seed=0):
    """make_inputs as it was: each array drawn whole in float64, then converted."""
    rng = np.random.default_rng(seed)
    out = {}
    for arg in wl.args:
        if arg.kind == "scalar":
            continue
        dt, shape = spec.DTYPES[arg.dtype], wl.buffer_shape(arg, n)
        if arg.init.kind == "uniform":
            a = rng.uniform(arg.init.low, arg.init.high, size=shape)
        elif arg.init.kind == "normal":
            a = rng.standard_normal(size=shape)
        elif arg.init.kind == "poison":
            a = np.full(shape, np.nan if np.issubdtype(dt, np.floating) else 0x7FFFFFFF)
        else:
            a = np.zeros(shape)
        out[arg.name] = np.asarray(a, dtype=dt, order=arg.order)
    return out


@pytest.mark.parametrize("block", [7, 1 << 20])
def test_blocked_draws_equal_one_draw(monkeypatch, block):
    monkeypatch.setattr(spec, "RANDOM_BLOCK", block)
    for wl in list_workloads():
        n = min(wl.sizes)
        got, want = wl.make_inputs(n, seed=3), one_draw(wl, n, seed=3)
        for name, ref in want.items():
            a = got[name]
            assert a.dtype == ref.dtype and a.shape == ref.shape, (wl.name, name)
            assert a.flags.f_contiguous == ref.flags.f_contiguous, (wl.name, name)
            assert a.tobytes(order="A") == ref.tobytes(order="A"), (wl.name, name)


def test_normal_init_blocks(monkeypatch):
    """The suite has no normal-initialised buffer: the blocked normal draws on their own."""
    monkeypatch.setattr(spec, "RANDOM_BLOCK", 5)
    init = spec.Init(kind="normal")
    got = spec._random_array(np.random.default_rng(1), init, (6, 4), np.float32, "F")
    assert np.array_equal(got, np.asarray(np.random.default_rng(1).standard_normal((6, 4)), np.float32))
    assert got.flags.f_contiguous
