"""gpusim.trace.lanes: lane masks to per-lane booleans."""

import numpy as np
import pytest

from gpusim.trace.lanes import lane_bits


@pytest.mark.parametrize("shape", [(), (0,), (5,), (7, 5)])
def test_lane_bits_is_bit_t_of_each_mask(shape):
    rng = np.random.default_rng(1)
    masks = rng.integers(0, 2**32, size=shape, dtype=np.uint64).astype(np.uint32)
    masks.reshape(-1)[:1] = 0xFFFFFFFF  # a full warp
    expect = ((masks[..., None] >> np.arange(32, dtype=np.uint32)) & 1).astype(bool)
    got = lane_bits(masks)
    assert got.dtype == bool and got.shape == shape + (32,) and np.array_equal(got, expect)
    assert lane_bits(np.uint32(0b101)).tolist() == [True, False, True] + [False] * 29
