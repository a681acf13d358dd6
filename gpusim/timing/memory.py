"""Memory hierarchy timing: per-SM L1, chip-wide L2 and DRAM, each a latency plus a bandwidth queue.

An access's sectors (32 B, the unit Nsight Compute counts) are looked up in L1 (if the card caches
global loads there), missing sectors in L2, missing ones in DRAM. Each level is an LRU over sectors
with the configured capacity and a `BandwidthQueue` that serialises the bytes it moves, so a
bandwidth-bound kernel is limited by bandwidth (queueing), a latency-bound one by latency.
"""

from __future__ import annotations

from collections import OrderedDict


class BandwidthQueue:
    """A server moving `bytes_per_cycle`; requests queue behind each other (FIFO)."""

    def __init__(self, bytes_per_cycle: float):
        self.bytes_per_cycle = bytes_per_cycle
        self.free_at = 0.0
        self.bytes = 0

    def serve(self, now: float, nbytes: int) -> float:
        """Cycle at which `nbytes` requested at `now` have passed."""
        start = self.free_at if self.free_at > now else now
        self.free_at = start + nbytes / self.bytes_per_cycle
        self.bytes += nbytes
        return self.free_at


class SectorCache:
    """LRU set of sector addresses with a capacity in bytes; counts hits and misses."""

    def __init__(self, size_bytes: int, sector_bytes: int = 32):
        self.capacity = max(1, size_bytes // sector_bytes)
        self.sectors: OrderedDict[int, None] = OrderedDict()
        self.hits = self.misses = 0

    def access(self, sector: int) -> bool:
        if sector in self.sectors:
            self.sectors.move_to_end(sector)
            self.hits += 1
            return True
        self.misses += 1
        self.sectors[sector] = None
        if len(self.sectors) > self.capacity:
            self.sectors.popitem(last=False)
        return False


class MemorySystem:
    """Chip-wide L2 and DRAM shared by all SMs (each SM owns an `L1`)."""

    def __init__(self, cfg, clock_mhz: float):
        mem = cfg.memory
        self.sector_bytes = mem.l1.sector_bytes
        self.l2 = SectorCache(mem.l2.size_bytes, self.sector_bytes)
        self.l2_queue = BandwidthQueue(mem.l2.bandwidth_bytes_per_cycle)
        self.dram_queue = BandwidthQueue(mem.dram.bandwidth_gb_s * 1e9 / (clock_mhz * 1e6))
        self.l2_latency = mem.l2.latency_cycles
        self.dram_latency = mem.dram.latency_cycles

    def fetch(self, now: float, sectors, write: bool = False) -> float:
        """Sectors that missed L1: serve them from L2 or DRAM; return the completion cycle."""
        done = now
        sb = self.sector_bytes
        for s in sectors:
            t = self.l2_queue.serve(now, sb)
            if write or self.l2.access(s):
                finish = t + self.l2_latency
            else:
                finish = self.dram_queue.serve(now, sb) + self.dram_latency
            if finish > done:
                done = finish
        return done


class L1:
    """One SM's L1 data cache for global loads (stores write through to L2, no allocation)."""

    def __init__(self, cfg, memory: MemorySystem):
        self.cache = SectorCache(cfg.memory.l1.size_bytes, cfg.memory.l1.sector_bytes)
        self.latency = cfg.memory.l1.latency_cycles
        self.caches_loads = cfg.memory.l1.caches_global_loads
        self.memory = memory

    def load(self, now: float, sectors, readonly: bool = False) -> float:
        """Loads through the read-only/texture path are cached in L1 on every card here; plain
        global loads only where the card caches them (`caches_global_loads`)."""
        if self.caches_loads or readonly:
            missing = [s for s in sectors if not self.cache.access(s)]
        else:
            missing = list(sectors)
        # configured L2/DRAM latencies are end to end (pointer chases), so a miss does not add L1's
        done = now + self.latency if len(missing) < len(sectors) else now
        if missing:
            done = max(done, self.memory.fetch(now, missing))
        return done

    def store(self, now: float, sectors) -> float:
        return self.memory.fetch(now, sectors, write=True)
