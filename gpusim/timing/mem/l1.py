"""One SM's L1 data cache for global accesses.

Loads look their sectors up (where the card caches global loads there, and always for the read-only
path); the missing ones go to L2. Stores write through to L2 without allocating in L1.

A missing sector is allocated at once and its data are there when its fetch returns: a load of the
SM that finds it before then waits for that fill (the miss is merged, not sent again), not the hit
latency. H100 (validation/h100/micro/l1_merge_h100.json, bench/micro/l1_merge.cu): warp w of eight
loading a line w x gap cycles after warp 0 missed on it sees warp 0's latency less about w x gap (L2:
381, 344, 299, 259, ... at gap 32; DRAM: 795, 715, 665, 600, 519, ... at gap 64) down to the hit
latency, while warps on lines of their own each see the whole latency.

A warp has at most `miss_bytes_per_warp` bytes of register data in loads that missed L1 outstanding
(a warp's load counts 32 lanes x its access width): a load that would exceed it waits, inside the
memory pipeline, until enough earlier ones return. Measured on the H100 with loads that miss L1 and
hit L2, one warp per SM (validation/h100/micro/memory2_h100.json `wrap`, memory4_h100.json `scatter`):
- 16 LDG.E (2 KB of data) come back ~650 cycles after the first issues, whether they touch 1, 2 or 4
  lines each (667, 672, 717 cycles): the lines or sectors fetched do not set the limit;
- 16 LDG.E.128 (8 KB, 4 lines each, the same lines and sectors as the 4-line LDG.E case) take ~1900
  cycles, about 3.2 rounds of that latency: ~2.5 KB in flight; DRAM alike (724 and 2192 cycles);
- 2 warps per sub-partition get 1.7-1.9x the rate of one (the limit is per warp).
Nsight shows these kernels' warps in long_scoreboard, not lg_throttle: the wait is behind the issue,
as modelled.
"""

from __future__ import annotations

from gpusim.timing.mem.l2 import MemorySystem, SectorCache


class L1:
    """The L1 of one SM: a sector LRU in front of the chip's `MemorySystem`."""

    def __init__(self, cfg, memory: MemorySystem):
        l1 = cfg.memory.l1
        self.cache = SectorCache(l1.size_bytes, l1.sector_bytes)
        self.latency = l1.latency_cycles
        self.caches_loads = l1.caches_global_loads
        self.miss_limit = l1.miss_bytes_per_warp  # None: no per-warp limit
        self.memory = memory

    def load(self, now: float, ready: float, sectors, cached: bool | None = None, warp=None, nbytes: int = 0) -> float:
        """A load issued at `now` whose lines have passed the tag stage at `ready`: the cycle its data is
        there. `cached`: whether L1 holds its sectors (`StaticInfo.l1_cached`: the read-only path on every
        card, plain global loads where the card caches them, loads that bypass L1 never); None: a plain
        global load's (`caches_global_loads`)."""
        if cached is None:
            cached = self.caches_loads
        missing, filling = [], float("-inf")
        if cached:
            for s in sectors:
                r = self.cache.lookup(s)
                if r is None:
                    self.cache.fill(s, float("inf"))  # allocated now, its data there when the fetch returns
                    missing.append(s)
                else:
                    filling = max(filling, r)
        else:
            missing = list(sectors)
        # configured L2/DRAM latencies are end to end (pointer chases), so a miss does not add L1's
        done = ready + self.latency if len(missing) < len(sectors) else ready
        done = max(done, filling)  # a sector still on its way from L2 is there when its fill is
        if missing:
            if self.miss_limit is None or warp is None:
                finish = self.memory.fetch(now, missing, ready)
            else:
                n = min(self.miss_limit, nbytes)
                finish = self.memory.fetch(now, missing, self._miss_slot(warp, ready, n))
                warp.misses.append((finish, n))
            if cached:
                for s in missing:
                    self.cache.set_ready(s, finish)
            done = max(done, finish)
        return done

    def _miss_slot(self, warp, now: float, nbytes: int) -> float:
        """The cycle from which a load of `nbytes` fits under the warp's limit (`warp.misses`: its
        outstanding loads as (return cycle, bytes))."""
        pending = warp.misses = sorted(m for m in warp.misses if m[0] > now)
        held = sum(n for _, n in pending)
        start = now
        i = 0
        while held + nbytes > self.miss_limit and i < len(pending):
            start, n = pending[i]  # wait for the earliest outstanding miss to return
            held -= n
            i += 1
        return start

    def store(self, now: float, ready: float, sectors) -> tuple[float, float]:
        """Stores write through to L2: (cycle the data is there, cycle L2 took the last sector)."""
        return self.memory.store(now, sectors, ready)
