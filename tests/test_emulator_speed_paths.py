"""The emulator's fast paths change nothing: specialised handlers (FFMA, loads, stores) give the same
registers, memory, trace log and faults as the generic handlers, and running a batch on through
straight-line code gives the same steps as picking the batch anew at every step."""

from __future__ import annotations

import copy
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from gpusim.emu import emulator as emulator_module
from gpusim.emu import fastint, ops
from gpusim.emu.emulator import Batch, Emulator
from gpusim.emu.run import build_launch
from gpusim.emu.state import Exec
from gpusim.errors import EmulationError
from gpusim.isa.parser import parse_listing
from gpusim.toolchain.listings import load_program
from gpusim.workloads import find_workload, load_workload

DATA = Path(__file__).parent / "data"
CASES = [("sgemm_maxas_64", "sm_90", 128), ("sgemm_maxas_64", "sm_52", 64), ("sgemm_maxas_128", "sm_90", 128),
         ("sgemm_maxas_128", "sm_35", 128), ("dgemm_unroll_db_128b", "sm_52", 128),
         ("coalescedMultiply", "sm_90", 64), ("naiveMatMatMul", "sm_35", 64),
         ("dgemm_unroll_db_128b_prefsmem", "sm_90", 128)]  # (its LDS.128 [Rx+UR4+imm] in compiled blocks)


def _generic_only(monkeypatch):
    monkeypatch.setattr(emulator_module, "specialise", lambda ins, generic, emu: (generic, None))


def _one_step_at_a_time(emu: Emulator) -> Emulator:
    """The plain step rule: every step picks the lowest PC among the runnable warps afresh, and a
    fall-through moves the batch's warps to the next PC at once."""
    while True:
        picked = emu._pick()
        if picked is None:
            return emu
        pc, wids, _ = picked
        jumped = emu._step(pc, Batch(emu, wids))
        emu.steps += 1
        emu.clock += 1
        if not jumped:
            emu.pc[wids] = pc + 1


def _emulate(name, arch, n, one_step=False):
    wl = find_workload(name)
    program = load_program(wl, arch)
    launch, params, memory, _ = build_launch(wl, program, n)
    emu = Emulator(program, launch, params, memory, record=True)
    return _one_step_at_a_time(emu) if one_step else emu.run()


def _same_run(a: Emulator, b: Emulator) -> None:
    assert a.warp_instructions == b.warp_instructions and a.steps == b.steps
    assert a.log.pcs == b.log.pcs
    for field in ("warps", "masks", "exec_masks"):
        assert all(np.array_equal(x, y) for x, y in zip(getattr(a.log, field), getattr(b.log, field))), field
    assert sorted(a.log.mem) == sorted(b.log.mem)
    for step, (addrs, nbytes) in a.log.mem.items():
        assert nbytes == b.log.mem[step][1]
        assert np.array_equal(addrs.astype(np.uint64), b.log.mem[step][0].astype(np.uint64))
    assert np.array_equal(a.memory.arena, b.memory.arena)
    assert np.array_equal(a.shared.words, b.shared.words)
    assert np.array_equal(a.state.R, b.state.R) and np.array_equal(a.state.P, b.state.P)


@pytest.mark.parametrize("name,arch,n", CASES, ids=[f"{a}-{b}-{c}" for a, b, c in CASES])
def test_fast_handlers_match_generic(name, arch, n, monkeypatch):
    fast = _emulate(name, arch, n)
    _generic_only(monkeypatch)
    _same_run(fast, _emulate(name, arch, n))


@pytest.mark.parametrize("name,arch,n", CASES[:3], ids=[f"{a}-{b}-{c}" for a, b, c in CASES[:3]])
def test_running_batches_on_matches_the_step_rule(name, arch, n):
    _same_run(_emulate(name, arch, n), _emulate(name, arch, n, one_step=True))


@pytest.mark.parametrize("arch", ["sm_52", "sm_90"])
def test_a_batch_stops_where_lagging_warps_catch_up(arch):
    """Odd warps start three instructions ahead: the even ones run alone until they reach them,
    then all run as one batch, exactly as the step rule has it."""
    runs = []
    for one_step in (False, True):
        wl = find_workload("sgemm_maxas_64")
        program = load_program(wl, arch)
        launch, params, memory, _ = build_launch(wl, program, 128)
        emu = Emulator(program, launch, params, memory, record=True)
        emu.pc[1::2] = 3
        emu.sanitizer.done_rows[:] = [True] * len(emu.sanitizer.done_rows)  # they skip writes: not UB here
        runs.append(_one_step_at_a_time(emu) if one_step else emu.run())
    _same_run(*runs)
    assert [len(w) for w in runs[0].log.warps[:5]] == [4, 4, 4, 8, 8]


def _sgemm_emulator(arch="sm_90", n=128):
    wl = find_workload("sgemm_maxas_64")
    program = load_program(wl, arch)
    launch, params, memory, _ = build_launch(wl, program, n)
    emu = Emulator(program, launch, params, memory, record=False)
    rng = np.random.default_rng(7)
    emu.state.R[:-1] = rng.standard_normal(emu.state.R[:-1].shape).astype(np.float32).view(np.uint32)
    return emu


def _fused(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a * b + c rounded once to float32 (nearest, ties to even), worked out in exact rationals."""
    out = np.empty(len(a), np.float32)
    for i, (x, y, z) in enumerate(zip(a.tolist(), b.tolist(), c.tolist())):
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        f = np.float32(float(exact))
        near = [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]
        out[i] = min(near, key=lambda v: (abs(Fraction(float(v)) - exact), int(v.view(np.uint32)) & 1))
    return out


# a * b + c whose float64 sum lands exactly halfway between two floats (the exact value just above it):
# the last FFMA of the IEEE division 1 / 4294967040, 2^-32 (1 + 2^-23) * (2^-47 - 2^-24) + 2^-32 (1 + 2^-23)
# = 2^-32 (1 + 2^-24 + 2^-70), which rounds up; rounded through float64 it went down [difftest, dt_mufu; now dt_fdiv]
_MIDPOINT = np.array([0x2F800001, 0xB37FFFFE, 0x2F800001], np.uint32).view(np.float32)


@pytest.mark.parametrize("lanes", [slice(0, None), slice(32, 96)], ids=["all-lanes", "some-lanes"])
def test_ffma_fast_path_is_fused_rounding(lanes):
    """d = a * b + c rounded once (where the float64 sum is a float32 midpoint too), with a
    multiplicand's cached float64 copy dropped when its register is written."""
    emu = _sgemm_emulator()
    pc = next(i.index for i in emu.program.instructions if i.opcode == "FFMA" and i.guard is None)
    ins = emu.program.instructions[pc]
    ra, rb, rc = (s.reg for s in ins.srcs)
    rd = ins.dsts[0].reg
    R = emu.state.R
    sel = slice(lanes.start, lanes.stop or R.shape[1])
    wids = np.arange(sel.start // 32, sel.stop // 32)
    for k, (r, v) in enumerate(zip((ra, rb, rc), _MIDPOINT)):  # plant the midpoint in 8 lanes, every other
        planted = np.full(8, v, np.float32)  # one negated (a and c negated: the result negated)
        if k != 1:
            planted[1::2] *= -1
        R[r, sel.start + 5:sel.start + 45:5] = planted.view(np.uint32)
    for _ in range(2):
        a, b, c = (R[r, sel].view(np.float32) for r in (ra, rb, rc))
        expect = _fused(a, b, c)
        assert not np.array_equal(expect, (a.astype(np.float64) * b + c).astype(np.float32))  # the trap is set
        emu.handlers[pc](Exec(emu, ins, wids, sel, np.ones(sel.stop - sel.start, bool), False, True))
        assert np.array_equal(R[rd, sel], expect.view(np.uint32))
        ex = Exec(emu, replace(ins, opcode="MOV", srcs=(ins.srcs[2],), dsts=(ins.srcs[0],)), wids, sel,
                  np.ones(sel.stop - sel.start, bool), False, True)
        ops.HANDLERS["MOV"](ex)  # overwrite the multiplicand a: the next FFMA must see the new value


@pytest.mark.parametrize("lanes", [slice(0, None), slice(32, 96)], ids=["all-lanes", "some-lanes"])
def test_ffma_fast_path_gives_the_generic_bits_with_nans_and_infinities(lanes):
    """NaN results are the canonical 0x7FFFFFFF, infinities and overflow as the generic handler has
    them, also with the destination one of the sources (such batches leave the compiled loop for
    the numpy route: an infinite or NaN float64 sum has its low bits zero)."""
    emu = _sgemm_emulator()
    R = emu.state.R
    sel = slice(lanes.start, lanes.stop or R.shape[1])
    wids = np.arange(sel.start // 32, sel.stop // 32)
    specials = np.array([np.nan, -np.nan, np.inf, -np.inf, 3e38, -3e38, 1e-45, 0.0], np.float32)
    tried = 0
    for ins in emu.program.instructions:
        if ins.opcode != "FFMA" or ins.guard is not None or emu.handlers[ins.index].__name__ != "ffma":
            continue  # (the fast handler's closure is named ffma)
        rows = [s.reg for s in ins.srcs]
        for k, r in enumerate(rows):  # a special value in every 3rd lane of each source, staggered
            R[r, sel.start + k:sel.stop:3] = np.resize(np.roll(specials, k), len(range(sel.start + k, sel.stop, 3))
                                                       ).view(np.uint32)
        before = R.copy()
        emu.handlers[ins.index](Exec(emu, ins, wids, sel, np.ones(sel.stop - sel.start, bool), False, True))
        fast = R.copy()
        R[:] = before
        emu.state.forget(ins.dsts[0].reg)
        ops.handler("sm_90", ins)(Exec(emu, ins, wids, sel, np.ones(sel.stop - sel.start, bool), False, True))
        assert np.array_equal(fast, R), ins.text
        assert (fast[ins.dsts[0].reg, sel] == 0x7FFFFFFF).any()
        tried += 1
        if tried == 4:
            break
    assert tried == 4


def _fault(emu_factory, monkeypatch, generic: bool) -> str:
    with monkeypatch.context() as m:
        if generic:
            _generic_only(m)
        with pytest.raises(EmulationError) as err:
            emu_factory().run()
    return str(err.value)


@pytest.mark.parametrize("name, n", [("sgemm_maxas_64", 64), ("dgemm_unroll_db_128b_prefsmem", 128)])  # [Rx + imm], [Rx + URy + imm]
def test_shared_fault_is_the_generic_fault(name, n, monkeypatch):
    """Shared memory made too small: the fast path declines and the same fault is reported."""
    wl = find_workload(name)
    program = load_program(wl, "sm_90")
    small = replace(program, shared_bytes=program.shared_bytes // 2)
    launch, params, memory, _ = build_launch(wl, program, n)

    def factory():
        return Emulator(small, launch, params, copy.deepcopy(memory), record=True)

    fast, generic = _fault(factory, monkeypatch, False), _fault(factory, monkeypatch, True)
    assert fast == generic and "out-of-bounds shared access" in fast and "CTA (" in fast


@pytest.mark.parametrize("arch", ["sm_52", "sm_90"])
def test_global_fault_is_the_generic_fault(arch, monkeypatch, tmp_path):
    """B too small: the load past its end faults with the same PC, CTA, thread and address."""
    import yaml

    spec = yaml.safe_load((DATA / "demo.yaml").read_text())
    spec["source"] = str(DATA / "demo_matmul.cu")
    spec["args"][1]["shape"] = ["n // 2", "n"]
    (tmp_path / "demo.yaml").write_text(yaml.safe_dump(spec))
    wl = load_workload(tmp_path / "demo.yaml")
    program = parse_listing(DATA / f"demo_{arch}.sass")
    launch, params, memory, _ = build_launch(wl, program, 64)

    def factory():
        return Emulator(program, launch, params, copy.deepcopy(memory))

    fast, generic = _fault(factory, monkeypatch, False), _fault(factory, monkeypatch, True)
    assert fast == generic and "out-of-bounds global access" in fast


INTEGER_FORMS = {
    "sm_52": ["IADD R4, R1, R2", "IADD32I R4, R1, 0x7fffffff", "IADD R4.CC, R1, R2", "IADD.X R4, R1, R2",
              "IADD.X R4.CC, R1, c[0x0][0x8]", "ISCADD R4.CC, R1, R2, 0x2", "ISCADD.X R4, R1, R2, 0x2", "SHL R4, R1, 0x1f", "SHR R4, R1, 0x5",
              "SHR.U32 R4, R1, 0x1f", "ISCADD R4, R1, R2, 0x4", "LOP32I.XOR R4, R1, 0xffff0000",
              "LOP.OR R4, R1, R2", "MOV R4, R1", "MOV R4, c[0x0][0x8]", "FMUL R4, R1, R2",
              "FMUL R4, R1, c[0x0][0x8]"],
    "sm_90": ["IADD3 R4, R1, 0x10, R2", "IADD3 R4, R1, R2, R3", "LEA R4, R1, R2, 0x2", "LEA R4, R1, UR4, 0x3",
              "IMAD R4, R1, 0x7, R2", "IMAD R4, R1, R2, R3", "IMAD.MOV.U32 R4, RZ, RZ, R1", "IMAD.SHL.U32 R4, R1, 0x4, RZ",
              "IMAD.IADD R4, R1, 0x1, R2", "IMAD.WIDE R4, R1, 0x4, R6", "IMAD.WIDE R4, R1, R2, R6",
              "IMAD.WIDE.U32 R4, R1, R2, R6", "IMAD.WIDE.U32 R4, R1, 0x8, RZ", "MOV R4, UR5", "MOV R4, R1",
              "ISETP.GE.AND P0, PT, R1, UR5, PT", "ISETP.GT.U32.OR P1, P2, R1, R2, !P3",
              "ISETP.NE.XOR P3, P4, R1, 0x10, P3", "ISETP.LT.AND P3, P4, R1, R2, P3"]
             + [f"LOP3.LUT R4, R1, R2, R3, {lut:#x}, !PT" for lut in sorted(fastint._LUTS)]
             + ["LOP3.LUT R4, R1, 0xff00, RZ, 0xc0, !PT"],
}


@pytest.mark.parametrize("arch", sorted(INTEGER_FORMS))
def test_integer_forms_match_generic(arch):
    """Random registers (all bit patterns, so overflow, sign and wrap-around all occur)."""
    from gpusim.emu.fast import specialise
    from gpusim.isa.opcodes import load_opcode_table
    from gpusim.isa.parser import _parse_instruction

    table = load_opcode_table(arch)
    emu = _sgemm_emulator(arch, 128)
    rng = np.random.default_rng(3)
    emu.state.R[:-1] = rng.integers(0, 2**32, emu.state.R[:-1].shape, dtype=np.uint64).astype(np.uint32)
    emu.state.UR[:] = rng.integers(0, 2**32, emu.state.UR.shape, dtype=np.uint64).astype(np.uint32)
    n = emu.state.R.shape[1]
    emu.state.CC[:] = rng.integers(0, 2, n).astype(bool)
    emu.state.P[:7] = rng.integers(0, 2, (7, n)).astype(bool)
    for text in INTEGER_FORMS[arch]:
        ins = _parse_instruction(0, 0, text, {}, table, arch)
        generic = ops.HANDLERS[ins.opcode]
        fast, _ = specialise(ins, generic, emu)
        assert fast is not generic, text
        results = []
        for handler in (fast, generic):
            saved, saved_cc, saved_p = emu.state.R.copy(), emu.state.CC.copy(), emu.state.P.copy()
            with np.errstate(all="ignore"):  # random bits make FMUL overflow and NaN
                handler(Exec(emu, ins, np.arange(n // 32), slice(0, n), np.ones(n, bool), False, True))
            results.append(np.concatenate([emu.state.R.ravel(), emu.state.CC, emu.state.P.ravel()]))
            emu.state.R[:], emu.state.CC[:], emu.state.P[:] = saved, saved_cc, saved_p
            emu.state.forget(4)
            emu.state.forget(5)
        assert np.array_equal(*results), text
