"""Device memory for the emulator: global buffers at device-like addresses, per-CTA shared memory,
per-thread local memory. Every access is bounds- and alignment-checked; a fault names the address.

Accesses move 1, 2, 4, 8 or 16 bytes. A load returns the loaded words per lane (shape
(words, lanes)); 1- and 2-byte accesses come back zero-extended in one word (the instruction
sign-extends .S8/.S16) and store the low bytes of their word (PTX ISA, ld/st: "the value is
zero- or sign-extended to the register's size", st of a narrower type stores the low bits)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GLOBAL_BASE = 0x7F00_0000_0000  # buffers are placed from here, like cudaMalloc's high addresses
ALIGN = 256  # cudaMalloc alignment
GUARD = 256  # unmapped gap after each buffer, so overruns fault instead of reading a neighbour


def access_units(words: np.ndarray, nbytes: int) -> np.ndarray:
    """Contiguous uint32 words viewed as one flat array of `nbytes` units: uint32 for 4 bytes, an
    opaque `nbytes`-byte type for 8 and 16 (gathered and scattered whole)."""
    flat = words.reshape(-1)
    return flat if nbytes == 4 else flat.view(np.dtype((np.void, nbytes)))


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


def _bytes_of(data) -> np.ndarray:
    """The bytes of a buffer (bytes, or an array in C order, as `tobytes` gives them) as a uint8
    array, without a copy where the array is already contiguous."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return np.frombuffer(data, dtype=np.uint8)
    return np.ascontiguousarray(data).reshape(-1).view(np.uint8)


class GlobalMemory:
    """One byte arena holding all buffers; addresses map to arena offsets. A buffer is given by its
    contents, or by its size in bytes (zeros, to be filled through `logical`). `shared`: the arena
    is an anonymous shared mapping, which a forked process writes for its parent to read (detailed
    mode's emulation in a second process, `timing/compiled/producer.py`)."""

    def __init__(self, buffers: dict[str, bytes | np.ndarray | int], shared: bool = False):
        self.buffers: list[Buffer] = []
        offset = 0
        raws = [data if isinstance(data, int) else _bytes_of(data) for data in buffers.values()]
        for name, raw in zip(buffers, raws):
            nbytes = raw if isinstance(raw, int) else raw.size
            self.buffers.append(Buffer(name, GLOBAL_BASE + offset, nbytes))
            offset += -(-(nbytes + GUARD) // ALIGN) * ALIGN
        if shared:
            import mmap

            self.arena = np.frombuffer(mmap.mmap(-1, max(offset, 16)), dtype=np.uint8)  # (zeros, MAP_SHARED)
        else:
            self.arena = np.zeros(max(offset, 16), dtype=np.uint8)
        for buf, raw in zip(self.buffers, raws):
            if not isinstance(raw, int):
                start = buf.address - GLOBAL_BASE
                self.arena[start:start + buf.nbytes] = raw
        self._starts = np.array([b.address for b in self.buffers], dtype=np.uint64)
        self._ends = np.array([b.address + b.nbytes for b in self.buffers], dtype=np.uint64)
        self.words = self.arena.view(np.uint32)

    def address_of(self, name: str) -> int:
        return next(b.address for b in self.buffers if b.name == name)

    def read_buffer(self, name: str) -> np.ndarray:
        buf = next(b for b in self.buffers if b.name == name)
        start = buf.address - GLOBAL_BASE
        return self.arena[start:start + buf.nbytes]

    def logical(self, name: str, dtype, shape: tuple, order: str = "C") -> np.ndarray:
        """The buffer as the logical array it holds (elements of `dtype`, `shape`, laid out in
        `order`): a view of the arena, which the kernel's stores change."""
        return self.read_buffer(name).view(dtype).reshape(shape, order=order)

    def _word_index(self, addrs: np.ndarray, nbytes: int) -> np.ndarray:
        """Arena word index of each address; faults on unmapped, out-of-bounds or misaligned access."""
        return self._offset(addrs, nbytes) >> 2

    def _offset(self, addrs: np.ndarray, nbytes: int) -> np.ndarray:
        """Arena byte offset of each address (int64); faults on unmapped, out-of-bounds or misaligned
        access."""
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
        return (addrs - np.uint64(GLOBAL_BASE)).astype(np.int64)

    def units(self, nbytes: int) -> np.ndarray:
        """The arena as an array of `nbytes`-sized units (a view): address a is unit
        (a - GLOBAL_BASE) // nbytes."""
        return access_units(self.words, nbytes)

    def unit_index(self, addrs: np.ndarray, nbytes: int) -> np.ndarray | None:
        """Unit (of `units(nbytes)`) of each address (int64 bits), or None when some access would
        fault (as `_word_index` decides): every address aligned and inside one of the buffers from
        the lowest address's to the highest's."""
        lo, hi = int(addrs.min()), int(addrs.max())
        if int(np.bitwise_or.reduce(addrs)) & (nbytes - 1) or lo < GLOBAL_BASE:
            return None
        first, last = (int(np.searchsorted(self._starts, np.uint64(a), side="right")) - 1 for a in (lo, hi))
        if first == last:
            inside = hi + nbytes <= int(self._ends[first])
        else:
            inside = np.zeros(addrs.shape, dtype=bool)
            for b in range(first, last + 1):
                inside |= (addrs >= int(self._starts[b])) & (addrs <= int(self._ends[b]) - nbytes)
            inside = bool(inside.all())
        return (addrs - GLOBAL_BASE) >> (nbytes.bit_length() - 1) if inside else None

    def load(self, addrs: np.ndarray, nbytes: int) -> np.ndarray:
        """Words loaded per lane: shape (max(1, nbytes // 4), lanes), uint32."""
        offset = self._offset(addrs, nbytes)
        if nbytes < 4:
            return _small_view(self.arena, nbytes)[offset // nbytes].astype(np.uint32)[None]
        idx = offset >> 2
        return np.stack([self.words[idx + i] for i in range(nbytes // 4)])

    def store(self, addrs: np.ndarray, words: np.ndarray, nbytes: int) -> None:
        offset = self._offset(addrs, nbytes)
        if nbytes < 4:
            _small_view(self.arena, nbytes)[offset // nbytes] = words[0]  # the low bytes (casting wraps)
            return
        idx = offset >> 2
        for i in range(nbytes // 4):
            self.words[idx + i] = words[i]


def _small_view(data: np.ndarray, nbytes: int) -> np.ndarray:
    """Contiguous memory (any shape) as a flat array of 1- or 2-byte units."""
    return data.reshape(-1).view(np.uint8 if nbytes == 1 else np.uint16)


class SharedMemory:
    """Shared memory of the emulated CTAs: one row of `size` bytes per CTA slot (addresses from
    `base`)."""

    space = "shared"
    base = 0

    def __init__(self, n_ctas: int, size: int):
        self.size = size
        row_words = -(-(max(size, 4) // 4 + 1) // 4) * 4  # +1: zero-size kernels; whole 16-byte rows
        self.words = np.zeros((n_ctas, row_words), dtype=np.uint32)
        self.flat_words = self.words.reshape(-1)  # a view: all slots' words in one row

    def units(self, nbytes: int) -> np.ndarray:
        """All CTA slots' shared memory as an array of `nbytes`-sized units (a view): address a of
        CTA slot c is unit c * words.shape[1] * 4 // nbytes + a // nbytes."""
        return access_units(self.words, nbytes)

    def fits(self, lo: int, hi: int, bits: int, nbytes: int) -> bool:
        """Accesses of `nbytes` at addresses from lo to hi, whose OR is `bits`, are all in bounds and
        aligned."""
        return lo >= 0 and hi + nbytes <= self.size and bits & (nbytes - 1) == 0

    def _offset(self, addrs: np.ndarray, nbytes: int) -> np.ndarray:
        """Byte offset of each address in its row; faults on out-of-bounds or misaligned access."""
        offset = addrs.astype(np.int64, copy=False) - self.base
        bad = (offset < 0) | (offset + nbytes > self.size) | (offset % nbytes != 0)
        if bad.any():
            i = int(np.argmax(bad))
            kind = "misaligned" if offset[i] % nbytes else "out-of-bounds"
            raise MemoryFault(f"{kind} {self.space} access of {nbytes} bytes ({self.space} size {self.size})", i,
                              int(addrs[i]))
        return offset

    def load(self, rows, addrs, nbytes):
        """Words loaded per lane from row `rows[i]` (CTA slot, or lane for local memory)."""
        offset = self._offset(addrs, nbytes)
        if nbytes < 4:
            per_row = self.words.shape[1] * 4 // nbytes
            return _small_view(self.words, nbytes)[rows * per_row + offset // nbytes].astype(np.uint32)[None]
        idx = offset >> 2
        return np.stack([self.words[rows, idx + i] for i in range(nbytes // 4)])

    def store(self, rows, addrs, words, nbytes):
        offset = self._offset(addrs, nbytes)
        if nbytes < 4:
            per_row = self.words.shape[1] * 4 // nbytes
            _small_view(self.words, nbytes)[rows * per_row + offset // nbytes] = words[0]
            return
        idx = offset >> 2
        for i in range(nbytes // 4):
            self.words[rows, idx + i] = words[i]


# Generic addresses (LD/ST): the CTA's shared memory appears in a window whose high word is SR_SWINHI
# (`S2R R5, SR_SWINHI` then `{shared address, R5}` converts a shared pointer to a generic one). The
# window's place on the H100 is not measured (it is never seen in a kernel's output): the emulator
# puts it where no global buffer can be.
SHARED_WINDOW_HI = 0x0001_0000
SHARED_WINDOW = SHARED_WINDOW_HI << 32

LOCAL_TOP = 0xFFFC00  # the stack pointer a kernel starts with (constant bank 0; R1 = c[0x0][0x28] on sm_90)


class LocalMemory(SharedMemory):
    """Per-thread local memory: one row per lane holding the `size` bytes below LOCAL_TOP, the
    kernel's stack frame (the prologue moves R1 down by the frame: `VIADD R1, R1, 0xffffff20`).
    An access outside the frame faults."""

    space = "local"

    def __init__(self, n_lanes: int, size: int):
        super().__init__(n_lanes if size else 0, size)
        self.base = LOCAL_TOP - size
