"""The output check a block of rows at a time (gpusim/emu/compare.py, emu.run.check) and the inputs
held once, in device memory (emu.run.build_launch, at_launch): the same verdicts as comparing whole
arrays, a wrong element named, an input the kernel changed recovered."""

from __future__ import annotations

import numpy as np
import pytest

from gpusim.emu import run as R
from gpusim.emu.compare import compare_blocks
from gpusim.errors import WrongResultError
from gpusim.toolchain.listings import load_program
from gpusim.workloads import find_workload


def whole_array_compare(out, ref, shape, tol):
    """The comparison as it was before blocks (one float64 copy of everything)."""
    diff = np.abs(out.astype(np.float64) - ref)
    scale = float(np.sqrt(np.mean(np.square(ref))))
    err = float(np.sqrt(np.sum(np.square(diff))) / max(scale * np.sqrt(ref.size), 1e-300))
    entry = {"rel_error": err, "passed": err < tol}
    if not entry["passed"]:
        k = int(np.argmax(~(diff <= tol * scale)))
        entry["first_wrong"] = {"index": [int(i) for i in np.unravel_index(k, shape)], "value": out[k].item(),
                                "reference": ref[k].item()}
    return entry


def in_blocks(out, ref, sizes):
    """compare_blocks over consecutive blocks of the given sizes."""
    edges = np.r_[0, np.cumsum(sizes)]
    return lambda i: (out[edges[i]:edges[i + 1]], ref[edges[i]:edges[i + 1]], int(edges[i]))


@pytest.mark.parametrize("seed", range(4))
def test_blocks_agree_with_the_whole_array_comparison(seed):
    rng = np.random.default_rng(seed)
    shape = (97, 61)
    ref = rng.uniform(-1, 1, shape).reshape(-1)
    out = (ref + rng.normal(0, 1e-6, ref.size)).astype(np.float32)
    cuts = np.sort(rng.choice(np.arange(1, ref.size), 9, replace=False))
    sizes = np.diff(np.r_[0, cuts, ref.size])
    for tol in (1e-4, 1e-9):  # passes, fails
        want = whole_array_compare(out, ref, shape, tol)
        got = compare_blocks(len(sizes), in_blocks(out, ref, sizes), shape, tol, False)
        assert got["rel_error"] == pytest.approx(want["rel_error"], rel=1e-12, abs=0)
        assert got["passed"] == want["passed"] and got.get("first_wrong") == want.get("first_wrong")
        assert got["elements"] == got["of"] == ref.size
        one = compare_blocks(1, lambda i: (out, ref, 0), shape, tol, False)
        assert one["rel_error"] == want["rel_error"]  # one block: the same sums, to the bit


def test_blocks_name_the_first_wrong_element_in_a_later_block():
    ref = np.linspace(1.0, 2.0, 1000)
    out = ref.astype(np.float32)
    out[737] = 5.0  # beyond tolerance x rms
    out[900] = np.nan
    got = compare_blocks(10, in_blocks(out, ref, [100] * 10), (1000,), 1e-5, False)
    assert not got["passed"] and got["first_wrong"] == {"index": [737], "value": 5.0, "reference": ref[737]}
    assert got["rel_error"] == float("inf")  # (a NaN makes the error infinite)


def test_integer_blocks_count_the_wrong_elements():
    ref = np.arange(50, dtype=np.int32)
    out = ref.copy()
    out[[31, 44]] += 1
    got = compare_blocks(5, in_blocks(out, ref, [10] * 5), (5, 10), 0.0, True)
    assert got["rel_error"] == 2 / 50 and not got["passed"]
    assert got["first_wrong"] == {"index": [3, 1], "value": 32, "reference": 31}


def test_float_tolerance_zero_asks_for_exact_values():
    """A spec's `tolerance: 0` on a float output passes an exact result (it failed: 0 < 0) and names the
    first element that differs otherwise."""
    ref = np.linspace(-1, 1, 40).astype(np.float32)
    assert compare_blocks(4, in_blocks(ref.copy(), ref, [10] * 4), (40,), 0.0, False)["passed"]
    out = ref.copy()
    out[23] = np.nextafter(out[23], np.float32(2))
    got = compare_blocks(4, in_blocks(out, ref, [10] * 4), (40,), 0.0, False)
    assert not got["passed"] and got["first_wrong"]["index"] == [23] and "integer" not in got


@pytest.mark.parametrize("name,n", [("sgemm_maxas_64", 128), ("naiveMatMatMul", 64), ("transpose_naive", 16),
                                    ("dgemm_naive_coalesced", 64)])
def test_a_corrupted_output_element_is_named(name, n, monkeypatch):
    """A whole run's outputs, compared in many blocks of rows (column-major and row-major outputs, a
    product, an einsum, a transpose): one element made wrong in device memory is named, with its
    value and reference; the run as it was passes with the whole-array comparison's error."""
    monkeypatch.setattr(R, "BLOCK_ELEMENTS", 700)
    wl = find_workload(name)
    emu, inputs = R.emulate(wl, "sm_90", n, record=False)
    out_name = next(iter(wl.reference))
    arg = next(a for a in wl.args if a.name == out_name)
    shape = wl.buffer_shape(arg, n)
    report = R.verify(wl, emu, inputs, n)[out_name]
    full = np.asarray(wl.reference_outputs(wl.make_inputs(n), n)[out_name], dtype=np.float64)
    out = emu.memory.logical(out_name, np.float64 if arg.dtype == "float64" else np.float32, shape, arg.order)
    want = whole_array_compare(np.ascontiguousarray(out).reshape(-1), full.reshape(-1), shape,
                               wl.default_tolerance())
    assert report["passed"] and report["elements"] == out.size
    assert report["rel_error"] == pytest.approx(want["rel_error"], rel=1e-9, abs=1e-15)
    at = (shape[0] * 2 // 3 + 1, shape[1] // 3)
    out[at] += 100.0
    with pytest.raises(WrongResultError, match=rf"{out_name}\[{at[0]}, {at[1]}\] = "):
        R.verify(wl, emu, inputs, n)
    wrong = R.check(wl, emu, inputs, n)[out_name]
    assert wrong["first_wrong"]["value"] == out[at].item()
    assert wrong["first_wrong"]["reference"] == pytest.approx(full[at], rel=1e-12)


def test_references_by_rows_equal_the_full_ones():
    """_Product.rows and _Einsum.rows (slabs of the einsum's first output letter, or element by
    element where rows cut a slab) give the fully evaluated reference's rows."""
    for name in ("sgemm_maxas_64", "naiveMatMatMul", "simpleMultiply"):
        wl = find_workload(name)
        n = 128
        inputs = wl.make_inputs(n)
        out = next(iter(wl.reference))
        full = np.asarray(wl.reference_outputs(inputs, n)[out])
        lazy = R._deferred_references(wl, inputs, n, late=R._late_widened(wl))[out]
        assert any(inputs[k].dtype == np.float32 for k in R._late_widened(wl) if k in inputs)  # (widened late)
        for r0, r1 in ((0, 32), (32, 96), (5, 7), (120, 128)):
            assert np.allclose(lazy.rows(r0, r1), full[r0:r1].reshape(-1), rtol=1e-12, atol=1e-13), (name, r0)


def test_late_widened_names():
    wl = find_workload("sgemm_maxas_64").model_copy()
    for expr, late in [("alpha * (A.T @ B)", {"A", "B"}), ("A.T", {"A"}), ("A @ B + A", {"B"}),
                       ("np.einsum('ij,jk->ik', A.reshape(n, n), B)", {"A", "B"}), ("2 * A", set()),
                       ("np.sum(A) @ B", {"B"})]:
        wl.reference = {"C": expr}
        assert R._late_widened(wl) & {"A", "B"} == late, expr


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
