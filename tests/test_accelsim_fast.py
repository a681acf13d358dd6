"""The fast Accel-Sim reader (gpusim.trace.accelsim_fast) gives exactly the line reader's trace:
suite kernels with partial and empty masks and every address form the writer emits (base-stride,
base-delta, one lane, empty mask), list-all addresses, lines of other shapes, block boundaries
anywhere, warps out of order, xz; and leaves every malformed file to the line reader's one-line
error naming file and line."""

from __future__ import annotations

import lzma
import re
from pathlib import Path

import numpy as np
import pytest

from gpusim.emu.run import build_launch, emulate
from gpusim.errors import TraceFormatError
from gpusim.isa.parser import parse_listing
from gpusim.trace import DynamicTrace, accelsim_fast, run_traced
from gpusim.trace.accelsim import (
    compress_addresses, export_accelsim, parse_instruction_line, read_kernel_trace, to_dynamic_trace,
)
from gpusim.trace.accelsim_fast import load_kernel, read_dynamic_trace
from gpusim.workloads import find_workload, load_workload

DATA = Path(__file__).parent / "data"
INS = re.compile(r"^[0-9a-f]+ [0-9a-f]{8} ")
# (workload, arch, size, CTAs): edge tiles (demo n=40: partial masks, guarded-off loads), base-delta
# shared and global accesses (dgemm_regtile, sgemm_maxas_64), strided global (sgemm_naive_colmajor),
# shared tiles (transpose_smem), empty masks of the guarded tail (copy_float4)
KERNELS = [("demo", "sm_90", 40, [0, 3]), ("demo", "sm_52", 40, [0, 3]), ("dgemm_regtile", "sm_90", 64, None),
           ("sgemm_naive_colmajor", "sm_90", 64, [0, 7]), ("transpose_smem", "sm_90", 64, [2, 9]),
           ("sgemm_maxas_64", "sm_90", 64, None), ("copy_float4", "sm_90", 64, [0, 5, 63])]


def _export(name, arch, size, ctas, out: Path):
    if name == "demo":
        wl = load_workload(DATA / "demo.yaml")
        program = parse_listing(DATA / f"demo_{arch}.sass")
        launch, params, memory, _ = build_launch(wl, program, size)
        _, trace = run_traced(program, launch, params, memory, ctas=ctas, workload=wl, size=size)
    else:
        wl = find_workload(name)
        emu, _ = emulate(wl, arch, size, ctas=ctas)
        program, trace = emu.program, DynamicTrace.from_emulator(emu, workload=wl.name, size=size)
    export_accelsim(trace, program, out)
    return program, out / "kernel-1.traceg"


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    root = tmp_path_factory.mktemp("accelsim_fast")
    return [_export(*k, root / f"{k[0]}_{k[1]}") for k in KERNELS]


def _reference(path, program):
    return to_dynamic_trace(read_kernel_trace(path, program.arch), program)


def _same(path, program, alone_at_most=None):
    """The fast reader takes the file and gives the line reader's trace; with `alone_at_most`, at most
    that many lines went to the line-by-line parse (the rest by the vectorised path)."""
    alone = []
    if alone_at_most is not None:
        line = accelsim_fast._Reader.line
        accelsim_fast._Reader.line = lambda self, raw: alone.append(raw) or line(self, raw)
    try:
        fast = read_dynamic_trace(path, program)
    finally:
        if alone_at_most is not None:
            accelsim_fast._Reader.line = line
    assert alone_at_most is None or len(alone) <= alone_at_most, alone[:3]
    assert fast is not None, "the fast reader did not take the file"
    assert fast == _reference(path, program)
    return fast


def test_suite_kernels_every_mask_and_address_form(kernels):
    seen = set()
    for program, path in kernels:
        _same(path, program, alone_at_most=0)
        for line in path.read_text().splitlines():
            if not INS.match(line):
                continue
            mask = int(line.split()[1], 16)
            seen.add("partial mask" if 0 < mask < 0xFFFFFFFF else "empty mask" if not mask else "full mask")
            m = re.search(r" ([12]) 0x", line)
            if m:
                n = bin(mask).count("1")
                seen.add(("base-stride" if m.group(1) == "1" else "base-delta")
                         + (" empty" if not n else " one lane" if n == 1 else " partial" if n < 32 else ""))
    assert {"partial mask", "empty mask", "full mask", "base-stride", "base-stride partial", "base-stride empty",
            "base-delta"} <= seen, seen


def test_every_address_form_the_writer_emits(kernels, tmp_path):
    """Memory lines of real traces re-written for subsets of their lanes by the writer's own
    `compress_addresses`: base-stride (full, one run, empty) and base-delta (two runs, one lane)."""
    subsets = (0xFFFFFFFF, 0x0000FFF0, 0x0F0F0F0F, 0x00000100, 0)
    text = ""
    for program, path in (kernels[0], kernels[2]):
        def fewer_lanes(i, line):
            ins = parse_instruction_line(line)
            if ins.addresses is None:
                return line
            mask = ins.mask & subsets[i % len(subsets)]
            fields = line.split()
            head = fields[2:2 + 1 + len(ins.dsts) + 2 + len(ins.srcs) + 1]  # dest_num ... mem_width
            return " ".join([fields[0], f"{mask:08x}", *head, compress_addresses(ins.addresses, mask),
                             str(ins.immediate)]) + " "

        out = _rewrite(path, tmp_path / f"{path.parent.name}.traceg", fewer_lanes)
        _same(out, program, alone_at_most=0)
        text += out.read_text()
    assert re.search(r" 0f0f0f0f .* 2 0x[0-9a-f]+( -?\d+)+ 0 $", text, re.M)  # two runs: base-delta
    assert re.search(r" 00000100 .* 2 0x[0-9a-f]+ 0 $", text, re.M)  # one lane: the base alone
    assert re.search(r" 0000fff0 .* 1 0x[0-9a-f]+ -?\d+ 0 $", text, re.M)  # one run
    assert re.search(r" 00000000 .* 1 0x0 0 0 $", text, re.M)  # no lane


def test_block_boundaries_anywhere(kernels, monkeypatch):
    program, path = kernels[1]
    expected = _reference(path, program)
    for size in (4096, 4099, 65536 + 17):  # lines, warps and thread blocks cut across blocks
        monkeypatch.setattr(accelsim_fast, "BLOCK_BYTES", size)
        assert read_dynamic_trace(path, program) == expected
    monkeypatch.setattr(accelsim_fast, "TAILS_KEPT", 1)  # the table of texts after a base, started afresh
    assert read_dynamic_trace(path, program) == expected
    no_newline = path.parent / "k-no-final-newline.traceg"
    no_newline.write_bytes(path.read_bytes().rstrip(b"\n"))
    _same(no_newline, program)


def _rewrite(path: Path, dst: Path, change) -> Path:
    lines = path.read_text().splitlines()
    dst.write_text("\n".join(change(i, ln) if INS.match(ln) else ln for i, ln in enumerate(lines)) + "\n")
    return dst


def test_list_all_addresses(kernels, tmp_path):
    """TOOL_COMPRESS=0 traces: `0 0x<addr:016x>` for every active lane (never written by us)."""
    for program, path in kernels[1:3]:
        def list_all(_, line):
            ins = parse_instruction_line(line)
            if ins.addresses is None:
                return line
            fields = line.split()
            # PC, mask, dest_num, dsts, opcode, src_num, srcs, mem_width
            cut = 2 + 1 + len(ins.dsts) + 2 + len(ins.srcs) + 1
            lanes = [s for s in range(32) if ins.mask >> s & 1]
            return " ".join(fields[:cut] + ["0"] + [f"0x{int(ins.addresses[s]):016x}" for s in lanes]
                            + [str(ins.immediate)]) + " "

        out = _rewrite(path, tmp_path / f"{path.parent.name}.traceg", list_all)
        assert " 0 0x" in out.read_text()
        _same(out, program, alone_at_most=0)


def test_lines_of_other_shapes(kernels, tmp_path):
    """Valid lines that differ from their PC's first line: no trailing space, no immediate, two spaces,
    upper-case hex, an unpadded mask, a 5-digit PC, base-delta written for a contiguous run."""
    program, path = kernels[0]

    def vary(i, line):
        k = i % 7
        if k == 0:
            return line.rstrip()
        if k == 1 and re.search(r" [12] 0x[0-9a-f]+ [-0-9 ]+$", line):
            return line.rstrip().rsplit(" ", 1)[0]  # the immediate left out (tracer version 3)
        if k == 2:
            return line.replace(" ", "  ", 3)
        if k == 3:
            return line.upper().replace("0X", "0x")
        if k == 4 and line.split()[1] != "00000000":
            pc, mask, rest = line.split(" ", 2)
            return f"{pc} {int(mask, 16):x} {rest}"
        if k == 5:
            return "0" + line
        if k == 6:
            m = re.search(r" 1 (0x[0-9a-f]+) (-?\d+) ", line)
            n = bin(int(line.split()[1], 16)).count("1")
            if m and n > 1:
                return line.replace(m.group(0), f" 2 {m.group(1)} " + " ".join([m.group(2)] * (n - 1)) + " ")
        return line

    _same(_rewrite(path, tmp_path / "shapes.traceg", vary), program)


def test_warps_out_of_order_and_xz(kernels, tmp_path):
    program, path = kernels[-1]
    text = path.read_text()
    head, *blocks = text.split("#BEGIN_TB")
    assert len(blocks) == 3
    swapped = tmp_path / "swapped.traceg"
    swapped.write_text(head + "#BEGIN_TB" + "#BEGIN_TB".join(blocks[::-1]))
    fast, back = _same(path, program), _same(swapped, program)
    assert np.array_equal(fast.records, back.records) and np.array_equal(fast.addresses, back.addresses)
    packed = tmp_path / "kernel-1.traceg.xz"
    with lzma.open(packed, "wt") as f:
        f.write(text)
    assert np.array_equal(_same(packed, program).records, fast.records)


@pytest.mark.parametrize("what, pattern, change, message", [
    ("an instruction count", r"^insts = ", lambda ln: "insts = 3", "'insts = 3' but"),
    ("a delta", r" 2 0x[0-9a-f]+ \d+ \d+ ", lambda ln: re.sub(r"( 2 0x[0-9a-f]+ \d+) ", r"\1zz ", ln, count=1),
     "address delta"),
    ("a base-stride mask", r" ffffffff .* 1 0x[0-9a-f]+ \d+ ", lambda ln: ln.replace(" ffffffff ", " ff00ff00 ", 1),
     "several runs"),
    ("a base", r" 1 0x", lambda ln: ln.replace(" 1 0x", " 1 0xg", 1), "base address"),
    ("an opcode", r" LDS", lambda ln: ln.replace(" LDS", " LDX", 1),
     r"opcode LDX[.A-Z0-9]* is not in the sm_90 opcode table"),
    ("a PC", r"^[0-9a-f]{4} ", lambda ln: "fff0" + ln[4:], "PC 0xfff0 is not an instruction address"),
    ("a trailing field", r" 1 0x", lambda ln: ln.rstrip() + " 7 ", "unexpected trailing"),
])
def test_malformed_file_is_the_line_readers_one_line_error(kernels, tmp_path, what, pattern, change, message):
    program, path = kernels[2]
    lines = path.read_text().splitlines()
    no = next(i for i, ln in enumerate(lines) if re.search(pattern, ln))
    lines[no] = change(lines[no])
    bad = tmp_path / "kernel-1.traceg"
    bad.write_text("\n".join(lines) + "\n")
    assert read_dynamic_trace(bad, program) is None
    with pytest.raises(TraceFormatError, match=message) as e:
        load_kernel(bad, program)
    assert "\n" not in str(e.value), what
    if what == "an instruction count":  # found where the warp's lines end
        assert re.search(rf"{re.escape(str(bad))}:\d+: ", str(e.value))
    else:
        assert f"{bad}:{no + 1}: " in str(e.value), what
