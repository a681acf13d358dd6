"""Listing problems are one line with the right line number; registers and operand counts are checked."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpusim.errors import ListingError
from gpusim.isa.parser import parse_listing, parse_listing_text
from gpusim.isa.program import RZ

ROOT = Path(__file__).resolve().parent.parent
SM90 = ROOT / "traces" / "sass" / "sm_90" / "sgemm_maxas_64.sass"
SM52 = ROOT / "traces" / "sass" / "sm_52" / "sgemm_maxas_64.sass"


def _lines(path):
    return path.read_text().splitlines(keepends=True)


def _first(lines, pattern, after=0):
    return next(k for k, ln in enumerate(lines) if k >= after and re.search(pattern, ln))


def _error(text, source="x.sass") -> str:
    with pytest.raises(ListingError) as info:
        parse_listing_text(text, source)
    msg = str(info.value)
    assert "\n" not in msg
    return msg


def test_every_committed_listing_still_parses():
    paths = sorted((ROOT / "traces" / "sass").rglob("*.sass")) + sorted((ROOT / "tests" / "data").glob("*.sass"))
    assert len(paths) > 40
    for p in paths:
        parse_listing(p)


def test_binary_garbage_and_directory_are_one_line(tmp_path):
    (tmp_path / "k.cubin").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "latin1.sass").write_bytes(b"// listing\n\xff\xfe\n")
    for target, needle in ((tmp_path / "k.cubin", "binary file"), (tmp_path, "is a directory"),
                           (tmp_path / "latin1.sass", "latin1.sass:2: not a text file")):
        out = subprocess.run([sys.executable, "-m", "gpusim", "parse", str(target)], capture_output=True, text=True,
                             cwd=ROOT)
        assert out.returncode == 2 and out.stderr.count("\n") == 1 and needle in out.stderr, out.stderr
        assert "Traceback" not in out.stderr


@pytest.mark.parametrize("path", [SM90, SM52])
def test_truncated_listing_says_truncated(path):
    lines = _lines(path)
    msg = _error("".join(lines[:_first(lines, r"\.text\.") + 300]))
    assert "listing truncated" in msg and "before its end label" in msg


@pytest.mark.parametrize("path", [SM90, SM52])
def test_missing_hex_word_names_its_instruction_line(path):
    lines = _lines(path)
    start = _first(lines, r"\.text\.")
    gone = _first(lines, r"^\s*/\* 0x[0-9a-f]{16} \*/\s*$", start + 60)  # a line holding only a raw word
    owner = max(k for k in range(gone) if re.match(r"^\s*/\*[0-9a-f]{4,}\*/", lines[k]))  # its instruction
    msg = _error("".join(lines[:gone] + lines[gone + 1:]))
    assert msg.startswith(f"x.sass:{owner + 1}: raw encoding word missing"), msg


def test_register_out_of_range_and_rz():
    lines = _lines(SM90)
    k = _first(lines, r" FFMA R\d+, R\d+, R\d+, R\d+")
    bad = re.sub(r"FFMA R\d+", "FFMA R999", lines[k])
    msg = _error("".join(lines[:k] + [bad] + lines[k + 1:]))
    assert msg.startswith(f"x.sass:{k + 1}: register R999") and "out of range on sm_90" in msg
    rz = re.sub(r"(FFMA R\d+, )R\d+", r"\1R255", lines[k])  # R255 is RZ
    program = parse_listing_text("".join(lines[:k] + [rz] + lines[k + 1:]))
    ins = next(i for i in program.instructions if i.text.startswith("FFMA") and "R255" in i.text)
    assert ins.srcs[0].reg == RZ


def test_operand_count_checked_against_the_opcode():
    lines = _lines(SM52)
    k = _first(lines, r" FFMA R\d+, R\d+, R\d+, R\d+")
    bad = re.sub(r"(FFMA R\d+, R\d+, R\d+), R\d+", r"\1", lines[k])
    msg = _error("".join(lines[:k] + [bad] + lines[k + 1:]))
    assert msg.startswith(f"x.sass:{k + 1}: FFMA takes 1 destination and at least 3 source operands"), msg
