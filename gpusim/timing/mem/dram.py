"""DRAM: one bandwidth server for the chip's reads and write-backs, with a fixed latency."""

from __future__ import annotations


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
    direction has its own byte counter (Nsight Compute: dram__bytes_read.sum / dram__bytes_write.sum)."""

    def __init__(self, bandwidth_bytes_per_cycle: float, latency_cycles: float):
        self.queue = BandwidthQueue(bandwidth_bytes_per_cycle)
        self.latency = latency_cycles
        self.read_bytes = 0
        self.write_bytes = 0

    def read(self, now: float, nbytes: int, start: float) -> float:
        """Cycle at which a fill booked at `now`, sent no earlier than `start`, arrives in L2."""
        self.read_bytes += nbytes
        t = self.queue.serve(now, nbytes)
        return (t if t > start else start) + self.latency

    def write(self, now: float, nbytes: int) -> None:
        """A write-back: it takes bandwidth; nothing waits for it."""
        self.write_bytes += nbytes
        self.queue.serve(now, nbytes)
