"""The chip's L2: an LRU over 32-byte sectors with write-back, shared by all SMs, in front of DRAM.

- Loads that miss L1 look sectors up here; a miss fills the sector from DRAM (a sector whose fill is
  in flight is waited for, as an MSHR merges misses). All sectors pass the L2 bandwidth queue.
- Stores write through L1 to here and allocate without reading DRAM; L2 takes their sectors at its
  write bandwidth, each line a store touches costing `write_line_sectors` sectors more (H100: 32-bit
  stores whose lanes hit 32 lines pass 0.24 sectors per SM-cycle, whole lines 0.47;
  validation/h100/micro/memory6_h100.json `stg_scatter`, memory_h100.json `stg`) (Nsight: a kernel that only
  writes reads no DRAM bytes, `write_once` in validation/h100/micro/memory_h100.json). The sector
  becomes dirty; DRAM sees it only when it is written back: when it is evicted, or when the dirty
  sectors exceed `dirty_limit_bytes` (then the oldest dirty sector is cleaned). Dirty data left at
  the kernel's end stays in L2 (Nsight counts no write-back after the kernel).
- Dirty data are also written back once they fall out of the `dirty_reach_bytes` most recently
  reused sectors (stores, and loads that hit L2: data kernels read again, not first reads): an LRU
  order that only stores and L2 hits enter. Detailed mode only: sampled mode's few SMs cannot see
  the grid's reuse order, and its DRAM counters come from the grid's waves instead (`grid.py`). H100 (validation/h100/micro/dram_writes_h100.json): a kernel writing its
  output chunk by chunk while the whole grid re-reads an input of H MiB keeps about 26.9 MiB - H of
  it dirty (W = 16, H = 16: 5.5 MiB written back; W = 32, H = 16: 20.6), as a naive GEMM does;
  outputs written after the inputs were read stay (read R, then write 8-16 MiB: < 0.2 MiB written
  back), and inputs read once push dirty data out only through the capacity (write 16 MiB, then
  read 16 / 32 / 64 once: 0.8 / 6.6 / 15.5 MiB written back).
- Stores wait for the write-backs they cause (`memory.dram.write_backpressure`): a store whose sectors push
  dirty sectors out holds its LSU slot until L2's write-back path has drained them at DRAM's full rate
  (`Dram.write`). H100: a float4 write stream runs at 3,126 GB/s (validation/h100/micro/micro_h100.json
  bandwidth.dram_write); without the rule gpusim's stores outran DRAM at 4,012 (bench/micro/dram_mix.py).
- Capacity is the measured effective one: a buffer read twice by the whole GPU comes from DRAM once
  up to 32 MB and twice from 48 MB on (H100 `read_twice`), though the card reports 50 MB; written
  data stays in L2 up to about 21.4 MiB (`write_once`: DRAM writes = buffer - 21.2..21.7 MiB).
- One latency for every SM: a pointer chase over lines another SM walked last costs 270-298 cycles
  per load on each of the 132 SMs (validation/h100/micro/memory5_h100.json, `partition`), so the
  near/far split reported for the H800 (264.5 / 502 cycles [LUO25]) is not modelled.
- `initial: warm` starts from the state a previous launch of the same kernel on the same buffers
  leaves (CUDA-event loops relaunch back to back): its sectors, last touched last, up to capacity.
"""

from __future__ import annotations

from collections import OrderedDict

from gpusim.timing.mem.dram import BandwidthQueue, Dram


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

    def fill(self, sector: int, ready: float) -> int | None:
        """Insert (or refresh) a sector; the sector evicted to make room, if any."""
        self.sectors[sector] = ready
        self.sectors.move_to_end(sector)
        if len(self.sectors) > self.capacity:
            return self.sectors.popitem(last=False)[0]
        return None

    def set_ready(self, sector: int, ready: float) -> None:
        """A held sector's fill completes at `ready` (its place in the LRU order kept); an evicted one is left out."""
        if sector in self.sectors:
            self.sectors[sector] = ready

    def touch(self, sector: int) -> None:
        """The sector becomes the newest, inserted (ready at once) if absent; nothing is counted."""
        if sector in self.sectors:
            self.sectors.move_to_end(sector)
        else:
            self.fill(sector, 0.0)

    def access(self, sector: int) -> bool:
        """Hit or miss, allocating on a miss (fill time unknown: treated as immediate)."""
        if self.lookup(sector) is not None:
            return True
        self.fill(sector, 0.0)
        return False


class MemorySystem:
    """Chip-wide L2 and DRAM shared by all SMs (each SM owns an `L1`)."""

    def __init__(self, cfg, clock_mhz: float, share: float = 1.0, dirty_share: float | None = None,
                 track_stores: bool = False, reach_rule: bool = True):
        """`share`: the fraction of the chip's L2/DRAM bandwidth this model sees (sampled mode
        simulates a few SMs and gives them their part). `dirty_share` (default `share`): the fraction
        of the L2's room for dirty data it gets: sampled mode simulates a few CTAs of those SMs and
        gives them room in proportion to the grid's writes they stand for, so that writes beyond the
        dirty limit are written back from the simulated window as from the whole kernel."""
        mem = cfg.memory
        l2 = mem.l2
        self.sector_bytes = sb = mem.l1.sector_bytes
        self.l2 = SectorCache(l2.effective_size_bytes or l2.size_bytes, sb)
        self.l2_queue = BandwidthQueue(l2.bandwidth_bytes_per_cycle * share)
        # a written sector occupies the L2 queue as long as read_bw / write_bw read sectors
        self.write_cost = l2.bandwidth_bytes_per_cycle / l2.write_bandwidth_bytes_per_cycle \
            if l2.write_bandwidth_bytes_per_cycle else 1.0
        self.line_sectors = l2.write_line_sectors  # a store's lines cost this many sectors more each
        self.sectors_per_line = max(1, 128 // sb)
        self.fetch_sectors = fetch_sectors(mem)  # sectors a read miss brings from DRAM
        self.block_fills = 0  # sectors filled alongside a missed one (counted as L2 misses too)
        limit = l2.dirty_limit_bytes if l2.dirty_limit_bytes is not None else self.l2.capacity * sb
        self.dirty_capacity = max(1, int(limit * (share if dirty_share is None else dirty_share)) // sb)
        self.dirty: OrderedDict[int, None] = OrderedDict()  # dirty sectors, oldest write first
        # the reach is a recency order of the whole grid's reuse. Sampled mode leaves it out
        # (`reach_rule` False): its few SMs' reuse does not scale to the grid's (they share input tiles), and scaled
        # by either the traced CTAs' share or the bandwidth share it wrote back 2-3.5 MiB at n=1024
        # from SGEMMs whose output stays in L2 (Nsight: 0-0.25 MiB)
        reach = l2.dirty_reach_bytes if reach_rule else None
        self.reach_capacity = max(1, int(reach) // sb) if reach else 0
        self.reach: OrderedDict[int, None] = OrderedDict()  # reused sectors (stores, L2 hits), oldest first
        self.dram = Dram(mem.dram.bandwidth_gb_s * 1e9 / (clock_mhz * 1e6) * share, mem.dram.latency_cycles,
                         mem.dram.load_wait_cycles, mem.dram.load_window_cycles, mem.dram.load_rho_max,
                         mem.dram.write_wait_cycles, mem.dram.write_wait_spread, mem.dram.read_spread_cycles,
                         max(0, (mem.dram.read_spread_bytes // sb).bit_length() - 1), mem.dram.turnaround)
        self.backpressure = mem.dram.write_backpressure  # a store waits for the write-backs it causes
        self.l2_latency = l2.latency_cycles
        self.l2_bytes = 0  # bytes read from or written to L2
        self.l2_queue_bytes = 0.0  # the same as the L2 queue weighs them (a written byte costs `write_cost`)
        self.stored = set() if track_stores else None  # sampled mode: the sectors stores wrote (each once)
        self.dram_fraction: float | None = None  # sampled mode: share of local L2 misses that go to DRAM
        self._dram_credit = 0.0

    # ---- loads -----------------------------------------------------------------------------------
    def fetch(self, now: float, sectors, start: float) -> float:
        """Sectors a load issued at `now` missed in L1, sent no earlier than `start` (the L1 stage, the
        warp's miss limit): serve them from L2 or DRAM; return the completion cycle. Bandwidth is
        booked at `now` (see BandwidthQueue)."""
        done = start
        sb = self.sector_bytes
        to_dram = self._to_dram()  # sampled mode: decided per access, see _to_dram
        self.l2_bytes += sb * len(sectors)
        self.l2_queue_bytes += sb * len(sectors)
        for s in sectors:
            t = self.l2_queue.serve(now, sb)
            ready = self.l2.lookup(s)
            if ready is not None:  # in L2, or on its way from DRAM
                finish = max((t if t > start else start) + self.l2_latency, ready)
                if self.reach_capacity and self.dirty:  # before the first store the order does not matter
                    self._reuse(s, now)
            else:
                extra = self._fetched_with(s, sectors) if self.fetch_sectors > 1 else ()
                n = 1 + len(extra)
                finish = self.dram.read(now, sb * n, start, s) if to_dram else start + self.dram.latency + self.dram.wait(now, s)
                self._evicted(self.l2.fill(s, finish), now)
                self.block_fills += len(extra)
                for x in extra:  # its block's other sectors come with it
                    self.l2.misses += 1
                    self._evicted(self.l2.fill(x, finish), now)
            if finish > done:
                done = finish
        return done

    def _fetched_with(self, s: int, asked) -> list[int]:
        """The sectors a DRAM fetch of `s` brings along (`dram_fetch_bytes`): the rest of its aligned
        block, those not in L2 and not in the request `asked` (which fetches them itself). H100: an
        isolated 32-byte sector costs 2 L2 sectors and 64 DRAM bytes, and its neighbour is then an L2
        hit (validation/h100/micro/memory19_h100.json, pair_probe and mix_burst)."""
        k = self.fetch_sectors
        b = s - s % k
        return [x for x in range(b, b + k) if x != s and x not in self.l2.sectors and x not in asked]

    # ---- stores ----------------------------------------------------------------------------------
    def store(self, now: float, sectors, start: float) -> tuple[float, float]:
        """Sectors a store issued at `now` writes (through L1), sent no earlier than `start`: allocated
        in L2 dirty, no DRAM read. Returns (the cycle the last write has reached L2, the cycle L2's
        write bandwidth has taken the last sector: until then the store holds its LSU queue slot)."""
        done = accepted = start
        sb = self.sector_bytes
        self.l2_bytes += sb * len(sectors)
        if self.stored is not None:
            self.stored.update(sectors)
        # each sector costs write_cost sectors of the L2 queue, and each line touched line_sectors more
        # (spread over its sectors): scattered stores take longer per byte than whole lines
        per = sb * self.write_cost
        if self.line_sectors and sectors:
            spl = self.sectors_per_line
            lines = 1 + sum(1 for a, b in zip(sectors, sectors[1:]) if a // spl != b // spl)  # ascending
            per *= 1.0 + self.line_sectors * lines / len(sectors)
        self.l2_queue_bytes += per * len(sectors)
        for s in sectors:
            t = self.l2_queue.serve(now, per)
            if t > accepted:
                accepted = t
            finish = (t if t > start else start) + self.l2_latency
            ready = self.l2.sectors.get(s)
            wb = self._evicted(self.l2.fill(s, finish if ready is None else max(ready, finish)), now)
            wb = max(wb, self._make_dirty(s, now))
            if self.reach_capacity:
                wb = max(wb, self._reuse(s, now))
            if self.backpressure and wb > accepted:  # L2 takes the store once DRAM has taken what it evicts
                accepted = wb
            if finish > done:
                done = finish
        return done, accepted

    # The three ways a dirty sector is written back; each returns the cycle L2's write-back path has
    # drained the write-back (`Dram.write`), or 0 where none was written.
    def _make_dirty(self, sector: int, now: float) -> float:
        dirty = self.dirty
        if sector in dirty:
            dirty.move_to_end(sector)
            return 0.0
        dirty[sector] = None
        if len(dirty) > self.dirty_capacity:  # clean the oldest dirty sector: write it back
            dirty.popitem(last=False)
            return self.dram.write(now, self.sector_bytes)
        return 0.0

    def _reuse(self, sector: int, now: float) -> float:
        """`sector` was stored or hit: it becomes the newest reused sector; the oldest one past
        `reach_capacity` leaves the order and, if dirty, is written back."""
        reach = self.reach
        reach[sector] = None
        reach.move_to_end(sector)
        if len(reach) > self.reach_capacity:
            old = reach.popitem(last=False)[0]
            if old in self.dirty:
                del self.dirty[old]
                return self.dram.write(now, self.sector_bytes)
        return 0.0

    def _evicted(self, sector: int | None, now: float) -> float:
        if sector is not None and sector in self.dirty:
            del self.dirty[sector]
            return self.dram.write(now, self.sector_bytes)
        return 0.0

    # ---- cache state at launch -------------------------------------------------------------------
    def warm(self, sectors, dirty) -> None:
        """Start from a previous launch's end state: `sectors` in the order they were last touched
        (oldest first), `dirty[i]` whether sector i was written (it is still dirty). Nothing is counted."""
        for s, d in zip(sectors, dirty):
            self.l2.fill(s, 0.0)
            if d:
                self.dirty[s] = None
                self.dirty.move_to_end(s)
        while len(self.dirty) > self.dirty_capacity:
            self.dirty.popitem(last=False)

    def _to_dram(self) -> bool:
        """Whether an access that misses this model's L2 moves DRAM bytes. Detailed mode: always.
        Sampled mode simulates a few SMs, whose L2 cannot see the other SMs fetch the data they share
        with them (GEMM tiles are read by a whole row or column of CTAs, in near lockstep): their misses
        still wait for DRAM latency (the fill is in flight for all sharers), but only their share of
        the grid's compulsory DRAM traffic (input footprint / busy SMs) occupies DRAM bandwidth."""
        if self.dram_fraction is None:
            return True
        self._dram_credit += self.dram_fraction
        if self._dram_credit >= 1.0:
            self._dram_credit -= 1.0
            return True
        return False

    def counters(self) -> dict:
        return memory_counters(self.l2.hits, self.l2.misses, round(self.l2_bytes), self.dram.read_bytes,
                               self.dram.write_bytes, self.block_fills)


def fetch_sectors(mem) -> int:
    """Sectors a read that misses L2 brings from DRAM (`memory.l2.dram_fetch_bytes`; 1: the sector alone)."""
    return max(1, (mem.l2.dram_fetch_bytes or mem.l1.sector_bytes) // mem.l1.sector_bytes)


def memory_counters(l2_hits: int, l2_misses: int, l2_bytes: int, dram_read: int, dram_write: int,
                    block_fills: int = 0) -> dict:
    """The memory system's counters as results carry them (both engines). L2 lookups (hits + misses)
    are the sectors loads ask L2 for plus `l2_block_fills`, the sectors a miss brought alongside
    (`dram_fetch_bytes`), which Nsight counts as lookup misses too."""
    return {"l2_hits": l2_hits, "l2_misses": l2_misses, "l2_bytes": l2_bytes, "dram_read_bytes": dram_read,
            "dram_write_bytes": dram_write, "dram_bytes": dram_read + dram_write, "l2_block_fills": block_fills}
