"""SASS listing parser: operands, control information decoded from raw words, resources, bad input."""

import pytest

from gpusim.errors import ListingError
from gpusim.isa.operands import parse_operand
from gpusim.isa.parser import parse_listing, parse_listing_text


def bits(word: int, lo: int, n: int) -> int:
    """Bits lo..lo+n-1 of a 64-bit word, read from its binary string (independent of the decoder)."""
    s = format(word, "064b")[::-1]  # s[i] is bit i
    return int(s[lo:lo + n][::-1], 2)


def by_address(program, address):
    return program.instructions[program.by_address[address]]


def test_maxwell_control_word_by_hand(data_dir):
    p = parse_listing(data_dir / "demo_sm_52.sass")
    word = 0x001C4400FE0007F6  # the control word of the first group (0x0000), from the listing
    # slot 0 (MOV R1 at 0x08): bits 0..20 = 0b0000_000000_111_111_1_0110
    assert bits(word, 0, 4) == 6 and bits(word, 4, 1) == 1 and bits(word, 5, 3) == 7 and bits(word, 8, 3) == 7
    ins = by_address(p, 0x08)
    assert (ins.control.stall, ins.control.yield_flag, ins.control.write_barrier, ins.control.read_barrier,
            ins.control.wait_mask) == (6, 1, None, None, 0)
    # slot 1 (MOV R0 at 0x10) is dual-issued with the S2R after it: stall 0
    assert bits(word, 21, 4) == 0
    ins = by_address(p, 0x10)
    assert ins.control.stall == 0 and ins.dual_issue
    # slot 2 (S2R R2 at 0x18): stall 1, sets write barrier 0 (variable latency), waits on nothing
    assert bits(word, 42, 4) == 1 and bits(word, 42 + 5, 3) == 0
    ins = by_address(p, 0x18)
    assert (ins.control.stall, ins.control.write_barrier, ins.control.wait_mask) == (1, 0, 0)


def test_hopper_control_bits_by_hand(data_dir):
    p = parse_listing(data_dir / "demo_sm_90.sass")
    hi = 0x000E220000002600  # upper word of S2R R25, SR_CTAID.Y at 0x10
    assert bits(hi, 41, 4) == 1 and bits(hi, 46, 3) == 0 and bits(hi, 49, 3) == 7
    ins = by_address(p, 0x10)
    assert (ins.control.stall, ins.control.write_barrier, ins.control.read_barrier) == (1, 0, None)
    hi = 0x000FE20000000800  # LDC R1, c[0x0][0x28] at 0x00: stall 1, no barriers
    ins = by_address(p, 0x00)
    assert (ins.control.stall, ins.control.write_barrier, ins.control.wait_mask) == (bits(hi, 41, 4), None, 0)
    assert ins.encoding == (0x00000A00FF017B82, hi)
    # every instruction decodes, and some consumer waits on the scoreboard the S2R set
    assert p.control_decoded
    assert any(i.control.wait_mask & 1 for i in p.instructions)


def test_kepler_raw_scheduling_bytes(data_dir):
    p = parse_listing(data_dir / "demo_sm_35.sass")
    word = 0x0888808C108C10C0
    assert by_address(p, 0x08).control.raw == bits(word, 2, 8)
    assert by_address(p, 0x10).control.raw == bits(word, 10, 8)
    assert not p.control_decoded and p.summary()["control_info"] == "raw"


def test_resources_and_params(data_dir):
    p90 = parse_listing(data_dir / "demo_sm_90.sass")
    p52 = parse_listing(data_dir / "demo_sm_52.sass")
    assert p90.param_base == 0x210 and p52.param_base == 0x140
    assert [s for _, s in p90.params] == [8, 8, 8, 4]
    assert p52.shared_bytes == 8192 and p90.shared_bytes == 8192 + 1024  # sm_90 reserves 1 KB
    assert p52.registers > 0 and p90.registers > 0


def test_operands_and_widths(data_dir):
    p = parse_listing(data_dir / "demo_sm_90.sass")
    lds128 = next(i for i in p.instructions if i.full_opcode == "LDS.128")
    assert lds128.dsts[0].width == 128 and len(lds128.dsts[0].regs) == 4
    ldg = next(i for i in p.instructions if i.opcode == "LDG")
    assert ldg.srcs[0].kind == "mem" and ldg.srcs[0].width == 64 and ldg.srcs[0].desc is not None
    isetp = next(i for i in p.instructions if i.opcode == "ISETP")
    assert [d.kind for d in isetp.dsts] == ["pred", "pred"]
    op = parse_operand("c[0x0] [0x158].H1")
    assert (op.kind, op.bank, op.value, op.suffix) == ("const", 0, 0x158, ("H1",))
    op = parse_operand("-|R3|")
    assert op.negate and op.absolute and op.reg == 3
    assert parse_operand("R7.reuse").reuse
    assert parse_operand("[R7+UR4+-0x80]").value == -0x80


def test_reuse_flags_match_control_bits(data_dir):
    """nvdisasm prints .reuse from the control field: the two views must agree slot by slot."""
    for name in ("demo_sm_52.sass", "demo_sm_90.sass"):
        p = parse_listing(data_dir / name)
        for ins in p.instructions:
            printed = sum(1 << k for k, s in enumerate(ins.srcs) if s.reuse)
            if ins.control.reuse_bits or printed:
                assert printed == ins.control.reuse_bits, ins.text  # bit k = source slot k (A, B, C)


def test_unknown_opcode_names_file_and_line(data_dir, tmp_path):
    text = (data_dir / "demo_sm_90.sass").read_text().replace("S2R R25, SR_CTAID.Y", "FOOBAR R25, SR_CTAID.Y")
    with pytest.raises(ListingError, match=r"bad\.sass:\d+: opcode FOOBAR is not in the sm_90 opcode table"):
        parse_listing_text(text, "bad.sass")


def test_malformed_line(data_dir):
    text = (data_dir / "demo_sm_90.sass").read_text().replace("S2R R25, SR_CTAID.Y ;", "S2R R25, ((( ;")
    with pytest.raises(ListingError, match=r"bad\.sass:\d+: cannot read operand"):
        parse_listing_text(text, "bad.sass")


def test_missing_kernel_and_not_a_listing(data_dir, tmp_path):
    with pytest.raises(ListingError, match="kernel 'nosuch' not in listing"):
        parse_listing(data_dir / "demo_sm_90.sass", kernel="nosuch")
    junk = tmp_path / "junk.sass"
    junk.write_text("hello\n")
    with pytest.raises(ListingError, match="junk.sass: no '.target"):
        parse_listing(junk)
    with pytest.raises(ListingError, match="no such listing file"):
        parse_listing(tmp_path / "absent.sass")
