"""Per static instruction facts the timing loop needs, computed once per (Program, GPU config)."""

from __future__ import annotations

from dataclasses import dataclass

from gpusim.isa.program import PT, RZ, URZ, Program

# instruction kinds the timing loop distinguishes
ALU, SMEM, GLOAD, GSTORE, CMEM, BAR, EXIT, BRANCH, DEPBAR, NOP = range(10)


@dataclass(slots=True)
class StaticInfo:
    kind: int
    pipe: str
    occupancy: float  # cycles the pipe is busy per warp instruction (32 / lanes)
    latency: int  # result latency of the unit (scoreboard mode and variable-latency fallback)
    variable: bool  # result signalled through a scoreboard (memory, SFU, FP64, conversions)
    srcs: tuple  # dependency ids read: R n -> n, P n -> 256 + n, UR n -> 300 + n, UP n -> 370 + n
    dsts: tuple
    stall: int  # compiler stall count (control-code mode)
    wait_mask: int
    write_barrier: int | None
    read_barrier: int | None
    dual: bool  # first of a dual-issue pair in the listing (nvdisasm braces, sm_5x)
    depbar: tuple | None  # (scoreboard, max outstanding) for DEPBAR.LE SBn, k
    readonly: bool  # a load through the read-only/texture path (LDG.CI, .CONSTANT, .NC): cached in L1


def _ids(operands) -> tuple:
    out = []
    for op in operands:
        if op.kind in ("reg", "mem") and op.reg is not None and op.reg != RZ:
            out.extend(op.regs if op.kind == "reg" else range(op.reg, op.reg + op.width // 32))
        elif op.kind == "ureg" and op.reg != URZ:
            out.extend(300 + r for r in op.regs)
        elif op.kind == "pred" and op.reg != PT:
            out.append(256 + op.reg)
        elif op.kind == "upred" and op.reg != PT:
            out.append(370 + op.reg)
        if op.kind == "mem" and op.ureg is not None and op.ureg != URZ:
            out.append(300 + op.ureg)
    return tuple(out)


def _kind(ins) -> int:
    op = ins.opcode
    if op in ("BAR",):
        return BAR
    if op in ("EXIT", "RET"):
        return EXIT
    if op == "DEPBAR":
        return DEPBAR
    if ins.unit == "smem":
        return SMEM
    if op in ("LDG", "LD", "LDL", "TLD", "TEX"):
        return GLOAD
    if op in ("STG", "ST", "STL", "RED", "ATOM", "ATOMG"):
        return GSTORE
    if ins.unit == "cmem":
        return CMEM
    if ins.unit == "branch":
        return BRANCH
    return ALU


def static_info(program: Program, cfg) -> list[StaticInfo]:
    units = cfg.sm.units
    out = []
    for ins in program.instructions:
        unit = units[ins.unit]
        srcs = _ids(ins.srcs) + ((256 + ins.guard,) if ins.guard is not None and ins.guard != PT
                                 and not ins.guard_uniform else ())
        depbar = None
        if ins.opcode == "DEPBAR":
            sb = next((s.reg for s in ins.srcs if s.kind == "sb"), 0)
            k = next((s.value for s in ins.srcs if s.kind == "imm"), 0)
            depbar = (sb, k)
        c = ins.control
        out.append(StaticInfo(
            kind=_kind(ins), pipe=unit.pipe, occupancy=32.0 / unit.lanes, latency=unit.latency_cycles,
            variable=ins.latency_class == "variable", srcs=srcs, dsts=_ids(ins.dsts),
            stall=c.stall if c.stall is not None else 1, wait_mask=c.wait_mask,
            write_barrier=c.write_barrier, read_barrier=c.read_barrier, dual=ins.dual_issue, depbar=depbar,
            readonly=any(m in ins.modifiers for m in ("CI", "CONSTANT", "NC")) or ins.opcode == "TLD"
            or (ins.opcode == "LDG" and program.arch == "sm_35")))  # GK110's LDG is the read-only data cache path
    return out
