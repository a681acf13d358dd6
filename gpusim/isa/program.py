"""Typed, static view of a kernel's SASS: the `Program` the emulator executes and the timing model replays.

Everything here is as the compiler wrote it: register numbers, `.reuse` flags, control information
and dual-issue pairs come from the real listing (see `gpusim.isa.parser`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

RZ = 255  # zero register on sm_3x..sm_9x (reads 0, writes dropped)
URZ = 63  # uniform zero register (sm_75+)
PT = 7  # always-true predicate


@dataclass(frozen=True)
class Operand:
    """One operand slot of an instruction.

    kind: reg (R), ureg (UR), pred (P), upred (UP), const (c[bank][offset]), imm (integer),
    fimm (floating immediate), mem ([base+offset] with optional uniform register and descriptor),
    sreg (special register SR_*), label (branch target address), other (anything kept verbatim).
    `width` is the operand's size in bits; a 64/128-bit register operand occupies `width // 32`
    consecutive registers starting at `reg` (a register range).
    """

    kind: str
    text: str
    reg: int | None = None
    width: int = 32
    value: int | float | None = None  # immediates, const offsets, memory offsets, label addresses
    bank: int | None = None  # constant bank
    ureg: int | None = None  # uniform register inside a memory/const operand
    desc: int | None = None  # sm_90 memory descriptor uniform register (desc[URx])
    negate: bool = False
    absolute: bool = False
    invert: bool = False  # logical not on predicates / bitwise not (~) on integer sources
    reuse: bool = False
    suffix: tuple[str, ...] = ()  # operand modifiers such as .H1, .B2, .X4, .64, .U32

    @property
    def regs(self) -> tuple[int, ...]:
        """Registers this operand touches (empty for RZ/URZ/PT and non-register kinds)."""
        if self.kind in ("reg", "ureg") and self.reg is not None:
            zero = RZ if self.kind == "reg" else URZ
            if self.reg == zero:
                return ()
            return tuple(range(self.reg, self.reg + max(1, self.width // 32)))
        if self.kind == "mem" and self.reg is not None and self.reg != RZ:
            return tuple(range(self.reg, self.reg + max(1, self.width // 32)))
        return ()


@dataclass(frozen=True)
class Control:
    """Scheduling information the compiler attached to an instruction.

    sm_5x/sm_6x: one 64-bit control word per three instructions, 21 bits each; sm_70+: bits 105-125
    of the 128-bit encoding (same field order). Field layout: maxas wiki "Control Codes"
    [MAXAS-CC]; sm_70+ positions [JIA18], [DECODER] (see ../shared/reference/microarch.md §7).
    sm_35 has only an 8-bit scheduling byte per instruction, kept raw (`raw`), meaning not public.
    """

    stall: int | None = None  # cycles to wait before issuing the next instruction of this warp
    yield_flag: int | None = None  # raw yield bit (polarity differs by architecture)
    write_barrier: int | None = None  # scoreboard set when the result is written (None: none)
    read_barrier: int | None = None  # scoreboard set when the sources have been read (None: none)
    wait_mask: int = 0  # scoreboards to wait on before issuing (bit i = SBi)
    reuse_bits: int = 0  # operand reuse flags from the control field (bit 0 = first source slot)
    raw: int | None = None  # the raw field (21 bits, or 8 bits on sm_35)

    @property
    def decoded(self) -> bool:
        return self.stall is not None


@dataclass(frozen=True)
class Instruction:
    index: int  # position in the program
    address: int  # byte offset in the function's code
    text: str  # the listing's text, without the trailing ';'
    opcode: str  # base opcode, e.g. FFMA
    modifiers: tuple[str, ...]  # e.g. ('GE', 'AND') for ISETP.GE.AND
    dsts: tuple[Operand, ...]
    srcs: tuple[Operand, ...]
    guard: int | None = None  # guard predicate register (None: always)
    guard_negated: bool = False
    guard_uniform: bool = False
    control: Control = field(default_factory=Control)
    encoding: tuple[int, ...] = ()  # raw 64-bit words of the instruction
    dual_issue: bool = False  # issued together with the next instruction (nvdisasm `{ ... }` pair)
    unit: str = ""  # functional-unit class from the architecture's opcode table
    latency_class: str = ""  # latency class from the same table

    @property
    def full_opcode(self) -> str:
        return ".".join((self.opcode,) + self.modifiers)

    def has(self, modifier: str) -> bool:
        return modifier in self.modifiers


@dataclass
class Program:
    """One kernel function's SASS and what the listing says about its resources."""

    arch: str  # sm_35 / sm_52 / sm_90
    kernel: str  # mangled name
    instructions: list[Instruction]
    registers: int  # registers per thread (EIATTR_REGCOUNT / SHI_REGISTERS)
    shared_bytes: int  # static shared memory, including any reserved region
    param_base: int  # offset of the first kernel parameter in constant bank 0
    param_bytes: int
    reserved_shared_bytes: int = 0  # of which reserved by the system (sm_90: 1 KB per CTA)
    params: list[tuple[int, int]] = field(default_factory=list)  # (offset, size) per parameter, in order
    const_bank0_bytes: int = 0
    frame_bytes: int = 0  # local memory per thread (stack frame)
    stack_bytes: int = 0  # per-thread stack including the subroutines' frames (EIATTR_MIN_STACK_SIZE)
    const_banks: dict = field(default_factory=dict)  # bank number -> bytes (compiler constants, bank 2/3)
    source: str = ""  # listing file it came from
    toolchain: str = ""  # ptxas version string recorded in the cubin

    def __post_init__(self):
        self.by_address = {ins.address: ins.index for ins in self.instructions}

    def __len__(self) -> int:
        return len(self.instructions)

    @property
    def control_decoded(self) -> bool:
        return all(i.control.decoded for i in self.instructions)

    def opcode_histogram(self) -> dict[str, int]:
        hist: dict[str, int] = {}
        for ins in self.instructions:
            hist[ins.opcode] = hist.get(ins.opcode, 0) + 1
        return dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])))

    def fingerprint(self) -> str:
        """Content hash of the code (addresses, text, encodings): names a trace's program."""
        h = hashlib.sha256(f"{self.arch}:{self.kernel}".encode())
        for ins in self.instructions:
            h.update(f"{ins.address}:{ins.text}:{ins.encoding}".encode())
        return h.hexdigest()[:16]

    def summary(self) -> dict:
        regs = sorted({r for ins in self.instructions for op in ins.dsts + ins.srcs
                       if op.kind in ("reg", "mem") for r in op.regs})
        return {
            "arch": self.arch,
            "kernel": self.kernel,
            "instructions": len(self.instructions),
            "registers_per_thread": self.registers,
            "registers_used": len(regs),
            "max_register": max(regs) if regs else None,
            "shared_bytes": self.shared_bytes,
            "param_base": self.param_base,
            "param_bytes": self.param_bytes,
            "frame_bytes": self.frame_bytes,
            "control_info": "decoded" if self.control_decoded else (
                "raw" if any(i.control.raw is not None for i in self.instructions) else "none"),
            "dual_issue_pairs": sum(i.dual_issue for i in self.instructions),
            "reuse_flags": sum(op.reuse for i in self.instructions for op in i.srcs),
            "opcodes": self.opcode_histogram(),
            "units": _count(i.unit for i in self.instructions),
            "fingerprint": self.fingerprint(),
            "toolchain": self.toolchain,
        }


def _count(items) -> dict[str, int]:
    out: dict[str, int] = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return dict(sorted(out.items()))
