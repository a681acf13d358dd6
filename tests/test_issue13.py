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


class _Emu:
    arch_family = 90

    def __init__(self):
        from gpusim.emu.state import WarpState

        self.state = WarpState(1, 16)
        self.cbank0 = np.zeros(64, np.uint32)


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("text", ["ISETP.GE.AND P0, P1, R0, R1, P0", "IADD3 R4, R7, R5, R4", "IADD3 R4, R4, R4, R4",
                                  "IMAD R4, R7, R5, R4", "LEA R4, R7, R4, 0x2"])
def test_sources_are_read_before_the_destination_is_written(text, fast):
    """Every source holds its value from before the instruction, on the generic and the fast path."""
    from gpusim.emu import fastint, ops
    from gpusim.emu.state import Exec
    from gpusim.isa.opcodes import load_opcode_table
    from gpusim.isa.parser import _parse_instruction

    ins = _parse_instruction(0, 0, text, {}, load_opcode_table("sm_90"), "sm_90")
    emu = _Emu()
    rng = np.random.default_rng(1)
    emu.state.R[:16] = rng.integers(0, 2**32, (16, 32), dtype=np.uint64).astype(np.uint32)
    emu.state.P[0] = rng.integers(0, 2, 32).astype(bool)
    r = emu.state.R.astype(np.uint64)
    p0 = emu.state.P[0].copy()
    generic = ops.HANDLERS[ins.opcode]
    run = fastint.MAKERS[ins.opcode](ins, generic, emu) if fast else generic
    assert run is not None
    run(Exec(emu, ins, np.array([0]), slice(0, 32), np.ones(32, bool), False, True))
    m = np.uint64(0xFFFFFFFF)
    if ins.opcode == "ISETP":
        cond = r[0].astype(np.int64).astype(np.int32) >= r[1].astype(np.int64).astype(np.int32)
        assert (emu.state.P[0] == (cond & p0)).all() and (emu.state.P[1] == (~cond & p0)).all()
        return
    a, b, c = (r[op.reg] if op.kind == "reg" else np.uint64(op.value) for op in ins.srcs[:3])
    want = {"IADD3": lambda: (a + b + c) & m, "IMAD": lambda: (a * b + c) & m,
            "LEA": lambda: ((a << c) + b) & m}[ins.opcode]()
    assert (emu.state.R[4] == want.astype(np.uint32)).all()


# ---- every run checks its outputs ------------------------------------------------------------------
def _gpusim(*args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "gpusim", *args], capture_output=True, text=True)


def _wrong_spec(tmp_path):
    """simpleMultiply with a reference that is off by 0.5 on row 5."""
    from gpusim import TRACES_DIR

    text = (TRACES_DIR / "workloads" / "simpleMultiply.yaml").read_text()
    text = text.replace("source: ../kernels/seed003_aat.cu", f"source: {TRACES_DIR / 'kernels' / 'seed003_aat.cu'}")
    assert 'c: "a @ a.T"' in text
    path = tmp_path / "simpleMultiply.yaml"
    path.write_text(text.replace('c: "a @ a.T"', 'c: "a @ a.T + 0.5 * (np.arange(n) == 5)[:, None]"'))
    return path


def test_run_and_trace_stop_on_a_wrong_reference(tmp_path):
    spec = _wrong_spec(tmp_path)
    for args in (["run", str(spec), "--gpu", "h100", "--size", "64"],
                 ["trace", str(spec), "--arch", "sm_90", "--size", "64", "-o", str(tmp_path / "t.npz")]):
        out = _gpusim(*args)
        assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr
        assert out.stderr.count("\n") == 1, out.stderr
        assert "wrong result: c[5, 0] = " in out.stderr and "numpy reference" in out.stderr
        assert "cycles" not in out.stdout
    assert not (tmp_path / "t.npz").exists()
    out = _gpusim("run", str(spec), "--gpu", "h100", "--size", "64", "--no-check", "--json", str(tmp_path / "r.json"))
    assert out.returncode == 0 and "output check: skipped" in out.stdout
    import json

    assert json.loads((tmp_path / "r.json").read_text())["checked"] is False


def test_partial_run_checks_what_its_ctas_wrote():
    """Sampled mode emulates some CTAs: the check compares the elements their stores wrote, and a
    wrong one among them is named."""
    from gpusim.emu.run import emulate, verify
    from gpusim.errors import WrongResultError
    from gpusim.workloads import find_workload

    wl = find_workload("simpleMultiply")
    emu, inputs = emulate(wl, "sm_90", 128, ctas=[1, 6])
    report = verify(wl, emu, inputs, 128)
    assert report["c"]["elements"] == 2 * 32 * 32 and report["c"]["of"] == 128 * 128
    c = emu.memory.read_buffer("c").view(np.float32).reshape(128, 128)
    c[70, 40] += 1.0  # CTA 6 of the 4 x 4 grid is blockIdx (2, 1): rows 32..63, columns 64..95
    c[40, 70] += 1.0
    with pytest.raises(WrongResultError, match=r"c\[40, 70\]"):
        verify(wl, emu, inputs, 128)


@pytest.mark.parametrize("name", ["naiveMatMatMul", "sgemm_maxas_64", "dgemm_unroll"])
def test_partial_run_references_equal_the_full_ones(name):
    """A partial run evaluates matrix-product and einsum references only at the stored elements:
    the same values as the full numpy reference there."""
    from gpusim.emu.run import _deferred_references, emulate, stored_words
    from gpusim.workloads import find_workload

    wl = find_workload(name)
    n = 256
    emu, inputs = emulate(wl, "sm_90", n, ctas=[0, emu_last := wl.geometry(n)[0][0] * wl.geometry(n)[0][1] - 1])
    full, lazy = wl.reference_outputs(inputs, n), _deferred_references(wl, inputs, n)
    out = next(iter(full))
    arg = next(a for a in wl.args if a.name == out)
    words = stored_words(emu)[out]
    per = 2 if arg.dtype == "float64" else 1
    mask = words.reshape(-1, per).any(axis=1).reshape(wl.buffer_shape(arg, n), order=arg.order)
    assert 0 < mask.sum() < mask.size and emu_last > 0
    assert np.allclose(lazy[out].values(mask), full[out][mask], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["sgemm_maxas_64", "dgemm_unroll"])
def test_partial_check_is_the_masked_comparison(name):
    """check() of a partial run finds the stored elements from the written words' indices: the same
    report as comparing the buffer and the deferred reference under the mask of stored elements
    (outputs in column-major order, 4- and 8-byte elements)."""
    from gpusim.emu.run import _compare, _deferred_references, check, emulate, stored_words
    from gpusim.workloads import find_workload
    from gpusim.workloads.spec import DTYPES

    wl = find_workload(name)
    n = 256
    emu, inputs = emulate(wl, "sm_90", n, ctas=[1, 2])
    report = check(wl, emu, inputs, n)
    out = next(iter(wl.reference))
    arg = next(a for a in wl.args if a.name == out)
    shape = wl.buffer_shape(arg, n)
    assert arg.order == "F"
    per = 2 if arg.dtype == "float64" else 1
    mask = stored_words(emu)[out].reshape(-1, per).any(axis=1).reshape(shape, order=arg.order)
    values = emu.memory.read_buffer(out).view(DTYPES[arg.dtype]).reshape(shape, order=arg.order)
    ref = _deferred_references(wl, inputs, n)[out].values(mask)
    want = _compare(values[mask], ref, np.flatnonzero(mask), shape, wl.default_tolerance(), False)
    assert report[out] == want and 0 < want["elements"] < mask.size
    values[np.unravel_index(np.flatnonzero(mask)[-1], shape)] += 1.0  # the last stored element, wrong
    wrong = check(wl, emu, inputs, n)[out]
    assert not wrong["passed"] and wrong["first_wrong"]["index"] == list(np.argwhere(mask)[-1])


@pytest.mark.parametrize("name", ["sgemm_maxas_64", "sgemm_naive_colmajor", "simpleMultiply"])
def test_float32_product_operands_are_widened_late_to_the_same_bits(name, monkeypatch):
    """A float32 input used only as an operand of `@` stays float32 until the deferred product
    evaluates its rows and columns: the same bits as widening the whole input first."""
    from gpusim.emu import run
    from gpusim.workloads import find_workload

    wl = find_workload(name)
    n = 128
    inputs = wl.make_inputs(n)
    out = next(iter(wl.reference))
    late = run._deferred_references(wl, inputs, n)[out]
    assert any(inputs[k].dtype == np.float32 for k in run._only_multiplied(wl.reference.values(), set(inputs))
               if isinstance(inputs[k], np.ndarray))  # the late path is taken
    monkeypatch.setattr(run, "_only_multiplied", lambda exprs, names: set())
    early = run._deferred_references(wl, inputs, n)[out]
    positions = np.random.default_rng(3).choice(n * n, 500, replace=False)
    positions.sort()
    assert np.array_equal(late.values_at(positions), early.values_at(positions))
    assert np.array_equal(np.asarray(late), np.asarray(early))


def test_only_product_operands_are_widened_late():
    from gpusim.emu.run import _only_multiplied

    names = {"A", "B", "alpha"}
    assert _only_multiplied(["alpha * (A.T @ B)"], names) == {"A", "B"}
    assert _only_multiplied(["A @ B + A"], names) == {"B", "alpha"}
    assert _only_multiplied(["np.einsum('ij,jk->ik', A, B)"], names) == {"alpha"}
    assert _only_multiplied(["A[0] @ B", "B.T"], names) == {"alpha"}


# ---- undefined behaviour is loud ---------------------------------------------------------------------
@pytest.mark.parametrize("name,n,match", [
    ("k13_undef_reg", 64, r"read of register R7, never written by this lane: kernel k13_undef_reg, PC 0x0090 "
                          r"`IADD3 R7, R7, 0x1, RZ`, CTA \(0, 0, 0\), thread \(0, 0, 0\), warp 0, lane 0"),
    ("k13_smem_overrun", 5, r"out-of-bounds shared access of 4 bytes .* at address 0x480: kernel k13_smem_overrun, "
                            r"PC 0x0100 `LDS R9, \[R6\]`, CTA \(0, 0, 0\), thread \(28, 0, 0\), warp 0, lane 28"),
    ("k13_misaligned", 3, r"misaligned global access of 8 bytes at address 0x7f0000000004: kernel k13_misaligned, "
                          r"PC 0x0080 `LDG.E.64 R2, desc\[UR4\]\[R2.64\]`, CTA \(0, 0, 0\), thread \(0, 0, 0\), "
                          r"warp 0, lane 0"),
])
def test_undefined_behaviour_is_one_error_line(name, n, match):
    from gpusim.errors import EmulationError

    with pytest.raises(EmulationError, match=match) as info:
        emulate_issue13(name, n)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("name,n", [("k13_smem_overrun", 1), ("k13_misaligned", 2)])
def test_the_same_kernels_run_clean_in_bounds(name, n):
    from gpusim.emu.run import verify

    wl, emu, inputs = emulate_issue13(name, n)
    assert verify(wl, emu, inputs, n)


def test_a_cta_outside_the_grid_is_refused():
    from gpusim.emu.run import emulate
    from gpusim.errors import EmulationError
    from gpusim.workloads import find_workload

    with pytest.raises(EmulationError, match="CTA 5 is outside the grid of 1 CTAs"):
        emulate(find_workload("dgemm_unroll"), "sm_90", 128, ctas=[0, 5])
