"""Per static instruction facts the timing loop needs, computed once per (Program, GPU config)."""

from __future__ import annotations

from dataclasses import dataclass

from gpusim.isa.program import PT, RZ, URZ, Program
from gpusim.isa.widths import access_bits
from gpusim.trace.elide import GLOBAL_LOAD_OPCODES
from gpusim.timing import stalls as S

# instruction kinds the timing loop distinguishes
ALU, SMEM, GLOAD, GSTORE, CMEM, BAR, EXIT, BRANCH, DEPBAR, NOP = range(10)
SREG_WAIT = 10  # an issue attempt's queue code: an S2R that waits for the SM's MIO queues (`sm.thread_sreg_waits_for_mio`)
THREAD_SREGS = ("SR_TID", "SR_LANEID", "SR_VIRTID")  # special registers read through the shared-memory path


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
    warp_bytes: int = 0  # a global load's register data for a full warp: 32 lanes x access width
    smem_extra: float = 0.0  # a wide shared load's extra latency (sm.shared_memory.wide_load_extra_cycles)
    bypass: bool = False  # a load that does not allocate in L1 (`_bypasses_l1`)
    l1_cached: bool = False  # a global load whose sectors L1 holds: the read-only/texture path (LDG.CI, .CONSTANT,
    # .NC, TLD) on every card, plain loads where the card caches them (memory.l1.caches_global_loads), never a `bypass` load
    copy_role: int = 0  # cp.async: COPY (LDGSTS: global to shared), COMMIT (LDGDEPBAR: closes a group), else 0
    copy_mio: float = 0.0  # shared-pipe wavefronts per 128 bytes an L1-allocating copy takes (l1_copy_wavefronts)
    sreg_wait: bool = False  # an S2R of a per-thread register that waits for the MIO queues (`thread_sreg_waits_for_mio`)


# cp.async's parts (copy_role): a warp's LDGSTS since its last LDGDEPBAR form a group; LDGDEPBAR's
# scoreboard (SB0) is released when the last of them has written shared memory, and DEPBAR.LE SB0, k
# waits until at most k groups are pending [PTX ISA cp.async.commit_group / wait_group; the SASS
# nvcc 13.0 makes of them, tests/data/cpasync/cpasync_forms_sm_90.sass]
COPY, COMMIT = 1, 2


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
    if op in GLOBAL_LOAD_OPCODES:
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
    wide = cfg.sm.shared_memory.wide_load_extra_cycles
    caches_loads = cfg.memory.l1.caches_global_loads
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
        kind, bypass = _kind(ins), _bypasses_l1(ins)
        readonly = any(m in ins.modifiers for m in ("CI", "CONSTANT", "NC")) or ins.opcode == "TLD" \
            or (ins.opcode == "LDG" and program.arch == "sm_35")  # GK110's LDG is the read-only data cache path
        out.append(StaticInfo(
            kind=kind, pipe=unit.pipe, occupancy=32.0 / unit.lanes, latency=unit.latency_cycles,
            variable=ins.latency_class == "variable", srcs=srcs, dsts=_ids(ins.dsts),
            stall=c.stall if c.stall is not None else 1, wait_mask=c.wait_mask,
            write_barrier=c.write_barrier, read_barrier=c.read_barrier, dual=ins.dual_issue, depbar=depbar,
            warp_bytes=32 * access_bits(ins.modifiers) // 8 if kind == GLOAD else 0,
            smem_extra=wide.get(access_bits(ins.modifiers), 0.0) if ins.opcode == "LDS" else 0.0,
            bypass=bypass, l1_cached=kind == GLOAD and (caches_loads or readonly) and not bypass,
            copy_role=COPY if ins.opcode == "LDGSTS" else COMMIT if ins.opcode == "LDGDEPBAR" else 0,
            copy_mio=cfg.sm.shared_memory.l1_copy_wavefronts if ins.opcode == "LDGSTS" and not bypass else 0.0,
            sreg_wait=cfg.sm.thread_sreg_waits_for_mio and _reads_thread_sreg(ins)))
    return out


def _reads_thread_sreg(ins) -> bool:
    """An S2R of a per-thread special register. H200 (validation/h100/micro/memory30_h200.json `s2rq`,
    bench/micro/run_memory.py --only s2rq): SR_TID.Y and SR_LANEID take 25 cycles (SR_VIRTID 34) with
    the MIO queues empty, 392-496 with one sub-partition's full of 32-way conflicting LDS (on a warp of
    another sub-partition too), 644-774 with two, 1,510-1,553 with four; SR_CTAID.X and SR_VIRTUALSMID
    27 whatever is queued. Nsight puts transposes' and C = A A^T kernels' mio_throttle samples on their
    first S2R SR_TID (H200 transpose skeletons 17-39% of all samples, ncu_source_tpose_h200.json; H100
    coalescedMultiply_padded 10%, ncu_source_aat_h100.json)."""
    return ins.opcode == "S2R" and any(op.kind == "sreg" and op.text.startswith(THREAD_SREGS) for op in ins.srcs)


def _bypasses_l1(ins) -> bool:
    """Global reads that do not allocate in L1 on any card: cp.async.cg (LDGSTS.BYPASS) [PTX ISA
    cp.async], and loads at GPU or system scope (LDG.E.STRONG.GPU: ld.global.cg / __ldcg, ld.relaxed.gpu;
    .STRONG.SYS: volatile), which must see other SMs' stores. H200 (validation/h200/cpasync/, bench/micro/
    cpasync): a chase of __ldcg int4 loads over 32 KiB takes 333 cycles a step, the same chase of plain
    loads 63 (L1 hits), cp.async.cg 353, cp.async.ca 104."""
    mods = ins.modifiers
    if ins.opcode == "LDGSTS":
        return "BYPASS" in mods
    return ins.opcode in ("LDG", "LD") and "STRONG" in mods and ("GPU" in mods or "SYS" in mods)


def _busy_reason(kind: int) -> int:
    if kind in (GLOAD, GSTORE):
        return S.LG
    if kind in (SMEM, CMEM):
        return S.MIO
    return S.MATH


def queue_stores(static: list[StaticInfo]) -> list[bool]:
    """Per instruction index: whether it takes a store slot of its queue (mem/lsu.py): a global store,
    or a shared-memory access with no result (STS)."""
    return [s.kind == GSTORE or (s.kind == SMEM and not s.dsts) for s in static]


class IssueFacts:
    """The per instruction facts of `StaticInfo` in the form the SM's issue loop reads them: pipes as
    small integers (indices into a sub-partition's pipe lists), the fields of one instruction in one
    tuple, and the decisions that depend only on the instruction and the SM's modes, made once.

    `control_mode`: dependencies from control codes (else the register scoreboard); `dual`: the
    scheduler's dual-issue rule ("none", "control_codes" or "kepler"); `tick`: the type of the SM's
    clock (int or float), which cycle counts added to it are given as."""

    __slots__ = ("tick", "pipe_names", "attempt", "execute", "operand_wait", "wait_barriers", "depbars", "pairs", "second_ok",
                 "deps", "dst_sets")

    def __init__(self, static: list[StaticInfo], control_mode: bool, dual: str, tick: type = int):
        self.tick = tick
        self.pipe_names = sorted({s.pipe for s in static})  # pipe id -> pipe name
        pipe_id = {name: i for i, name in enumerate(self.pipe_names)}
        # per instruction index, what an issue attempt checks: (pipe id, the queue it enters: SMEM (the
        # MIO queue), GLOAD or GSTORE (the LSU queue), or 0 for none, the stall reason while its pipe is
        # busy: Nsight Compute charges a warp waiting for the LSU pipe lg_throttle, for the MIO pipe
        # mio_throttle (validation/h100/micro/memory_h100.json, ncu rows of ldg_ca32 and sts_32),
        # for a math pipe math_pipe_throttle)
        self.attempt = [(pipe_id[s.pipe], s.kind if s.kind in (SMEM, GLOAD, GSTORE) else SREG_WAIT if s.sreg_wait else 0,
                         _busy_reason(s.kind))
                        for s in static]
        # what issuing it does: (kind, pipe id, occupancy, latency, cycles to the warp's next issue at the
        # earliest (control codes: the stall count, at least 1; scoreboard: 1), write barrier, read barrier,
        # writes a result, stores or copies (the SM is busy until it lands), L1 holds its sectors, destination ids,
        # their scoreboard reason, a memory access (shared, global, constant), cp.async role)
        self.execute = [(s.kind, pipe_id[s.pipe], s.occupancy, tick(s.latency),
                         tick(max(s.stall, 1) if control_mode else 1), s.write_barrier, s.read_barrier,
                         bool(s.dsts) or s.kind == GSTORE or s.copy_role == COPY, s.l1_cached, s.dsts,
                         S.SHORT_SB if s.variable else S.WAIT, s.kind in (SMEM, GLOAD, GSTORE, CMEM), s.copy_role)
                        for s in static]
        # as the warp's next instruction: it may have to wait for operands beyond its issue slot (control
        # codes: a scoreboard wait mask or DEPBAR; scoreboard mode: it reads or writes a register, or it is
        # a DEPBAR, which waits for cp.async groups there too)
        self.operand_wait = [bool(s.wait_mask or s.depbar is not None) if control_mode
                             else bool(s.srcs or s.dsts or s.depbar is not None) for s in static]
        self.wait_barriers = [tuple(b for b in range(6) if s.wait_mask >> b & 1) for s in static]
        self.depbars = [s.depbar for s in static]
        # dual issue: the first of a possible pair (never a branch; Maxwell: marked in the listing) ...
        self.pairs = [dual != "none" and (dual != "control_codes" or s.dual) and s.kind != BRANCH for s in static]
        # ... and a possible second (not a barrier, exit, branch or DEPBAR)
        self.second_ok = [s.kind not in (BAR, EXIT, BRANCH, DEPBAR) for s in static]
        self.deps = [s.srcs + s.dsts for s in static]  # dependency ids read or written
        self.dst_sets = [frozenset(s.dsts) for s in static]
