"""Accel-Sim SASS trace export/import (format of accel-sim-framework's NVBit tracer, version 5)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from gpusim.emu.run import build_launch
from gpusim.errors import TraceFormatError
from gpusim.isa.parser import parse_listing
from gpusim.trace import run_traced
from gpusim.trace.accelsim import (
    AccelSimKernel, compress_addresses, export_accelsim, import_accelsim, parse_instruction_line,
    read_kernel_trace, to_dynamic_trace, tracer_registers, width_from_opcode,
)
from gpusim.workloads import load_workload

DATA = Path(__file__).parent / "data"
N = 40  # edge tiles: partial masks, guarded-off loads


@pytest.fixture(scope="module")
def workload():
    return load_workload(DATA / "demo.yaml")


@pytest.fixture(scope="module", params=["sm_52", "sm_90"])
def exported(request, workload, tmp_path_factory):
    program = parse_listing(DATA / f"demo_{request.param}.sass")
    launch, params, memory, _ = build_launch(workload, program, N)
    _, trace = run_traced(program, launch, params, memory, ctas=[0, 3], workload=workload, size=N)
    out = tmp_path_factory.mktemp(f"accelsim_{request.param}")
    path = export_accelsim(trace, program, out, memcpys=[(memory.address_of("A"), N * N * 4)])
    return program, trace, out, path


def test_round_trip_reproduces_the_instruction_stream(exported, workload):
    program, trace, out, _ = exported
    app = import_accelsim(out / "kernelslist.g")
    assert len(app.kernels) == 1 and len(app.memcpys) == 1
    kernel = app.kernels[0]
    assert kernel.n_warp_instructions == trace.n_warp_instructions
    # per warp, straight from the parsed file: pcs, masks, addresses, widths
    wpc = trace.header["warps_per_cta"]
    for (x, y, z, w), stream in kernel.warps.items():
        recs = trace.warp_stream(kernel.cta_linear(x, y, z) * wpc + w)
        assert [i.pc for i in stream] == [program.instructions[p].address for p in recs["pc_index"]]
        assert [i.mask for i in stream] == recs["exec_mask"].tolist()
        assert [i.opcode for i in stream] == [program.instructions[p].full_opcode for p in recs["pc_index"]]
        mem = recs["mem_row"]
        assert [i.addresses is not None for i in stream] == (mem >= 0).tolist()
        got = np.array([i.addresses for i in stream if i.addresses is not None], dtype=np.uint64).reshape(-1, 32)
        assert np.array_equal(got, trace.addresses[mem[mem >= 0]])
        assert [i.mem_width for i in stream if i.addresses is not None] == trace.access_bytes[mem[mem >= 0]].tolist()
        assert all(i.unit == program.instructions[p].unit for i, p in zip(stream, recs["pc_index"]))
    # and back into a DynamicTrace
    back = to_dynamic_trace(kernel, program, workload=workload, size=N)
    for f in ("warp", "seq", "pc_index", "exec_mask", "mem_row"):
        assert np.array_equal(back.records[f], trace.records[f]), f
    assert np.array_equal(back.addresses, trace.addresses)
    assert np.array_equal(back.access_bytes, trace.access_bytes)
    assert back.header["ctas"] == trace.header["ctas"] == [0, 3]
    assert back.header["dynamic_shared_bytes"] == 0 and not back.header["active_mask_exact"]


def test_header_fields(exported):
    program, trace, out, path = exported
    assert (out / "kernelslist.g").read_text().splitlines()[-1] == "kernel-1.traceg"
    text = path.read_text().splitlines()
    shmem = 8192  # 2 x 32x32 floats; sm_90's listing adds the 1 KB reserved region the driver leaves out
    assert text[:13] == [
        f"-kernel name = {program.kernel}", "-kernel id = 1", "-grid dim = (2,2,1)", "-block dim = (32,32,1)",
        f"-shmem = {shmem}", f"-nregs = {program.registers}",
        f"-binary version = {program.arch[3:]}", "-cuda stream id = 0",
        "-shmem base_addr = 0x00007fff00000000", "-local mem base_addr = 0x00007fff01000000",
        "-nvbit version = 1.7", "-accelsim tracer version = 5", "-enable lineinfo = 0"]
    assert text[14].startswith("#traces format = [line_num] PC mask dest_num")
    k = read_kernel_trace(path)
    assert k.header["grid"] == [2, 2, 1] and k.header["block"] == [32, 32, 1]
    assert k.header["nregs"] == program.registers and k.header["shmem"] == shmem
    assert k.header["kernel_name"] == program.kernel and k.header["tracer_version"] == 5
    assert sorted({key[:3] for key in k.warps}) == [(0, 0, 0), (1, 1, 0)]
    body = [ln for ln in text if re.match(r"^[0-9a-f]{4,} ", ln)]
    assert all(re.match(r"^[0-9a-f]{4,} [0-9a-f]{8} [01] ", ln) for ln in body)
    assert text.count("#BEGIN_TB") == text.count("#END_TB") == 2


def test_registers_as_the_tracer_lists_them():
    program = parse_listing(DATA / "demo_sm_90.sass")
    by_text = {i.text.split(";")[0]: i for i in program.instructions}

    def regs(prefix):
        return tracer_registers(next(i for t, i in by_text.items() if t.startswith(prefix)))

    assert regs("IMAD.WIDE R6, R7, 0x4, R2") == ((6,), (7, 2))  # 64-bit operands by base register
    assert regs("STS [R3], R18") == ((), (3, 18))  # operand 0 is memory: no destination
    assert regs("ISETP.GE.AND P0, PT, R6, 0x1, PT") == ((), (6,))  # predicates are not listed
    assert regs("@!P1 LDG.E.CONSTANT R18, desc[UR8][R8.64]") == ((18,), (8,))
    assert regs("HFMA2.MMA R27, -RZ, RZ, 0, 0") == ((27,), (255, 255))  # RZ is R255
    assert regs("S2R R25, SR_CTAID.Y") == ((25,), ())
    assert regs("LEA R5, R21, UR6, 0x7") == ((5,), (21,))  # uniform registers are not listed


def test_width_and_address_compression():
    assert [width_from_opcode(o) for o in ("LDG.E.128", "LDS.U.128", "LDG.E.U8", "STG.E", "LDG.E.64.CONSTANT",
                                           "LDS.U.32")] == [16, 16, 1, 4, 8, 4]
    a = np.zeros(32, np.uint64)
    a[:] = 0x7F0000000100 + 4 * np.arange(32, dtype=np.uint64)
    assert compress_addresses(a, 0xFFFFFFFF) == "1 0x7f0000000100 4"
    assert compress_addresses(a, 0x000000FF) == "1 0x7f0000000100 4"
    assert compress_addresses(a, 0) == "1 0x0 0"
    assert compress_addresses(a, 0x00000100) == "2 0x7f0000000120"  # one lane: base only
    assert compress_addresses(a, 0x00000F0F) == "2 0x7f0000000100 4 4 4 20 4 4 4"  # two runs
    b = a[::-1].copy()
    assert compress_addresses(b, 0x7) == "1 0x7f000000017c -4"
    c = a.copy()
    c[1] = 0x100
    s = compress_addresses(c, 0x7)
    assert s == f"2 0x7f0000000100 {0x100 - 0x7F0000000100} {0x7F0000000108 - 0x100}"
    # each compressed form decodes back to the same lanes
    for addrs, mask in ((a, 0xFFFFFFFF), (a, 0x00000F0F), (b, 0x7), (c, 0x7), (a, 0x100), (a, 0)):
        ins = parse_instruction_line(f"0010 {mask:08x} 1 R4 LDG.E 1 R2 4 {compress_addresses(addrs, mask)} 0 ")
        lanes = (mask >> np.arange(32)) & 1 == 1
        assert np.array_equal(ins.addresses, np.where(lanes, addrs, 0))
        assert ins.mem_width == 4 and ins.dsts == (4,) and ins.srcs == (2,)


def test_other_line_variants():
    # TOOL_COMPRESS=0 lists every active address; version 3 has no immediate; lineinfo adds a field
    ins = parse_instruction_line("0020 00000005 0 STG.E.64 2 R2 R4 8 0 0x00007f0000000010 0x00007f0000000030 ",
                                 tracer_version=3)
    assert ins.mem_width == 8 and ins.addresses[0] == 0x7F0000000010 and ins.addresses[2] == 0x7F0000000030
    assert ins.addresses[1] == 0 and ins.immediate == 0
    ins = parse_instruction_line("17 0030 ffffffff 0 DEPBAR.LE 0 0 1 ", lineinfo=1)
    assert ins.line_num == 17 and ins.pc == 0x30 and ins.immediate == 1
    ins = parse_instruction_line("1 0 0 3 0000 ffffffff 1 R1 IMAD.MOV.U32 2 R255 R255 0", tracer_version=2)
    assert ins.opcode == "IMAD.MOV.U32" and ins.srcs == (255, 255) and ins.mem_width == 0


def _corrupt(path: Path, dst: Path, pattern: str, replace) -> tuple[Path, int]:
    lines = path.read_text().splitlines()
    no = next(i for i, ln in enumerate(lines) if re.search(pattern, ln))
    lines[no] = replace(lines[no])
    dst.write_text("\n".join(lines) + "\n")
    return dst, no + 1


def test_malformed_line_names_file_and_line(exported, tmp_path):
    _, _, _, path = exported
    bad, no = _corrupt(path, tmp_path / "kernel-1.traceg", r" FFMA ", lambda ln: ln.replace(" ffffffff ", " zzzz ", 1))
    with pytest.raises(TraceFormatError, match="mask") as e:
        read_kernel_trace(bad)
    assert f"{bad}:{no}" in str(e.value) and "\n" not in str(e.value)
    bad, no = _corrupt(path, tmp_path / "k2.traceg", r" LDS", lambda ln: ln.rsplit(" ", 4)[0])
    with pytest.raises(TraceFormatError) as e:
        read_kernel_trace(bad)
    assert f"{bad}:{no}" in str(e.value)
    bad, no = _corrupt(path, tmp_path / "k3.traceg", r" FFMA ", lambda ln: ln.replace(" FFMA ", " FROB.X "))
    with pytest.raises(TraceFormatError, match="FROB.X is not in the sm_") as e:
        read_kernel_trace(bad)
    assert f"{bad}:{no}" in str(e.value)
    bad, no = _corrupt(path, tmp_path / "k4.traceg", r"^insts = ", lambda ln: "insts = 3")
    with pytest.raises(TraceFormatError, match="insts = 3"):
        read_kernel_trace(bad)
    bad = tmp_path / "k5.traceg"
    bad.write_text(path.read_text().rsplit("#END_TB", 1)[0])
    with pytest.raises(TraceFormatError, match="truncated"):
        read_kernel_trace(bad)


def test_trace_of_another_program_is_rejected(exported):
    program, _, _, path = exported
    other = parse_listing(DATA / "demo_sm_35.sass")  # same kernel name, other code
    kernel: AccelSimKernel = read_kernel_trace(path)
    with pytest.raises(TraceFormatError, match="PC 0x|in the program"):
        to_dynamic_trace(kernel, other)


def test_xz_compressed_export(exported, tmp_path):
    program, trace, _, _ = exported
    path = export_accelsim(trace, program, tmp_path, kernel_id=2, compress=True)
    assert path.name == "kernel-2.traceg.xz"
    assert (tmp_path / "kernelslist.g").read_text() == "kernel-2.traceg.xz\n"
    back = to_dynamic_trace(import_accelsim(tmp_path / "kernelslist.g").kernels[0], program)
    assert np.array_equal(back.records["pc_index"], trace.records["pc_index"])
