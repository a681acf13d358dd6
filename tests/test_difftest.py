"""Replay of the H100 golden runs (tests/difftest): each difftest kernel's SASS is emulated on the
same edge inputs and every output must equal the GPU's bit for bit. The golden outputs were measured
on an NVIDIA H100 80GB HBM3 (driver 580.159.04) from the committed listing's cubin
(tests/difftest/gen.py, run_golden.py, pack.py).

Known divergences are listed in KNOWN with what is wrong; they are strict xfails, so a fix shows up
as a failure to be removed from the list."""

import functools
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / "difftest"))
from gen import K, KERNELS  # noqa: E402
from replay import GOLDEN, replay  # noqa: E402

KNOWN = {
    ("dt_mufu", 2): "__fdividef: MUFU.RCP is the exactly rounded reciprocal, not the hardware approximation",
    ("dt_mufu", 3): "rsqrtf: MUFU.RSQ is exactly rounded, not the hardware approximation (1 ulp, 384 lanes)",
    ("dt_mufu", 4): "__expf: MUFU.EX2 is exactly rounded, not the hardware approximation (1 ulp)",
    ("dt_mufu", 5): "__sinf: MUFU.SIN's argument scaling and approximation are not modelled",
}

CASES = [pytest.param(name, k, id=f"{name}[{k}] {KERNELS[name][k]}",
                      marks=[pytest.mark.xfail(strict=True, reason=KNOWN[name, k])] if (name, k) in KNOWN else [])
         for name in KERNELS for k in range(K)]


@functools.lru_cache(maxsize=None)
def _golden():
    return dict(np.load(GOLDEN / "difftest_sm_90.npz"))


@functools.lru_cache(maxsize=None)
def _emulated(name):
    g = _golden()
    return replay(name, g["A"], g["B"], g["C"])


@pytest.mark.parametrize("name,k", CASES)
def test_bit_exact_against_the_h100(name, k):
    got, want = _emulated(name)[:, k], _golden()[name][:, k]
    bad = np.flatnonzero(got != want)
    if len(bad):
        g, i = _golden(), bad[0]
        pytest.fail(f"{len(bad)} of {len(want)} lanes differ; lane {i}: A={g['A'][i]:#x} B={g['B'][i]:#x} "
                    f"C={g['C'][i]:#x}: emulator {got[i]:#x}, H100 {want[i]:#x}")


def test_golden_files_are_small_and_from_the_h100():
    total = sum(p.stat().st_size for p in GOLDEN.iterdir())
    assert total < 5 * 2**20
    assert "H100" in str(_golden()["device"])
