"""The SM's load/store and memory path, one module per block, each owning its state and counters:

    lsu.py   the sub-partitions' queues in front of the MIO (shared memory) and LSU (global/local) pipes
    l1.py    the SM's L1 data cache (global loads; stores write through) and its per-warp miss limit
    l2.py    the chip's L2: sector LRU with write-back (dirty lines), its bandwidth, the cache state at launch
    dram.py  DRAM: a bandwidth queue with read and write byte counters
    grid.py  sampled mode's DRAM reads and write-backs of the whole grid, replayed wave by wave from
             the CTAs' footprints (the simulated SMs' L2 cannot see the rest of the grid)

Every number these use comes from the GPU config; each config field cites its measurement
(bench/micro/run_memory.py, results in validation/h100/micro/memory*_h100.json for the H100).
"""

from gpusim.timing.mem.dram import BandwidthQueue, Dram
from gpusim.timing.mem.l1 import L1
from gpusim.timing.mem.l2 import MemorySystem, SectorCache
from gpusim.timing.mem.lsu import AccessQueue, Stage

__all__ = ["AccessQueue", "Stage", "BandwidthQueue", "Dram", "L1", "MemorySystem", "SectorCache"]
