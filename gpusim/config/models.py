"""GPU configuration schema (pydantic v2).

One `GpuConfig` describes one board: clocks, SM resources, per-sub-partition functional units and
the memory hierarchy. YAML files under `configs/gpus/` are validated against it by
`gpusim.config.loader`. Every model forbids unknown fields and validates strictly (no "8" -> 8,
no True -> 1), so a typo or a wrong type is an error, never a silent default.

Conventions used by every field:
* cycles are SM (core) clocks of `clock_mhz` (for the Fermi proxy: the 2x shader clock);
* "per sub-partition" = per warp scheduler (Kepler/Maxwell/Hopper: 4 per SM; Fermi: 2 per SM);
* a unit's `lanes` are per sub-partition; a warp instruction occupies its pipe for 32/lanes cycles.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gpusim.errors import SpecError
from gpusim.isa.opcodes import UNITS

#: The functional-unit classes of the opcode tables (gpusim/arch/sm_*.yaml); every card maps each.
UNIT_CLASSES: tuple[str, ...] = tuple(sorted(UNITS))

Arch = Literal["sm_35", "sm_52", "sm_90"]

_STRICT = ConfigDict(extra="forbid", strict=True, frozen=False, validate_assignment=True)


class _Model(BaseModel):
    model_config = _STRICT


class UnitConfig(_Model):
    """One functional-unit class, per sub-partition."""

    pipe: str = Field(min_length=1)
    """Issue resource; unit classes naming the same pipe share its issue slots (Maxwell: int and
    fp32 are both pipe "fp32")."""
    lanes: int = Field(ge=1)
    """Lanes per sub-partition; a warp instruction occupies the pipe for 32/lanes cycles
    (GTX 970 FP64: 1 lane -> 32 cycles; Kepler FP32: 48 lanes -> 2/3 cycle)."""
    latency_cycles: int = Field(ge=0)
    """Issue to result available (dependent issue). For the memory classes (lsu, smem, cmem) the
    memory model governs (memory.* and sm.shared_memory); the value here is the unloaded hit latency
    of the nearest level and only a fallback."""


class SchedulerConfig(_Model):
    policy: Literal["gto", "lrr", "two_level", "two_level_sticky"] = "gto"
    """The order a sub-partition's scheduler tries its warps (gpusim/timing/sm.py `_candidates`): gto,
    greedy then oldest; lrr, round robin after the last issuer; two_level, the oldest
    `two_level_active_warps` not waiting on global memory; two_level_sticky, a set of that many warps
    that keeps its members until they wait on a result, a memory queue or a barrier (`SM._sticky`)."""
    two_level_active_warps: int = Field(default=8, ge=1)
    dual_issue: Literal["none", "kepler", "control_codes"]
    """kepler: hardware pairs two independent consecutive instructions of one warp;
    control_codes: Maxwell pairs where the control word says so (stall 0); none: one per cycle."""
    honour_control_codes: bool
    """True (sm_52/sm_90): the compiler's stall counts and scoreboard barriers decide dependent
    issue. False: a hardware register scoreboard with the unit latencies."""
    branch_latency_cycles: int = Field(ge=0)


class RegisterFileConfig(_Model):
    banks: int = Field(ge=1)
    bank_width_bits: Literal[32, 64]
    reuse_cache: bool
    conflict_cycles_per_extra_read: int = Field(default=1, ge=0)
    read_ports: int | None = Field(default=None, ge=1)
    """Registers (32 bits x 32 lanes) the sub-partition's register file reads per cycle, whatever their
    banks: an instruction reading n of them past the reuse cache holds dispatch n / read_ports cycles
    (precompute.register_read_cycles). None: the bank rule (`banks`, `bank_width_bits`)."""


class SharedMemoryConfig(_Model):
    banks: int = Field(default=32, ge=1)
    bank_width_bytes: Literal[4, 8]
    latency_cycles: int = Field(ge=0)
    wavefronts_per_cycle: float = Field(gt=0)
    """Conflict-free passes (one bank access per bank) the SM serves per cycle."""
    wide_load_extra_cycles: dict[int, float] = {}
    """Cycles a 64- / 128-bit shared load's (LDS.64 / LDS.128) data comes later than its wavefronts'
    passage and `latency_cycles` give (none for 32-bit loads and for stores). Keys: 64, 128."""
    l1_copy_wavefronts: float = Field(default=0.0, ge=0)
    """Wavefronts of this pipe an L1-allocating cp.async (LDGSTS without .BYPASS) takes per 128 bytes it
    copies, besides its global load: its data pass L1's data array on their way to shared memory.
    cp.async.cg (.BYPASS) takes none. 0: the copy costs the pipe nothing."""

    @field_validator("wide_load_extra_cycles")
    @classmethod
    def _wide_widths(cls, extra: dict) -> dict:
        for bits, c in extra.items():
            if bits not in (64, 128):
                raise ValueError(f"keys are access widths 64 or 128, not {bits}")
            if c < 0:
                raise ValueError(f"cycles must be >= 0 (bits {bits}: {c})")
        return extra


class SmConfig(_Model):
    sub_partitions: int = Field(ge=1)
    max_warps: int = Field(ge=1)
    max_threads: int = Field(ge=32)
    max_ctas: int = Field(ge=1)
    registers: int = Field(ge=1)
    """32-bit registers per SM."""
    register_alloc_unit: int = Field(ge=1)
    """Registers are allocated per warp in chunks of this many (256 on cc 3.x-9.x)."""
    max_registers_per_thread: int = Field(ge=1)
    shared_bytes: int = Field(ge=0)
    """Maximum shared memory per SM."""
    shared_alloc_unit: int = Field(ge=1)
    reserved_shared_per_cta: int = Field(default=0, ge=0)
    cta_launch_cycles: float = Field(default=0.0, ge=0)
    """Cycles a CTA slot stays empty when a CTA ends and the SM's next CTA takes its place: the new
    CTA's warps may issue this long after the last warp of the old one exited (the first wave's
    launch is in `kernel_overhead_cycles`). 0: not modelled."""
    scheduler: SchedulerConfig
    register_file: RegisterFileConfig
    shared_memory: SharedMemoryConfig
    units: dict[str, UnitConfig]
    mio_queue_depth: int = Field(ge=1)
    """Per sub-partition: shared-memory instructions queued for the SM's shared-memory pipe (an
    instruction holds its place until the pipe has taken its last wavefront); one more waits in
    mio_throttle (gpusim/timing/mem/lsu.py)."""
    lsu_queue_depth: int = Field(ge=1)
    """Per sub-partition: global/local instructions queued for the L1 tag stage (held until the stage
    has taken its last line); one more waits in lg_throttle."""
    shared_access_queue: bool = False
    """The sub-partition's MIO and LSU queues are one: a shared-memory instruction takes
    1 / mio_queue_depth of it, a global/local one 1 / lsu_queue_depth, and an instruction that finds
    no room for its share waits (in mio_throttle, unless its own kind alone fills its depth). False:
    each kind has its own queue of its depth."""
    lsu_store_queue_depth: int | None = Field(default=None, ge=1)
    """Per sub-partition: global stores its LSU queue holds at most (each besides its place in the
    queue); one more waits in lg_throttle. None: only the queue's depth limits them."""
    mio_store_queue_depth: int | None = Field(default=None, ge=1)
    """The same for shared-memory stores in the MIO queue (mio_throttle)."""
    thread_sreg_waits_for_mio: bool = False
    """An S2R of a per-thread special register (SR_TID.*, SR_LANEID, SR_VIRTID) issues only once every
    sub-partition's MIO queue has passed what it held when the S2R first tried (mio_throttle until
    then); CTA-wide registers (SR_CTAID.*, SR_VIRTUALSMID) and CS2R clock reads do not wait. False: an
    S2R is a plain misc-pipe instruction."""
    mio_sub_partition_rate: float | None = Field(default=None, gt=0)
    """Wavefronts per cycle one sub-partition's MIO queue passes on (None: only the SM-wide
    `shared_memory.wavefronts_per_cycle` limits)."""
    lsu_sub_partition_rate: float | None = Field(default=None, gt=0)
    """128-byte lines per cycle one sub-partition's LSU queue passes on (None: only the SM-wide
    `memory.l1.lines_per_cycle` limits)."""
    mio_register_read_cycles: float = Field(default=2.0, ge=0)
    """Cycles after a shared-memory instruction starts to pass its queue (or issues: see
    `access_registers_read_at`) at which its registers have been read (its read scoreboard is
    released: a store's data, the address)."""
    lsu_register_read_cycles: float = Field(default=2.0, ge=0)
    """The same for global/local instructions."""
    access_registers_read_at: Literal["issue", "stage"] = "stage"
    """From when the `*_register_read_cycles` count: `issue` (the access reads its registers as it enters
    its queue, whatever is queued in front of it) or `stage` (as it starts to pass the SM-wide stage
    behind the queue: an overwrite of its address or data waits for every access in front)."""
    fp32_lanes_shared_per_sm: int | None = Field(default=None, ge=1)
    """Kepler: 192 FP32 lanes shared by the 4 schedulers (at most 6 FP32 warp-instructions per
    cycle per SM). None: each sub-partition owns its lanes."""

    @field_validator("units")
    @classmethod
    def _all_unit_classes(cls, units: dict[str, UnitConfig]) -> dict[str, UnitConfig]:
        missing = [u for u in UNIT_CLASSES if u not in units]
        unknown = sorted(set(units) - set(UNIT_CLASSES))
        if missing or unknown:
            parts = []
            if missing:
                parts.append(f"missing unit class(es) {', '.join(missing)}")
            if unknown:
                parts.append(f"unknown unit class(es) {', '.join(unknown)}")
            raise ValueError("; ".join(parts) + f" (expected exactly: {', '.join(UNIT_CLASSES)})")
        return units

    @model_validator(mode="after")
    def _consistent(self) -> "SmConfig":
        if self.max_threads > self.max_warps * 32:
            raise ValueError(f"max_threads {self.max_threads} exceeds max_warps*32 = {self.max_warps * 32}")
        if self.registers % self.register_alloc_unit:
            raise ValueError(f"registers {self.registers} is not a multiple of register_alloc_unit "
                             f"{self.register_alloc_unit}")
        if self.scheduler.two_level_active_warps > self.max_warps:
            raise ValueError("scheduler.two_level_active_warps exceeds max_warps")
        return self

    def lanes_per_sm(self, unit: str) -> int:
        """Lanes of one unit class over the whole SM (ops per cycle per SM)."""
        lanes = self.units[unit].lanes * self.sub_partitions
        if unit == "fp32" and self.fp32_lanes_shared_per_sm is not None:
            lanes = min(lanes, self.fp32_lanes_shared_per_sm)
        return lanes


class L1Config(_Model):
    size_bytes: int = Field(ge=0)
    line_bytes: int = Field(default=128, ge=1)
    sector_bytes: int = Field(default=32, ge=1)
    latency_cycles: int = Field(ge=0)
    caches_global_loads: bool
    """True: every global load may hit in L1. False: only loads through the read-only path are
    cached on the SM (sm_35: the LDG opcode; sm_52: LDG with .CI, i.e. ld.global.nc / __ldg);
    other global loads go to L2. Local memory is cached in L1 either way."""
    lines_per_cycle: float = Field(default=1.0, gt=0)
    """Tag lookups per cycle of the L1/texture pipe: a warp's global access occupies it for as many
    cycles as it touches distinct 128-byte lines (an uncoalesced access is slow even when it hits)."""
    load_lane_bytes_per_cycle: int | None = Field(default=None, ge=1)
    """Bytes of lane data the L1 returns to the registers per cycle: a warp's global load occupies the
    tag/data stage for at least ceil(executing lanes x access width / this) cycles, even where it touches
    fewer lines (a broadcast LDG.64 reads one sector and takes 2 cycles at 128). None: lines only."""
    tag_lines_per_cycle: float | None = Field(default=None, gt=0)
    """Set: a global load's L1 stage units are the data stage's bank wavefronts of its lanes' addresses
    (the banks and phases of a shared access, distinct addresses in one bank conflicting), but at least
    ceil(distinct lines / this), the tag stage's cycles. None: its distinct lines (and at least its lane
    data over `load_lane_bytes_per_cycle`)."""
    unified_data_stage: bool = False
    """True: shared memory and L1 are one array (Volta and later), and the lines of global/local
    accesses and the wavefronts of shared-memory accesses pass one SM-wide data stage, one unit per
    cycle at `sm.shared_memory.wavefronts_per_cycle` (which must then equal `lines_per_cycle`).
    False: each kind passes a stage of its own (gpusim/timing/mem/lsu.py)."""
    data_stage: Literal["shared", "booked"] = "shared"
    """How the unified data stage orders the two kinds' work (`memory.l1.unified_data_stage`).
    shared: each kind's backlog at half the stage while both have work, a smaller access beside larger
    ones costing more (`DataStage.passed`). booked: every access books its units in the stage's earliest
    free cycles from the start of its pass through its queue; accesses booked before keep their cycles
    and a later one fills the gaps they leave (`DataStage.book`)."""
    miss_bytes_per_warp: int | None = Field(default=None, ge=1)
    """Bytes of register data (32 lanes x access width per load) one warp may have outstanding in
    loads that missed L1; a load that would exceed it waits for earlier ones to return (None: no limit)."""

    @model_validator(mode="after")
    def _geometry(self) -> "L1Config":
        for name in ("line_bytes", "sector_bytes"):
            v = getattr(self, name)
            if v & (v - 1):
                raise ValueError(f"{name} must be a power of two, got {v}")
        if self.line_bytes % self.sector_bytes:
            raise ValueError("line_bytes must be a multiple of sector_bytes")
        return self


class L2Config(_Model):
    size_bytes: int = Field(ge=1)
    latency_cycles: int = Field(ge=0)
    bandwidth_bytes_per_cycle: float = Field(gt=0)
    """Whole chip, per SM clock."""
    effective_size_bytes: int | None = Field(default=None, ge=1)
    """The capacity data actually gets (measured); None: `size_bytes`."""
    dirty_limit_bytes: int | None = Field(default=None, ge=1)
    """Dirty (written, not yet written back) bytes L2 keeps; past that the oldest are written back
    to DRAM. None: limited by the capacity only."""
    dirty_reach_bytes: int | None = Field(default=None, ge=1)
    """Dirty data stay only among this many bytes of the most recently reused sectors (stores and
    L2 hits, an LRU order); a dirty sector that falls out is written back (gpusim/timing/mem/l2.py).
    None: no such limit."""
    dram_fetch_bytes: int | None = Field(default=None, ge=1)
    """Bytes a read that misses L2 brings from DRAM: the missing sector's aligned block of this size,
    every sector of it absent from L2 and not asked for by the same request filled alongside (counted
    as L2 misses, as Nsight counts them). None: the sector alone."""
    write_bandwidth_bytes_per_cycle: float | None = Field(default=None, gt=0)
    """Bytes per cycle L2 accepts from stores (whole chip); None: `bandwidth_bytes_per_cycle`. A
    store is charged its sectors plus `write_line_sectors` per line it touches."""
    write_line_sectors: float = Field(default=0.0, ge=0)
    """What each line a store touches costs L2's write path on top of its sectors, in sectors
    (0: sectors only)."""
    initial: Literal["cold", "warm"] = "cold"
    """Cache state at launch. cold: L2 holds none of the kernel's data (Nsight Compute flushes caches
    before a profiled launch). warm: the state after a previous launch of the same kernel on the same
    buffers (CUDA-event loops relaunch back to back): the previous launch's sectors, up to the L2
    capacity, those it wrote still dirty (gpusim/timing/mem/l2.py)."""

    @model_validator(mode="after")
    def _fetch_block(self) -> "L2Config":
        v = self.dram_fetch_bytes
        if v is not None and (v & (v - 1) or v < 32 or v > 128):
            raise ValueError(f"dram_fetch_bytes must be 32, 64 or 128 (a power of two from a sector to a line), got {v}")
        return self


class DramConfig(_Model):
    latency_cycles: int = Field(ge=0)
    bandwidth_gb_s: float = Field(gt=0)
    load_wait_cycles: float = Field(default=0.0, ge=0)
    """Under load a read that misses L2 waits this x rho / (1 - rho) cycles more, rho the DRAM's use
    over the last whole `load_window_cycles` (capped at `load_rho_max`; past it the queue itself holds
    reads back). 0: not modelled (the fixed latency until the queue is full)."""
    load_window_cycles: float = Field(default=2048.0, gt=0)
    load_rho_max: float = Field(default=0.8, gt=0, lt=1)
    write_wait_cycles: float = Field(default=0.0, ge=0)
    """A read that misses L2 also waits this x w cycles, w the share of the last whole window's DRAM rate
    that write-backs took (capped at `load_rho_max`): reads wait behind DRAM's writes. 0: not modelled."""
    write_wait_spread: float = Field(default=0.0, ge=0, le=1)
    """The share of that wait that spreads over reads: each line's read waits the mean x (1 - s + s x e),
    e an exponential draw of mean 1 fixed by the line's address (`gpusim.timing.mem.dram.spread`): some
    reads wait long and most little, as reads that meet a DRAM channel busy with writes would. 0: every
    read waits the mean."""
    read_spread_cycles: float = Field(default=0.0, ge=0)
    """Standard deviation of the spread of a read's latency: a read waits this x z cycles more, z a standard
    normal draw fixed by a hash of its `read_spread_bytes` block and of the cycle it is booked
    (`gpusim.timing.mem.dram.jitter`), so the mean latency is unchanged, a request waiting for lines of k
    blocks waits for the slowest of k draws, and a block read again draws again. 0: every read takes the
    latency."""
    read_spread_bytes: int = Field(default=1024, ge=32)
    """The blocks whose lines share one latency draw (`read_spread_cycles`): a power of two."""
    turnaround: float = Field(default=0.0, ge=0)
    """DRAM's cost of switching between reads and writes: a written byte takes 1 + this x min(1, R / W) bytes
    of DRAM's rate, R and W the bytes read and written in the last whole `load_window_cycles`, so that
    traffic mixing both directions loses this x min(R, W) bytes (`gpusim.timing.mem.dram.Dram.write`).
    0: reads and writes share the rate at no cost."""
    write_backpressure: bool = False
    """A store whose sectors make L2 write dirty sectors back holds its LSU queue slot until L2's write-back
    path has drained them, at DRAM's full rate for write-backs alone (L2 needs the room; reads queued at
    DRAM do not hold it), so a stream of stores runs no faster than DRAM writes. False: write-backs take
    DRAM's rate but never hold a store back."""

    @model_validator(mode="after")
    def _spread_block(self) -> "DramConfig":
        v = self.read_spread_bytes
        if v & (v - 1):
            raise ValueError(f"read_spread_bytes must be a power of two (bytes of a block sharing one latency draw), got {v}")
        if 3 * self.read_spread_cycles > self.latency_cycles:
            raise ValueError(f"read_spread_cycles must be at most a third of latency_cycles ({self.latency_cycles:g}): a read's "
                             f"draw reaches 3 standard deviations below the mean latency, got {self.read_spread_cycles:g}")
        return self


class MemoryConfig(_Model):
    l1: L1Config
    l2: L2Config
    dram: DramConfig
    constant_latency_cycles: int = Field(ge=0)


class GpuConfig(_Model):
    name: str = Field(min_length=1)
    card: str = Field(min_length=1, pattern=r"^[a-z0-9_]+$")
    """Id used by --gpu (the YAML file stem)."""
    arch: Arch
    """SASS architecture of the traces this card replays."""
    trace_arch_note: str = ""
    clock_mhz: float = Field(gt=0)
    sm_count: int = Field(ge=1)
    sm: SmConfig
    memory: MemoryConfig
    kernel_overhead_cycles: float = Field(default=0.0, ge=0)
    """GPU-side cycles of a kernel with no work (launch, CTA rasterisation, drain); added to every
    kernel's cycles. 0 where not measured."""
    cta_retire_cycles: float = Field(default=0.0, ge=0)
    """The chip retires at most one CTA per this many cycles, whatever SM it ran on: a CTA whose last
    warp has exited gives its slot back (and the kernel can end) once it is retired; a grid of many
    short CTAs runs at this rate. 0: not modelled."""
    launch_overhead_us: float = Field(default=0.0, ge=0)
    """Further time a launch takes as CUDA events see it, beyond the kernel's GPU-side cycles; added
    to `time_s` only (`event_time_s`). 0 where not measured."""
    event_floor_us: float | None = Field(default=None, gt=0)
    """CUDA-event time below which back-to-back launches do not go, however short the kernel
    (`event_time_s`); None where not measured."""
    watchdog_cycles: int = Field(default=2_000_000, ge=1)

    @model_validator(mode="after")
    def _arch_rules(self) -> "GpuConfig":
        sched = self.sm.scheduler
        if self.arch == "sm_35" and sched.honour_control_codes:
            raise ValueError("sm.scheduler.honour_control_codes must be false for sm_35 traces "
                             "(the Kepler scheduling byte is not decoded)")
        if sched.dual_issue == "control_codes" and not sched.honour_control_codes:
            raise ValueError("sm.scheduler.dual_issue 'control_codes' needs honour_control_codes: true")
        if sched.dual_issue == "control_codes" and self.arch != "sm_52":
            raise ValueError("sm.scheduler.dual_issue 'control_codes' exists only on sm_52 (Maxwell)")
        l1 = self.memory.l1
        if l1.unified_data_stage and l1.lines_per_cycle != self.sm.shared_memory.wavefronts_per_cycle:
            raise ValueError(f"memory.l1.unified_data_stage needs memory.l1.lines_per_cycle ({l1.lines_per_cycle}) "
                             f"equal to sm.shared_memory.wavefronts_per_cycle "
                             f"({self.sm.shared_memory.wavefronts_per_cycle}): one stage has one rate")
        return self

    # --- conveniences (not fields) -------------------------------------------------------------
    def fingerprint(self) -> str:
        """Short stable hash of every field: equal configs, equal fingerprints."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]

    def ops_per_cycle_per_sm(self, unit: str) -> int:
        return self.sm.lanes_per_sm(unit)


# ---------------------------------------------------------------------------------------------
# Overrides (study axes): {"sm.register_file.banks": 8, "memory.l2.latency_cycles": 250}


def _describe_fields(node: Any) -> str:
    keys = list(node.keys()) if isinstance(node, dict) else []
    return ", ".join(keys) if keys else "no sub-fields"


def apply_overrides(config: GpuConfig, overrides: Mapping[str, Any]) -> GpuConfig:
    """Return a new, revalidated config with dotted-path fields replaced.

    Raises SpecError (one line naming the path) for a path that does not exist or a value that
    does not validate. The input config is not modified.
    """
    data = config.model_dump()
    for path, value in overrides.items():
        if not isinstance(path, str) or not path:
            raise SpecError(f"override key {path!r}: expected a dotted field path such as 'sm.register_file.banks'")
        parts = path.split(".")
        node: Any = data
        for i, part in enumerate(parts):
            if not isinstance(node, dict) or part not in node:
                parent = ".".join(parts[:i]) or "<root>"
                raise SpecError(f"override '{path}': no field '{part}' in {parent} "
                                f"(it has: {_describe_fields(node)})")
            if i == len(parts) - 1:
                old = node[part]
                if isinstance(old, dict) and not isinstance(value, Mapping):
                    raise SpecError(f"override '{path}': expected a mapping of sub-fields "
                                    f"({_describe_fields(old)}), got {value!r}")
                node[part] = copy.deepcopy(dict(value) if isinstance(value, Mapping) else value)
            else:
                node = node[part]
    try:
        return GpuConfig.model_validate(data)
    except ValidationError as err:
        msgs = []
        for e in err.errors():
            loc = ".".join(str(x) for x in e.get("loc", ())) or "<root>"
            culprit = next((p for p in overrides if loc == p or loc.startswith(p + ".")), None)
            where = f"override '{culprit}'" if culprit else f"field '{loc}'"
            got = f", got {e.get('input')!r}" if culprit else ""
            msgs.append(f"{where}: {e.get('msg')}{got}")
        if not any(m.startswith("override") for m in msgs):
            msgs.append(f"(after overrides {', '.join(map(str, overrides))})")
        raise SpecError("; ".join(msgs).replace("\n", " "), f"{config.card} overrides") from None
