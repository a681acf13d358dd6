"""Issue 13 regressions: real nvcc 13 / sm_90 kernels (tests/data/issue13/kernels13.cu, listings
committed beside it) that the emulator once got wrong, each compared bit-exactly with numpy.

- k13_sum3: `IADD3 R19, R16, R7, R19` (destination = third source) on the fast integer path;
- k13_divu32: I2F.U32.RP / F2I.FTZ.U32.TRUNC (unsigned operand types) and `IMAD.HI.U32 R7, R7, R5, R6`
  whose addend is the register pair R6:R7;
- k13_divu64: CALL.REL.NOINC to `$__internal_0_$__cuda_sm20_div_u64` and RET.REL.NODEC R6 `(kernel),
  IMAD.HI.U32 with a carry-out predicate, I2F.U64.RP / F2I.U64.TRUNC;
- k13_mul64: IMAD.WIDE.U32 with a carry-out predicate and IMAD.WIDE.U32.X with a carry-in.
"""

from pathlib import Path

import numpy as np
import pytest

from gpusim.emu.emulator import Emulator
from gpusim.emu.run import build_launch
from gpusim.isa.parser import parse_listing
from gpusim.workloads import load_workload

DATA = Path(__file__).parent / "data" / "issue13"
KERNELS = ["k13_sum3", "k13_divu32", "k13_divu64", "k13_mul64"]


def emulate_issue13(name: str, n: int = 256):
    wl = load_workload(DATA / f"{name}.yaml")
    program = parse_listing(DATA / f"{name}_sm_90.sass")
    launch, params, memory, inputs = build_launch(wl, program, n)
    emu = Emulator(program, launch, params, memory).run()
    return wl, emu, inputs


@pytest.mark.parametrize("name", KERNELS)
def test_issue13_kernel_is_bit_exact(name):
    n = 256
    wl, emu, inputs = emulate_issue13(name, n)
    for out, ref in wl.reference_outputs(inputs, n).items():
        got = emu.memory.read_buffer(out).view(np.uint32).astype(np.int64)
        want = np.asarray(ref).astype(np.int64) & 0xFFFFFFFF
        bad = np.flatnonzero(got != want)
        assert not len(bad), f"{name}.{out}[{bad[0]}] = {got[bad[0]]:#x}, numpy {want[bad[0]]:#x} ({len(bad)} wrong)"


def test_listing_has_the_forms_under_test():
    """The committed listings still hold the forms the regressions are about."""
    text = {k: (DATA / f"{k}_sm_90.sass").read_text() for k in KERNELS}
    assert "IADD3 R19, R16, R7, R19" in text["k13_sum3"]
    assert "I2F.U32.RP" in text["k13_divu32"] and "F2I.FTZ.U32.TRUNC.NTZ" in text["k13_divu32"]
    assert "IMAD.HI.U32 R7, R7, R5, R6" in text["k13_divu32"]
    assert "CALL.REL.NOINC `($__internal_0_$__cuda_sm20_div_u64)" in text["k13_divu64"]
    assert "RET.REL.NODEC R6 `(k13_divu64)" in text["k13_divu64"]
    assert "IMAD.WIDE.U32.X" in text["k13_mul64"]


def test_call_and_ret_parse_to_targets():
    p = parse_listing(DATA / "k13_divu64_sm_90.sass")
    call = next(i for i in p.instructions if i.opcode == "CALL")
    ret = next(i for i in p.instructions if i.opcode == "RET")
    assert p.instructions[p.by_address[call.srcs[0].value]].address == call.srcs[0].value > call.address
    assert ret.srcs[0].kind == "reg" and ret.srcs[0].reg == 6 and ret.srcs[1].kind == "label"
    assert any(d.kind == "pred" for i in p.instructions if i.opcode == "IMAD" and "HI" in i.modifiers
               for d in i.dsts)  # IMAD.HI.U32 R10, P1, ...: the carry-out predicate is a destination
