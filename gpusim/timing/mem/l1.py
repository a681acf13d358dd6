"""One SM's L1 data cache for global accesses.

Loads look their sectors up (where the card caches global loads there, and always for the read-only
path); the missing ones go to L2. Stores write through to L2 without allocating in L1.

A warp has at most `miss_sectors_per_warp` sectors of L1 misses outstanding: a load whose misses
would exceed that waits, inside the memory pipeline, until enough earlier ones return. Measured on
the H100 (validation/h100/micro/memory2_h100.json, `wrap`): one warp issuing 16 independent loads of
4 sectors each that miss L1 gets them back ~650 cycles later, but 16 loads of 16 sectors each take
~1900 cycles per 16, about three rounds of the same latency (about 80 sectors in flight), while 2
warps per sub-partition get nearly twice the rate of one (the limit is per warp, not per
sub-partition); the same holds for DRAM (700 and 2200 cycles). Counted in sectors, not lines: as
lines (20), a warp's loads that touch 32 lines of 1 sector each would wait for one another, and the
strided seed kernels would run 10x slower than measured (simpleMatMatMul n=256: 475k cycles against
48.6k). Nsight shows these kernels' warps in long_scoreboard, not lg_throttle: the wait is behind
the issue, as modelled.
"""

from __future__ import annotations

from gpusim.timing.mem.l2 import MemorySystem, SectorCache


class L1:
    def __init__(self, cfg, memory: MemorySystem, partition: int = 0):
        l1 = cfg.memory.l1
        self.partition = partition  # the L2 partition this SM is attached to
        self.cache = SectorCache(l1.size_bytes, l1.sector_bytes)
        self.latency = l1.latency_cycles
        self.caches_loads = l1.caches_global_loads
        self.miss_limit = l1.miss_sectors_per_warp  # None: no per-warp limit
        self.memory = memory

    def load(self, now: float, sectors, readonly: bool = False, warp=None) -> float:
        """Loads through the read-only/texture path are cached in L1 on every card here; plain
        global loads only where the card caches them (`caches_global_loads`)."""
        if self.caches_loads or readonly:
            missing = [s for s in sectors if not self.cache.access(s)]
        else:
            missing = list(sectors)
        # configured L2/DRAM latencies are end to end (pointer chases), so a miss does not add L1's
        done = now + self.latency if len(missing) < len(sectors) else now
        if missing:
            if self.miss_limit is None or warp is None:
                return max(done, self.memory.fetch(now, missing, self.partition))
            n = min(self.miss_limit, len(missing))
            finish = self.memory.fetch(self._miss_slot(warp, now, n), missing, self.partition)
            warp.misses.append((finish, n))
            done = max(done, finish)
        return done

    def _miss_slot(self, warp, now: float, sectors: int) -> float:
        """The cycle from which `sectors` more missing sectors fit under the warp's limit (`warp.misses`:
        its outstanding misses as (return cycle, sectors))."""
        pending = warp.misses = sorted(m for m in warp.misses if m[0] > now)
        held = sum(n for _, n in pending)
        start = now
        i = 0
        while held + sectors > self.miss_limit and i < len(pending):
            start, n = pending[i]  # wait for the earliest outstanding miss to return
            held -= n
            i += 1
        return start

    def store(self, now: float, sectors) -> float:
        return self.memory.store(now, sectors, self.partition)
