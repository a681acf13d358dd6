"""Device memory for the emulator: global buffers at device-like addresses, per-CTA shared memory,
constant bank 0. Every access is bounds- and alignment-checked; a fault names the address."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GLOBAL_BASE = 0x7F00_0000_0000  # buffers are placed from here, like cudaMalloc's high addresses
ALIGN = 256  # cudaMalloc alignment
GUARD = 256  # unmapped gap after each buffer, so overruns fault instead of reading a neighbour


class MemoryFault(Exception):
    """Raised with the offending lane index and address; the emulator adds kernel/PC/CTA/thread."""

    def __init__(self, message: str, lane: int, address: int):
        super().__init__(message)
        self.lane, self.address = lane, address


@dataclass
class Buffer:
    name: str
    address: int
    nbytes: int


class GlobalMemory:
    """One byte arena holding all buffers; addresses map to arena offsets."""

    def __init__(self, buffers: dict[str, bytes | np.ndarray]):
        self.buffers: list[Buffer] = []
        offset = 0
        for name, data in buffers.items():
            raw = np.frombuffer(np.ascontiguousarray(data).tobytes(), dtype=np.uint8)
            self.buffers.append(Buffer(name, GLOBAL_BASE + offset, raw.size))
            offset += -(-(raw.size + GUARD) // ALIGN) * ALIGN
        self.arena = np.zeros(max(offset, 16), dtype=np.uint8)
        for buf, data in zip(self.buffers, buffers.values()):
            start = buf.address - GLOBAL_BASE
            self.arena[start:start + buf.nbytes] = np.frombuffer(np.ascontiguousarray(data).tobytes(), np.uint8)
        self._starts = np.array([b.address for b in self.buffers], dtype=np.uint64)
        self._ends = np.array([b.address + b.nbytes for b in self.buffers], dtype=np.uint64)
        self.words = self.arena.view(np.uint32)

    def address_of(self, name: str) -> int:
        return next(b.address for b in self.buffers if b.name == name)

    def read_buffer(self, name: str) -> np.ndarray:
        buf = next(b for b in self.buffers if b.name == name)
        start = buf.address - GLOBAL_BASE
        return self.arena[start:start + buf.nbytes]

    def _word_index(self, addrs: np.ndarray, nbytes: int) -> np.ndarray:
        """Arena word index of each address; faults on unmapped, out-of-bounds or misaligned access."""
        addrs = addrs.astype(np.uint64, copy=False)
        if addrs.size == 0:
            return addrs.astype(np.int64)
        misaligned = (addrs % np.uint64(nbytes)) != 0
        which = np.searchsorted(self._starts, addrs, side="right") - 1
        ok = (which >= 0) & ~misaligned
        ok[ok] &= addrs[ok] + np.uint64(nbytes) <= self._ends[which[ok]]
        if not ok.all():
            bad = int(np.argmin(ok))
            kind = "misaligned" if misaligned[bad] else "out-of-bounds"
            raise MemoryFault(f"{kind} global access of {nbytes} bytes", bad, int(addrs[bad]))
        return ((addrs - np.uint64(GLOBAL_BASE)) >> np.uint64(2)).astype(np.int64)

    def flat_index(self, addrs: np.ndarray, nbytes: int) -> np.ndarray | None:
        """Arena word index of each address (int64 bits) when no access faults, else None (the
        caller then takes the path that reports the fault). Quick check when the lowest and highest
        address lie in one buffer; the per-lane check of `_word_index` otherwise."""
        lo, hi = int(addrs.min()), int(addrs.max())
        aligned = not int(np.bitwise_or.reduce(addrs)) & (nbytes - 1)
        which = int(np.searchsorted(self._starts, np.uint64(max(lo, 0)), side="right")) - 1
        if aligned and lo >= GLOBAL_BASE and which >= 0 and hi + nbytes <= int(self._ends[which]):
            return (addrs - GLOBAL_BASE) >> 2
        try:
            return self._word_index(addrs.view(np.uint64), nbytes)
        except MemoryFault:
            return None

    def load(self, addrs: np.ndarray, nbytes: int) -> np.ndarray:
        """Words loaded per lane: shape (nbytes // 4, lanes), uint32."""
        idx = self._word_index(addrs, nbytes)
        return np.stack([self.words[idx + i] for i in range(max(1, nbytes // 4))])

    def store(self, addrs: np.ndarray, words: np.ndarray, nbytes: int) -> None:
        idx = self._word_index(addrs, nbytes)
        for i in range(max(1, nbytes // 4)):
            self.words[idx + i] = words[i]


class SharedMemory:
    """Shared memory of the emulated CTAs: one row of `size` bytes per CTA slot."""

    def __init__(self, n_ctas: int, size: int):
        self.size = size
        self.words = np.zeros((n_ctas, max(size, 4) // 4 + 1), dtype=np.uint32)  # +1: zero-size kernels
        self.flat = self.words.reshape(-1)  # a view: word w of CTA slot c is flat[c * row_words + w]

    def flat_index(self, cta_rows: np.ndarray, addrs: np.ndarray, nbytes: int) -> np.ndarray | None:
        """Index into `flat` of each lane's first word when every access is aligned and inside the
        shared size (checked on the lowest and highest address); None otherwise (`_index` then
        names the fault)."""
        if int(addrs.min()) < 0 or int(addrs.max()) + nbytes > self.size or \
                int(np.bitwise_or.reduce(addrs)) & (nbytes - 1):
            return None
        return cta_rows * self.words.shape[1] + (addrs >> 2)

    def _index(self, cta_rows: np.ndarray, addrs: np.ndarray, nbytes: int):
        addrs = addrs.astype(np.int64, copy=False)
        bad = (addrs < 0) | (addrs + nbytes > self.size) | (addrs % nbytes != 0)
        if bad.any():
            i = int(np.argmax(bad))
            kind = "misaligned" if addrs[i] % nbytes else "out-of-bounds"
            raise MemoryFault(f"{kind} shared access of {nbytes} bytes (shared size {self.size})", i, int(addrs[i]))
        return cta_rows, addrs >> 2

    def load(self, cta_rows, addrs, nbytes):
        rows, idx = self._index(cta_rows, addrs, nbytes)
        return np.stack([self.words[rows, idx + i] for i in range(max(1, nbytes // 4))])

    def store(self, cta_rows, addrs, words, nbytes):
        rows, idx = self._index(cta_rows, addrs, nbytes)
        for i in range(max(1, nbytes // 4)):
            self.words[rows, idx + i] = words[i]
