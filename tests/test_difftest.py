"""Replay of the H100 golden runs (tests/difftest, first family): each difftest kernel's SASS is
emulated on the same edge inputs and every output must equal the GPU's bit for bit. The golden
outputs come from one GPU run of the committed listing's cubin (tests/difftest/gen.py,
device_run.sh, pack.py); while the golden file is not a run of the committed cubin (its sha256 is
recorded with the device), the replay cases are skipped, nothing else.

Known divergences are listed in KNOWN with what is wrong; they are strict xfails, so a fix shows up
as a failure to be removed from the list."""

import functools
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / "difftest"))
import gen  # noqa: E402
from replay import GOLDEN, LISTING, replay  # noqa: E402

from gpusim.isa.parser import parse_listing  # noqa: E402

NPZ = GOLDEN / "difftest_sm_90.npz"
K, KERNELS = gen.K, gen.KERNELS
# none left: every MUFU form of dt_approx and dt_trig is modelled bit-exact (gpusim/emu/mufu.py)
KNOWN = {}

CASES = [pytest.param(name, k, id=f"{name}[{k}] {KERNELS[name][k]}",
                      marks=[pytest.mark.xfail(strict=True, reason=KNOWN[name, k])] if (name, k) in KNOWN else [])
         for name in KERNELS for k in range(K)]


@functools.lru_cache(maxsize=None)
def _golden():
    return dict(np.load(NPZ))


def measured() -> bool:
    """Whether the golden file is a GPU run of the committed cubin."""
    return NPZ.exists() and f"cubin sha256 {gen.CUBIN_HASH.read_text().strip()}" in str(np.load(NPZ)["device"])


needs_golden = pytest.mark.skipif(not measured(), reason=f"{NPZ.name} is not a run of the committed cubin yet "
                                                         "(tests/difftest/device_run.sh, then pack.py)")


@functools.lru_cache(maxsize=None)
def _emulated(name):
    g = _golden()
    return replay(name, g["A"], g["B"], g["C"])


@needs_golden
@pytest.mark.parametrize("name,k", CASES)
def test_bit_exact_against_the_h100(name, k):
    got, want = _emulated(name)[:, k], _golden()[name][:, k]
    bad = np.flatnonzero(got != want)
    if len(bad):
        g, i = _golden(), bad[0]
        pytest.fail(f"{len(bad)} of {len(want)} lanes differ; lane {i}: A={g['A'][i]:#x} B={g['B'][i]:#x} "
                    f"C={g['C'][i]:#x}: emulator {got[i]:#x}, H100 {want[i]:#x}")


def test_golden_files_are_small():
    assert sum(p.stat().st_size for p in GOLDEN.iterdir()) < 5 * 2**20


@needs_golden
def test_golden_file_is_from_the_h100_and_the_committed_inputs():
    g = _golden()
    assert "H100" in str(g["device"])
    for x, values in gen.inputs().items():
        assert (g[x] == np.array(values, np.uint64)).all(), x


def test_committed_listing_has_every_kernel():
    for name in KERNELS:
        assert len(parse_listing(LISTING, name).instructions) > 10, name
