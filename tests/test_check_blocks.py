"""The inputs held once, in device memory (emu.run.build_launch, at_launch): the logical inputs are
views of it, an input the kernel changed is recovered."""

from __future__ import annotations

import numpy as np

from gpusim.emu import run as R
from gpusim.toolchain.listings import load_program
from gpusim.workloads import find_workload


def test_inputs_are_held_once_and_recovered_when_the_kernel_changes_them():
    """build_launch makes the buffers in device memory: the logical inputs are read-only views of
    it. An input the reference reads that the kernel changed is made again from the seed."""
    wl = find_workload("sgemm_maxas_64")
    n = 64
    _, _, memory, inputs = R.build_launch(wl, load_program(wl, "sm_90"), n)
    fresh = wl.make_inputs(n)
    for k in ("A", "B", "C"):
        assert np.shares_memory(inputs[k], memory.arena) and not inputs[k].flags.writeable
        assert inputs[k].tobytes(order="A") == fresh[k].tobytes(order="A")
    assert R.at_launch(wl, inputs, n) is inputs  # nothing changed: the views themselves
    memory.logical("B", np.float32, (n, n))[3, 4] = 7.0  # a store into an input (an in-place kernel)
    back = R.at_launch(wl, inputs, n)
    assert np.array_equal(back["B"], fresh["B"]) and back["A"] is inputs["A"]
    assert set(inputs.digests) == {"A", "B"}  # (the reference reads A and B, not the output C)


def test_make_inputs_only_gives_the_full_call_values():
    wl = find_workload("sgemm_maxas_64")
    full, only = wl.make_inputs(64, seed=5), wl.make_inputs(64, seed=5, only={"B"})
    assert set(k for k, v in only.items() if isinstance(v, np.ndarray)) == {"B"}
    assert np.array_equal(only["B"], full["B"])
