"""DRAM: one bandwidth server for the chip's reads and write-backs, with a latency that grows under load
(`Dram.wait`) and spreads over addresses (`jitter`, `memory.dram.read_spread_cycles`); written bytes cost
more where reads share it (`memory.dram.turnaround`, `Dram.write`)."""

from __future__ import annotations

import math
import statistics

import numpy as np

# `memory.dram.write_wait_spread`: 256 quantiles of an exponential of mean 1 (exactly 1 over the table),
# one per hash bucket of a line's address (`spread`)
SPREAD = -np.log1p(-(np.arange(256) + 0.5) / 256)
SPREAD = SPREAD / SPREAD.mean()


def spread(sector: int) -> float:
    """The factor a read of `sector`'s 128-byte line waits the mean write wait by: a quantile of an
    exponential of mean 1 picked by a hash of the line (the compiled engine runs this function
    through numba). H200 (validation/h100/micro/cta_life_h200.json): a one-float copy's 8 or 32 warps of a CTA,
    issuing their loads within a few cycles, get their data over a range of 477 / 747 cycles on average
    (loads alone 136 / 336) while the mean load takes 162 / 144 cycles more than the loads alone: the
    range of n draws of an exponential is H(n-1) = 2.59 / 4.03 times its mean, 184 / 185 cycles here."""
    x = (sector >> 2) & 0xFFFFFFFF  # the line, mixed (two xor-shift-multiply rounds) so that neighbours draw independently
    x = ((x >> 16) ^ x) * 0x45D9F3B & 0xFFFFFFFF
    x = ((x >> 16) ^ x) * 0x45D9F3B & 0xFFFFFFFF
    return float(SPREAD[((x >> 16) ^ x) & 0xFF])


# `memory.dram.read_spread_cycles`: 256 quantiles of a standard normal (mean 0, standard deviation 1 over
# the table), one per hash bucket of a read's block and cycle (`jitter`)
NORMAL = np.array([statistics.NormalDist().inv_cdf((i + 0.5) / 256) for i in range(256)])
NORMAL = (NORMAL - NORMAL.mean()) / NORMAL.std()


def jitter(sector: int, shift: int, now: float) -> float:
    """A standard normal draw (mean 0, sd 1) fixed by a hash of the sector's block of 2^shift sectors
    (`memory.dram.read_spread_bytes`) and of the cycle the read is booked (the compiled engine runs this
    function through numba). A DRAM read arrives `read_spread_cycles` x this later, so a request waits for
    the slowest of its blocks, and the same block read at another cycle draws again. H200
    (validation/h100/micro/memory32_h200.json `chase_sm`, bench/micro/run_memory.py --only chase_sm): a warp's
    request of n lines, each 8 KiB from the next, takes per SM (medians over the 132) 713 / 825-851 /
    898-933 / 942-976 / 976-1,035 / 1,139-1,162 cycles for n = 1 / 2 / 4 / 8 / 16 / 32 from DRAM, where from L2
    it takes 333-412: the growth is DRAM's, the same on every SM whether the others chase or idle, and
    n consecutive lines grow far less (715-752 at n = 1, 888-938 at 32)."""
    x = ((sector >> shift) ^ (int(now) * 0x9E3779B1)) & 0xFFFFFFFF
    x = ((x >> 16) ^ x) * 0x45D9F3B & 0xFFFFFFFF
    x = ((x >> 16) ^ x) * 0x45D9F3B & 0xFFFFFFFF
    return float(NORMAL[((x >> 16) ^ x) & 0xFF])


class BandwidthQueue:
    """A server moving `bytes_per_cycle`; requests queue behind each other (FIFO). Requests are booked
    at the cycle the SM issues them (the SMs' clocks move together), never at a later cycle: one
    booked in the future would hold back every earlier request of the other SMs."""

    def __init__(self, bytes_per_cycle: float):
        self.bytes_per_cycle = bytes_per_cycle
        self.free_at = 0.0

    def serve(self, now: float, nbytes: float) -> float:
        """Cycle at which `nbytes` requested at `now` have passed."""
        start = self.free_at if self.free_at > now else now
        self.free_at = start + nbytes / self.bytes_per_cycle
        return self.free_at


class Dram:
    """Reads (L2 fills) and writes (L2 write-backs of dirty sectors) share the bandwidth; each
    direction has its own byte counter (Nsight Compute: dram__bytes_read.sum / dram__bytes_write.sum).
    A read arrives after the latency, later under load (`wait`)."""

    def __init__(self, bandwidth_bytes_per_cycle: float, latency_cycles: float, load_wait: float = 0.0,
                 window: float = 2048.0, rho_max: float = 0.8, write_wait: float = 0.0, write_spread: float = 0.0,
                 read_spread: float = 0.0, spread_shift: int = 5, turnaround: float = 0.0):
        self.queue = BandwidthQueue(bandwidth_bytes_per_cycle)
        self.turnaround = turnaround
        self.latency = latency_cycles
        self.read_bytes = 0
        self.write_bytes = 0
        self.load_wait, self.window, self.rho_max, self.write_wait = load_wait, window, rho_max, write_wait
        self.write_spread = write_spread
        self.read_spread, self.spread_shift = read_spread, spread_shift
        self.bucket, self.current, self.previous = 0.0, 0.0, 0.0  # bytes booked in this window and the last
        self.current_w, self.previous_w = 0.0, 0.0  # the same, write-backs only
        self.current_r, self.previous_r = 0.0, 0.0  # the same, reads only (`turnaround`)
        self.drained = 0.0  # the cycle the write-backs booked so far have drained, at DRAM's full rate
        self.busy_bytes = 0.0  # what the queue has carried: bytes read, and written at their turnaround cost

    def read(self, now: float, nbytes: int, start: float, sector: int) -> float:
        """Cycle at which a fill of `sector` booked at `now`, sent no earlier than `start`, arrives in L2."""
        self.read_bytes += nbytes
        if self.turnaround > 0:
            self._tick(now)
            self.current_r += nbytes
        t = self.serve(now, nbytes)
        return (t if t > start else start) + self.latency + self.wait(now, sector) + self.scatter(sector, now)

    def scatter(self, sector: int, now: float) -> float:
        """Cycles a read of `sector` booked at `now` arrives after the mean latency (`jitter`,
        `memory.dram.read_spread_cycles`)."""
        return self.read_spread * jitter(sector, self.spread_shift, now) if self.read_spread > 0 else 0.0

    def write(self, now: float, nbytes: int) -> float:
        """A write-back booked at `now`: it takes bandwidth, and where reads share DRAM (`turnaround` t > 0)
        t x min(1, R / W) of its bytes more, R and W the bytes read and written in the last whole window.
        H100 (validation/h100/micro/micro_h100.json `bandwidth`): a float4 stream reads 3,045 GB/s, writes
        3,126, and copies 2,798 of both together; bench/micro/dram_mix.py fits t through gpusim on those
        kernels. Returns the cycle L2's write-back path has drained it: write-backs alone pass at DRAM's
        full rate (`memory.dram.write_backpressure` holds a store until then); no read waits for it."""
        self.write_bytes += nbytes
        cost = nbytes
        if self.write_wait > 0 or self.turnaround > 0:
            self._tick(now)
            self.current_w += nbytes
            if self.turnaround > 0:
                r, w = self.previous_r, self.previous_w
                cost = nbytes * (1.0 + self.turnaround * (min(1.0, r / w) if w > 0 else (1.0 if r > 0 else 0.0)))
        self.serve(now, cost)
        self.drained = (self.drained if self.drained > now else now) + cost / self.queue.bytes_per_cycle
        return self.drained

    def serve(self, now: float, nbytes: float) -> float:
        """The queue's `serve`, the bytes counted in the window `now` falls in."""
        self.busy_bytes += nbytes
        if self.load_wait > 0 or self.write_wait > 0:
            self._tick(now)
            self.current += nbytes
        return self.queue.serve(now, nbytes)

    def wait(self, now: float, sector: int) -> float:
        """Cycles a read issued at `now` waits beyond the latency below saturation: load_wait x rho / (1 -
        rho), rho the bytes booked in the last whole window over what the window moves at the full rate
        (at most rho_max; past it the queue itself holds reads back). H100: a pointer chase's loads come
        back after 698 cycles on an idle DRAM, 732 / 741 / 885 at 24 / 41 / 77% of its rate beside streams
        (validation/h100/micro/dram_load_h100.json): 58 x rho / (1 - rho) gives +18 / +40 / +194.
        Plus write_wait x w, w the share of the window's rate that write-backs took (at most rho_max): a
        read waits behind DRAM's writes. H200 (the same GH100 with HBM3e): beside streams that copy, at 32
        / 56% of the read rate in all, the chase's loads take 844 / 1002 cycles, where reads alone at 28 /
        50% give 713 / 761 (validation/h100/micro/dram_load_h200.json): 800 x w adds the difference.
        With `write_spread` s the write term is that mean times 1 - s + s x `spread(sector)`."""
        if self.load_wait <= 0 and self.write_wait <= 0:
            return 0.0
        self._tick(now)
        full = self.window * self.queue.bytes_per_cycle
        rho = self.previous / full
        if rho > self.rho_max:
            rho = self.rho_max
        w = self.previous_w / full
        if w > self.rho_max:
            w = self.rho_max
        ww = self.write_wait * w
        if self.write_spread > 0 and ww > 0:
            ww *= 1.0 - self.write_spread + self.write_spread * spread(sector)
        return self.load_wait * rho / (1.0 - rho) + ww

    def _tick(self, now: float) -> None:
        b = math.floor(now / self.window)
        if b > self.bucket:
            self.previous = self.current if b == self.bucket + 1 else 0.0
            self.previous_w = self.current_w if b == self.bucket + 1 else 0.0
            self.previous_r = self.current_r if b == self.bucket + 1 else 0.0
            self.current = self.current_w = self.current_r = 0.0
            self.bucket = b
