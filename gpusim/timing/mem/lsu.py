"""The queues of a sub-partition in front of the SM's shared memory pipelines.

Each sub-partition sends its shared-memory instructions to the MIO and its global/local ones to the
LSU through a queue that holds `depth` instructions and passes `rate` units per cycle (wavefronts
for shared memory, 128-byte lines for global accesses) to the SM-wide stage behind it (the shared
memory banks, the L1 tag stage). An instruction holds its place until the SM-wide stage has
taken its last unit. A warp whose instruction finds the queue full waits: Nsight Compute's
mio_throttle / lg_throttle. An access's registers (a store's data, the address) are read
as it leaves the queue, `read_cycles` after that; until then its read scoreboard is held.

Measured on the H100 (bench/micro/run_memory.py, validation/h100/micro/memory_h100.json):
- one warp issues 32-way-conflicting LDS (32 wavefronts) every 4 cycles until about 30 are queued,
  then one every 64 cycles: depth ~30, 0.5 wavefronts per cycle per sub-partition, while 32 warps
  reach 0.95-1.0 wavefront per cycle per SM (`issue.lds_s128`, `sts.sts32_*`);
- LDG touching 32 lines: 36 queued, then one per 62-66 cycles: depth ~36, 0.5 lines per cycle
  (`issue.ldg_s128`); 32 warps reach 1 line per cycle per SM (`ldg.by_stride`);
- STS / STG from one warp free their data register 11 / 13 cycles after issue (`issue.sts_s4`,
  `issue.stg_s4`: a CS2R that overwrites the stored register waits for it).
"""

from __future__ import annotations

from collections import deque


class AccessQueue:
    def __init__(self, depth: int, rate: float | None):
        self.depth = depth
        self.rate = rate  # units per cycle; None: the sub-partition adds no limit of its own
        self.free = 0.0  # when the queue's head may start its next unit
        self.leaving: deque[float] = deque()  # cycle each queued instruction leaves (non-decreasing)

    def full_until(self, now: float) -> float | None:
        """None if an instruction may enter at `now`, else the cycle the queue's first one leaves."""
        leaving = self.leaving
        while leaving and leaving[0] <= now:
            leaving.popleft()
        return leaving[0] if len(leaving) >= self.depth else None

    def enter(self, now: float, units: float) -> tuple[float, float]:
        """An instruction of `units` enters at `now`: (cycle its first unit leaves the sub-partition,
        cycle its last one has). The caller says when the SM-wide stage has taken all of it (`taken`)."""
        start = self.free if self.free > now else now
        done = start + units / self.rate if self.rate else start
        self.free = done
        return start, done

    def taken(self, cycle: float) -> None:
        """The instruction that entered last holds its place until `cycle` (the SM-wide stage has
        passed its last unit; both stages are FIFO, so these cycles do not decrease)."""
        self.leaving.append(cycle)
