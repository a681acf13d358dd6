"""MUFU against H100 measurements: the emulator's MUFU instruction equals the H100 on a committed sample
(tests/difftest/golden/mufu_h100_sample.npz, written by scripts/fit_mufu.py --sample from the exhaustive
bench/micro/mufu_tables.py run: random points of every (sign, exponent) slice incl. 0, denormals, inf,
NaN, plus random mantissas of the base slice). Only the functions with a fitted model (gpusim/emu/mufu.py)
are checked; the others are the exactly rounded stand-in and would fail."""
from pathlib import Path

import numpy as np
import pytest

from gpusim.emu import mufu, ops
from gpusim.emu.state import Exec, WarpState
from gpusim.isa.opcodes import load_opcode_table
from gpusim.isa.parser import _parse_instruction

SAMPLE = Path(__file__).parent / "difftest" / "golden" / "mufu_h100_sample.npz"
EXACT = ["RCP", "RSQ", "EX2", "LG2", "RCP64H", "RSQ64H"]


class _Emu:
    def __init__(self, n_warps, values):
        self.state = WarpState(n_warps, 8)
        self.state.R[1] = values


def _mufu(fn, u):
    """MUFU.<fn> R2, R1 through the emulator's handler, 32 lanes a warp."""
    n = -(-u.size // 32) * 32
    vals = np.zeros(n, np.uint32)
    vals[:u.size] = u
    emu = _Emu(n // 32, vals)
    ins = _parse_instruction(0, 0, f"MUFU.{fn} R2, R1", {}, load_opcode_table("sm_90"), "sm_90")
    ops.HANDLERS["MUFU"](Exec(emu, ins, np.arange(n // 32), slice(0, n), np.ones(n, bool), False))
    return emu.state.R[2][:u.size]


@pytest.mark.parametrize("fn", EXACT)
def test_mufu_equals_h100_sample(fn):
    u, want = np.load(SAMPLE)[fn.lower()]
    assert mufu.evaluate(fn, u) is not None, f"MUFU.{fn} has no fitted table"
    got = _mufu(fn, u)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, f"MUFU.{fn}({u[bad[0]]:#010x}): H100 {want[bad[0]]:#010x}, emulator {got[bad[0]]:#010x}"


def test_sample_is_not_exactly_rounded():
    """The sample can fail: the exactly rounded reciprocal differs from the H100 on part of it."""
    u, want = np.load(SAMPLE)["rcp"]
    x = u.view(np.float32).astype(np.float64)
    normal = (np.abs(x) >= 2.0 ** -126) & (np.abs(x) < 2.0 ** 126)
    with np.errstate(all="ignore"):
        rounded = (1.0 / x).astype(np.float32).view(np.uint32)
    assert (rounded[normal] != want[normal]).sum() > 10
