"""nvdisasm listing -> `Program`.

The listing is nvdisasm's full output with `-hex` (raw encodings as comments). The parser reads:
- the `.text.<kernel>` section: labels, instructions (guard, opcode, modifiers, operands, `.reuse`),
  dual-issue pairs written as `{ A ; B }` (sm_35/sm_52), and every raw 64-bit word in address order;
- `.nv.info` attributes: register count, parameter offsets and sizes, parameter bank window, frame size;
- `.nv.shared.*` sizes (sm_90 adds a reserved 1 KB region) and `.nv.constant0.*` size;
- the ptxas version from `.note.nv.tkinfo`.
Control information is decoded from the raw words by `gpusim.isa.control`.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from gpusim.errors import ListingError
from gpusim.isa import control as ctl
from gpusim.isa.opcodes import OpcodeTable, load_opcode_table
from gpusim.isa.operands import OperandSyntaxError, parse_operand, split_operands
from gpusim.isa.program import Instruction, Program
from gpusim.isa.widths import apply_widths

_SECTION = re.compile(r"^//-+ (\S+)\s+-+$")
_INSTR = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(\{?)\s*(.*?)\s*(;|\})\s*(?:/\*\s*(0x[0-9a-f]{16})\s*\*/)?\s*$")
_HEX_ONLY = re.compile(r"^\s*/\*\s*(0x[0-9a-f]{16})\s*\*/\s*$")
# a label line: .L_x_0:, a function such as $__internal_0_$__cuda_sm20_div_u64:, or the section's
# own .text.<kernel>: (the name a RET's `(kernel) annotation uses)
_LABEL = re.compile(r"^(?:\.text\.)?(\.L_\w+|[A-Za-z_$][\w$]*):\s*$")
_GUARD = re.compile(r"^@(!?)(U?P)(\d|T)\s+(.*)$")
_DATA = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+\.(byte|short|word|dword)\s+(.*)$")
_TARGET = re.compile(r"^\s*\.target\s+(sm_\d+)|EF_CUDA_SM(\d+) ")


def parse_listing(path: str | Path, kernel: str | None = None, table: OpcodeTable | None = None) -> Program:
    """Parse the listing file at `path`; `kernel` picks a function (default: the only one)."""
    path = Path(path)
    if not path.exists():
        raise ListingError("no such listing file", str(path))
    return parse_listing_text(path.read_text(), str(path), kernel, table)


def parse_listing_text(text: str, source: str = "<listing>", kernel: str | None = None,
                       table: OpcodeTable | None = None) -> Program:
    lines = text.splitlines()
    found = next((m for ln in lines[:20] if (m := _TARGET.search(ln))), None)
    if found is None:
        raise ListingError("no '.target sm_XX' or '.headerflags ... EF_CUDA_SMxx' line near the top; "
                           "is this nvdisasm output?", source)
    arch = found.group(1) or f"sm_{found.group(2)}"
    sections = _split_sections(lines)
    functions = [name[len(".text."):] for name in sections if name.startswith(".text.")]
    if not functions:
        raise ListingError("no .text.<kernel> code section", source)
    if kernel is None:
        if len(functions) > 1:
            raise ListingError(f"several kernels ({', '.join(functions)}); name one", source)
        kernel = functions[0]
    if kernel not in functions:
        raise ListingError(f"kernel '{kernel}' not in listing (has: {', '.join(functions)})", source)
    table = table or load_opcode_table(arch)

    start, body = sections[f".text.{kernel}"]
    instructions = _parse_code(body, start, arch, table, source)
    info = _nv_info(sections.get(f".nv.info.{kernel}", (0, []))[1])
    global_info = _nv_info(sections.get(".nv.info", (0, []))[1])
    registers = _registers(body, global_info, kernel)
    shared = _zero_size(sections.get(f".nv.shared.{kernel}", (0, []))[1])
    # sm_90 reserves 1 KB of shared memory at the start of each CTA's window (the kernel's
    # .nv.shared section already counts it; cudaDevAttrReservedSharedMemoryPerBlock = 1024 on the H100)
    reserved = 1024 if any(name.startswith(".nv.shared.reserved") for name in sections) and shared else 0
    cbank = info.get("EIATTR_PARAM_CBANK", [[0, 0, 0]])[0]
    params = sorted((v[1], v[2], int.from_bytes(bytes(v[3:7]), "little"))
                    for v in info.get("EIATTR_KPARAM_INFO", []))
    base = cbank[1] if len(cbank) > 1 else 0
    return Program(
        arch=arch, kernel=kernel, instructions=instructions, registers=registers, shared_bytes=shared,
        reserved_shared_bytes=reserved,
        param_base=base, param_bytes=cbank[2] if len(cbank) > 2 else 0,
        params=[(base + off, (flags >> 18) & 0x3FFF) for _, off, flags in params],
        const_bank0_bytes=_zero_size(sections.get(f".nv.constant0.{kernel}", (0, []))[1]),
        frame_bytes=_per_kernel(global_info, "EIATTR_FRAME_SIZE", kernel), source=source,
        const_banks={int(m.group(1)): _data_bytes(body) for name, (_, body) in sections.items()
                     if (m := re.match(rf"^\.nv\.constant(\d+)\.{re.escape(kernel)}$", name)) and m.group(1) != "0"},
        toolchain=_ptxas_version(sections.get(".note.nv.tkinfo", (0, []))[1]))


def _split_sections(lines: list[str]) -> dict[str, tuple[int, list[str]]]:
    sections: dict[str, tuple[int, list[str]]] = {}
    name, start, body = None, 0, []
    for no, ln in enumerate(lines, 1):
        m = _SECTION.match(ln)
        if m:
            if name:
                sections[name] = (start, body)
            name, start, body = m.group(1), no, []
        elif name:
            body.append(ln)
    if name:
        sections[name] = (start, body)
    return sections


def _parse_code(body: list[str], first_line: int, arch: str, table: OpcodeTable, source: str):
    """Instructions of one code section, with their raw words and control information."""
    labels: dict[str, int] = {}
    pending_labels: list[str] = []
    raw_instrs: list[tuple[int, int, str, bool, bool]] = []  # (line, address, text, opens_pair, closes_pair)
    words: list[int] = []
    for offset, ln in enumerate(body):
        lineno = first_line + offset + 1
        if (m := _INSTR.match(ln)):
            addr = int(m.group(1), 16)
            for lab in pending_labels:
                labels[lab] = addr
            pending_labels = []
            raw_instrs.append((lineno, addr, m.group(3), m.group(2) == "{", m.group(4) == "}"))
            if m.group(5):
                words.append(int(m.group(5), 16))
        elif (m := _HEX_ONLY.match(ln)):
            words.append(int(m.group(1), 16))
        elif (m := _LABEL.match(ln.strip())):
            pending_labels.append(m.group(1))
        elif ln.strip().startswith("/*") and "*/" in ln and re.search(r"/\*[0-9a-f]{4,}\*/", ln):
            raise ListingError(f"cannot read instruction line: {ln.strip()}", f"{source}:{lineno}")
    if raw_instrs:
        end = raw_instrs[-1][1] + ctl.instruction_bytes(arch)
        for lab in pending_labels:
            labels[lab] = end

    out: list[Instruction] = []
    for index, (lineno, addr, text, opens, closes) in enumerate(raw_instrs):
        where = f"{source}:{lineno}"
        try:
            ins = _parse_instruction(index, addr, text, labels, table, arch)
        except OperandSyntaxError as exc:
            raise ListingError(str(exc), where) from None
        except KeyError as exc:
            raise ListingError(f"opcode {exc.args[0]} is not in the {arch} opcode table "
                               f"(gpusim/arch/{arch}.yaml)", where) from None
        try:
            encoding, control = ctl.decode(arch, words, addr)
        except ValueError as exc:
            raise ListingError(str(exc), where) from None
        except IndexError:
            raise ListingError("raw encoding words missing (was the listing made with nvdisasm -hex?)",
                               where) from None
        out.append(replace(ins, encoding=encoding, control=control, dual_issue=opens))
    return out


def _parse_instruction(index: int, addr: int, text: str, labels: dict, table: OpcodeTable, arch: str):
    guard, neg, uniform = None, False, False
    m = _GUARD.match(text)
    if m:
        neg, uniform = m.group(1) == "!", m.group(2) == "UP"
        guard = 7 if m.group(3) == "T" else int(m.group(3))
        text_body = m.group(4)
    else:
        text_body = text
    mnemonic, _, rest = text_body.partition(" ")
    rest = re.sub(r"\(\*.*?\*\)", "", rest)  # nvdisasm annotations such as (*"BRANCH_TARGETS .L_x_0"*)
    opcode, *mods = mnemonic.split(".")
    row = table[opcode]  # KeyError -> unknown opcode
    operands = [parse_operand(t, labels) for t in split_operands(rest)] if rest.strip() else []
    ndst = row.dst
    if row.pdst_lead and operands and operands[0].kind in ("pred", "upred"):
        ndst += 1
    if row.pdst_follow:
        while ndst < len(operands) and operands[ndst].kind in ("pred", "upred"):
            ndst += 1
    dsts, srcs = apply_widths(opcode, tuple(mods), operands[:ndst], operands[ndst:], arch)
    return Instruction(index=index, address=addr, text=text.strip(), opcode=opcode, modifiers=tuple(mods),
                       dsts=tuple(dsts), srcs=tuple(srcs), guard=guard, guard_negated=neg,
                       guard_uniform=uniform, unit=row.unit, latency_class=row.latency)



def _nv_info(body: list[str]) -> dict[str, list[list[int]]]:
    """EIATTR name -> list of value lists (each attribute instance's data after its header)."""
    attrs: dict[str, list[list[int]]] = {}
    current: list[int] | None = None
    for ln in body:
        if "//----- nvinfo : " in ln:
            current = []
            attrs.setdefault(ln.split(":", 1)[1].strip(), []).append(current)
            continue
        m = _DATA.match(ln)
        if m and current is not None:
            for tok in m.group(2).split(","):
                tok = tok.strip()
                ref = re.match(r"index@\((\S+)\)", tok)
                current.append(int(tok, 16) if tok.startswith("0x") else ref.group(1) if ref else 0)
    # drop the 2-byte header (format, attribute) and the size field where present
    return {k: [v[3:] if len(v) > 3 and v[0] == 0x04 else v[2:] for v in vals] for k, vals in attrs.items()}


def _per_kernel(global_info: dict, attr: str, kernel: str, default: int = 0) -> int:
    """A global .nv.info attribute's value for `kernel` (entries are [index@(kernel), value])."""
    return next((v[-1] for v in global_info.get(attr, []) if v and v[0] == kernel), default)


def _registers(body: list[str], global_info: dict, kernel: str) -> int:
    for ln in body:
        m = re.search(r'SHI_REGISTERS=(\d+)', ln)
        if m:
            return int(m.group(1))
    return _per_kernel(global_info, "EIATTR_REGCOUNT", kernel)


def _data_bytes(body: list[str]) -> bytes:
    """Initialised data of a section (.byte/.short/.word/.dword directives, little-endian)."""
    size = {"byte": 1, "short": 2, "word": 4, "dword": 8}
    out = bytearray()
    for ln in body:
        m = _DATA.match(ln)
        if m:
            for tok in m.group(2).split(","):
                out += int(tok.strip(), 16).to_bytes(size[m.group(1)], "little")
    return bytes(out)


def _zero_size(body: list[str]) -> int:
    return sum(int(m.group(1)) for ln in body if (m := re.match(r"^\s*\.zero\s+(\d+)", ln)))


def _ptxas_version(body: list[str]) -> str:
    for ln in body:
        m = re.search(r'\.string\s+"(Cuda compilation tools[^"]*)"', ln)
        if m:
            return m.group(1)
    return ""

