"""Functional emulator: every workload matches numpy on sm_35/sm_52/sm_90 at two sizes; the emulated
instruction counts equal the H100's; XMAD and faults behave."""

import csv
import math
from fractions import Fraction

import numpy as np
import pytest
import yaml

from gpusim import REPO_ROOT
from gpusim.emu.emulator import Emulator
from gpusim.emu.run import build_launch, check, emulate
from gpusim.emu.state import Exec, WarpState
from gpusim.emu import ops
from gpusim.errors import EmulationError
from gpusim.isa.opcodes import load_opcode_table
from gpusim.isa.parser import _parse_instruction, parse_listing
from gpusim.workloads import list_workloads, load_workload

CASES = [(wl.name, arch, n) for wl in list_workloads() for arch in wl.archs for n in sorted(wl.sizes)[:2]]


@pytest.mark.parametrize("name,arch,n", CASES, ids=[f"{a}-{b}-{c}" for a, b, c in CASES])
def test_workload_matches_numpy(name, arch, n):
    wl = next(w for w in list_workloads() if w.name == name)
    emu, inputs = emulate(wl, arch, n, record=False)
    report = check(wl, emu, inputs, n)
    assert report and all(r["passed"] for r in report.values()), report


def _measured_counts():
    with open(REPO_ROOT / "validation/h100/instruction_counts.csv") as f:
        return [r for r in csv.DictReader(f) if int(r["size"]) <= 128]


@pytest.mark.parametrize("row", _measured_counts(), ids=lambda r: f"{r['workload']}-{r['size']}")
def test_instruction_count_equals_h100(row):
    """smsp__inst_executed.sum measured by Nsight Compute 2025.3.1 on the H100 (same nvcc 13.0 binary)."""
    wl = next(w for w in list_workloads() if w.name == row["workload"])
    emu, _ = emulate(wl, "sm_90", int(row["size"]), record=False)
    assert emu.warp_instructions == int(row["measured"])


class _FakeEmu:
    arch_family = 52

    def __init__(self, lanes_values):
        self.state = WarpState(1, 16)
        for reg, vals in lanes_values.items():
            self.state.R[reg] = vals


def _run(emu, text, table):
    ins = _parse_instruction(0, 0, text, {}, table, "sm_52")
    ex = Exec(emu, ins, np.array([0]), slice(0, 32), np.ones(32, bool), False)
    ops.HANDLERS[ins.opcode](ex)


def test_xmad_sequence_is_32bit_multiply_add():
    """Maxwell's three-XMAD idiom computes a*b + c mod 2^32 (as ptxas emits it for IMAD)."""
    rng = np.random.default_rng(1)
    table = load_opcode_table("sm_52")
    for _ in range(20):
        a, b, c = (rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32) for _ in range(3))
        emu = _FakeEmu({1: a, 2: b, 3: c})
        _run(emu, "XMAD R4, R1, R2, R3", table)
        _run(emu, "XMAD.MRG R5, R1, R2.H1, RZ", table)
        _run(emu, "XMAD.PSL.CBCC R6, R1.H1, R5.H1, R4", table)
        expect = (a.astype(np.uint64) * b.astype(np.uint64) + c.astype(np.uint64)) & np.uint64(0xFFFFFFFF)
        assert np.array_equal(emu.state.R[6], expect.astype(np.uint32))


def test_ffma_rounds_once():
    """FFMA of three floats whose float64 sum is a float32 midpoint while the exact value is above it
    (the last step of the IEEE division 1 / 4294967040 [difftest golden, dt_mufu; now dt_fdiv]): rounded once, up;
    with .FTZ a denormal result is a zero of its sign."""
    a = np.full(32, 0x2F800001, np.uint32)  # 2^-32 (1 + 2^-23)
    a[1::2] |= np.uint32(0x80000000)  # every other lane negated: -(a * b + c)
    b = np.full(32, 0xB37FFFFE, np.uint32)  # 2^-47 - 2^-24
    emu = _FakeEmu({1: a, 2: b, 3: a.copy()})
    _run(emu, "FFMA R4, R1, R2, R3", load_opcode_table("sm_52"))
    assert (emu.state.R[4] == np.where(np.arange(32) % 2, 0xAF800001, 0x2F800001)).all()
    emu = _FakeEmu({1: np.full(32, 0x00800000, np.uint32), 2: np.full(32, 0x3F000000, np.uint32),
                    3: np.full(32, 0x80000000, np.uint32)})  # 2^-126 * 0.5 + (-0): denormal 2^-127
    _run(emu, "FFMA R4, R1, R2, R3", load_opcode_table("sm_52"))
    _run(emu, "FFMA.FTZ R5, R1, R2, R3", load_opcode_table("sm_52"))
    assert (emu.state.R[4] == 0x00400000).all() and (emu.state.R[5] == 0).all()


def _directed(q, mode):
    """The exact rational q rounded to float64 by mode (None: to nearest), from Python's correctly
    rounded Fraction -> float and one step where that went the wrong way (no overflow here)."""
    r = float(q)
    if mode == "RP" and Fraction(r) < q:
        r = math.nextafter(r, math.inf)
    if mode == "RM" and Fraction(r) > q:
        r = math.nextafter(r, -math.inf)
    if mode == "RZ" and abs(Fraction(r)) > abs(q):
        r = math.nextafter(r, 0.0)
    return r


def test_fp64_directed_rounding():
    """DMUL and DFMA with .RZ/.RM/.RP round the exact value (IEEE division and sqrt slow paths,
    __dmul_ru, __fma_rd): inexact products, products whose rounding error underflows or that lie
    below the subnormal range next to a normal addend (the addend moves one ulp toward the product's
    sign), tiny results, and results past the largest double (.RZ: the largest finite)."""
    rng = np.random.default_rng(5)
    a = rng.uniform(1, 2, 32) * 2.0 ** rng.integers(-540, 540, 32) * rng.choice([-1, 1], 32)
    b = rng.uniform(1, 2, 32) * 2.0 ** rng.integers(-540, 540, 32) * rng.choice([-1, 1], 32)
    c = -a * b * rng.choice([1.0, 1 + 2.0**-40, 2.0**-60, 2.0**50], 32)
    a[:4], b[:4] = [1e-300, -3e-170, 2e-160, 1.5], [3e-30, 1e-160, -7e-155, 1e-320]
    c[:4] = [1.0, 2.5e-310, 0.0, -4e-324]
    table = load_opcode_table("sm_90")
    for mode in ("RZ", "RM", "RP"):
        emu = _FakeEmu({2: a.view(np.uint32)[0::2].copy(), 3: a.view(np.uint32)[1::2].copy(),
                        4: b.view(np.uint32)[0::2].copy(), 5: b.view(np.uint32)[1::2].copy(),
                        6: c.view(np.uint32)[0::2].copy(), 7: c.view(np.uint32)[1::2].copy()})
        _run(emu, f"DFMA.{mode} R8, R2, R4, R6", table)
        _run(emu, f"DMUL.{mode} R10, R2, R4", table)
        got = {r: (emu.state.R[r].astype(np.uint64) | emu.state.R[r + 1].astype(np.uint64) << np.uint64(32))
               .view(np.float64) for r in (8, 10)}
        for i in range(32):
            qa, qb, qc = Fraction(float(a[i])), Fraction(float(b[i])), Fraction(float(c[i]))
            assert got[8][i] == _directed(qa * qb + qc, mode), (mode, i, "DFMA")
            assert got[10][i] == _directed(qa * qb, mode), (mode, i, "DMUL")
    big = np.full(32, 1e300)
    emu = _FakeEmu({2: big.view(np.uint32)[0::2].copy(), 3: big.view(np.uint32)[1::2].copy()})
    for mode, reg in (("RZ", 8), ("RP", 10)):
        _run(emu, f"DMUL.{mode} R{reg}, R2, R2", table)
    hi = {r: emu.state.R[r + 1] for r in (8, 10)}
    assert (hi[8] == 0x7FEFFFFF).all() and (hi[10] == 0x7FF00000).all()


def _demo(data_dir, tmp_path, b_rows="n"):
    spec = yaml.safe_load((data_dir / "demo.yaml").read_text())
    spec["source"] = str(data_dir / "demo_matmul.cu")
    spec["args"][1]["shape"] = [b_rows, "n"]
    path = tmp_path / "demo.yaml"
    path.write_text(yaml.safe_dump(spec))
    return load_workload(path)


def test_out_of_bounds_names_pc_cta_thread(data_dir, tmp_path):
    wl = _demo(data_dir, tmp_path, b_rows="n // 2")  # B too small: the kernel reads past its end
    program = parse_listing(data_dir / "demo_sm_90.sass")
    launch, params, memory, _ = build_launch(wl, program, 64)
    with pytest.raises(EmulationError, match=r"out-of-bounds global access of 4 bytes at address 0x[0-9a-f]+: "
                                             r"kernel \S+, PC 0x[0-9a-f]+ `.*LDG.*`, CTA \(\d+, \d+, 0\), thread"):
        Emulator(program, launch, params, memory).run()


def test_step_limit(data_dir, tmp_path):
    wl = _demo(data_dir, tmp_path)
    program = parse_listing(data_dir / "demo_sm_52.sass")
    launch, params, memory, _ = build_launch(wl, program, 64)
    with pytest.raises(EmulationError, match="step limit 50 exceeded"):
        Emulator(program, launch, params, memory, step_limit=50).run()
