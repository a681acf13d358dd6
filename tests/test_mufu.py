"""MUFU against H100 measurements: the emulator's MUFU instruction equals the H100 on a committed sample
(tests/difftest/golden/mufu_h100_sample.npz, written by scripts/fit_mufu.py --sample from the exhaustive
bench/micro/mufu_tables.py run: random points of every (sign, exponent) slice incl. 0, denormals, inf,
NaN, plus random mantissas of the base slice). SIN and COS were measured as functions of x (the compiler's
FMUL.RZ by 1/2pi, then MUFU): here too, both instructions through the emulator."""
from pathlib import Path

import numpy as np
import pytest

from gpusim.emu import mufu, ops
from gpusim.emu.state import Exec, WarpState
from gpusim.isa.opcodes import load_opcode_table
from gpusim.isa.parser import _parse_instruction

SAMPLE = Path(__file__).parent / "difftest" / "golden" / "mufu_h100_sample.npz"
EXACT = ["RCP", "RSQ", "EX2", "LG2", "RCP64H", "RSQ64H", "SIN", "COS"]


class _Emu:
    def __init__(self, n_warps, values):
        self.state = WarpState(n_warps, 8)
        self.state.R[1] = values


def _mufu(fn, u):
    """MUFU.<fn> R2, R1 through the emulator's handlers, 32 lanes a warp; SIN/COS after the FMUL.RZ
    that __sinf/__cosf compile to (as measured)."""
    n = -(-u.size // 32) * 32
    vals = np.zeros(n, np.uint32)
    vals[:u.size] = u
    emu = _Emu(n // 32, vals)
    code = [f"MUFU.{fn} R2, R1"]
    if fn in ("SIN", "COS"):
        code.insert(0, "FMUL.RZ R1, R1, 0.15915493667125701904")
    for text in code:
        ins = _parse_instruction(0, 0, text, {}, load_opcode_table("sm_90"), "sm_90")
        ops.HANDLERS[ins.opcode](Exec(emu, ins, np.arange(n // 32), slice(0, n), np.ones(n, bool), False))
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


def test_sin_cos_sample_is_not_exactly_rounded():
    """SIN/COS can fail too: the exactly rounded value differs from the H100 on part of the sample."""
    for name, f in (("sin", np.sin), ("cos", np.cos)):
        u, want = np.load(SAMPLE)[name]
        y = mufu.fmul_rz_2pi(u).view(np.float32).astype(np.float64)
        ok = np.isfinite(y) & (np.abs(y) < 1)
        rounded = f(2 * np.pi * y).astype(np.float32).view(np.uint32)
        assert (rounded[ok] != want[ok]).sum() > 10
