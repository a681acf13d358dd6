"""Export to and import from Accel-Sim's SASS trace format (its NVBit tracer, tracer version 5).

The format, as read from the accel-sim/accel-sim-framework sources (dev branch, 2024-10):
`util/tracer_nvbit/tracer_tool/tracer_tool.cu` (what the tracer prints), `.../traces-processing/
post-traces-processing.cpp` (the grouping into `kernel-N.traceg`) and
`gpu-simulator/trace-parser/trace_parser.cc` (how Accel-Sim reads it back). Our own code.

Files of one application directory::

    kernelslist.g          one command per line: `MemcpyHtoD,0x<dst:016x>,<bytes>` or `kernel-<N>.traceg`
    kernel-<N>.traceg      (or kernel-<N>.traceg.xz) one kernel launch

`kernel-N.traceg`::

    -kernel name = <mangled>          -kernel id = <N>
    -grid dim = (x,y,z)               -block dim = (x,y,z)
    -shmem = <static + dynamic bytes> -nregs = <registers per thread>
    -binary version = <SM major*10+minor>
    -cuda stream id = <id>
    -shmem base_addr = 0x%016lx       -local mem base_addr = 0x%016lx
    -nvbit version = <v>              -accelsim tracer version = 5
    -enable lineinfo = 0|1
                                      (one per line, in this order)
    #traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width
                     [adrrescompress?] [mem_addresses] immediate        (one line in the file)

    #BEGIN_TB
    thread block = x,y,z
    warp = <warp in CTA>
    insts = <count>
    <count instruction lines>
    warp = ...
    #END_TB

Instruction line (fields separated by one space; the tracer leaves a trailing space):
``[line_num] PC mask dest_num [R<d>] OPCODE src_num [R<s>...] mem_width [mode addresses] immediate``

- PC: byte offset of the instruction in the function, ``%04x``; mask: ``%08x`` of active & guard
  predicate (lanes that execute; a fully predicated-off instruction is still listed, mask 0).
- Registers: only general registers, as NVBit lists operands: a REG operand in position 0 is the one
  destination (at most one); every later REG operand and the address register of every memory
  operand is a source (at most 5), each by its base register number (a 64-bit pair R2:R3 is R2),
  RZ as R255. Predicates, uniform registers, constants, special registers and immediates are left out.
- OPCODE: the full SASS opcode with modifiers (``LDG.E.128``, ``BAR.SYNC.DEFER_BLOCKING``).
- mem_width: 0 for a non-memory instruction; otherwise the bytes per lane derived from the opcode
  (first numeric modifier / 8, or ``U<bits>`` / 8, default 4), then the addresses of the lanes in
  `mask`, compressed: ``1 0x<base> <stride>`` when the active lanes are one contiguous run with a
  constant stride (also written for an empty mask, as ``1 0x0 0``), else ``2 0x<base> <delta>...``
  (n_active - 1 signed deltas, each from the previous active lane); ``0 0x<addr:016x>...`` lists them
  all (tracer run with TOOL_COMPRESS=0; read, never written here).
- immediate: ``%d`` of the last integer-immediate operand (Accel-Sim uses it only for DEPBAR).
- Trace version < 3 lines start with ``cta_x cta_y cta_z warp_in_cta``; ``-enable lineinfo = 1``
  adds a leading source line number; version 3 has no trailing immediate. All are read.

What our export fills in without a GPU (everything else is the emulated stream, tracer-formatted):
``-shmem`` is CUDA's static figure (`static_shared_bytes`) plus the launch's dynamic bytes;
``-cuda stream id = 0``; the generic-window bases are synthetic (`SHMEM_BASE`, `LOCAL_BASE`: only
used by Accel-Sim to classify generic LD/ST); ``-nvbit version = 1.7``. The mask is the trace's
`exec_mask`, exact only when the trace says ``exec_mask_exact`` (recorded by the emulator). A memory
operand without an address register is listed as R255 (NVBit's `ra_num` there is not documented).
Base-stride is used only for strides that fit the tracer's `int` (it would truncate larger ones).
Accel-Sim's own parser accepts at most 4 sources (`trace_parser.h` MAX_SRC 4, the tracer's is 5) and
reads n_active deltas in base-delta mode (one more than the tracer writes: it swallows the
immediate); both are properties of Accel-Sim, shared by real traces, and left as they are.
"""

from __future__ import annotations

import lzma
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from gpusim.errors import GpusimError, TraceFormatError
from gpusim.isa.program import RZ
from gpusim.trace.format import RECORD_DTYPE, DynamicTrace, make_header

TRACER_VERSION = 5
NVBIT_VERSION = "1.7"
MAX_SRC = 5  # common.h: MAX_SRC
FORMAT_LINE = ("#traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num [reg_srcs] "
               "mem_width [adrrescompress?] [mem_addresses] immediate")
LIST_ALL, BASE_STRIDE, BASE_DELTA = 0, 1, 2
# Synthetic generic-window bases for the header: above the emulator's global buffers (0x7f00_0000_0000+),
# shared below local as Accel-Sim assumes when it resolves generic LD/ST (trace_driven.cc).
SHMEM_BASE = 0x00007FFF00000000
LOCAL_BASE = 0x00007FFF01000000


# ---- per-instruction encoding (shared by export and import) -------------------------------------
def tracer_registers(ins) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(dst regs, src regs) as the tracer reports them: operand 0 if it is a register is the
    destination, later registers and memory-operand address registers are sources (base numbers)."""
    ops = list(ins.dsts) + list(ins.srcs)
    dst: tuple[int, ...] = ()
    srcs: list[int] = []
    for i, op in enumerate(ops):
        if op.kind == "reg":
            if i == 0:
                dst = (op.reg,)
            else:
                srcs.append(op.reg)
        elif op.kind == "mem":
            srcs.append(op.reg if op.reg is not None else RZ)  # no address register: the Ra field is RZ
    return dst, tuple(srcs[:MAX_SRC])


def tracer_immediate(ins) -> int:
    """The last integer-immediate operand, as the tracer's `%d` of it (0 if none)."""
    value = 0
    for op in list(ins.dsts) + list(ins.srcs):
        if op.kind == "imm" and isinstance(op.value, int):
            value = op.value
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def width_from_opcode(opcode: str) -> int:
    """Bytes per lane of a memory instruction from its opcode text, the tracer's and parser's rule."""
    for tok in (t for t in opcode.split(".") if t):
        if tok.isdigit():
            return int(tok) // 8
        if tok[0] == "U" and tok[1:].isdigit():
            return int(tok[1:]) // 8
    return 4


def compress_addresses(addrs: np.ndarray, mask: int) -> str:
    """The tracer's address field for the lanes in `mask` (mode 1 if possible, else mode 2)."""
    lanes = [s for s in range(32) if mask >> s & 1]
    vals = [int(addrs[s]) for s in lanes]
    if not lanes:
        return f"{BASE_STRIDE} 0x0 0"
    contiguous = lanes[-1] - lanes[0] + 1 == len(lanes)
    if contiguous and len(lanes) >= 2:
        stride = vals[1] - vals[0]
        if -(1 << 31) <= stride < (1 << 31) and all(b - a == stride for a, b in zip(vals, vals[1:])):
            return f"{BASE_STRIDE} 0x{vals[0]:x} {stride}"
    deltas = " ".join(str(_signed64(b - a)) for a, b in zip(vals, vals[1:]))
    return f"{BASE_DELTA} 0x{vals[0]:x}" + (f" {deltas}" if deltas else "")


def _signed64(x: int) -> int:
    x &= (1 << 64) - 1
    return x - (1 << 64) if x >= 1 << 63 else x


def instruction_line(ins, mask: int, addrs: np.ndarray | None) -> str:
    dst, srcs = tracer_registers(ins)
    parts = [f"{ins.address:04x}", f"{mask:08x}", str(len(dst))] + [f"R{r}" for r in dst]
    parts += [ins.full_opcode, str(len(srcs))] + [f"R{r}" for r in srcs]
    if addrs is not None:
        parts += [str(width_from_opcode(ins.full_opcode)), compress_addresses(addrs, mask)]
    else:
        parts.append("0")
    parts.append(str(tracer_immediate(ins)))
    return " ".join(parts) + " "


# ---- export ------------------------------------------------------------------------------------
RESERVED_SHARED_PER_BLOCK = 1024  # cudaDevAttrReservedSharedMemoryPerBlock, read on the H100 (sm_80+: 1 KB)


def static_shared_bytes(program) -> int:
    """Static shared memory as the tracer's `-shmem` reports it (CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES).

    On sm_90 the listing's `.nv.shared.<kernel>` section (and `Program.shared_bytes`, and
    `cuobjdump -res-usage`) include the 1 KB system-reserved region at the bottom of the window
    whenever the cubin has a `.nv.shared.reserved.*` section; the driver's attribute leaves it out
    (measured on an H100: 8192 for the demo kernel whose section is 9216). Without the listing the
    Program's figure is used as is.
    """
    reserved = getattr(program, "reserved_shared_bytes", None)
    if reserved is not None:
        return int(program.shared_bytes) - int(reserved)
    has_reserved = _listing_has_reserved_shared(str(program.source))
    if has_reserved and program.shared_bytes >= RESERVED_SHARED_PER_BLOCK:
        return int(program.shared_bytes) - RESERVED_SHARED_PER_BLOCK
    return int(program.shared_bytes)


@lru_cache(maxsize=32)
def _listing_has_reserved_shared(source: str) -> bool:
    try:
        text = Path(source).read_text()
    except OSError:
        return False
    return re.search(r"^\s*\.section\s+\.nv\.shared\.reserved", text, re.M) is not None


def export_accelsim(trace: DynamicTrace, program, out_dir, kernel_id: int = 1, compress: bool = False,
                    memcpys: list[tuple[int, int]] | None = None, shmem_base: int = SHMEM_BASE,
                    local_base: int = LOCAL_BASE) -> Path:
    """Write `kernelslist.g` and `kernel-<id>.traceg[.xz]` for `trace` of `program` into `out_dir`.

    `memcpys`: optional (device address, bytes) pairs written as MemcpyHtoD commands before the kernel.
    Returns the path of the kernel trace file.
    """
    trace.check_program(program)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    h = trace.header
    name = f"kernel-{kernel_id}.traceg" + (".xz" if compress else "")
    gx, gy, gz = h["grid"]
    bx, by, bz = h["block"]
    wpc = h["warps_per_cta"]
    lines = [
        f"-kernel name = {program.kernel}",
        f"-kernel id = {kernel_id}",
        f"-grid dim = ({gx},{gy},{gz})",
        f"-block dim = ({bx},{by},{bz})",
        f"-shmem = {static_shared_bytes(program) + h['dynamic_shared_bytes']}",
        f"-nregs = {program.registers}",
        f"-binary version = {int(program.arch.split('_')[1])}",
        "-cuda stream id = 0",
        f"-shmem base_addr = 0x{shmem_base:016x}",
        f"-local mem base_addr = 0x{local_base:016x}",
        f"-nvbit version = {NVBIT_VERSION}",
        f"-accelsim tracer version = {TRACER_VERSION}",
        "-enable lineinfo = 0",
        "",
        FORMAT_LINE,
        "",
    ]
    # static part of every line, computed once per instruction
    static = [instruction_line(ins, 0, None).split(" ", 2)[2] for ins in program.instructions]
    ctas = sorted({int(w) // wpc for w in trace.warp_ids})
    for cta in ctas:
        x, y, z = cta % gx, (cta // gx) % gy, cta // (gx * gy)
        lines += ["", "#BEGIN_TB", "", f"thread block = {x},{y},{z}"]
        for j in range(wpc):
            stream = trace.warp_stream(cta * wpc + j)
            lines += ["", f"warp = {j}", f"insts = {len(stream)}"]
            for r in stream:
                ins = program.instructions[int(r["pc_index"])]
                mask = int(r["exec_mask"])
                row = int(r["mem_row"])
                if row >= 0:
                    lines.append(instruction_line(ins, mask, trace.addresses[row]))
                else:
                    lines.append(f"{ins.address:04x} {mask:08x} {static[ins.index]}")
        lines += ["", "#END_TB"]
    text = "\n".join(lines) + "\n"
    path = out / name
    if compress:
        with lzma.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    cmds = [f"MemcpyHtoD,0x{addr:016x},{nbytes}" for addr, nbytes in (memcpys or [])] + [name]
    (out / "kernelslist.g").write_text("\n".join(cmds) + "\n")
    return path


# ---- import ------------------------------------------------------------------------------------
@dataclass
class AccelSimInstruction:
    pc: int
    mask: int
    opcode: str
    dsts: tuple[int, ...]
    srcs: tuple[int, ...]
    mem_width: int = 0
    addresses: np.ndarray | None = None  # (32,) uint64, 0 for lanes not in mask; None if not memory
    immediate: int = 0
    unit: str = ""
    line: int = 0  # line number in the file
    line_num: int | None = None  # source line (lineinfo traces)

    @property
    def base_opcode(self) -> str:
        return self.opcode.split(".", 1)[0]


@dataclass
class AccelSimKernel:
    path: Path
    header: dict = field(default_factory=dict)
    # (cta x, y, z, warp in CTA) -> instruction stream, in file order
    warps: dict[tuple[int, int, int, int], list[AccelSimInstruction]] = field(default_factory=dict)

    @property
    def grid(self) -> tuple[int, int, int]:
        return tuple(self.header["grid"])

    @property
    def block(self) -> tuple[int, int, int]:
        return tuple(self.header["block"])

    @property
    def warps_per_cta(self) -> int:
        bx, by, bz = self.block
        return -(-(bx * by * bz) // 32)

    def cta_linear(self, x: int, y: int, z: int) -> int:
        gx, gy, _ = self.grid
        return x + y * gx + z * gx * gy

    @property
    def n_warp_instructions(self) -> int:
        return sum(len(s) for s in self.warps.values())


@dataclass
class AccelSimApp:
    kernelslist: Path
    memcpys: list[tuple[int, int]]
    kernels: list[AccelSimKernel]


def _open_text(path: Path):
    if path.name.endswith(".xz"):
        return lzma.open(path, "rt")
    return open(path)


_HEADER_INT = {"kernel id": "kernel_id", "shmem": "shmem", "nregs": "nregs", "binary version": "binary_version",
               "cuda stream id": "cuda_stream_id", "accelsim tracer version": "tracer_version",
               "enable lineinfo": "lineinfo"}
_HEADER_HEX = {"shmem base_addr": "shmem_base_addr", "local mem base_addr": "local_mem_base_addr"}
_DIM = re.compile(r"^\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)$")


def header_line(line: str, h: dict) -> str | None:
    """Store one `-key = value` header line (stripped) in `h`; the problem as a message, else None."""
    key, eq, value = line[1:].partition("=")
    if not eq:
        return f"header line without '=': {line!r}"
    key, value = key.strip(), value.strip()
    try:
        if key == "kernel name":
            h["kernel_name"] = value
        elif key in ("grid dim", "block dim"):
            m = _DIM.match(value)
            if not m:
                return f"{key} must be (x,y,z), got {value!r}"
            h["grid" if key == "grid dim" else "block"] = [int(v) for v in m.groups()]
        elif key in _HEADER_INT:
            h[_HEADER_INT[key]] = int(value)
        elif key in _HEADER_HEX:
            h[_HEADER_HEX[key]] = int(value, 16)
        else:
            h[key.replace(" ", "_")] = value
    except ValueError:
        return f"header field '{key}' has a malformed value {value!r}"
    return None


def read_kernel_trace(path, arch: str | None = None) -> AccelSimKernel:
    """Parse one `kernel-N.traceg[.xz]`; opcodes are mapped to units with `arch`'s opcode table
    (default: the architecture named by the `-binary version` line)."""
    from gpusim.isa.opcodes import load_opcode_table

    path = Path(path)
    kernel = AccelSimKernel(path=path)
    h = kernel.header
    h.update(lineinfo=0, tracer_version=TRACER_VERSION)
    table = None
    cta: tuple[int, int, int] | None = None
    warp: int | None = None
    expected = 0
    stream: list | None = None
    in_tb = False

    def fail(msg: str, lineno: int):
        raise TraceFormatError(msg, f"{path}:{lineno}")

    def close_warp(lineno: int):
        if stream is not None and len(stream) != expected:
            fail(f"warp {warp} of thread block {cta}: 'insts = {expected}' but {len(stream)} instruction lines",
                 lineno)

    try:
        f = _open_text(path)
    except OSError as exc:
        raise TraceFormatError(f"cannot open Accel-Sim trace ({exc.strerror})", str(path)) from None
    with f:
        try:
            for lineno, raw in enumerate(f, 1):
                line = raw.strip()
                if not line:
                    continue
                if line.startswith("-"):
                    problem = header_line(line, h)
                    if problem:
                        fail(problem, lineno)
                    continue
                if line.startswith("#"):
                    tag = line.split()[0]
                    if tag == "#BEGIN_TB":
                        if in_tb:
                            fail("#BEGIN_TB before the previous thread block's #END_TB", lineno)
                        if "grid" not in h or "block" not in h:
                            fail("thread block before the '-grid dim' and '-block dim' header lines", lineno)
                        in_tb, cta, warp, stream = True, None, None, None
                    elif tag == "#END_TB":
                        if not in_tb:
                            fail("#END_TB without #BEGIN_TB", lineno)
                        close_warp(lineno)
                        in_tb, stream = False, None
                    continue  # '#traces format' and comments
                if not in_tb:
                    fail(f"unexpected line outside a thread block: {line[:60]!r}", lineno)
                if line.startswith("thread block"):
                    m = re.fullmatch(r"thread block\s*=\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)", line)
                    if not m:
                        fail(f"malformed thread block line {line!r}", lineno)
                    cta = tuple(int(v) for v in m.groups())
                    if any(c >= g for c, g in zip(cta, h["grid"])):
                        fail(f"thread block {cta} outside the grid {tuple(h['grid'])}", lineno)
                    continue
                if line.startswith("warp"):
                    m = re.fullmatch(r"warp\s*=\s*(\d+)", line)
                    if not m or cta is None:
                        fail(f"malformed warp line {line!r}" if not m else "warp before 'thread block'", lineno)
                    close_warp(lineno)
                    warp, stream, expected = int(m.group(1)), None, -1
                    if warp >= kernel.warps_per_cta:
                        fail(f"warp {warp} but a block of {tuple(h['block'])} has {kernel.warps_per_cta} warps", lineno)
                    continue
                if line.startswith("insts"):
                    m = re.fullmatch(r"insts\s*=\s*(\d+)", line)
                    if not m or warp is None:
                        fail(f"malformed insts line {line!r}" if not m else "insts before 'warp'", lineno)
                    expected = int(m.group(1))
                    key = (*cta, warp)
                    if key in kernel.warps:
                        fail(f"warp {warp} of thread block {cta} listed twice", lineno)
                    stream = kernel.warps[key] = []
                    continue
                if stream is None:
                    fail("instruction line before 'warp = ' / 'insts = '", lineno)
                if table is None:
                    table = _table_for(arch, h, path, lineno, load_opcode_table)
                ins = parse_instruction_line(line, h.get("tracer_version", TRACER_VERSION), h.get("lineinfo", 0),
                                             f"{path}:{lineno}")
                row = table.get(ins.base_opcode)
                if row is None:
                    fail(f"opcode {ins.opcode} is not in the {table.arch} opcode table (gpusim/arch/{table.arch}.yaml)",
                         lineno)
                ins.unit, ins.line = row.unit, lineno
                stream.append(ins)
        except (EOFError, lzma.LZMAError, UnicodeDecodeError) as exc:
            raise TraceFormatError(f"truncated or corrupt trace file ({type(exc).__name__}: {exc})",
                                   str(path)) from None
    if in_tb:
        raise TraceFormatError("file ends inside a thread block (no #END_TB): truncated?", str(path))
    for need in ("kernel_name", "grid", "block"):
        if need not in h:
            raise TraceFormatError(f"header line for '{need.replace('_', ' ')}' missing", str(path))
    return kernel


def _table_for(arch, header, path, lineno, load):
    if arch is None:
        if "binary_version" not in header:
            raise TraceFormatError("no '-binary version' header line and no arch given", f"{path}:{lineno}")
        arch = f"sm_{header['binary_version']}"
    try:
        return load(arch)
    except GpusimError:
        raise TraceFormatError(f"no opcode table for {arch} (gpusim/arch/{arch}.yaml): pass arch=", str(path)) from None


def parse_instruction_line(line: str, tracer_version: int = TRACER_VERSION, lineinfo: int = 0,
                           where: str = "") -> AccelSimInstruction:
    """One instruction line; raises TraceFormatError naming `where` (file:line) if it is malformed."""
    tok = line.split()
    pos = 0

    def take(what: str) -> str:
        nonlocal pos
        if pos >= len(tok):
            raise TraceFormatError(f"line ends before {what}: {line.strip()!r}", where)
        pos += 1
        return tok[pos - 1]

    def num(what: str, base: int = 10) -> int:
        t = take(what)
        try:
            return int(t, base)
        except ValueError:
            raise TraceFormatError(f"{what} must be a {'hex' if base == 16 else 'decimal'} number, got {t!r}: "
                                   f"{line.strip()!r}", where) from None

    def reg(what: str) -> int:
        t = take(what)
        if not (t[:1] == "R" and t[1:].isdigit()):
            raise TraceFormatError(f"{what} must be R<n>, got {t!r}: {line.strip()!r}", where)
        return int(t[1:])

    if tracer_version < 3:
        for what in ("thread block x", "thread block y", "thread block z", "warp id"):
            num(what)
    line_num = num("source line number") if lineinfo else None
    pc = num("PC", 16)
    mask = num("mask", 16)
    if mask >> 32:
        raise TraceFormatError(f"mask {mask:#x} wider than 32 lanes: {line.strip()!r}", where)
    ndst = num("dest_num")
    if ndst > 1:
        raise TraceFormatError(f"dest_num {ndst} (the tracer writes at most 1): {line.strip()!r}", where)
    dsts = tuple(reg("destination register") for _ in range(ndst))
    opcode = take("opcode")
    if not re.fullmatch(r"[A-Z][A-Z0-9_]*(\.[A-Za-z0-9_]+)*", opcode):
        raise TraceFormatError(f"malformed opcode {opcode!r}: {line.strip()!r}", where)
    nsrc = num("src_num")
    if nsrc > MAX_SRC:
        raise TraceFormatError(f"src_num {nsrc} > {MAX_SRC}: {line.strip()!r}", where)
    srcs = tuple(reg("source register") for _ in range(nsrc))
    width = num("mem_width")
    addresses = None
    if width > 0:
        width = width_from_opcode(opcode)  # as Accel-Sim's parser: the opcode is authoritative
        mode = num("address mode")
        lanes = [s for s in range(32) if mask >> s & 1]
        addresses = np.zeros(32, dtype=np.uint64)
        if mode == LIST_ALL:
            for s in lanes:
                addresses[s] = num("address", 16)
        elif mode == BASE_STRIDE:
            base, stride = num("base address", 16), num("stride")
            # as the parser: lanes from the first active one while the run lasts
            if lanes:
                run = lanes[0]
                while run < 32 and mask >> run & 1:
                    addresses[run] = (base + stride * (run - lanes[0])) & ((1 << 64) - 1)
                    run += 1
                if run - lanes[0] != len(lanes):
                    raise TraceFormatError("base-stride addresses for a mask with several runs of lanes: "
                                           f"{line.strip()!r}", where)
        elif mode == BASE_DELTA:
            base = num("base address", 16)
            addr = base
            for i, s in enumerate(lanes):
                if i:
                    addr = (addr + num("address delta")) & ((1 << 64) - 1)
                addresses[s] = addr
        else:
            raise TraceFormatError(f"unknown address mode {mode} (0 list, 1 base-stride, 2 base-delta): "
                                   f"{line.strip()!r}", where)
    imm = 0
    if pos < len(tok):
        imm = num("immediate")
    if pos != len(tok):
        raise TraceFormatError(f"{len(tok) - pos} unexpected trailing field(s): {line.strip()!r}", where)
    return AccelSimInstruction(pc=pc, mask=mask, opcode=opcode, dsts=dsts, srcs=srcs, mem_width=width,
                               addresses=addresses, immediate=imm, line_num=line_num)


def read_kernelslist(path, arch: str | None = None) -> AccelSimApp:
    """Parse `kernelslist.g` and every kernel trace it names (paths relative to its directory)."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise TraceFormatError(f"cannot read kernel list ({exc.strerror})", str(path)) from None
    memcpys, kernels = [], []
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("MemcpyHtoD"):
            parts = line.split(",")
            try:
                if len(parts) != 3:
                    raise ValueError
                memcpys.append((int(parts[1], 16), int(parts[2])))
            except ValueError:
                raise TraceFormatError(f"malformed MemcpyHtoD command {line!r}", f"{path}:{lineno}") from None
        elif line.startswith("kernel"):
            kernels.append(read_kernel_trace(path.parent / line, arch))
        elif line.startswith("Memcpy"):
            continue  # other copies: Accel-Sim ignores them too
        else:
            raise TraceFormatError(f"unknown command {line!r}", f"{path}:{lineno}")
    return AccelSimApp(kernelslist=path, memcpys=memcpys, kernels=kernels)


def import_accelsim(path, arch: str | None = None) -> AccelSimApp | AccelSimKernel:
    """Read a `kernelslist.g` (-> AccelSimApp) or one `kernel-N.traceg[.xz]` (-> AccelSimKernel)."""
    path = Path(path)
    if path.name.startswith("kernelslist"):
        return read_kernelslist(path, arch)
    return read_kernel_trace(path, arch)


def to_dynamic_trace(kernel: AccelSimKernel, program, workload=None, size: int | None = None) -> DynamicTrace:
    """Turn an imported Accel-Sim trace of `program` back into a DynamicTrace.

    PCs are matched to instruction indices through `program.by_address` and each opcode must equal
    the listing's; the trace's mask (active & guard) becomes both `active_mask` and `exec_mask`
    (the header says `active_mask_exact: False`).
    """
    if kernel.header.get("kernel_name") != program.kernel:
        raise TraceFormatError(f"trace is of kernel {kernel.header.get('kernel_name')}, program is {program.kernel}",
                               str(kernel.path))
    wpc = kernel.warps_per_cta
    n = kernel.n_warp_instructions
    warp = np.empty(n, np.int64)
    seq = np.empty(n, np.int64)
    pcs = np.empty(n, np.int64)
    masks = np.empty(n, np.uint32)
    is_mem = np.zeros(n, bool)
    addresses, widths = [], []
    i = 0
    for (x, y, z, w), stream in kernel.warps.items():
        gw = kernel.cta_linear(x, y, z) * wpc + w
        for k, ins in enumerate(stream):
            idx = program.by_address.get(ins.pc)
            where = f"{kernel.path}:{ins.line}"
            if idx is None:
                raise TraceFormatError(f"PC {ins.pc:#06x} is not an instruction address of {program.kernel}", where)
            if program.instructions[idx].full_opcode != ins.opcode:
                raise TraceFormatError(f"PC {ins.pc:#06x} is {ins.opcode} in the trace but "
                                       f"{program.instructions[idx].full_opcode} in the program", where)
            warp[i], seq[i], pcs[i], masks[i] = gw, k, idx, ins.mask
            if ins.addresses is not None:
                is_mem[i] = True
                addresses.append(ins.addresses)
                widths.append(ins.mem_width)
            i += 1
    order = np.lexsort((seq, warp))
    records = np.empty(n, dtype=RECORD_DTYPE)
    records["warp"], records["seq"], records["pc_index"] = warp[order], seq[order], pcs[order]
    records["active_mask"] = records["exec_mask"] = masks[order]
    old_row = np.full(n, -1, np.int64)
    old_row[is_mem] = np.arange(int(is_mem.sum()))
    old_row = old_row[order]
    has = old_row >= 0
    new_row = np.full(n, -1, np.int64)
    new_row[has] = np.arange(int(has.sum()))
    records["mem_row"] = new_row
    addr = np.array(addresses, dtype=np.uint64).reshape(-1, 32)[old_row[has]]
    acc = np.array(widths, dtype=np.uint8)[old_row[has]]
    dyn = max(0, int(kernel.header.get("shmem", 0)) - static_shared_bytes(program))
    ctas = sorted({kernel.cta_linear(x, y, z) for (x, y, z, _) in kernel.warps})
    header = make_header(program, kernel.grid, kernel.block, dyn, wpc, ctas, workload=workload, size=size,
                         source=f"accelsim:{kernel.path}", exec_mask_exact=True, active_mask_exact=False)
    return DynamicTrace(header, records, np.ascontiguousarray(addr), acc)
