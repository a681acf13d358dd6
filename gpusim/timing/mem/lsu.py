"""The queues of the sub-partitions in front of the SM's MIO (shared memory) and LSU (global/local) pipes.

Each sub-partition sends its shared-memory instructions to the MIO and its global/local ones to the
LSU through a queue that holds `depth` instructions. Behind the queues one SM-wide stage (the shared
memory banks; the L1 tag stage) passes `stage.rate` units per cycle (wavefronts; 128-byte lines).
Where L1 and shared memory are one array (`memory.l1.unified_data_stage`; an H100 hypothesis, off
until measured: configs/gpus/arch/gh100.yaml) both kinds pass one stage: a shared wavefront and a global line each take one of its cycles, and all eight queues
share it.
Where a sub-partition has a rate of its own (`rate`), its queue passes at most that many units per
cycle, and the sub-partitions with work queued share the stage equally: min(rate, stage rate /
busy sub-partitions) each. Where it has none (older cards), instructions pass the stage in issue
order. An instruction holds its place in the queue until it has passed; a warp whose instruction
finds the queue full waits: Nsight Compute's mio_throttle / lg_throttle. The registers an access
reads (a store's data, the address) are read as it starts to pass (the SM adds the configured
`*_register_read_cycles`); until then its read scoreboard is held.

Measured on the H100 (bench/micro/run_memory.py, validation/h100/micro/memory*_h100.json), the
unified stage excepted (an assumption until `run_memory.py --only mix` measures it; what suggested
it: naiveMatMatMul and sgemm_smem_padded issue the same LDS stream, but the first's Ac loads touch 32
lines each, and it takes 918,870 ncu cycles at n=1024 to the second's 619,529):
- one warp issues 32-way-conflicting LDS (32 wavefronts) every 4 cycles until about 30 are queued,
  then one every 64 cycles: depth ~30, 0.5 wavefronts per cycle per sub-partition, while 32 warps
  reach 0.95-1.0 wavefront per cycle per SM (`issue.lds_s128`, `sts.sts32_*`); two warps of one
  sub-partition share its queue (17 + 14 LDS before they wait, memory3 `issue.lds_s128_sp2`);
- LDG touching 32 lines: 36 queued, then one per 62-66 cycles: depth ~36, 0.5 lines per cycle
  (`issue.ldg_s128`); 32 warps reach 1 line per cycle per SM (`ldg.by_stride`);
- STS / STG from one warp free their data register 11 / 13 cycles after issue (`issue.sts_s4`,
  `issue.stg_s4`: a CS2R that overwrites the stored register waits for it);
- stores whose 32 lanes write 32 sectors in 32 lines pass at 0.24 sectors per SM-cycle when they
  stay in L2, what L2's write bandwidth gives each SM (`stg_scatter`, memory6_h100.json): a store
  holds its LSU slot until L2 has taken its data (`hold`), so stores beyond L2's write bandwidth
  back up into the queue (lg_throttle), as Nsight shows for transpose_naive.
"""

from __future__ import annotations

from collections import deque


class Stage:
    """The SM-wide pipe behind a kind of queue: `rate` units per cycle."""

    def __init__(self, rate: float):
        self.rate = rate
        self.free = 0.0  # older cards: when it takes its next unit


class AccessQueue:
    def __init__(self, depth: int, rate: float | None, stage: Stage):
        self.depth = depth
        self.rate = rate  # units per cycle; None: instructions pass the stage in issue order
        self.stage = stage
        self.free = 0.0  # when this sub-partition's queue has passed everything it holds
        self.leaving: deque[float] = deque()  # cycle each queued instruction has passed (non-decreasing)

    def full_until(self, now: float) -> float | None:
        """None if an instruction may enter at `now`, else the cycle the queue's first one leaves."""
        leaving = self.leaving
        while leaving and leaving[0] <= now:
            leaving.popleft()
        return leaving[0] if len(leaving) >= self.depth else None

    def access(self, now: float, units: float, queues) -> tuple[float, float]:
        """An instruction of `units` enters at `now`: (cycle it starts to pass, cycle it has passed).
        `queues`: all the queues that share the stage (the SM's queues of this kind, or of both kinds
        where the data stage is unified)."""
        stage = self.stage
        if self.rate is None:
            start = stage.free if stage.free > now else now
            done = stage.free = start + units / stage.rate
        else:
            busy = 1 + sum(1 for q in queues if q is not self and q.free > now)
            rate = min(self.rate, stage.rate / busy)
            start = self.free if self.free > now else now
            done = self.free = start + units / rate
        self.leaving.append(done)
        return start, done

    def hold(self, until: float) -> None:
        """The instruction that entered last keeps its place until `until` (a store until L2 has
        taken its data); the queue passes in order, so the ones behind it wait too."""
        if until > self.leaving[-1]:
            self.leaving[-1] = until
            if until > self.free:
                self.free = until
