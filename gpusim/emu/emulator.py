"""Functional SASS emulator: runs a `Program` for a launch on real data, warp by warp in batches.

All warps of the emulated CTAs that sit at the same PC form one batch and execute the instruction
together (numpy over their lanes). Control flow follows the SIMT reconvergence rules: SSY/SYNC and
PBK/BRK on Kepler/Maxwell, BSSY/BSYNC on Volta+ (a divergent branch runs one side while the other
waits on a per-warp stack), EXIT retires lanes, BAR.SYNC holds a warp until every live warp of its
CTA has arrived. What each warp executed is recorded for the dynamic trace.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from gpusim.emu import compiled, ops
from gpusim.emu.control import CONTROL_OPCODES
from gpusim.emu.fast import specialise
from gpusim.emu.memory import LOCAL_TOP, SHARED_WINDOW_HI, GlobalMemory, LocalMemory, MemoryFault, SharedMemory
from gpusim.emu.sanitize import RegisterSanitizer
from gpusim.emu.state import Exec, WarpState
from gpusim.errors import EmulationError
from gpusim.isa.program import Program

MEM_UNITS = ("lsu", "smem")

# Watchdogs (so that a kernel that never ends stops in seconds, not when memory runs out):
# * per-warp dynamic-instruction budget = BUDGET_FACTOR x static instructions x the launch's largest
#   thread extent (max over x/y/z of grid x block: the longest loop a kernel indexed by its threads
#   plausibly runs), at least BUDGET_FLOOR. Override: GPUSIM_WARP_INSTRUCTION_BUDGET or the argument.
# * trace-memory budget: bytes the trace log may hold (GPUSIM_TRACE_MEMORY_BUDGET, e.g. "2G").
BUDGET_FACTOR = 8
BUDGET_FLOOR = 100_000
TRACE_MEMORY_BUDGET = 4 * 2**30
WATCH_EVERY = 1 << 14  # steps between two checks of the per-warp counts
_STEP_BYTES = 360  # Python overhead of one logged step: 3 list slots + 3 small numpy arrays (measured: sys.getsizeof)


def _size_setting(name: str, default: int) -> int:
    """An integer setting from the environment; accepts k/M/G suffixes (powers of 1024 for bytes)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    scale = {"k": 2**10, "m": 2**20, "g": 2**30}.get(raw[-1].lower(), 1)
    try:
        return int(float(raw[:-1] if scale > 1 else raw) * scale)
    except ValueError:
        raise EmulationError(f"expected a number (optionally with k, M or G), got '{raw}'", name) from None


def warp_instruction_budget(program: Program, launch: "Launch") -> int:
    """The default per-warp dynamic-instruction budget of `program` under `launch` (see above)."""
    extent = max(g * b for g, b in zip(launch.grid, launch.block))
    return max(BUDGET_FLOOR, BUDGET_FACTOR * len(program.instructions) * extent)


@dataclass
class Launch:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_shared_bytes: int = 0

    @property
    def threads_per_cta(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def warps_per_cta(self) -> int:
        return -(-self.threads_per_cta // 32)

    @property
    def n_ctas(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    def cta_coords(self, cta: int) -> tuple[int, int, int]:
        gx, gy, _ = self.grid
        return cta % gx, (cta // gx) % gy, cta // (gx * gy)


@dataclass
class TraceLog:
    """Per executed batch step: instruction index and the warps; memory steps keep their addresses."""

    pcs: list = field(default_factory=list)  # instruction index per step
    warps: list = field(default_factory=list)  # warp ids (np array) per step
    masks: list = field(default_factory=list)  # active lane masks (uint32 per warp) per step
    exec_masks: list = field(default_factory=list)  # lanes that executed: mask and guard (uint32 per warp)
    # step number -> (addresses (nw, 32), bytes per lane); uint64, or uint32 for some shared-memory steps
    mem: dict = field(default_factory=dict)


def pack_lanes(lanes: np.ndarray) -> np.ndarray:
    """Lane booleans (warps x 32, or flat) as one uint32 bit mask per warp, lane i at bit i."""
    return np.packbits(lanes.reshape(-1, 32), axis=1, bitorder="little").view(np.uint32).ravel()


class Batch:
    """Warps that execute together: their ids, their lanes in the lane-major arrays (`sel`: a slice
    when the warps are contiguous), their lane mask (a copy: valid until control flow changes a mask)
    and whether every lane is in it. The arrays are read-only: the trace log shares them."""

    def __init__(self, emu: "Emulator", wids: np.ndarray):
        w0, w1 = int(wids[0]), int(wids[-1]) + 1
        contiguous = w1 - w0 == len(wids)
        self.wids = wids
        self.warps = slice(w0, w1) if contiguous else wids
        self.sel = slice(32 * w0, 32 * w1) if contiguous else (wids[:, None] * 32 + np.arange(32)).ravel()
        self.mask = emu.mask[wids].ravel()
        self.full = bool(self.mask.all())
        self.everything = self.full and contiguous and w0 == 0 and w1 == len(emu.pc)  # all lanes of all warps
        self._packed = None
        for a in (self.wids, self.mask):
            a.setflags(write=False)

    @property
    def packed_mask(self) -> np.ndarray:
        """The lane mask as one uint32 per warp (computed once per batch)."""
        if self._packed is None:
            self._packed = pack_lanes(self.mask)
            self._packed.setflags(write=False)
        return self._packed


class Emulator:
    """Emulate `program` over the CTAs `ctas` (default: all) of `launch`."""

    def __init__(self, program: Program, launch: Launch, params: bytes, memory: GlobalMemory,
                 ctas: list[int] | None = None, record: bool = True, step_limit: int = 50_000_000,
                 warp_budget: int | None = None, trace_budget: int | None = None):
        self.program, self.launch, self.memory = program, launch, memory
        self.arch_family = int(program.arch.split("_")[1])
        self.ctas = list(range(launch.n_ctas)) if ctas is None else list(ctas)
        outside = [c for c in self.ctas if not 0 <= c < launch.n_ctas]
        if outside:  # a CTA id beyond the grid would run with block indices the kernel never sees
            raise EmulationError(f"CTA {outside[0]} is outside the grid of {launch.n_ctas} CTAs", program.kernel)
        wpc = launch.warps_per_cta
        n_warps = len(self.ctas) * wpc
        self.state = WarpState(n_warps, program.registers)
        self.shared = SharedMemory(len(self.ctas), program.shared_bytes + launch.dynamic_shared_bytes)
        self.local = LocalMemory(n_warps * 32, max(program.frame_bytes, program.stack_bytes))
        self.cbank0 = self._constant_bank(params)
        self._const_bank_words: dict[int, np.ndarray | None] = {}
        self.warp_cta = np.repeat(np.arange(len(self.ctas)), wpc)  # CTA slot of each warp
        self.lane_cta = np.repeat(self.warp_cta, 32)  # CTA slot of each lane
        self._shared_bases: dict[int, np.ndarray] = {}
        tid = np.arange(wpc * 32)
        valid = tid < launch.threads_per_cta
        self.mask = np.tile(valid, len(self.ctas)).reshape(n_warps, 32)
        self.exited = ~self.mask.copy()
        self.pc = np.zeros(n_warps, dtype=np.int64)
        self.done = ~self.mask.any(axis=1)
        self.waiting = np.zeros(n_warps, dtype=bool)
        # warps left alone for now (whole CTAs: detailed mode's streamed trace emulates the CTAs the
        # timing run needs records of); run_for stops when only frozen warps could run
        self.frozen = np.zeros(n_warps, dtype=bool)
        self.stacks: list[list] = [[] for _ in range(n_warps)]
        self.parked: list[list] = [[] for _ in range(n_warps)]  # per warp: paths waiting at a WARPSYNC (control.py)
        self.barriers: list[dict] = [{} for _ in range(n_warps)]  # per warp: BSSY barrier -> its entry's lanes
        self.bar_regs: dict = {}
        self.lane_tid = np.tile(tid, len(self.ctas))
        self.record, self.log = record, TraceLog()
        self.steps, self.step_limit = 0, step_limit
        self.warp_budget = warp_budget or _size_setting("GPUSIM_WARP_INSTRUCTION_BUDGET",
                                                        warp_instruction_budget(program, launch))
        self.trace_budget = trace_budget or _size_setting("GPUSIM_TRACE_MEMORY_BUDGET", TRACE_MEMORY_BUDGET)
        self.warp_steps = np.zeros(n_warps, dtype=np.int64)  # instructions each warp has issued
        self.log_bytes = 0  # estimated memory held by the trace log
        self.log_limit = None  # (run_for) a batch stops early once the log holds this much
        self._next_watch = WATCH_EVERY
        self.warp_instructions = 0
        self.clock = 0
        self.uniform = [ins.unit == "uniform" and ins.opcode not in ("R2UR", "S2UR", "VOTEU")
                        for ins in program.instructions]
        compiled = [specialise(ins, ops.handler(program.arch, ins), self) for ins in program.instructions]
        self.handlers = [handler for handler, _ in compiled]
        # the same instruction for a batch of every lane of every warp, all executing (no guard to apply)
        self.all_lanes = [run if ins.guard is None and not uniform else None
                          for (_, run), ins, uniform in zip(compiled, program.instructions, self.uniform)]
        self.control = [ins.opcode in CONTROL_OPCODES or (self.arch_family < 50 and "S" in ins.modifiers)
                        for ins in program.instructions]
        self.sanitizer = RegisterSanitizer(self)  # reads of never-written registers raise
        self._blocks()

    def _blocks(self) -> None:
        """What `compiled.block` runs: per instruction its kind (FFMA, DFMA, a shared load [Rx (+ URy) + imm];
        0 for others), operands and the rows it writes, as their fast paths give them; how many
        instructions from each on have a kind (a straight-line run)."""
        n = len(self.program)
        self.block_kind = np.zeros(n, dtype=np.int64)
        self.block_args = np.zeros((n, 6), dtype=np.int64)
        self.block_rows: list[tuple] = [()] * n
        for pc, ins in enumerate(self.program.instructions):
            spec = getattr(self.all_lanes[pc] or self.handlers[pc], "block", None)
            if spec is None or ins.guard is not None or self.uniform[pc] or self.control[pc]:
                continue
            kind, args, rows = spec
            self.block_kind[pc] = kind
            self.block_args[pc, :len(args)] = args
            self.block_rows[pc] = rows
        self.block_run = [0] * (n + 1)
        for pc in range(n - 1, -1, -1):
            self.block_run[pc] = self.block_run[pc + 1] + 1 if self.block_kind[pc] else 0
        loads = self.block_kind == compiled.BLOCK_LDS
        self.block_loads = np.r_[0, np.cumsum(loads)].tolist()  # loads before each pc
        self.block_load_pcs = np.flatnonzero(loads).tolist()
        self.block_load_bytes = self.block_args[:, 0].tolist()
        self._block_written: dict[tuple[int, int], frozenset] = {}  # (pc, instructions) -> rows they write
        self._smem_rows = (self.lane_cta * self.shared.words.shape[1]).astype(np.int64)  # each lane's first word

    # ---- launch state ------------------------------------------------------------------------
    # Constant bank 0 layout per architecture family: (block dims, grid dims, stack pointer) offsets.
    # Read off the committed listings, where blockIdx * blockDim multiplies c[0x0][..] and the
    # prologue loads the stack pointer into R1: sm_35 c[0x0][0x28]/[0x44], sm_52 c[0x0][0x8]/[0x20],
    # sm_90 c[0x0][0x0]/[0x28].
    CBANK0_LAYOUT = {3: (0x28, 0x34, 0x44), 5: (0x8, 0x14, 0x20), 9: (0x0, 0xC, 0x28)}

    def _constant_bank(self, params: bytes) -> np.ndarray:
        """Constant bank 0: block and grid dimensions, a local-memory stack pointer, and the kernel
        parameters at the window the cubin names (EIATTR_PARAM_CBANK)."""
        size = max(self.program.const_bank0_bytes, self.program.param_base + len(params), 0x400)
        bank = np.zeros(-(-size // 4) * 4, dtype=np.uint8)
        ntid, nctaid, stack = self.CBANK0_LAYOUT[self.arch_family // 10]
        bank[ntid:ntid + 12] = np.array(self.launch.block, dtype=np.uint32).view(np.uint8)
        bank[nctaid:nctaid + 12] = np.array(self.launch.grid, dtype=np.uint32).view(np.uint8)
        bank[stack:stack + 4] = np.array([LOCAL_TOP], np.uint32).view(np.uint8)
        bank[self.program.param_base:self.program.param_base + len(params)] = np.frombuffer(params, np.uint8)
        return bank.view(np.uint32)

    def const_word(self, op, word: int, ex: Exec):
        """Word `word` of constant operand c[bank][reg + ureg + imm] per lane (per warp when uniform):
        bank 0 is the launch's (see _constant_bank), other banks hold the cubin's data."""
        bank = self.cbank0 if op.bank == 0 else self._const_bank(op.bank)
        if bank is None:
            raise EmulationError(f"constant bank {op.bank} is not in the cubin", self._where(ex.ins))
        offset = op.value + 4 * word
        if (op.reg is None or op.reg == 255) and (op.ureg is None or op.ureg == 63):  # one word for all lanes
            if offset < 0 or offset + 4 > 4 * len(bank) or offset % 4:
                raise EmulationError(f"constant bank {op.bank} access at {offset:#x} out of bounds "
                                     f"({4 * len(bank)} bytes) or misaligned", self._where(ex.ins))
            return np.full(ex.n, bank[offset >> 2], np.uint32)
        offset = np.full(ex.n, offset, np.int64)
        if op.reg is not None and op.reg != 255:  # c[0x0][R2+0x10]: per-lane index
            rows = self.state.R[self.state.row(op.reg)][ex.sel]
            offset = offset + (rows[::32] if ex.uniform else rows).astype(np.int64)
        if op.ureg is not None and op.ureg != 63:
            u = self.state.UR[op.ureg, ex.wids].astype(np.int64)
            offset = offset + (u if ex.uniform else np.repeat(u, 32))
        bad = (offset < 0) | (offset + 4 > 4 * len(bank)) | (offset % 4 != 0)
        if ex.uniform or ex.active.all():
            bad = bad.any()
        else:
            bad = (bad & ex.active).any()  # lanes that do not execute may hold any index
            offset = np.where(ex.active, offset, 0)
        if bad:
            raise EmulationError(f"constant bank {op.bank} access out of bounds ({4 * len(bank)} bytes) or "
                                 "misaligned", self._where(ex.ins))
        return bank[offset >> 2]

    def _const_bank(self, number: int) -> np.ndarray | None:
        """A constant bank other than 0 as uint32 words (from the cubin; cached)."""
        banks = self._const_bank_words
        if number not in banks:
            data = self.program.const_banks.get(number)
            banks[number] = None if data is None else np.frombuffer(
                bytes(data) + bytes(-len(data) % 4), np.uint32)
        return banks[number]

    def special_register(self, name: str, ex: Exec):
        tid = self.lane_tid[ex.sel] if not ex.uniform else self.lane_tid[ex.sel][::32]
        bx, by, _ = self.launch.block
        ctas = np.array(self.ctas)[self.warp_cta[ex.wids]]
        per = 1 if ex.uniform else 32
        gx, gy, _ = self.launch.grid
        values = {
            "SR_TID.X": lambda: tid % bx, "SR_TID.Y": lambda: (tid // bx) % by, "SR_TID.Z": lambda: tid // (bx * by),
            "SR_CTAID.X": lambda: np.repeat(ctas % gx, per), "SR_CTAID.Y": lambda: np.repeat((ctas // gx) % gy, per),
            "SR_CTAID.Z": lambda: np.repeat(ctas // (gx * gy), per), "SR_LANEID": lambda: tid % 32,
            "SR_CgaCtaId": lambda: np.zeros(ex.n), "SR_CLOCKLO": lambda: np.full(ex.n, self.clock),
            "SR_CLOCKHI": lambda: np.zeros(ex.n), "SR_SWINHI": lambda: np.full(ex.n, SHARED_WINDOW_HI),
        }
        if name not in values:
            raise EmulationError(f"special register {name} is not emulated", self._where(ex.ins))
        return np.asarray(values[name](), dtype=np.uint32)

    # ---- the loop ------------------------------------------------------------------------------
    def run(self) -> "Emulator":
        """Step until every warp is done. Each step runs the lowest PC among the runnable warps for
        all runnable warps sitting there; a batch keeps going at the next PC while its instructions
        fall through and it stays below every other runnable warp's PC (the same choice the step
        rule would make), so the per-step scheduling work is done once per straight-line run."""
        self.run_for(None)
        return self

    def run_for(self, steps: int | None, log_bytes: int | None = None) -> bool:
        """Run on for about `steps` more steps (whole batches: a little past them; None: to the end),
        or until the trace log holds about `log_bytes` (a batch stops there too: a fully unrolled
        kernel is one batch from start to exit), keeping the state to go on from later (detailed
        mode's streamed trace takes the log between calls). Whether every warp is done."""
        target = None if steps is None else self.steps + steps
        self.log_limit = log_bytes
        try:
            while (target is None or self.steps < target) and (log_bytes is None or self.log_bytes < log_bytes):
                picked = self._pick()
                if picked is None:  # all done, or only frozen warps could run
                    break
                pc, wids, horizon = picked
                self._run_batch(pc, Batch(self, wids), horizon)
        finally:
            self.log_limit = None
        return bool(self.done.all())

    def take_log(self) -> TraceLog:
        """The trace log so far; recording goes on in a new, empty one."""
        log, self.log, self.log_bytes = self.log, TraceLog(), 0
        return log

    def _pick(self):
        """(pc, warps, horizon): the next batch and the lowest PC of the runnable warps outside it
        (None when all warps are done). Releases barriers and detects deadlock."""
        while True:
            runnable = ~(self.done | self.waiting | self.frozen)
            if runnable.any():
                break
            if self.done.all():
                return None
            if not self._release_barriers():
                if (self.frozen & ~self.done).any():
                    return None  # (the frozen warps may still reach the barrier)
                stuck = np.flatnonzero(self.waiting)
                raise EmulationError(
                    f"barrier deadlock: {self._warp_where(int(stuck[0]))} and warps {self._local_warps(stuck)} "
                    "wait at a barrier that the rest of their CTA never reaches", self.program.kernel)
        pcs = np.where(runnable, self.pc, np.iinfo(np.int64).max)
        pc = int(pcs.min())
        here = pcs == pc
        wids = np.flatnonzero(here)
        pcs[here] = np.iinfo(np.int64).max
        return pc, wids, int(pcs.min())

    def _run_batch(self, pc: int, batch: "Batch", horizon: int) -> None:
        """Run `batch` from `pc` until a control-flow instruction, until it reaches `horizon` or the log
        `log_limit`. The batch's entries in self.pc are written when it stops (and before control flow).

        A batch of every lane of every warp runs the instructions that have an all-lanes function
        (`all_lanes`: the GEMMs' FFMA/DFMA and integer steps) without `_step`: the same logging,
        counting, sanitizer checks and function, in the same order, with what they read per step
        (the log's lists, the batch's arrays) looked up once per batch."""
        n = len(self.program)
        start = self.steps
        fast = self.all_lanes if batch.everything else None
        if fast is not None:
            wids, mask, sel = batch.wids, batch.mask, batch.sel
            nw = len(wids)
            san = self.sanitizer
            clean, before, after = san.clean, san.before, san.after
            record = self.record
            step_bytes, budget = _STEP_BYTES + 16 * nw, self.trace_budget
            if record:
                log = self.log
                packed = batch.packed_mask
                log_pcs, log_warps, log_masks, log_exec = (log.pcs.append, log.warps.append, log.masks.append,
                                                           log.exec_masks.append)
            block_run = self.block_run
            after_block = -1  # an instruction a block stopped at runs the ordinary way
        while True:
            if pc >= n:
                raise EmulationError(f"warp {int(batch.wids[0])} ran past the end of the program",
                                     self.program.kernel)
            if fast is not None and block_run[pc] and pc != after_block:
                k = min(block_run[pc], horizon - pc)
                ran = self._block(pc, k, batch, step_bytes) if k > 1 else 0
                if ran:
                    pc += ran
                    if ran < k:
                        after_block = pc
                    if pc < horizon and (self.log_limit is None or self.log_bytes < self.log_limit):
                        continue
                    self.pc[batch.warps] = pc
                    break
            if self.control[pc]:
                self.pc[batch.warps] = pc
            run = fast[pc] if fast is not None else None
            if run is not None:  # `_step`'s all-lanes branch
                if record:  # (`_record_step`)
                    self.log_bytes += step_bytes
                    if self.log_bytes > budget:
                        self._over_trace_budget(pc, batch)
                    log_pcs(pc)
                    log_warps(wids)
                    log_masks(packed)
                    log_exec(packed)
                self.warp_instructions += nw
                if clean[pc]:
                    run()
                else:
                    before(pc, sel, mask, wids)
                    run()
                    after(pc, sel, mask)
                jumped = False
            else:
                jumped = self._step(pc, batch)
            self.steps += 1
            self.clock += 1
            if self.steps > self.step_limit:
                raise EmulationError(f"step limit {self.step_limit} exceeded (a loop that never ends?)",
                                     self.program.kernel)
            if not jumped:
                pc += 1
                if pc < horizon and (self.log_limit is None or self.log_bytes < self.log_limit):
                    continue
                self.pc[batch.warps] = pc
            break
        self.warp_steps[batch.warps] += self.steps - start
        if self.steps >= self._next_watch:
            self._next_watch = self.steps + WATCH_EVERY
            self._watch()

    def _block(self, pc: int, k: int, batch: "Batch", step_bytes: int) -> int:
        """Instructions pc .. pc + k - 1 (each with a `block_kind`) for a batch of every lane, in one
        compiled call (`compiled.block`), logged and counted as `_step` logs and counts them; how many
        ran (0: none, the batch goes on step by step). Only instructions the sanitizer has nothing
        left to check for, and only while the step limit and the trace budget cannot be reached."""
        clean = self.sanitizer.clean
        run = clean[pc:pc + k]
        if not run[-1]:
            k = run.index(False)
            if k < 2:
                return 0
        loads = self.block_loads[pc + k] - self.block_loads[pc]
        lanes = len(batch.mask)
        if self.steps + k > self.step_limit or \
                (self.record and self.log_bytes + k * step_bytes + loads * (4 * lanes + 200) > self.trace_budget):
            return 0
        st = self.state
        addr = np.empty((max(loads, 1), lanes), dtype=np.uint32)
        t, out = st.scratch(lanes)
        ran = compiled.block(st.R, st.R.view(np.float32), self.block_kind, self.block_args, pc, k, t, out,
                             self.shared.flat_words, self._smem_rows, self.shared.size, addr, self.record, st.UR)
        if not ran:
            return 0
        written = self._block_written.get((pc, ran))
        if written is None:
            rows = self.block_rows
            written = self._block_written[pc, ran] = frozenset(r for p in range(pc, pc + ran) for r in rows[p])
        st.forget_rows(written)
        if self.record:
            log = self.log
            at = len(log.pcs)
            log.pcs.extend(range(pc, pc + ran))
            log.warps.extend([batch.wids] * ran)
            packed = batch.packed_mask
            log.masks.extend([packed] * ran)
            log.exec_masks.extend([packed] * ran)
            self.log_bytes += ran * step_bytes
            first, last = self.block_loads[pc], self.block_loads[pc + ran]
            if last > first:
                rows = addr.reshape(len(addr), -1, 32)
                nbytes, mem = self.block_load_bytes, log.mem
                for i, p in enumerate(self.block_load_pcs[first:last]):
                    mem[at + p - pc] = (rows[i], nbytes[p])
                self.log_bytes += (last - first) * (4 * lanes + 200)
        self.warp_instructions += ran * len(batch.wids)
        self.steps += ran
        self.clock += ran
        return ran

    # ---- watchdogs -------------------------------------------------------------------------------------
    def _watch(self) -> None:
        """Stop when a warp has run past its instruction budget. Before stopping, the other warps of
        its CTA run on (the looping ones frozen, for a bounded number of steps): those that end up
        waiting at a barrier the looping warps never reach make it a barrier deadlock."""
        over = self.warp_steps > self.warp_budget
        if not over.any():
            return
        w = int(self.warp_steps.argmax())
        looping = np.flatnonzero(over & (self.warp_cta == self.warp_cta[w]))
        where = self._warp_where(w)
        waiters = self._settle(int(self.warp_cta[w]), over)
        what = (f"{where}: exceeded its budget of {self.warp_budget:,} instructions (a loop that never ends?; "
                "GPUSIM_WARP_INSTRUCTION_BUDGET sets it)")
        if len(waiters):
            bar = self.program.instructions[int(self.pc[waiters[0]])]
            what = (f"barrier deadlock: warps {self._local_warps(waiters)} of CTA "
                    f"{self.launch.cta_coords(self.ctas[self.warp_cta[w]])} wait at PC {bar.address:#06x} "
                    f"`{bar.text}`, which warps {self._local_warps(looping)} never reach; {what}")
        raise EmulationError(what, self.program.kernel)

    SETTLE_STEPS = 200_000

    def _settle(self, slot: int, frozen: np.ndarray) -> np.ndarray:
        """Run CTA slot `slot`'s warps other than `frozen` until they all wait, finish, or SETTLE_STEPS
        pass; the warps of the CTA then waiting at a barrier."""
        in_cta = self.warp_cta == slot
        frozen = frozen & ~self.done
        self._next_watch = float("inf")  # no watchdog inside the diagnosis
        self.done |= frozen
        stop = self.steps + self.SETTLE_STEPS
        try:
            while self.steps < stop:
                runnable = in_cta & ~(self.done | self.waiting)
                if not runnable.any():
                    break
                pcs = np.where(runnable, self.pc, np.iinfo(np.int64).max)
                pc = int(pcs.min())
                wids = np.flatnonzero(pcs == pc)
                pcs[wids] = np.iinfo(np.int64).max
                self._run_batch(pc, Batch(self, wids), int(pcs.min()))
        except EmulationError:
            pass  # a fault while settling: the budget is what gets reported
        finally:
            self.done &= ~frozen
        return np.flatnonzero(self.waiting & in_cta)

    def _local_warps(self, wids) -> list[int]:
        return [int(x) % self.launch.warps_per_cta for x in wids[:4]]

    def _warp_where(self, w: int) -> str:
        """'warp 1 of CTA (0, 0, 0) at PC 0x0190 `...`' (PC clamped to the program)."""
        cta = self.ctas[self.warp_cta[w]]
        pc = min(int(self.pc[w]), len(self.program) - 1)
        ins = self.program.instructions[pc]
        return (f"warp {w % self.launch.warps_per_cta} of CTA {self.launch.cta_coords(cta)} at PC {ins.address:#06x} "
                f"`{ins.text}`")

    def _over_trace_budget(self, pc: int, batch: "Batch") -> None:
        w = int(batch.wids[0])
        self.pc[batch.warps] = pc
        raise EmulationError(
            f"the trace of this launch needs more than its memory budget of {self.trace_budget / 2**30:.1f} GiB "
            f"(at {self._warp_where(w)}, step {len(self.log.pcs):,}); emulate fewer CTAs (sampled "
            "mode) or raise GPUSIM_TRACE_MEMORY_BUDGET", self.program.kernel)

    def _step(self, pc: int, batch: "Batch") -> bool:
        """Execute instruction `pc` for `batch`; True when its handler set the warps' PCs itself."""
        if batch.everything and self.all_lanes[pc] is not None:
            if self.record:
                self._record_step(pc, batch, batch.mask, False)
            self.warp_instructions += len(batch.wids)
            self.sanitizer.before(pc, batch.sel, batch.mask, batch.wids)
            self.all_lanes[pc]()
            self.sanitizer.after(pc, batch.sel, batch.mask)
            return False
        ins = self.program.instructions[pc]
        active, full = batch.mask, batch.full
        if ins.guard is not None:
            g = (self.state.UP[ins.guard, batch.wids].repeat(32) if ins.guard_uniform
                 else self.state.P[ins.guard][batch.sel])
            active, full = active & (~g if ins.guard_negated else g), None
        uniform = self.uniform[pc]
        if uniform:
            active, full = active.reshape(-1, 32).any(axis=1), None
        if self.record:
            self._record_step(pc, batch, active, uniform)
        self.warp_instructions += len(batch.wids)
        ex = Exec(self, ins, batch.wids, batch.sel, active, uniform, full)
        self.sanitizer.before(pc, batch.sel, active, batch.wids)
        try:
            next_pc = self.handlers[pc](ex)
        except MemoryFault as fault:
            raise EmulationError(self._fault_text(ins, batch.wids, active, fault), self.program.kernel) from None
        except EmulationError:
            raise
        except (NotImplementedError, IndexError, ValueError) as exc:
            raise EmulationError(f"{exc}", self._where(ins)) from None
        self.sanitizer.after(pc, batch.sel, active)
        if next_pc is None and self.arch_family < 50 and "S" in ins.modifiers:  # Kepler `.S`: then sync
            from gpusim.emu.control import sync_lanes

            self.pc[batch.warps] = pc + 1
            sync_lanes(self, ins, batch.wids, active.reshape(-1, 32))
            return True
        return next_pc is not None  # control-flow handlers set self.pc themselves and return True

    def _record_step(self, pc: int, batch: "Batch", active: np.ndarray, uniform: bool) -> None:
        """Log the step: PC, warps, their lane masks and the lanes that execute (mask and guard)."""
        log = self.log
        self.log_bytes += _STEP_BYTES + 16 * len(batch.wids)
        if self.log_bytes > self.trace_budget:
            self._over_trace_budget(pc, batch)
        log.pcs.append(pc)
        log.warps.append(batch.wids)
        log.masks.append(batch.packed_mask)
        if active is batch.mask:
            log.exec_masks.append(batch.packed_mask)
        elif uniform:
            log.exec_masks.append(np.where(active, np.uint32(0xFFFFFFFF), np.uint32(0)))
        else:
            log.exec_masks.append(pack_lanes(active))

    # ---- memory -----------------------------------------------------------------------------------
    def record_addresses(self, ex: Exec, addrs: np.ndarray, nbytes: int) -> None:
        """Log the step's addresses, one per executing lane (0 for the others)."""
        if self.record:
            if ex.full:
                full = addrs if addrs.dtype in (np.uint32, np.uint64) else addrs.astype(np.uint64)
            else:
                full = np.zeros(len(ex.wids) * 32, dtype=np.uint64)
                full[ex.active] = addrs
            self.log.mem[len(self.log.pcs) - 1] = (full.reshape(-1, 32), nbytes)
            self.log_bytes += full.nbytes + 200

    def shared_rows(self, ex: Exec) -> np.ndarray:
        return self.lane_cta[ex.sel][ex.active]

    def shared_unit_base(self, nbytes: int) -> np.ndarray:
        """Per lane: the first unit of its CTA slot in `shared.units(nbytes)` (cached; uint32 while
        the units fit, int64 beyond)."""
        base = self._shared_bases.get(nbytes)
        if base is None:
            base = self.lane_cta * (self.shared.words.shape[1] * 4 // nbytes)
            if self.shared.words.size < 2**32:
                base = base.astype(np.uint32)
            self._shared_bases[nbytes] = base
        return base

    # ---- barriers and control flow -----------------------------------------------------------------
    def _release_barriers(self) -> bool:
        """A CTA with a waiting warp whose live (not done) warps all wait passes the barrier: its live
        warps go on after BAR. True when some CTA was released."""
        slots = len(self.ctas)
        live = ~self.done
        n_live = np.bincount(self.warp_cta[live], minlength=slots)
        n_live_waiting = np.bincount(self.warp_cta[live & self.waiting], minlength=slots)
        has_waiting = np.bincount(self.warp_cta[self.waiting], minlength=slots) > 0
        release = has_waiting & (n_live_waiting == n_live)
        go = release[self.warp_cta] & live
        self.waiting[go] = False
        self.pc[go] += 1
        return bool(release.any())

    def retire_lanes(self, w: int, lanes: np.ndarray) -> None:
        """EXIT: the lanes leave for good; an empty warp resumes a pending path or finishes."""
        self.exited[w] |= lanes
        self.mask[w] &= ~lanes
        if not self.mask[w].any():
            self.resume_pending(w)

    def resume_pending(self, w: int) -> None:
        """The current path of warp w is finished: continue with the next pending path on its stack."""
        from gpusim.emu.control import pop_entry

        stack = self.stacks[w]
        while stack:
            kind, pc, mask = pop_entry(self, w)
            mask = mask & ~self.exited[w]
            if mask.any():
                self.mask[w] = mask
                self.pc[w] = pc
                return
        self.done[w] = True
        self.mask[w] = False

    def _where(self, ins) -> str:
        return f"{self.program.kernel} PC {ins.address:#06x} `{ins.text}`"

    def _fault_text(self, ins, wids, active, fault: MemoryFault) -> str:
        """The fault's lane index counts the executing lanes of the batch; name its CTA and thread."""
        active_lanes = np.flatnonzero(active)
        lane = int(active_lanes[min(fault.lane, len(active_lanes) - 1)]) if len(active_lanes) else 0
        w = int(wids[lane // 32])
        cta = self.ctas[self.warp_cta[w]]
        tid = int(self.lane_tid[w * 32 + lane % 32])
        bx, by, _ = self.launch.block
        return (f"{fault} at address {fault.address:#x}: kernel {self.program.kernel}, PC {ins.address:#06x} "
                f"`{ins.text}`, CTA {self.launch.cta_coords(cta)}, thread ({tid % bx}, {(tid // bx) % by}, "
                f"{tid // (bx * by)}), warp {w}, lane {lane % 32}")
