"""Emulate a workload: build memory and parameters from its spec, run the Program, check against numpy."""

from __future__ import annotations

import hashlib
import math
import re

import numpy as np

from gpusim.emu.compare import compare_blocks
from gpusim.emu.emulator import Emulator, Launch
from gpusim.emu.memory import GlobalMemory
from gpusim.errors import SpecError
from gpusim.toolchain.listings import load_program
from gpusim.workloads.spec import DTYPES, expr_name


def build_launch(workload, program, n: int, seed: int = 0, shared: bool = False):
    """(Launch, parameter bytes, GlobalMemory, logical inputs) for problem size n. The buffers are
    made in the device memory itself (held once): the logical inputs are read-only views of it
    (`LaunchInputs`), which the kernel's stores change; `at_launch` gives their values at launch.
    `shared`: that memory is shared with processes forked later (`GlobalMemory`)."""
    grid, block, dyn_shared = workload.geometry(n)
    buffers = [a for a in workload.args if a.kind == "buffer"]
    shapes = {a.name: workload.buffer_shape(a, n) for a in buffers}
    memory = GlobalMemory({a.name: int(np.prod(shapes[a.name], dtype=np.int64)) * np.dtype(DTYPES[a.dtype]).itemsize
                           for a in buffers}, shared)
    views = {a.name: memory.logical(a.name, DTYPES[a.dtype], shapes[a.name], a.order) for a in buffers}
    inputs = LaunchInputs(workload.make_inputs(n, seed, into=views), seed, memory, _referenced(workload))
    if len(program.params) != len(workload.args):
        raise SpecError(f"spec lists {len(workload.args)} arguments but kernel {program.kernel} takes "
                        f"{len(program.params)}", f"{workload.spec_path}: args")
    params = bytearray(program.param_bytes or (program.params[-1][0] + program.params[-1][1] - program.param_base))
    for (offset, size), arg in zip(program.params, workload.args):
        if arg.kind == "buffer":
            raw = np.uint64(memory.address_of(arg.name)).tobytes()
        else:
            raw = np.asarray(inputs[arg.name], dtype=DTYPES[arg.dtype]).tobytes()
        if len(raw) != size:
            raise SpecError(f"argument '{arg.name}' is {len(raw)} bytes but the kernel's parameter is {size}",
                            f"{workload.spec_path}: args.{arg.name}")
        start = offset - program.param_base
        params[start:start + size] = raw
    return Launch(grid, block, dyn_shared), bytes(params), memory, inputs


class LaunchInputs(dict):
    """A launch's logical inputs: scalars, and each buffer as a read-only view of its device memory.
    Remembers what gives their values at launch back (`at_launch`): the seed they were made from and
    a digest (SHA-256) of each buffer the reference reads, taken before the kernel ran."""

    def __init__(self, values: dict, seed: int, memory, referenced: set):
        super().__init__(values)
        for v in values.values():
            if isinstance(v, np.ndarray):
                v.flags.writeable = False
        self.seed, self.memory = seed, memory
        self.digests = {k: _digest(memory, k) for k in referenced}


def _digest(memory, name: str) -> bytes:
    return hashlib.sha256(memory.read_buffer(name)).digest()


def at_launch(workload, inputs: dict, n: int) -> dict:
    """The inputs as they were at launch: a buffer the reference reads that the kernel changed (an
    in-place kernel, or a stray store) is made again from the seed; the others stay views of device
    memory. Inputs not from `build_launch` are taken as they are."""
    if not isinstance(inputs, LaunchInputs):
        return inputs
    changed = {k for k, d in inputs.digests.items() if _digest(inputs.memory, k) != d}
    if not changed:
        return inputs
    return {**inputs, **workload.make_inputs(n, inputs.seed, only=changed)}


def _referenced(workload) -> set[str]:
    """The buffers the reference expressions name (`x`, `in_` for a keyword, `args['in']`)."""
    tokens = _tokens(workload)
    return {a.name for a in workload.args if a.kind == "buffer" and (a.name in tokens or expr_name(a.name) in tokens)}


def _tokens(workload) -> set[str]:
    return set(re.findall(r"[A-Za-z_]\w*", " ".join(str(e) for e in workload.reference.values())))


def emulate(workload, arch: str, n: int, ctas: list[int] | None = None, record: bool = True, seed: int = 0):
    program = load_program(workload, arch)
    launch, params, memory, inputs = build_launch(workload, program, n, seed)
    emu = Emulator(program, launch, params, memory, ctas=ctas, record=record).run()
    emu.params = params  # (other CTAs of the same launch can be emulated on its memory: `more_ctas`)
    return emu, inputs


def more_ctas(emu, ctas: list[int]):
    """Emulate other CTAs of `emu`'s launch on its memory (the inputs as they are: for the addresses
    those CTAs touch, which sampled mode's grid footprints need; their outputs are not checked)."""
    return Emulator(emu.program, emu.launch, emu.params, emu.memory, ctas=ctas, record=True).run()


STORE_OPCODES = ("STG", "ST", "RED", "REDG", "ATOM", "ATOMG")
ATOMIC_OPCODES = ("RED", "REDG", "ATOM", "ATOMG")  # global read-modify-writes: every CTA adds to the same words


def check(workload, emu, inputs, n: int, ctas: list[int] | None = None) -> dict:
    """Compare each output with its numpy reference (computed in float64 from the logical inputs as
    they were at launch, `at_launch`).

    Float outputs pass when the relative Frobenius error is below the workload's tolerance; integer
    outputs must be equal (`emu.compare`). When the emulator ran only some CTAs (sampled mode), only
    the elements their global stores wrote are compared (the others were never computed); `elements`
    says how many of the buffer's were; `ctas` names the emulated CTAs whose stores count (default:
    all; sampled mode emulates a few more beside those it times, for their addresses). A failed
    output names its first wrong element: the first (in the logical array's C order) whose error
    exceeds tolerance x the reference's root mean square (one exists whenever the Frobenius test
    fails), or, for integers, the first that differs. A whole run's outputs are compared a block of
    rows at a time (`_row_blocks`), read from device memory, against the reference's rows (a matrix
    product's: those rows of the left operand times the right one)."""
    inputs = at_launch(workload, inputs, n)
    if len(emu.ctas if ctas is None else ctas) == emu.launch.n_ctas:
        return _check_whole(workload, emu, inputs, n)
    written = stored_words(emu, ctas)
    # words an atomic wrote hold the emulated CTAs' part only (a counter, a sum over CTAs): left out
    # (a kernel counting its CTAs with atomicAdd came out "wrong" in sampled mode)
    if any(ins.opcode in ATOMIC_OPCODES for ins in emu.program.instructions):
        atomic = stored_words(emu, None, ATOMIC_OPCODES)
        written = {k: v & ~atomic[k] for k, v in written.items()}
    refs = _deferred_references(workload, inputs, n)
    report = {}
    for arg in workload.args:
        if arg.name not in refs:
            continue
        shape = workload.buffer_shape(arg, n)
        out = emu.memory.logical(arg.name, DTYPES[arg.dtype], shape, arg.order)
        ref = _shaped(refs[arg.name], shape, workload, arg)
        # the elements the emulated CTAs stored (any of their words)
        index, at = _stored_elements(written[arg.name], DTYPES[arg.dtype], shape, arg.order)
        ref = ref.values_at(index) if isinstance(ref, (_Product, _Einsum)) else ref[at]
        report[arg.name] = _compare(out[at].reshape(-1), np.asarray(ref).reshape(-1), index, shape,
                                    workload.default_tolerance(), np.issubdtype(DTYPES[arg.dtype], np.integer))
    return report


BLOCK_ELEMENTS = 1 << 20  # elements compared at a time (about 8 MB of float64 per array of a block)


def _check_whole(workload, emu, inputs, n: int) -> dict:
    """`check` of a whole run: each output against its reference, block by block of rows."""
    refs = _deferred_references(workload, inputs, n, late=_late_widened(workload))
    report = {}
    for arg in workload.args:
        if arg.name not in refs:
            continue
        shape = workload.buffer_shape(arg, n)
        out = emu.memory.logical(arg.name, DTYPES[arg.dtype], shape, arg.order)
        ref = _shaped(refs[arg.name], shape, workload, arg)
        if not isinstance(ref, (_Product, _Einsum)):
            ref = _Rows(ref)
        out2 = out.reshape((1,) + shape) if not shape else out  # (a 0-d output: one row of one element)
        spans = _row_blocks(out2.shape, ref.row_granule(), BLOCK_ELEMENTS)
        per_row = int(np.prod(out2.shape[1:], dtype=np.int64))

        def block(i, out2=out2, ref=ref, spans=spans, per_row=per_row):
            r0, r1 = spans[i]
            return out2[r0:r1].reshape(-1), ref.rows(r0, r1), r0 * per_row

        report[arg.name] = compare_blocks(len(spans), block, shape, workload.default_tolerance(),
                                          np.issubdtype(DTYPES[arg.dtype], np.integer))
    return report


def _shaped(ref, shape, workload, arg):
    """The reference of an output of `shape`: a deferred product of that shape as it is, anything
    else as an array broadcast to it."""
    if isinstance(ref, (_Product, _Einsum)) and ref.shape == shape:
        return ref
    try:
        return np.broadcast_to(np.asarray(ref), shape)
    except ValueError:
        raise SpecError(f"reference has shape {np.shape(ref)}, the buffer {shape}",
                        f"{workload.spec_path}: reference.{arg.name}") from None


def _row_blocks(shape: tuple, granule: int, elements: int) -> list[tuple[int, int]]:
    """Blocks of leading-axis rows, (first, end), of about `elements` each, a multiple of `granule`
    rows (the last may be shorter)."""
    rows = shape[0]
    per_row = max(1, int(np.prod(shape[1:], dtype=np.int64)))
    step = max(granule, elements // per_row // granule * granule)
    return [(r, min(r + step, rows)) for r in range(0, rows, step)]


class _Rows:
    """An array reference (broadcast to the output's shape) read a block of rows at a time."""

    def __init__(self, ref: np.ndarray):
        self.ref = ref.reshape((1,) + ref.shape) if not ref.shape else ref

    @staticmethod
    def row_granule() -> int:
        return 1

    def rows(self, r0: int, r1: int) -> np.ndarray:
        return self.ref[r0:r1].reshape(-1)


def _stored_elements(words: np.ndarray, dtype, shape, order: str):
    """The elements of a buffer (logical `shape`, memory `order`) of which some word was stored, in
    logical C order: (their C-order positions, their index tuple). From the written words' indices,
    never a mask of the whole buffer (at n = 4096 that was most of a sampled run's check)."""
    per = np.dtype(dtype).itemsize // 4  # words per element (every dtype is 4 or 8 bytes)
    stored = np.unique(np.flatnonzero(words) // per)  # in memory order
    at = np.unravel_index(stored, shape, order=order)
    index = np.ravel_multi_index(at, shape)
    if order != "C":
        by_position = np.argsort(index, kind="stable")
        index, at = index[by_position], tuple(i[by_position] for i in at)
    return index, at


# ---- references of a partial run: a matrix product is evaluated only where it is compared -----------
class _Deferred:
    """Arithmetic other than a scalar factor evaluates a deferred reference in full (plain numpy)."""

    __array_ufunc__ = None  # numpy scalars and arrays defer to our reflected operators


def _full(name):
    def op(self, *args):
        return getattr(np.asarray(self), name)(*args)
    return op


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__truediv__", "__rtruediv__", "__neg__",
              "__pow__", "__matmul__", "__rmatmul__", "__getitem__", "__lt__", "__gt__", "__eq__", "__ne__"):
    setattr(_Deferred, _name, _full(_name))


class _Product(_Deferred):
    """scale * (left @ right), left unevaluated: a partial run (sampled mode) compares a few thousand
    elements of an n x n product, and computing all n^3 of it would cost more than the emulation.
    Anything but a scalar factor, .T or .shape evaluates it in full (the plain numpy result)."""

    __array_ufunc__ = None  # numpy scalars defer to __rmul__ instead of converting us

    def __init__(self, left, right, scale=1.0):
        self.left, self.right, self.scale = left, right, scale
        self.shape = (left.shape[0], right.shape[1])
        self._right = None  # the right operand in float64, once `rows` needed it

    def __mul__(self, k):
        if np.ndim(k) == 0:
            return _Product(self.left, self.right, self.scale * k)
        return np.asarray(self) * k

    __rmul__ = __mul__

    @property
    def T(self):
        return _Product(self.right.T, self.left.T, self.scale)

    def __array__(self, dtype=None, copy=None):
        v = self.scale * (_wide(self.left) @ _wide(self.right))
        return v if dtype is None else v.astype(dtype)

    @staticmethod
    def row_granule() -> int:
        return 1

    def rows(self, r0: int, r1: int) -> np.ndarray:
        """Rows r0:r1 of the product, flat (C order): left[r0:r1] @ right, in float64 (the right
        operand widened once, kept for the next rows)."""
        if self._right is None:
            self._right = _wide(self.right)
        return (self.scale * (_wide(self.left[r0:r1]) @ self._right)).reshape(-1)

    def __getattr__(self, name):
        if name.startswith("__"):  # numpy's protocol probes (__array_interface__, ...)
            raise AttributeError(name)
        return getattr(np.asarray(self), name)

    def values(self, mask: np.ndarray) -> np.ndarray:
        """The product's elements where `mask` is True (C order)."""
        return self.values_at(np.flatnonzero(mask))

    def values_at(self, positions: np.ndarray, rows_per_block: int = 128) -> np.ndarray:
        """The product's elements at the sorted C-order `positions`: for each block of the rows that
        hold some, left[rows] @ right[:, the columns those rows need] (written CTA tiles keep that small)."""
        rows, cols = np.divmod(positions, self.shape[1])  # sorted by row
        out = np.empty(len(rows), dtype=np.result_type(self.left, self.right, np.float64))
        used = np.unique(rows)
        for s in range(0, len(used), rows_per_block):
            r = used[s:s + rows_per_block]
            lo, hi = np.searchsorted(rows, [r[0], r[-1]], side="left")[0], np.searchsorted(rows, r[-1], side="right")
            c = np.unique(cols[lo:hi])
            block = _wide(self.left[r]) @ _wide(self.right[:, c])
            out[lo:hi] = block[np.searchsorted(r, rows[lo:hi]), np.searchsorted(c, cols[lo:hi])]
        return self.scale * out


def _wide(a: np.ndarray) -> np.ndarray:
    """A float input in float64, the reference's precision (float64 arrays as they are)."""
    return a.astype(np.float64, copy=False) if a.dtype.kind == "f" else a


class _Operand(np.ndarray):
    """An input array whose `@` (2-D operands) returns a deferred _Product. A float32 input that the
    reference uses only as a product's operand (`_only_multiplied`) stays float32 here: the product
    widens what it evaluates (the rows and columns of the compared elements) to float64, the same
    values as widening it all first."""

    def __matmul__(self, other):
        a, b = self.view(np.ndarray), np.asarray(other).view(np.ndarray)
        return _Product(a, b) if a.ndim == b.ndim == 2 else _wide(a) @ _wide(b)

    def __rmatmul__(self, other):
        return _Operand.__matmul__(np.asarray(other).view(_Operand), self)


class _Einsum(_Deferred):
    """np.einsum('xy,yz->xz'-style, two operands) left unevaluated, optionally reshaped (C order) and
    scaled: a partial run's check evaluates only the compared elements (as _Product does)."""

    __array_ufunc__ = None

    def __init__(self, subscripts: str, x, y, shape=None, scale=1.0):
        self.subscripts, self.x, self.y, self.scale = subscripts, x, y, scale
        ins, self.out_letters = subscripts.replace(" ", "").split("->")
        self.x_letters, self.y_letters = ins.split(",")
        sizes = dict(zip(self.x_letters, x.shape)) | dict(zip(self.y_letters, y.shape))
        self.out_shape = tuple(sizes[c] for c in self.out_letters)
        self.shape = tuple(shape) if shape is not None else self.out_shape
        self._widened = {}  # an operand `rows` needs whole, in float64 (kept for the next rows)

    def reshape(self, *shape):
        shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return _Einsum(self.subscripts, self.x, self.y, np.empty(self.out_shape, bool).reshape(shape).shape,
                       self.scale)

    def __mul__(self, k):
        if np.ndim(k) == 0:
            return _Einsum(self.subscripts, self.x, self.y, self.shape, self.scale * k)
        return np.asarray(self) * k

    __rmul__ = __mul__

    def __array__(self, dtype=None, copy=None):
        v = self.scale * np.einsum(self.subscripts, _wide(self.x), _wide(self.y), optimize=True).reshape(self.shape)
        return v if dtype is None else v.astype(dtype)

    def row_granule(self) -> int:
        """Rows of `shape` whose elements make whole slabs of the first output letter's axis."""
        per_row = int(np.prod(self.shape[1:], dtype=np.int64))
        per_slab = int(np.prod(self.out_shape[1:], dtype=np.int64))
        return max(1, per_slab // max(1, math.gcd(per_slab, per_row)))

    def rows(self, r0: int, r1: int) -> np.ndarray:
        """Rows r0:r1 of `shape`, flat (C order): where they are whole slabs of the first output
        letter, one einsum of the operands sliced along it (an operand without it whole, widened
        once); else element by element (`values_at`)."""
        per_row = int(np.prod(self.shape[1:], dtype=np.int64))
        per_slab = int(np.prod(self.out_shape[1:], dtype=np.int64))
        lo, hi = r0 * per_row, r1 * per_row
        first = self.out_letters[:1]
        if (not first or not per_slab or lo % per_slab or hi % per_slab or self.x_letters.count(first) > 1
                or self.y_letters.count(first) > 1):
            return self.values_at(np.arange(lo, hi, dtype=np.int64))
        a0, a1 = lo // per_slab, hi // per_slab
        x = self._slab(0, self.x, self.x_letters, first, a0, a1)
        y = self._slab(1, self.y, self.y_letters, first, a0, a1)
        return (self.scale * np.einsum(self.subscripts, x, y, optimize=True)).reshape(-1)

    def _slab(self, which: int, operand, letters: str, first: str, a0: int, a1: int) -> np.ndarray:
        if first in letters:
            axis = letters.index(first)
            return _wide(operand[(slice(None),) * axis + (slice(a0, a1),)])
        if which not in self._widened:
            self._widened[which] = _wide(operand)
        return self._widened[which]

    def __getattr__(self, name):
        if name.startswith("__"):  # numpy's protocol probes (__array_interface__, ...)
            raise AttributeError(name)
        return getattr(np.asarray(self), name)

    def _gather(self, operand, letters, idx):
        """operand with its output letters indexed per element (first axis) and its summed letters kept."""
        keep = [i for i, c in enumerate(letters) if c not in self.out_letters]
        fixed = [i for i, c in enumerate(letters) if c in self.out_letters]
        t = operand.transpose(fixed + keep)
        return t[tuple(idx[self.out_letters.index(letters[i])] for i in fixed)], "".join(letters[i] for i in keep)

    def values(self, mask: np.ndarray) -> np.ndarray:
        """The elements where `mask` (of `shape`) is True (C order)."""
        return self.values_at(np.flatnonzero(mask))

    def values_at(self, flat: np.ndarray, chunk: int = 4096) -> np.ndarray:
        """The elements at the sorted C-order positions `flat` of `shape`."""
        out = np.empty(len(flat), dtype=np.result_type(self.x, self.y, np.float64))
        for s in range(0, len(flat), chunk):
            idx = np.unravel_index(flat[s:s + chunk], self.out_shape)
            gx, kx = self._gather(self.x, self.x_letters, idx)
            gy, ky = self._gather(self.y, self.y_letters, idx)
            out[s:s + chunk] = np.einsum(f"Z{kx},Z{ky}->Z", _wide(gx), _wide(gy), optimize=True)
        return self.scale * out


class _NumpyOptimisedEinsum:
    """numpy for deferred references: a two-operand einsum is deferred (_Einsum); others contract
    through BLAS (optimize=True). Float operands are widened to float64 where they are evaluated."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def einsum(*operands, **kwargs):
        ops = [np.asarray(o).view(np.ndarray) if isinstance(o, np.ndarray) else o for o in operands]
        if (len(ops) == 3 and isinstance(ops[0], str) and "->" in ops[0] and "." not in ops[0] and not kwargs
                and "Z" not in ops[0]):
            return _Einsum(*ops)
        kwargs.setdefault("optimize", True)
        return np.einsum(*(_wide(o) if isinstance(o, np.ndarray) else o for o in ops), **kwargs)


def _deferred_references(workload, inputs: dict, n: int, late: set | None = None) -> dict:
    """workload.reference_outputs with matrix products deferred (see _Product). The float inputs
    named in `late` (expression names; default: `_only_multiplied`) are not widened to float64 here:
    what evaluates them widens the part it uses (a product's rows, an einsum's slab, a block of
    rows compared)."""
    from gpusim.workloads.spec import eval_expr

    env = {"np": _NumpyOptimisedEinsum(), **workload.size_env(n)}
    named = _tokens(workload)
    if late is None:
        late = _only_multiplied(workload.reference.values(), named)
    if "args" in named:  # (names reached through `args[...]` are widened: their uses are not analysed)
        late = set()
    args = {}
    for k, v in inputs.items():
        if k not in named and expr_name(k) not in named:  # e.g. the output buffers: not converted for nothing
            continue
        if isinstance(v, np.ndarray):
            if v.dtype.kind == "f" and expr_name(k) not in late:  # (float64 inputs: no copy)
                v = v.astype(np.float64, copy=False)
            v = v.view(_Operand)
        args[k] = v
    env.update({expr_name(k): v for k, v in args.items()}, args=args)
    refs = {}
    for out, expr in workload.reference.items():
        r = eval_expr(expr, env, f"{workload.name}: reference.{out}")
        refs[out] = r if isinstance(r, (_Product, _Einsum)) else np.asarray(r).view(np.ndarray)
    return refs


def _late_widened(workload) -> set[str]:
    """The names that every reference expression uses only where what evaluates them widens the part
    it uses: as an operand of `@` (`_Product`), an argument of `np.einsum` (`_Einsum`, or widened
    there), or the whole expression (compared a block at a time); each as itself, transposed (.T) or
    reshaped (.reshape(...)). A name used any other way is left out, as are all names when an
    expression does not parse."""
    import ast

    ok = _tokens(workload)
    for expr in workload.reference.values():
        try:
            tree = ast.parse(str(expr), mode="eval")
        except SyntaxError:
            return set()
        places = [tree.body]
        for node in ast.walk(tree):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                places += [node.left, node.right]
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "einsum"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "np"):
                places += node.args
        allowed = set()
        for node in places:
            while True:
                if isinstance(node, ast.Attribute) and node.attr == "T":
                    node = node.value
                elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                      and node.func.attr == "reshape"):
                    node = node.func.value
                else:
                    break
            allowed.add(id(node))
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and id(node) not in allowed:
                ok.discard(node.id)
    return ok


def _only_multiplied(exprs, names) -> set[str]:
    """The names that every reference expression uses only as an operand of `@`, as themselves or
    transposed (`A @ B`, `alpha * (A.T @ B)`): widening such an input can wait for the product
    (_Operand). A name used any other way (arithmetic, a function's argument, an attribute other
    than .T) is left out, as are all names when an expression does not parse."""
    import ast

    ok = set(names)
    for expr in exprs:
        try:
            tree = ast.parse(str(expr), mode="eval")
        except SyntaxError:
            return set()
        operands = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                for side in (node.left, node.right):
                    operands.add(id(side.value) if isinstance(side, ast.Attribute) and side.attr == "T" else id(side))
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and id(node) not in operands:
                ok.discard(node.id)
    return ok


def _compare(out, ref, index, shape, tol: float, integer: bool) -> dict:
    """One output's verdict (flat arrays; `index` maps their positions to logical C-order ones, None:
    they are the whole output in C order): `compare_blocks` with one block."""
    return compare_blocks(1, lambda i: (out, ref, 0 if index is None else index), shape, tol, integer)


def stored_words(emu, ctas: list[int] | None = None, opcodes=STORE_OPCODES) -> dict[str, np.ndarray]:
    """Per buffer, which of its 32-bit words the emulated global stores (of the CTAs `ctas`; None:
    all; instructions with `opcodes`) wrote (from the trace log's addresses; lanes that did not execute
    are logged at address 0, outside every buffer)."""
    from gpusim.errors import EmulationError

    if not emu.record:
        raise EmulationError("cannot check a partial run without its trace log (record=False)")
    mem = emu.memory
    masks = {b.name: np.zeros(b.nbytes // 4, bool) for b in mem.buffers}
    ops = [ins.opcode for ins in emu.program.instructions]
    of = None if ctas is None else np.isin(np.asarray(emu.ctas)[emu.warp_cta], ctas)  # per emulated warp
    for step, (addrs, nbytes) in emu.log.mem.items():
        if ops[emu.log.pcs[step]] not in opcodes:
            continue
        a = np.asarray(addrs, dtype=np.uint64)
        a = (a if of is None else a.reshape(-1, 32)[of[emu.log.warps[step]]]).reshape(-1)
        for b in mem.buffers:
            inside = a[(a >= np.uint64(b.address)) & (a < np.uint64(b.address + b.nbytes))]
            if inside.size:
                first = ((inside - np.uint64(b.address)) >> np.uint64(2)).astype(np.int64)
                for w in range(max(1, nbytes // 4)):
                    masks[b.name][np.minimum(first + w, masks[b.name].size - 1)] = True
    return masks


def verify(workload, emu, inputs, n: int, ctas: list[int] | None = None) -> dict:
    """`check` (of the CTAs `ctas`, default all), raising WrongResultError (one line: the buffer,
    its first wrong element and both values) when an output is wrong; the report otherwise."""
    from gpusim.errors import WrongResultError

    report = check(workload, emu, inputs, n, ctas)
    for name, c in report.items():
        if not c["passed"]:
            w = c["first_wrong"]
            idx = ", ".join(str(i) for i in w["index"])
            measure = (f"{c['rel_error']:.3g} of the elements differ" if c.get("integer") else
                       f"relative error {c['rel_error']:.3g} > tolerance {c['tolerance']:g}")
            raise WrongResultError(
                f"wrong result: {name}[{idx}] = {w['value']!r} but the numpy reference is {w['reference']!r} "
                f"({measure}, {c['elements']} of {c['of']} elements checked); --no-check skips the check",
                f"{workload.name} ({emu.program.kernel} on {emu.program.arch}, n={n})")
    return report
