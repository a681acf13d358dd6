"""Vectorised reader of one Accel-Sim kernel trace straight into a `DynamicTrace` (numpy over the
file's bytes instead of a Python loop over its lines; >= 1 M warp instructions per second).

Same format and the same rules as `gpusim.trace.accelsim` (see its docstring); this reader handles
what the tracer writes today (tracer version >= 3, no lineinfo). Anything it does not recognise --
an older layout, a malformed line, a count that does not add up -- makes it return None, and the
caller falls back to the line-by-line reader, which names the file, line and problem.
"""

from __future__ import annotations

import lzma
import re
from pathlib import Path

import numpy as np

from gpusim.trace.accelsim import BASE_DELTA, BASE_STRIDE, LIST_ALL, static_shared_bytes, width_from_opcode
from gpusim.trace.format import RECORD_DTYPE, DynamicTrace, make_header

_HEX = np.full(256, 255, np.uint8)
for _c in b"0123456789":
    _HEX[_c] = _c - 48
for _c in b"abcdef":
    _HEX[_c] = _c - 87
for _c in b"ABCDEF":
    _HEX[_c] = _c - 55
_DEC = np.full(256, 255, np.uint8)
_DEC[48:58] = np.arange(10)
_WS = np.zeros(256, bool)
_WS[[9, 10, 13, 32]] = True


class _Unreadable(Exception):
    """The fast reader does not take this file: fall back to the line-by-line reader."""


def _numbers(buf: np.ndarray, start: np.ndarray, length: np.ndarray, base: int) -> np.ndarray:
    """Unsigned (hex: uint64 wrap) or signed decimal integers of the tokens buf[start:start+length]."""
    n = len(start)
    if n == 0:
        return np.zeros(0, np.uint64 if base == 16 else np.int64)
    neg = np.zeros(n, bool)
    if base == 10:
        neg = buf[start] == 45  # '-'
        start, length = start + neg, length - neg
    width = int(length.max())
    if width > (16 if base == 16 else 19) or length.min() < 1:
        raise _Unreadable
    if base == 10 and length.max() == 1:  # single digits (dest_num, src_num, mem_width ...)
        digit = _DEC[buf[start]]
        if (digit == 255).any():
            raise _Unreadable
        return np.where(neg, -digit.astype(np.int64), digit.astype(np.int64))
    if base == 16:  # an optional 0x prefix (the tracer writes addresses with one, PCs and masks without)
        pre = (length > 2) & (buf[start] == 48) & ((buf[np.minimum(start + 1, len(buf) - 1)] | 32) == 120)
        start, length = start + 2 * pre, length - 2 * pre
        width = int(length.max())
    table = _HEX if base == 16 else _DEC
    small = width <= (7 if base == 16 else 9)  # fits 32 bits: cheaper arithmetic
    dt = np.uint32 if small else np.uint64
    k = np.arange(width)
    live = k < length[:, None]
    digits = table[buf[np.minimum(start[:, None] + k, len(buf) - 1)]]
    if ((digits == 255) & live).any():
        raise _Unreadable
    place = np.maximum(length[:, None] - 1 - k, 0)  # power of the base each digit stands for
    powers = np.uint64(base) ** np.arange(20, dtype=np.uint64)
    value = (digits.astype(dt) * live * powers.astype(dt)[place]).sum(axis=1, dtype=dt).astype(np.uint64)
    if base == 16:
        return value
    out = value.astype(np.int64)
    return np.where(neg, -out, out)


def _decimal_runs(buf: np.ndarray, tok_start, tok_len, first, count) -> np.ndarray:
    """Signed decimals of `count[i]` consecutive tokens from token `first[i]`, in order, parsed in one
    C pass (numpy's text reader) over the bytes of those runs (runs of one line are contiguous)."""
    has = count > 0
    if not has.any():
        return np.zeros(0, np.int64)
    lo = tok_start[first[has]]
    last = first[has] + count[has] - 1
    hi = tok_start[last] + tok_len[last]  # one past the run's last byte: the separator after it
    marks = np.zeros(len(buf) + 2, np.int8)
    np.add.at(marks, lo, 1) if len(np.unique(lo)) != len(lo) else marks.__setitem__(lo, 1)
    marks[hi + 1] -= 1
    keep = np.cumsum(marks[:len(buf)], dtype=np.int8).astype(bool)
    text = buf[keep].tobytes() + b" "
    values = np.fromstring(text, dtype=np.int64, sep=" ")  # noqa: NPY201 - text mode: C-speed parsing
    if len(values) != int(count[has].sum()):
        raise _Unreadable
    return values


def _header(lines: list[str]) -> dict:
    h = {"lineinfo": 0, "tracer_version": 5}
    ints = {"kernel id": "kernel_id", "shmem": "shmem", "nregs": "nregs", "binary version": "binary_version",
            "cuda stream id": "cuda_stream_id", "accelsim tracer version": "tracer_version",
            "enable lineinfo": "lineinfo"}
    for line in lines:
        key, _, value = line[1:].partition("=")
        key, value = key.strip(), value.strip()
        try:
            if key == "kernel name":
                h["kernel_name"] = value
            elif key in ("grid dim", "block dim"):
                m = re.fullmatch(r"\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)", value)
                h["grid" if key == "grid dim" else "block"] = [int(v) for v in m.groups()]
            elif key in ints:
                h[ints[key]] = int(value)
        except (ValueError, AttributeError):
            raise _Unreadable from None
    if h["tracer_version"] < 3 or h["lineinfo"] or not {"kernel_name", "grid", "block"} <= set(h):
        raise _Unreadable
    return h


def first_kernel(path) -> Path:
    """The first kernel trace file of an Accel-Sim trace: a directory, its kernelslist.g, or the file."""
    from gpusim.errors import TraceFormatError

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
    from gpusim.errors import TraceFormatError

    path = Path(path)
    head = []
    try:
        with (lzma.open(path, "rt") if path.name.endswith(".xz") else open(path)) as f:
            for line in f:
                if line.startswith("#BEGIN_TB"):
                    break
                if line.startswith("-"):
                    head.append(line.strip())
        return _header(head)
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
        data = lzma.open(path).read() if path.name.endswith(".xz") else path.read_bytes()
        return _read(path, data, program, workload, size)
    except (_Unreadable, OSError, EOFError, lzma.LZMAError, UnicodeDecodeError, IndexError, ValueError):
        return None


def _read(path: Path, data: bytes, program, workload, size) -> DynamicTrace:
    buf = np.frombuffer(data, np.uint8)
    nl = np.flatnonzero(buf == 10)
    starts = np.concatenate(([0], nl + 1))
    ends = np.concatenate((nl, [len(buf)]))
    first = buf[np.minimum(starts, max(len(buf) - 1, 0))]
    nonblank = ends > starts
    if (nonblank & ((first == 32) | (first == 9))).any():
        raise _Unreadable  # indented lines: leave them to the line reader
    is_ins = nonblank & (_HEX[first] != 255)
    ins_lines = np.flatnonzero(is_ins)
    ctrl = np.flatnonzero(nonblank & ~is_ins)

    # structure (a few lines per warp): header, thread blocks, warps, their instruction counts
    text = lambda i: data[starts[i]:ends[i]].decode().strip()  # noqa: E731
    head = []
    for i in ctrl:
        t = text(i)
        if t.startswith("#BEGIN_TB"):
            break
        if t.startswith("-"):
            head.append(t)
    h = _header(head)
    if h["kernel_name"] != program.kernel:
        raise _Unreadable
    gx, gy, gz = h["grid"]
    bx, by, bz = h["block"]
    wpc = -(-(bx * by * bz) // 32)
    warp_of_line = np.full(len(ins_lines), -1, np.int64)
    seen = set()
    cta = warp = None
    in_tb = False
    for j, i in enumerate(ctrl):
        t = text(i)
        if t.startswith("#BEGIN_TB"):
            if in_tb:
                raise _Unreadable
            in_tb, cta = True, None
        elif t.startswith("#END_TB"):
            in_tb = False
        elif t.startswith("thread block"):
            x, y, z = (int(v) for v in t.split("=", 1)[1].split(","))
            if not (in_tb and x < gx and y < gy and z < gz):
                raise _Unreadable
            cta = x + y * gx + z * gx * gy
        elif t.startswith("insts"):
            if cta is None or warp is None:
                raise _Unreadable
            count = int(t.split("=", 1)[1])
            lo = np.searchsorted(ins_lines, i)
            hi = np.searchsorted(ins_lines, ctrl[j + 1]) if j + 1 < len(ctrl) else len(ins_lines)
            key = cta * wpc + warp
            if hi - lo != count or key in seen:
                raise _Unreadable
            seen.add(key)
            warp_of_line[lo:hi] = key
        elif t.startswith("warp"):
            warp = int(t.split("=", 1)[1])
            if warp >= wpc:
                raise _Unreadable
        elif t.startswith(("-", "#")):
            continue
        else:
            raise _Unreadable
        if t.startswith(("thread block", "#BEGIN_TB", "#END_TB")):
            warp = None
    if in_tb or (warp_of_line < 0).any():
        raise _Unreadable

    # tokens: the gaps between consecutive whitespace bytes (one pass over the bytes; about one
    # whitespace byte per token); each instruction line's tokens lie between its start and its end
    spaces = np.flatnonzero(buf <= 32)
    bounds = np.concatenate(([-1], spaces, [len(buf)]))
    gap = np.diff(bounds) - 1
    real = np.flatnonzero(gap > 0)
    tok_start, tok_len = bounds[real] + 1, gap[real]
    line_first = np.searchsorted(tok_start, starts[ins_lines])
    line_ntok = np.searchsorted(tok_start, ends[ins_lines]) - line_first
    n = len(ins_lines)

    def field(offset):  # token `offset` (array) of every line
        if (offset >= line_ntok).any():
            raise _Unreadable
        k = line_first + offset
        return tok_start[k], tok_len[k]

    pc = _numbers(buf, *field(np.zeros(n, np.int64)), 16).astype(np.int64)
    mask = _numbers(buf, *field(np.ones(n, np.int64)), 16)
    ndst = _numbers(buf, *field(np.full(n, 2)), 10)
    if (mask >> np.uint64(32)).any() or ((ndst != 0) & (ndst != 1)).any():
        raise _Unreadable
    op_at = 3 + ndst
    nsrc = _numbers(buf, *field(op_at + 1), 10)
    if (nsrc < 0).any() or (nsrc > 5).any():
        raise _Unreadable
    width_at = op_at + 2 + nsrc
    width = _numbers(buf, *field(width_at), 10)

    # PCs -> instruction indices, opcodes against the program's
    addresses = np.array([ins.address for ins in program.instructions], np.int64)
    lookup = np.full(int(addresses.max()) + 1, -1, np.int64)
    lookup[addresses] = np.arange(len(addresses))
    if (pc < 0).any() or (pc >= len(lookup)).any():
        raise _Unreadable
    index = lookup[pc]
    if (index < 0).any():
        raise _Unreadable
    op_start, op_len = field(op_at)
    names = [ins.full_opcode.encode() for ins in program.instructions]
    longest = max(len(x) for x in names)
    if op_len.max() > longest:
        raise _Unreadable
    expected = np.array(names, dtype=f"S{longest}")[index]
    cols = np.minimum(op_start[:, None] + np.arange(longest), len(buf) - 1)
    got = np.where(np.arange(longest) < op_len[:, None], buf[cols], 0).astype(np.uint8)
    if not np.array_equal(got.view(f"S{longest}").ravel(), expected):
        raise _Unreadable

    # memory lines: per-lane addresses
    is_mem = width > 0
    mem = np.flatnonzero(is_mem)
    m_mask = mask[mem].astype(np.uint64)
    lanes = ((m_mask[:, None] >> np.arange(32, dtype=np.uint64)) & np.uint64(1)).astype(bool)
    n_active = lanes.sum(axis=1)
    rank = np.cumsum(lanes, axis=1) - 1
    mode = _numbers(buf, *[a[mem] for a in field(np.where(is_mem, width_at + 1, 0))], 10)
    base_at = width_at[mem] + 2
    addr = np.zeros((len(mem), 32), np.uint64)
    used = np.zeros(len(mem), np.int64)  # tokens after mem_width
    pick = lambda rows, offs, b: _numbers(buf, tok_start[line_first[mem[rows]] + offs],  # noqa: E731
                                          tok_len[line_first[mem[rows]] + offs], b)
    for m in (BASE_STRIDE, BASE_DELTA, LIST_ALL):
        rows = np.flatnonzero(mode == m)
        if not len(rows):
            continue
        if m == BASE_STRIDE:
            if (base_at[rows] + 1 >= line_ntok[mem[rows]]).any():
                raise _Unreadable
            base = pick(rows, base_at[rows], 16)
            stride = pick(rows, base_at[rows] + 1, 10)
            lo = np.where(n_active[rows] > 0, np.argmax(lanes[rows], axis=1), 0).astype(np.uint64)
            run = np.where(n_active[rows] > 0, ((np.uint64(1) << n_active[rows].astype(np.uint64)) - np.uint64(1))
                           << lo, 0)
            if (run != m_mask[rows]).any():
                raise _Unreadable  # several runs of lanes: the line reader says so
            vals = base[:, None] + stride.astype(np.uint64)[:, None] * rank[rows].astype(np.uint64)
            addr[rows] = np.where(lanes[rows], vals, 0)
            used[rows] = 3
        else:
            count = n_active[rows]
            k = np.arange(32)
            if m == BASE_DELTA:  # base, then n_active - 1 deltas
                need = np.maximum(count, 1)
                if (base_at[rows] + need - 1 >= line_ntok[mem[rows]]).any():
                    raise _Unreadable
                base = pick(rows, base_at[rows], 16)
                deltas = np.zeros((len(rows), 32), np.uint64)
                first_delta = line_first[mem[rows]] + base_at[rows] + 1
                # row-major boolean assignment: row i's deltas fill its columns 1 .. count - 1 in order
                deltas[:, 1:][k[None, :31] < (count - 1)[:, None]] = _decimal_runs(
                    buf, tok_start, tok_len, first_delta, count - 1).astype(np.uint64)
                vals = base[:, None] + np.cumsum(deltas, axis=1, dtype=np.uint64)
                used[rows] = 1 + need
            else:  # every active lane's address
                if (base_at[rows] + count - 1 >= line_ntok[mem[rows]]).any():
                    raise _Unreadable
                r, c = np.nonzero(k[None, :] < count[:, None])
                vals = np.zeros((len(rows), 32), np.uint64)
                vals[r, c] = pick(rows[r], base_at[rows][r] + c, 16)
                used[rows] = 1 + count
            safe = np.maximum(rank[rows], 0)
            addr[rows] = np.where(lanes[rows], np.take_along_axis(vals, safe, axis=1), 0)
    if ((mode != LIST_ALL) & (mode != BASE_STRIDE) & (mode != BASE_DELTA)).any():
        raise _Unreadable
    # every line: nothing after its fields but an optional immediate
    fields_end = width_at + 1
    fields_end[mem] += used
    extra = line_ntok - fields_end
    if ((extra != 0) & (extra != 1)).any():
        raise _Unreadable
    if (extra == 1).any():
        _numbers(buf, *[a[extra == 1] for a in field(np.where(extra == 1, fields_end, 0))], 10)

    # records in (warp, seq) order
    warp = warp_of_line
    seq = np.arange(n) - np.searchsorted(warp, warp) if (np.diff(warp) >= 0).all() else None
    if seq is None:  # warps not in file order of their ids: sequence within each warp's run
        order0 = np.argsort(warp, kind="stable")
        seq = np.empty(n, np.int64)
        sw = warp[order0]
        seq[order0] = np.arange(n) - np.searchsorted(sw, sw)
    order = np.lexsort((seq, warp))
    records = np.empty(n, dtype=RECORD_DTYPE)
    records["warp"], records["seq"], records["pc_index"] = warp[order], seq[order], index[order]
    records["active_mask"] = records["exec_mask"] = mask[order].astype(np.uint32)
    old_row = np.full(n, -1, np.int64)
    old_row[mem] = np.arange(len(mem))
    old_row = old_row[order]
    has = old_row >= 0
    new_row = np.full(n, -1, np.int64)
    new_row[has] = np.arange(int(has.sum()))
    records["mem_row"] = new_row
    widths = np.array([width_from_opcode(ins.full_opcode) for ins in program.instructions], np.uint8)
    acc = widths[index[mem]][old_row[has]]
    dyn = max(0, int(h.get("shmem", 0)) - static_shared_bytes(program))
    ctas = sorted({int(w) // wpc for w in np.unique(warp)})
    header = make_header(program, h["grid"], h["block"], dyn, wpc, ctas, workload=workload, size=size,
                         source=f"accelsim:{path}", exec_mask_exact=True, active_mask_exact=False)
    return DynamicTrace(header, records, np.ascontiguousarray(addr[old_row[has]]), acc)
