"""The result of a timing run (pydantic schema, versioned; `gpusim run --json` writes it)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from gpusim.timing.stalls import REASONS

RESULT_SCHEMA_VERSION = 1


def event_time_s(cycles: float, clock_mhz: float, cfg, queued: bool = False) -> float:
    """A launch's CUDA-event time (validation harness: every launch between its own pair of events,
    launched back to back): the kernel's cycles at `clock_mhz` plus the card's `launch_overhead_us`,
    and, where the host paces the launches, never below its `event_floor_us`. H100
    (validation/h100/micro/launch_floor_h100.json): a kernel spinning 12-81 us takes its Nsight
    duration + 1.50-1.66 us; kernels of 2.2-4.4 us take 9.6-11.4 us (launches do not come faster).
    `queued`: timed behind a blocking kernel (gpusim.measure.backend), where the host sets no floor."""
    t = cycles / (clock_mhz * 1e6) + cfg.launch_overhead_us * 1e-6
    return max(t, cfg.event_floor_us * 1e-6) if cfg.event_floor_us and not queued else t


class PcStalls(BaseModel):
    address: int
    text: str
    executed: int  # warp-instructions issued at this PC
    stalls: dict[str, float]  # warp-cycles per reason while this PC was the warp's next instruction


class SimResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    schema_version: int = RESULT_SCHEMA_VERSION
    workload: str | None = None
    size: int | None = None
    card: str
    arch: str
    kernel: str
    mode: str = "detailed"
    cycles: float  # includes the card's kernel_overhead_cycles (the cost of a kernel with no work)
    time_s: float  # as CUDA events see it: cycles at the config clock, then `event_time_s`
    clock_mhz: float
    warp_instructions: int
    ipc: float  # warp-instructions per cycle per SM that ran CTAs
    sms_used: int
    ctas: int
    waves: float
    occupancy: dict  # ctas_per_sm, warps_per_sm, limiter
    stalls: dict[str, float]  # warp-cycles per reason (sums to resident warp-cycles)
    stalls_per_pc: list[PcStalls]
    pipe_utilisation: dict[str, float]  # busy fraction of each pipe, averaged over sub-partitions
    shared: dict  # wavefronts, bank_conflicts (extra wavefronts), accesses
    registers: dict  # bank_conflict_cycles, reuse_hits
    memory: dict  # l1/l2 hits and misses, bytes through L2 and DRAM
    sampling: dict | None = None  # sampled mode: what was simulated, what extrapolated, error estimate
    checked: bool = False  # the emulated outputs were compared with the workload's numpy reference
    check: dict | None = None  # per output: rel_error, tolerance, elements checked of the buffer's
    timeline: list[list] | None = None  # [sm, sub-partition, warp, start cycle, cycles, reason index, pc index]
    timeline_reasons: list[str] = list(REASONS)
    notes: list[str] = []
    build: dict | None = None  # a user's spec: its nvcc flags, defines, instances, listing (None for the suite)
    provenance: dict | None = None  # what it was computed from (gpusim.timing.provenance): config, overrides, code


    def top_stalls(self, k: int = 3) -> list[tuple[str, float]]:
        items = [(r, v) for r, v in self.stalls.items() if r != "selected" and v > 0]
        total = sum(self.stalls.values()) or 1.0
        return [(r, v / total) for r, v in sorted(items, key=lambda kv: -kv[1])[:k]]
