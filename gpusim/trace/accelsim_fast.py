"""Fast reader of one Accel-Sim kernel trace straight into a `DynamicTrace` (>= 1 M warp instructions
per second): numpy over the file's bytes, a few MB at a time, instead of a Python loop over its lines.

Same format and the same rules as `gpusim.trace.accelsim` (see its docstring); the result is the
one `to_dynamic_trace(read_kernel_trace(...))` gives. The rule it exploits: all lines of one PC
carry the same text after the mask (registers, opcode, width, immediate) except, for a memory
instruction, the addresses. So each distinct instruction text is parsed once, by the line reader's
own `parse_instruction_line`, and every other line of that PC is only compared with it (8 bytes at
a time). Of a memory line's addresses, the base is parsed with byte arithmetic and the text after
it (stride or deltas, then the immediate) is again compared with, or looked up among, the distinct
texts already parsed: a kernel has few.

- The file is read in blocks of `BLOCK_BYTES` cut at a newline; peak memory is the result (its
  address rows, 256 bytes per memory instruction) plus a few times a block.
- List-all addresses (`0x%016lx` for each active lane) are read with numpy too. A line that does
  not fit the common shape (another text than its PC's first line, odd spacing, upper-case or
  unpadded fields) is parsed on its own by `parse_instruction_line`.
- Whatever the line reader would reject (and what this reader does not take: tracer version < 3,
  lineinfo, tabs, CR, indentation, non-ASCII) makes it return None; the caller then runs the line
  reader, which names the file, line and problem.
"""

from __future__ import annotations

import lzma
import re
from pathlib import Path

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from gpusim.errors import GpusimError, TraceFormatError
from gpusim.trace.accelsim import (
    BASE_DELTA, BASE_STRIDE, LIST_ALL, TRACER_VERSION, header_line, parse_instruction_line, static_shared_bytes,
    width_from_opcode,
)
from gpusim.trace.format import RECORD_DTYPE, DynamicTrace, make_header
from gpusim.trace.lanes import lane_bits

BLOCK_BYTES = 1 << 21  # text parsed per step (2 MB: its temporaries stay in cache and are reused)
PAD = 512  # bytes after a block, so that fixed-width windows never run off its end
MAX_WORDS = (PAD - 64) // 8  # texts compared 8 bytes at a time up to this many words
TAILS_KEPT = 1 << 16  # distinct texts after base addresses kept from block to block

_HEX = np.full(256, 255, np.uint8)
for _c in b"0123456789":
    _HEX[_c] = _c - 48
for _c in b"abcdef":
    _HEX[_c] = _c - 87
for _c in b"ABCDEF":
    _HEX[_c] = _c - 55
_DEC = np.full(256, 255, np.uint8)
_DEC[48:58] = np.arange(10)
_TB = re.compile(r"thread block\s*=\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)")
_WARP = re.compile(r"warp\s*=\s*(\d+)")
_INSTS = re.compile(r"insts\s*=\s*(\d+)")
_MASK64 = (1 << 64) - 1
_LANE = np.arange(32, dtype=np.uint64)
_I64 = np.iinfo(np.int64)


class _Unreadable(Exception):
    """The fast reader does not take this file: fall back to the line-by-line reader."""


# ---- public entry points --------------------------------------------------------------------------
def first_kernel(path) -> Path:
    """The first kernel trace file of an Accel-Sim trace: a directory, its kernelslist.g, or the file."""
    path = Path(path)
    listed = path / "kernelslist.g" if path.is_dir() else path
    if not listed.name.startswith("kernelslist"):
        return listed
    try:
        names = [ln.strip() for ln in listed.read_text().splitlines() if ln.strip().startswith("kernel")]
    except OSError as exc:
        raise TraceFormatError(f"cannot read kernel list ({exc.strerror})", str(listed)) from None
    if not names:
        raise TraceFormatError("the kernel list names no kernel", str(listed))
    return listed.parent / names[0]


def peek_header(path) -> dict:
    """The header lines of a kernel trace (kernel name, grid, block, binary version ...)."""
    path = Path(path)
    h = {"lineinfo": 0, "tracer_version": TRACER_VERSION}
    try:
        with (lzma.open(path, "rt") if path.name.endswith(".xz") else open(path)) as f:
            for line in f:
                line = line.strip()
                if line.startswith("#BEGIN_TB"):
                    break
                if line.startswith("-") and header_line(line, h):
                    raise _Unreadable
        if not {"kernel_name", "grid", "block"} <= set(h):
            raise _Unreadable
        return h
    except (OSError, EOFError, lzma.LZMAError, UnicodeDecodeError, _Unreadable):
        from gpusim.trace.accelsim import read_kernel_trace

        return read_kernel_trace(path).header  # the line reader names the problem
    except Exception as exc:  # noqa: BLE001
        raise TraceFormatError(f"cannot read the trace header ({type(exc).__name__})", str(path)) from None


def load_kernel(path, program, workload=None, size=None) -> DynamicTrace:
    """Fast reader, or the line-by-line reader where it does not take the file."""
    trace = read_dynamic_trace(path, program, workload, size)
    if trace is None:
        from gpusim.trace.accelsim import read_kernel_trace, to_dynamic_trace

        trace = to_dynamic_trace(read_kernel_trace(path, program.arch), program, workload, size)
    return trace


def read_dynamic_trace(path, program, workload=None, size=None) -> DynamicTrace | None:
    """The DynamicTrace of the Accel-Sim kernel trace at `path` (of `program`), or None when this
    reader does not take the file (see the module docstring)."""
    path = Path(path)
    try:
        with (lzma.open(path) if path.name.endswith(".xz") else open(path, "rb")) as f:
            return _Reader(path, program).read(f, workload, size)
    except (_Unreadable, GpusimError, OSError, EOFError, lzma.LZMAError, UnicodeDecodeError, IndexError, ValueError):
        return None


# ---- texts compared 8 bytes at a time -------------------------------------------------------------
def _groups(values: np.ndarray) -> list[tuple[int, np.ndarray | slice]]:
    """(value, rows) for each distinct small non-negative value (rows a slice when all are equal)."""
    if not len(values):
        return []
    if (values == values[0]).all():
        return [(int(values[0]), slice(None))]
    return [(v, np.flatnonzero(values == v)) for v in np.flatnonzero(np.bincount(values)).tolist()]


class _Texts:
    """One reference text per slot (a PC), compared with many places of a block at once."""

    def __init__(self, slots: int):
        self.length = np.full(slots, -1, np.int64)  # -1: none (yet)
        self.nwords = np.zeros(slots, np.int64)
        self.words = np.zeros((slots, MAX_WORDS), np.uint64)
        self.keep = np.zeros((slots, MAX_WORDS), np.uint64)  # which bytes of the words belong to the text

    def set(self, slot: int, text: bytes) -> bool:
        n = -(-len(text) // 8)
        if n > MAX_WORDS:
            return False
        self.words[slot] = np.frombuffer(text.ljust(8 * MAX_WORDS, b"\0"), "<u8")
        self.keep[slot] = np.frombuffer((b"\xff" * len(text)).ljust(8 * MAX_WORDS, b"\0"), "<u8")
        self.length[slot], self.nwords[slot] = len(text), n
        return True

    def at(self, block: np.ndarray, starts: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """Whether the bytes at `starts` begin with the text of `slots` (rows with none: False)."""
        same = np.zeros(len(starts), bool)
        for w, rows in _groups(self.nwords[slots]):
            if w:
                got = sliding_window_view(block, 8 * w)[starts[rows]].view("<u8")
                k = slots[rows]
                same[rows] = ~((got ^ self.words[k, :w]) & self.keep[k, :w]).any(axis=1)
        return same


def _hex_value(digits: np.ndarray, count) -> np.ndarray:
    """uint64 of the first `count` (an int, or one per row; 0 to 16) hex digit values of each row:
    right-aligned in 2, 4, 8 or 16 columns, packed two digits a byte, read as a big-endian word."""
    out = np.zeros(len(digits), np.uint64)
    for c, rows in ([(count, slice(None))] if isinstance(count, int) else _groups(count)):
        width = max(2, 1 << (c - 1).bit_length()) if c > 1 else 2  # digits: 2, 4, 8 or 16
        packed = np.zeros((len(out[rows]), width), np.uint8)
        packed[:, width - c:] = digits[rows, :c]
        out[rows] = ((packed[:, 0::2] << 4) | packed[:, 1::2]).view(f">u{width // 2}").ravel()
    return out


def _pc_and_mask(buf: np.ndarray, s: np.ndarray):
    """(pc, mask, text start, parsed) of the lines starting at `s`: `<pc hex> <8 hex digits> ...`."""
    n = len(s)
    if (buf[s + 4] == 32).all():  # the tracer's %04x: one fixed layout
        width = np.full(n, 4)
        groups = [(4, slice(None))]
        digits = _HEX[sliding_window_view(buf, 13)[s]]
    else:
        digits = _HEX[sliding_window_view(buf, 25)[s]]
        width = np.argmax(digits == 255, axis=1)  # the PC's digits
        groups = [(w, rows) for w, rows in _groups(width) if 1 <= w <= 14]
    pc = np.full(n, -1, np.int64)
    mask = np.zeros(n, np.uint64)
    good = np.zeros(n, bool)
    for w, rows in groups:
        d = digits[rows]
        at = s[rows]
        good[rows] = (buf[at + w] == 32) & (d[:, w + 1:w + 9] != 255).all(axis=1) & (buf[at + w + 9] == 32)
        pc[rows] = _hex_value(d, w).astype(np.int64)
        mask[rows] = _hex_value(d[:, w + 1:w + 9], 8)
    return pc, mask, s + width + 10, good


class _Grown:
    """An array filled block by block and sized from the rows per byte of text read so far: the
    pages of `np.empty` are not touched until written, and `result` gives back the unused end."""

    def __init__(self, dtype, *shape: int):
        self.array = np.empty((0, *shape), dtype)
        self.n = 0

    def add(self, rows: np.ndarray, done_bytes: int, total_bytes: int | None) -> None:
        need = self.n + len(rows)
        if need > len(self.array):
            if total_bytes and done_bytes < total_bytes:
                guess = int(need / done_bytes * total_bytes * 1.1) + 1024
            else:
                guess = 2 * len(self.array) + 1024
            grown = np.empty((max(need, guess), *self.array.shape[1:]), self.array.dtype)
            grown[:self.n] = self.array[:self.n]
            self.array = grown
        self.array[self.n:need] = rows
        self.n = need

    def result(self) -> np.ndarray:
        self.array.resize((self.n, *self.array.shape[1:]), refcheck=False)
        return self.array


# ---- the reader ---------------------------------------------------------------------------------
class _Reader:
    def __init__(self, path: Path, program):
        from gpusim.isa.opcodes import load_opcode_table

        self.path, self.program = path, program
        self.table = load_opcode_table(program.arch)  # as load_kernel hands the line reader program.arch
        addrs = np.array([ins.address for ins in program.instructions], np.int64)
        self.by_pc = np.full(int(addrs.max()) + 1, -1, np.int64)
        self.by_pc[addrs] = np.arange(len(addrs))
        slots = len(program.instructions)
        self.kind = np.zeros(slots, np.int8)  # 0 unseen, 1 plain text, 2 memory prefix, 3 each line alone
        self.text = _Texts(slots)  # a plain PC's text after the mask / a memory PC's up to its addresses
        self.tail = _Texts(slots)  # a memory PC's first text after the base address
        self.tail_id = np.full(slots, -1, np.int64)
        self.tails: dict[bytes, int] = {}  # distinct texts after the base address -> row of the next three
        self.tail_tables = (_Grown(np.int64), _Grown(np.uint64, 33), _Grown(np.uint64, 32))
        self.tail_count = np.zeros(0, np.int64)  # how many numbers the text holds (-1: not a number list)
        self.tail_values = np.zeros((0, 33), np.uint64)  # its first 33 numbers, mod 2**64
        self.tail_prefix = np.zeros((0, 32), np.uint64)  # sums of its first 0, 1, ... 31 numbers
        # header and thread-block state, as the line reader keeps it
        self.h = {"lineinfo": 0, "tracer_version": TRACER_VERSION}
        self.in_tb = self.started = False
        self.cta = self.warp = self.stream = None
        self.cta_base = 0
        self.expected = self.got = 0
        self.wpc = 0
        self.seen: set[tuple[int, int, int, int]] = set()
        # results, block by block
        self.records = _Grown(RECORD_DTYPE)
        self.addr = _Grown(np.uint64, 32)  # the address rows of the memory lines, in file order
        self.size: int | None = None  # bytes of text, if known
        self.done_bytes = 0  # bytes of text read so far

    def read(self, f, workload, size) -> DynamicTrace:
        if not self.path.name.endswith(".xz"):
            self.size = self.path.stat().st_size
        rest = b""
        while True:
            chunk = f.read(BLOCK_BYTES)
            data = rest + chunk
            if not chunk:
                if data:
                    self.block(data)
                break
            cut = data.rfind(b"\n") + 1
            if cut:
                self.block(data[:cut])
            rest = data[cut:]
        return self.finish(workload, size)

    # -- one block of whole lines ------------------------------------------------------------------
    def block(self, data: bytes) -> None:
        n = len(data)
        self.done_bytes += n
        if len(self.tails) > TAILS_KEPT:  # addresses that rarely repeat (gathers): start the table afresh
            self.tails.clear()
            for table in self.tail_tables:
                table.n = 0
            self.tail.length[:], self.tail.nwords[:], self.tail_id[:] = -1, 0, -1
        buf = np.empty(n + PAD, np.uint8)
        buf[:n] = np.frombuffer(data, np.uint8)
        buf[n:] = 10
        text = buf[:n]
        nl = np.flatnonzero(text == 10)
        # ASCII without control characters other than newlines (no tabs, CR, form feeds ...)
        if np.count_nonzero((text - np.uint8(32)) >= 95) != len(nl):
            raise _Unreadable
        ends = nl if data.endswith(b"\n") else np.append(nl, n)
        starts = np.concatenate(([0], nl[:len(ends) - 1] + 1))
        first = buf[starts]
        nonblank = ends > starts
        if (nonblank & (first == 32)).any():
            raise _Unreadable  # indented or blank-but-spaces lines: the line reader's business
        is_ins = nonblank & (_HEX[first] != 255)
        ins = np.flatnonzero(is_ins)
        ctrl = np.flatnonzero(nonblank & ~is_ins)
        owner, seq = self.structure(data, buf, starts, ends, ins, ctrl)
        if not len(ins):
            return
        p, mask, is_mem, rows = self.instructions(data, buf, starts[ins], ends[ins])
        records = np.empty(len(ins), RECORD_DTYPE)
        records["warp"], records["seq"], records["pc_index"] = owner, seq, p
        records["active_mask"] = records["exec_mask"] = mask
        records["mem_row"] = np.where(is_mem, self.addr.n + np.cumsum(is_mem) - 1, -1)
        self.records.add(records, self.done_bytes, self.size)
        self.addr.add(rows, self.done_bytes, self.size)

    def structure(self, data, buf, starts, ends, ins, ctrl):
        """Thread blocks, warps and their instruction counts (a few lines per warp), the line reader's
        rules; the global warp id and sequence number of every instruction line. `warp = N` and
        `insts = N` lines of exactly that form have their number read here at once."""
        s, e = starts[ctrl], ends[ctrl]
        number = np.full(len(ctrl), -1, np.int64)
        for word in (b"warp = ", b"insts = "):
            rows = np.flatnonzero(buf[s] == word[0])
            number[rows] = _decimal_after(buf, s[rows], e[rows], word)
        code, number = buf[s].tolist(), number.tolist()
        count = np.diff(np.searchsorted(ins, ctrl), prepend=0, append=len(ins)).tolist()  # the runs
        streams, firsts = [], []  # of the runs of instruction lines (ones with lines)
        for j in range(len(code) + 1):
            if j:
                c, v = code[j - 1], number[j - 1]
                if v < 0:
                    i = ctrl[j - 1]
                    self.control(data[starts[i]:ends[i]].decode("ascii").strip())
                elif c == 119:  # warp = v
                    if not self.in_tb or self.cta is None:
                        raise _Unreadable
                    self.close_warp()
                    self.warp, self.stream, self.expected = v, None, -1
                    if v >= self.wpc:
                        raise _Unreadable
                else:  # insts = v
                    if not self.in_tb or self.warp is None:
                        raise _Unreadable
                    key = (*self.cta, self.warp)
                    if key in self.seen:
                        raise _Unreadable
                    self.seen.add(key)
                    self.expected, self.got = v, 0
                    self.stream = self.cta_base + self.warp
            k = count[j]
            if k:  # instruction lines up to the next control line
                if self.stream is None:
                    raise _Unreadable
                streams.append(self.stream)
                firsts.append(self.got)
                self.got += k
        sizes = [k for k in count if k]
        owner = np.repeat(np.array(streams, np.int32), sizes)
        at = np.cumsum(sizes) - sizes  # first line of each run
        seq = (np.arange(len(ins)) - np.repeat(at - np.array(firsts, np.int64), sizes)).astype(np.int32)
        return owner, seq

    def control(self, line: str) -> None:
        h = self.h
        if line.startswith("-"):
            if self.started or header_line(line, h):
                raise _Unreadable
            return
        if line.startswith("#"):
            tag = line.split()[0]
            if tag == "#BEGIN_TB":
                if self.in_tb or "grid" not in h or "block" not in h:
                    raise _Unreadable
                if not self.started:
                    self.started = True
                    if (h.get("kernel_name") != self.program.kernel or h["tracer_version"] < 3 or h["lineinfo"]
                            or "kernel_name" not in h):
                        raise _Unreadable
                    bx, by, bz = h["block"]
                    self.wpc = -(-(bx * by * bz) // 32)
                self.in_tb, self.cta, self.warp, self.stream = True, None, None, None
            elif tag == "#END_TB":
                if not self.in_tb:
                    raise _Unreadable
                self.close_warp()
                self.in_tb, self.stream = False, None
            return
        if not self.in_tb:
            raise _Unreadable
        if line.startswith("thread block"):
            m = _TB.fullmatch(line)
            if not m:
                raise _Unreadable
            self.cta = x, y, z = tuple(int(v) for v in m.groups())
            if any(c >= g for c, g in zip(self.cta, h["grid"])):
                raise _Unreadable
            gx, gy, _ = h["grid"]
            self.cta_base = (x + y * gx + z * gx * gy) * self.wpc  # global id of its warp 0
        elif line.startswith("warp"):
            m = _WARP.fullmatch(line)
            if not m or self.cta is None:
                raise _Unreadable
            self.close_warp()
            self.warp, self.stream, self.expected = int(m.group(1)), None, -1
            if self.warp >= self.wpc:
                raise _Unreadable
        elif line.startswith("insts"):
            m = _INSTS.fullmatch(line)
            if not m or self.warp is None:
                raise _Unreadable
            self.expected = int(m.group(1))
            key = (*self.cta, self.warp)
            if key in self.seen:
                raise _Unreadable
            self.seen.add(key)
            self.stream = self.cta_base + self.warp
            self.got = 0
        else:
            raise _Unreadable  # the line reader parses it as an instruction line and says what is wrong

    def close_warp(self) -> None:
        if self.stream is not None and self.got != self.expected:
            raise _Unreadable

    # -- instruction lines -------------------------------------------------------------------------
    def instructions(self, data, buf, s, e):
        """(instruction index, mask, is memory, address rows of the memory lines) of the lines [s, e)."""
        n = len(s)
        pc, mask, r, good = _pc_and_mask(buf, s)
        good &= (pc >= 0) & (pc < len(self.by_pc)) & (r <= e)
        p = np.where(good, self.by_pc[np.where(good, pc, 0)], -1)
        good &= p >= 0
        self.learn(data, s, r, e, p, good)
        kind = np.where(good, self.kind[np.maximum(p, 0)], 3)
        plain = kind == 1
        plain[plain] = (e - r)[plain] == self.text.length[p[plain]]
        plain[plain] = self.text.at(buf, r[plain], p[plain])
        memory = kind == 2
        memory[memory] = (e - r)[memory] > self.text.length[p[memory]]
        memory[memory] = self.text.at(buf, r[memory], p[memory])
        m = np.flatnonzero(memory)
        rows, done = self.addresses(data, buf, r[m] + self.text.length[p[m]], e[m], p[m], mask[m])
        alone = np.flatnonzero(~(plain | memory))
        alone = np.concatenate((alone, m[~done])) if not done.all() else alone
        is_mem = memory.copy()
        if len(alone):  # each on its own, by the line reader's parser
            alone.sort()
            out = [self.line(data[s[i]:e[i]]) for i in alone.tolist()]
            p[alone] = [o[0] for o in out]
            mask[alone] = [o[1] for o in out]
            is_mem[alone] = [o[2] is not None for o in out]
            extra = [o[2] for o in out if o[2] is not None]
        else:
            extra = []
        if extra or not done.all():
            full = np.empty((int(is_mem.sum()), 32), np.uint64)
            at = np.cumsum(is_mem) - 1
            full[at[m[done]]] = rows[done]
            if extra:
                full[at[alone[is_mem[alone]]]] = np.array(extra, np.uint64)
            rows = full
        return p.astype(np.int32), mask.astype(np.uint32), is_mem, rows

    def learn(self, data, s, r, e, p, good) -> None:
        """The reference text of each PC first met in this block, from the line reader's parse of it."""
        new = good & (self.kind[np.maximum(p, 0)] == 0)
        if not new.any():
            return
        _, first = np.unique(p[new], return_index=True)
        for i in np.flatnonzero(new)[first].tolist():
            line = data[s[i]:e[i]]
            slot = int(p[i])
            ins = self.parse(line.decode("ascii"), slot)
            after = line[r[i] - s[i]:]
            if ins.addresses is None:
                self.kind[slot] = 1 if self.text.set(slot, after) else 3
                continue
            # a memory line: the text up to and with its mem_width field
            fields = 1 + len(ins.dsts) + 2 + len(ins.srcs) + 1
            words = after.split(b" ")
            prefix = b" ".join(words[:fields]) + b" "
            fits = len(words) > fields and b"" not in words[:fields] and after.startswith(prefix)
            self.kind[slot] = 2 if fits and self.text.set(slot, prefix) else 3

    def parse(self, line: str, slot: int | None = None):
        """The line reader's parse of one line, with the checks the line reader and
        `to_dynamic_trace` make of its opcode; anything wrong: not this reader's to report."""
        try:
            ins = parse_instruction_line(line, self.h["tracer_version"], 0)
        except TraceFormatError:
            raise _Unreadable from None
        index = self.program.by_address.get(ins.pc)
        if (self.table.get(ins.base_opcode) is None or index is None or (slot is not None and index != slot)
                or self.program.instructions[index].full_opcode != ins.opcode):
            raise _Unreadable
        return ins

    def line(self, raw: bytes):
        ins = self.parse(raw.decode("ascii"))
        return self.program.by_address[ins.pc], ins.mask, ins.addresses

    # -- addresses of the memory lines ---------------------------------------------------------------
    def addresses(self, data, buf, t, e, p, mask):
        """Address rows of memory lines whose text after the width starts at `t`: `mode 0x<base> ...`
        in base-stride or base-delta form. Returns (rows, done); lines not done go to the parser."""
        n = len(t)
        rows = np.empty((n, 32), np.uint64)  # rows not done are left as they are
        if not n:
            return rows, np.zeros(0, bool)
        raw = sliding_window_view(buf, 21)[t]
        mode = raw[:, 0]
        ok = ((mode == 48 + BASE_STRIDE) | (mode == 48 + BASE_DELTA)) & (raw[:, 1] == 32) & (raw[:, 2] == 48) & (
            raw[:, 3] == 120)
        digits = _HEX[raw[:, 4:]]
        count = np.argmax(digits == 255, axis=1)  # the base's digits (0: none, or more than 16)
        end = t + 4 + count  # the byte after the base: a space, or the end of the line
        ok &= (count >= 1) & ((buf[end] == 32) | (end == e)) & (end <= e)
        base = _hex_value(digits, count)
        q = np.minimum(end + 1, e)  # the numbers after the base
        # which distinct text follows the base: the PC's first one (learnt here), else looked up
        fresh = np.flatnonzero(ok & (self.tail.length[p] < 0))
        if len(fresh):
            fresh = fresh[np.unique(p[fresh], return_index=True)[1]]
            for i, tid in zip(fresh.tolist(), self.lookup_tails(data, q[fresh], e[fresh]).tolist()):
                if self.tail_count[tid] >= 0 and self.tail.set(int(p[i]), data[q[i]:e[i]]):
                    self.tail_id[p[i]] = tid
        tid = np.full(n, -1, np.int64)
        same = ok & (e - q == self.tail.length[p])
        same[same] = self.tail.at(buf, q[same], p[same])
        tid[same] = self.tail_id[p[same]]
        other = np.flatnonzero(ok & ~same)
        if len(other):
            tid[other] = self.lookup_tails(data, q[other], e[other])
        numbers = np.full(n, -1, np.int64)  # how many numbers follow the base
        numbers[ok] = self.tail_count[tid[ok]]
        full = mask == np.uint64(0xFFFFFFFF)
        # base-stride: one run of lanes from the first active one; the stride and an optional immediate
        low = mask & (~mask + np.uint64(1))
        stride = np.flatnonzero((mode == 48 + BASE_STRIDE) & ((numbers == 1) | (numbers == 2))
                                & (((mask + low) & mask) == 0))
        if len(stride):  # base + stride x (lane - first active lane), written in place
            at = slice(None) if len(stride) == n else stride
            out = rows if len(stride) == n else np.empty((len(stride), 32), np.uint64)
            np.multiply(self.tail_values[tid[at], 0][:, None], _LANE, out=out)
            part = np.flatnonzero(~full[at])
            if len(part):
                first = np.log2(np.maximum(low[at][part], 1).astype(np.float64)).astype(np.uint64)
                out[part] -= (self.tail_values[tid[at][part], 0] * first)[:, None]
            out += base[at, None]
            _active(out, mask[at], full[at])
            if out is not rows:
                rows[stride] = out
        # base-delta: active - 1 deltas, each from the previous active lane; an optional immediate
        deltas = np.maximum(np.bitwise_count(mask).astype(np.int64) - 1, 0)
        delta = np.flatnonzero((mode == 48 + BASE_DELTA) & ((numbers == deltas) | (numbers == deltas + 1)))
        if len(delta):
            # the address of the k-th active lane: base + the first k numbers (never the immediate)
            by_rank = base[delta, None] + self.tail_prefix[tid[delta]]
            part = ~full[delta]
            if part.any():
                bits = lane_bits(mask[delta][part])
                rank = np.maximum(np.cumsum(bits, axis=1) - 1, 0)
                by_rank[part] = np.take_along_axis(by_rank[part], rank, axis=1)
            rows[delta] = _active(by_rank, mask[delta], full[delta])
        done = np.zeros(n, bool)
        done[stride] = done[delta] = True
        done &= ok
        listed = np.flatnonzero((mode == 48 + LIST_ALL) & (raw[:, 1] == 32))
        if len(listed):
            done[listed] = self.listed(data, buf, t[listed] + 2, e[listed], mask[listed], full[listed], rows, listed)
        return rows, done

    def listed(self, data, buf, t, e, mask, full, rows, at) -> np.ndarray:
        """List-all lines (TOOL_COMPRESS=0): `0x%016lx` for every active lane from `t`, then an optional
        immediate; their addresses into rows[at]. Returns which lines were read."""
        active = np.bitwise_count(mask).astype(np.int64)
        line = np.repeat(np.arange(len(t)), active)
        rank = np.arange(len(line)) - np.repeat(np.cumsum(active) - active, active)
        where = t[line] + 19 * rank
        word = sliding_window_view(buf, 19)[where]
        digits = _HEX[word[:, 2:18]]
        good = ((word[:, 0] == 48) & (word[:, 1] == 120) & (digits != 255).all(axis=1)
                & ((word[:, 18] == 32) | (where + 18 == e[line])))
        ok = np.bincount(line, ~good, minlength=len(t)) == 0
        q = np.minimum(t + 19 * active, e)  # the immediate, if any
        ok &= q <= e
        tid = self.lookup_tails(data, q[ok], e[ok])  # (it may grow tail_count)
        ok[ok] = np.isin(self.tail_count[tid], (0, 1))
        by_rank = np.zeros((len(t), 32), np.uint64)
        by_rank[line, rank] = _hex_value(digits, 16)
        part = np.flatnonzero(~full)
        if len(part):
            order = np.maximum(np.cumsum(lane_bits(mask[part]), axis=1) - 1, 0)
            by_rank[part] = np.take_along_axis(by_rank[part], order, axis=1)
        rows[at[ok]] = _active(by_rank, mask, full)[ok]
        return ok

    def lookup_tails(self, data, q, e) -> np.ndarray:
        """Row in `tail_count`/`tail_values` of each text data[q:e], parsing the new ones."""
        tails = self.tails
        known = len(tails)
        ids = [tails.setdefault(data[a:b], len(tails)) for a, b in zip(q.tolist(), e.tolist())]
        if len(tails) > known:
            counts, values = _numbers(list(tails)[known:])
            prefix = np.pad(np.cumsum(values[:, :31], axis=1, dtype=np.uint64), ((0, 0), (1, 0)))
            for table, rows in zip(self.tail_tables, (counts, values, prefix)):
                table.add(rows, 0, None)
            self.tail_count, self.tail_values, self.tail_prefix = (t.array[:t.n] for t in self.tail_tables)
        return np.array(ids, np.int64)

    # -- the DynamicTrace ------------------------------------------------------------------------------
    def finish(self, workload, size) -> DynamicTrace:
        h = self.h
        if self.in_tb or not {"kernel_name", "grid", "block"} <= set(h):
            raise _Unreadable
        if h["kernel_name"] != self.program.kernel:
            raise _Unreadable
        program = self.program
        if not self.started:
            bx, by, bz = h["block"]
            self.wpc = -(-(bx * by * bz) // 32)
        records, addr = self.records.result(), self.addr.result()
        warp = records["warp"]
        if not (warp[1:] >= warp[:-1]).all():  # warps not in file order of their ids
            order = np.lexsort((records["seq"], warp))
            records = records[order]
            is_mem = records["mem_row"] >= 0
            addr = addr[records["mem_row"][is_mem]]
            records["mem_row"][is_mem] = np.arange(len(addr))
        is_mem = records["mem_row"] >= 0
        widths = np.array([width_from_opcode(ins.full_opcode) for ins in program.instructions], np.uint8)
        acc = widths[records["pc_index"][is_mem]]
        gx, gy, _ = h["grid"]
        ctas = sorted({x + y * gx + z * gx * gy for (x, y, z, _) in self.seen})
        dyn = max(0, int(h.get("shmem", 0)) - static_shared_bytes(program))
        header = make_header(program, h["grid"], h["block"], dyn, self.wpc, ctas, workload=workload, size=size,
                             source=f"accelsim:{self.path}", exec_mask_exact=True, active_mask_exact=False)
        return DynamicTrace(header, records, addr, acc)


def _decimal_after(buf: np.ndarray, s: np.ndarray, e: np.ndarray, prefix: bytes) -> np.ndarray:
    """The number N of each line [s, e) that is exactly `prefix` + N (1 to 9 digits), else -1."""
    k = len(prefix)
    win = sliding_window_view(buf, k + 10)[s]
    digits = _DEC[win[:, k:]]
    count = np.argmax(digits == 255, axis=1)
    good = (win[:, :k] == np.frombuffer(prefix, np.uint8)).all(axis=1) & (count >= 1) & (s + k + count == e)
    value = (np.where(np.arange(9) < count[:, None], digits[:, :9], 0).astype(np.int64)
             * 10 ** np.maximum(count[:, None] - 1 - np.arange(9), 0)).sum(axis=1)
    return np.where(good, value, -1)



def _active(rows: np.ndarray, mask: np.ndarray, full: np.ndarray) -> np.ndarray:
    """`rows` with the lanes outside each mask set to 0."""
    part = ~full
    if part.any():
        rows[part] = np.where(lane_bits(mask[part]), rows[part], np.uint64(0))
    return rows


def _numbers(texts: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """(count, first 33 values mod 2**64) of each text of decimal numbers separated by single spaces
    (the text after a base address); count -1 where a text is not such a list."""
    counts = np.full(len(texts), -1, np.int64)
    values = np.zeros((len(texts), 33), np.uint64)
    counts[[i for i, t in enumerate(texts) if not t]] = 0
    good = [i for i, t in enumerate(texts) if t]
    pieces = [texts[i] if texts[i].endswith(b" ") else texts[i] + b" " for i in good]
    if not _number_list(b"".join(pieces)):  # some text is not one: find which
        keep = [j for j, t in enumerate(pieces) if _number_list(t)]
        good, pieces = [good[j] for j in keep], [pieces[j] for j in keep]
    if not good:
        return counts, values
    joined = b"".join(pieces)
    flat = np.fromstring(joined, dtype=np.int64, sep=" ")  # noqa: NPY201 - C-speed text parsing
    ends = np.cumsum([len(t) for t in pieces])
    spaces = np.flatnonzero(np.frombuffer(joined, np.uint8) == 32)
    sizes = np.diff(np.searchsorted(spaces, ends), prepend=0)  # numbers per text: one space after each
    if len(flat) != len(spaces):
        raise _Unreadable
    text = np.repeat(np.arange(len(good)), sizes)
    col = np.arange(len(flat)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    first = col < 33
    rows = np.array(good)
    counts[rows] = sizes
    values[rows[text[first]], col[first]] = flat[first].astype(np.uint64)
    for j in np.unique(text[(flat == _I64.max) | (flat == _I64.min)]).tolist():  # saturated: beyond int64
        exact = [int(x) & _MASK64 for x in pieces[j].split()][:33]
        values[good[j], :len(exact)] = np.array(exact, np.uint64)
    return counts, values


def _number_list(t: bytes) -> bool:
    """Whether `t` is -?[0-9]+ tokens each followed by one space: what int(token, 10) takes and numpy's
    text parser reads the same way."""
    return not (t.translate(None, b"0123456789- ") or t[:1] == b" " or b"  " in t or b"- " in t or b"--" in t
                or t.endswith(b"-") or t.count(b"-") != t.count(b" -") + t.startswith(b"-"))
