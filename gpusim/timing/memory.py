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
    """LRU set of sector addresses with a capacity in bytes; counts hits and misses. Each sector
    remembers when its fill completes, so a request that finds a fill in flight waits for it
    (misses to the same sector merge, as in an MSHR) instead of counting as an early hit."""

    def __init__(self, size_bytes: int, sector_bytes: int = 32):
        self.capacity = max(1, size_bytes // sector_bytes)
        self.sectors: OrderedDict[int, float] = OrderedDict()
        self.hits = self.misses = 0

    def lookup(self, sector: int) -> float | None:
        """The cycle the sector's data is there (a hit, possibly still filling), or None (a miss)."""
        ready = self.sectors.get(sector)
        if ready is not None:
            self.sectors.move_to_end(sector)
            self.hits += 1
            return ready
        self.misses += 1
        return None

    def fill(self, sector: int, ready: float) -> None:
        self.sectors[sector] = ready
        if len(self.sectors) > self.capacity:
            self.sectors.popitem(last=False)

    def access(self, sector: int) -> bool:
        """Hit or miss, allocating on a miss (fill time unknown: treated as immediate)."""
        if self.lookup(sector) is not None:
            return True
        self.fill(sector, 0.0)
        return False


class MemorySystem:
    """Chip-wide L2 and DRAM shared by all SMs (each SM owns an `L1`)."""

    def __init__(self, cfg, clock_mhz: float, share: float = 1.0):
        """`share`: the fraction of the chip's L2/DRAM bandwidth this model sees (sampled mode
        simulates one SM and gives it 1 / active SMs of the bandwidth)."""
        mem = cfg.memory
        self.sector_bytes = mem.l1.sector_bytes
        self.l2 = SectorCache(mem.l2.size_bytes, self.sector_bytes)
        self.l2_queue = BandwidthQueue(mem.l2.bandwidth_bytes_per_cycle * share)
        self.dram_queue = BandwidthQueue(mem.dram.bandwidth_gb_s * 1e9 / (clock_mhz * 1e6) * share)
        self.l2_latency = mem.l2.latency_cycles
        self.dram_latency = mem.dram.latency_cycles
        self.dram_fraction: float | None = None  # sampled mode: share of local L2 misses that go to DRAM
        self._dram_credit = 0.0

    def fetch(self, now: float, sectors, write: bool = False) -> float:
        """Sectors that missed L1: serve them from L2 or DRAM; return the completion cycle."""
        done = now
        sb = self.sector_bytes
        dram_bytes = write or self._to_dram()  # sampled mode: decided per access, see _to_dram
        for s in sectors:
            t = self.l2_queue.serve(now, sb)
            ready = None if write else self.l2.lookup(s)
            if write:
                finish = t + self.l2_latency
            elif ready is not None:  # in L2, or on its way from DRAM
                finish = max(t + self.l2_latency, ready)
            else:
                finish = (self.dram_queue.serve(now, sb) if dram_bytes else now) + self.dram_latency
                self.l2.fill(s, finish)
            if finish > done:
                done = finish
        return done


    def _to_dram(self) -> bool:
        """Whether an access that misses this model's L2 moves DRAM bytes. Detailed mode: always.
        Sampled mode simulates one SM, whose L2 cannot see the other SMs fetch the data they share
        with it (GEMM tiles are read by a whole row or column of CTAs, in near lockstep): its misses
        still wait for DRAM latency (the fill is in flight for all sharers), but only its share of
        the grid's compulsory DRAM traffic (input footprint / busy SMs) occupies DRAM bandwidth."""
        if self.dram_fraction is None:
            return True
        self._dram_credit += self.dram_fraction
        if self._dram_credit >= 1.0:
            self._dram_credit -= 1.0
            return True
        return False


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
