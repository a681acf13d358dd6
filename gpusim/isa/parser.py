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
from gpusim.isa.opcodes import MIN_SOURCES, OpcodeTable, load_opcode_table
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
_ZERO = re.compile(r"^\s*(?:/\*[0-9a-f]+\*/)?\s*\.zero\s+(\d+)\s*$")  # zero-initialised data
# floating-point instructions whose immediates nvdisasm prints as numbers ("FMUL R0, R4, 3", "DFMA R4, R4, R8, 2")
_FP_IMMEDIATE = {"FADD", "FMUL", "FFMA", "FMNMX", "FSETP", "FSET", "FSEL", "FADD32I", "FMUL32I", "FFMA32I",
                 "DADD", "DMUL", "DFMA", "DSETP", "DSET", "DMNMX"}
_TARGET = re.compile(r"^\s*\.target\s+(sm_\d+)|EF_CUDA_SM(\d+) ")


def parse_listing(path: str | Path, kernel: str | None = None, table: OpcodeTable | None = None) -> Program:
    """Parse the listing file at `path`; `kernel` picks a function (default: the only one)."""
    path = Path(path)
    if not path.exists():
        raise ListingError("no such listing file", str(path))
    if path.is_dir():
        raise ListingError("is a directory, not an nvdisasm listing file", str(path))
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ListingError(f"cannot read the listing: {exc.strerror or exc}", str(path)) from None
    if b"\0" in raw[:65536]:
        raise ListingError("binary file (a cubin?), not an nvdisasm listing; make one with `nvdisasm -hex`",
                           str(path))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise ListingError("not a text file (invalid UTF-8); expected nvdisasm -hex output", f"{path}:{line}") from None
    return parse_listing_text(text, str(path), kernel, table)


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
    _check_complete(sections, kernel, lines, source)
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
        frame_bytes=_per_kernel(global_info, "EIATTR_FRAME_SIZE", kernel),
        stack_bytes=_per_kernel(global_info, "EIATTR_MIN_STACK_SIZE", kernel), source=source,
        const_banks=_const_banks(sections, kernel),
        toolchain=_ptxas_version(sections.get(".note.nv.tkinfo", (0, []))[1]))


_SIZE = re.compile(r"^\s*\.size\s+(\S+?),\s*\((\.L_\w+)\s*-\s*(\S+?)\)\s*$")
SIZE_DIRECTIVE = _SIZE  # `.size name,(.L_end - name)`: where a code section ends (also read by toolchain.importsass)


def _check_complete(sections: dict, kernel: str, lines: list[str], source: str) -> None:
    """A listing cut short: the code section lacks the end label its `.size` directive names, or a
    shared-memory section stops before its size."""
    start, body = sections[f".text.{kernel}"]
    end = next((m.group(2) for ln in body[:40] if (m := _SIZE.match(ln)) and m.group(1) == kernel), None)
    if end is not None and not any(ln.strip() == f"{end}:" for ln in body):
        raise ListingError(f"listing truncated: the code of {kernel} (from line {start}) stops at line "
                           f"{start + len(body)} before its end label {end}; regenerate it with nvdisasm -hex",
                           f"{source}:{start + len(body)}")
    shared = sections.get(f".nv.shared.{kernel}")
    if shared is not None and not any(re.match(r"^\s*\.zero\s+\d+", ln) for ln in shared[1]):
        raise ListingError(f"listing truncated: section .nv.shared.{kernel} (line {shared[0]}) has no size",
                           f"{source}:{len(lines)}")


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
            # every 64-bit slot before an instruction holds one raw word (sm_5x/3x: scheduling words too)
            if len(words) != addr // 8:
                _missing_words(raw_instrs, addr, len(words), lineno, source)
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
        if len(words) < end // 8:
            _missing_words(raw_instrs, end, len(words), first_line + len(body), source)

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


def _missing_words(raw_instrs: list, addr: int, found: int, lineno: int, source: str) -> None:
    """The raw words before address `addr` do not add up: blame the instruction before it."""
    if raw_instrs:
        line, prev, *_ = raw_instrs[-1]
        what = "missing" if found < addr // 8 else "extra"
        raise ListingError(f"raw encoding word {what} for the instruction at {prev:#06x} ({addr // 8} 64-bit words "
                           f"expected before {addr:#06x}, found {found}); was the listing made with nvdisasm -hex?",
                           f"{source}:{line}")
    raise ListingError(f"raw encoding words missing before the first instruction ({addr // 8} expected, found "
                       f"{found}); was the listing made with nvdisasm -hex?", f"{source}:{lineno}")


# Register files (CUDA Binary Utilities, instruction set reference; the same on sm_35, sm_52, sm_90):
# R0..R254 with R255 = RZ, UR0..UR62 with UR63 = URZ (sm_75+), P0..P6 with P7 = PT, UP0..UP6 with UP7 = UPT.
_REGISTER_LIMIT = {"reg": 255, "ureg": 63, "pred": 7, "upred": 7}
_REGISTER_NAME = {"reg": "R", "ureg": "UR", "pred": "P", "upred": "UP"}


def _check_registers(operands, arch: str) -> None:
    """Every register an operand names (also inside [...] and c[..][...]) is within the architecture's file."""
    for op in operands:
        fields = [(op.kind, op.reg)] if op.kind in _REGISTER_LIMIT else [("reg", op.reg), ("ureg", op.ureg)]
        for kind, num in fields:
            if num is not None and not 0 <= num <= _REGISTER_LIMIT[kind]:
                name, top = _REGISTER_NAME[kind], _REGISTER_LIMIT[kind]
                raise OperandSyntaxError(f"register {name}{num} in '{op.text}' is out of range on {arch} "
                                         f"({name}0..{name}{top - 1}, {name}{'Z' if kind in ('reg', 'ureg') else 'T'})")


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
    if opcode in _FP_IMMEDIATE:  # nvdisasm writes 3.0 as "3" here: a decimal integer is a float value
        operands = [replace(o, kind="fimm", value=float(o.value)) if o.kind == "imm" and "0x" not in o.text.lower()
                    else o for o in operands]
    ndst = row.dst
    if row.pdst_lead and operands and operands[0].kind in ("pred", "upred"):
        ndst += 1
    if row.pdst_follow:  # the last operand is always a source (VOTE.ANY R22, PT, P2: PT is written, P2 read)
        while ndst < len(operands) - 1 and operands[ndst].kind in ("pred", "upred"):
            ndst += 1
    _check_registers(operands, arch)
    need = MIN_SOURCES.get(opcode)
    if need is not None and len(operands) - ndst < need:
        raise OperandSyntaxError(f"{opcode} takes {ndst} destination and at least {need} source operands "
                                 f"({ndst + need} in all), found {len(operands)} in '{text.strip()}'")
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


def _const_banks(sections: dict, kernel: str) -> dict[int, bytes]:
    """Constant banks other than 0: the kernel's own `.nv.constantN.<kernel>` sections (compiler
    constants, bank 2 on sm_35/52), and the module-wide `.nv.constantN` that every kernel of the cubin
    sees (`__constant__` variables: `.nv.constant3` on sm_90, read as `LDC R10, c[0x3][R12]`)."""
    banks = {}
    for name, (_, body) in sections.items():
        m = re.match(rf"^\.nv\.constant(\d+)(\.{re.escape(kernel)})?$", name)
        if m and m.group(1) != "0" and (m.group(2) or int(m.group(1)) not in banks):
            banks[int(m.group(1))] = _data_bytes(body)
    return banks


def _data_bytes(body: list[str]) -> bytes:
    """Initialised data of a section (.byte/.short/.word/.dword directives, little-endian)."""
    size = {"byte": 1, "short": 2, "word": 4, "dword": 8}
    out = bytearray()
    for ln in body:
        z = _ZERO.match(ln)
        if z:
            out += bytes(int(z.group(1)))
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

