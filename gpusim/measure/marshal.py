"""Spec arguments <-> what the kernel sees: flat typed buffers and typed scalars.

A spec buffer is a logical numpy array with a memory order ('C' row-major, 'F' column-major); the
kernel sees its elements flattened in that order. Scalars are passed with the spec's numpy dtype
(a Python int would be passed as 64 bits). Also here: the correctness check against the numpy
reference, the flop count used for GFLOP/s, and which sizes a measurement run covers.
"""

from __future__ import annotations

import ast
import math
import re

import numpy as np

from gpusim.workloads.spec import DTYPES, ELEMENT_BYTES, eval_expr

GIB = 1 << 30
GEMM_MIN, GEMM_MAX = 512, 4096  # default size window for GEMMs
AAT_MIN = 2048                   # C = A A^T kernels (k = tile width): only large n fill the GPU
AAT_KERNELS = re.compile(r"^(simpleMultiply|coalescedMultiply)", re.I)


def flat(array: np.ndarray, order: str, dtype) -> np.ndarray:
    """The 1-D element sequence the kernel reads for a logical array stored in `order`."""
    return np.ascontiguousarray(np.asarray(array, dtype=dtype).ravel(order=order))


def unflat(buf: np.ndarray, shape: tuple[int, ...], order: str) -> np.ndarray:
    """Inverse of `flat`: the logical array from the kernel's flat buffer."""
    return np.asarray(buf).reshape(shape, order=order)


def buffer_bytes(workload, n: int) -> int:
    """Total bytes of all device buffers at size n."""
    return sum(math.prod(workload.buffer_shape(a, n)) * ELEMENT_BYTES[a.dtype]
               for a in workload.args if a.kind == "buffer")


def host_arguments(workload, inputs: dict) -> list[tuple[str, object, object]]:
    """[(name, kind, value)] in kernel-parameter order: ('buffer', flat array) or ('scalar', numpy scalar)."""
    out = []
    for arg in workload.args:
        dt = DTYPES[arg.dtype]
        if arg.kind == "buffer":
            out.append((arg.name, "buffer", flat(inputs[arg.name], arg.order, dt)))
        else:
            out.append((arg.name, "scalar", dt(inputs[arg.name])))
    return out


class Launchable:
    """Device-side arguments of one (workload, size): upload once, reset outputs, read outputs back."""

    def __init__(self, device, workload, inputs: dict):
        self.device, self.workload = device, workload
        self.host = host_arguments(workload, inputs)
        self.buffers = {name: device.upload(v) for name, kind, v in self.host if kind == "buffer"}
        self.args = tuple(self.buffers[name] if kind == "buffer" else v for name, kind, v in self.host)
        self.outputs = [a for a in workload.args if a.kind == "buffer" and (a.output or a.name in workload.reference)]

    def reset_outputs(self) -> None:
        """Rewrite every output buffer with its initial content (NaN poison for pure outputs)."""
        initial = {name: v for name, kind, v in self.host if kind == "buffer"}
        for a in self.outputs:
            self.device.write(self.buffers[a.name], initial[a.name])

    def read_outputs(self, n: int) -> dict[str, np.ndarray]:
        return {a.name: unflat(self.device.download(self.buffers[a.name]), self.workload.buffer_shape(a, n), a.order)
                for a in self.outputs if a.name in self.workload.reference}


class _FastEinsumNumpy:
    """numpy whose einsum contracts through BLAS (optimize=True): same values, seconds not minutes at n=4096."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def einsum(*args, **kw):
        kw.setdefault("optimize", True)
        return np.einsum(*args, **kw)


def reference(workload, inputs: dict, n: int) -> dict[str, np.ndarray]:
    """Workload.reference_outputs (float64 from the logical inputs), with einsum optimized."""
    env = {"np": _FastEinsumNumpy(), **workload.size_env(n)}
    for k, v in inputs.items():
        env[k] = v.astype(np.float64) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v
    return {out: np.asarray(eval_expr(expr, env, f"{workload.name}: reference.{out}"))
            for out, expr in workload.reference.items()}


def check(outputs: dict, reference: dict, tolerance: float) -> dict:
    """Relative Frobenius error ||out - ref|| / ||ref|| of each output (float64), pass if all <= tolerance."""
    errors, nans = {}, {}
    for name, ref in reference.items():
        got = np.asarray(outputs[name], dtype=np.float64)
        ref = np.asarray(ref, dtype=np.float64)
        if got.shape != ref.shape:
            errors[name], nans[name] = math.inf, -1
            continue
        nans[name] = int(np.count_nonzero(~np.isfinite(got)))
        denom = float(np.linalg.norm(ref))
        diff = float(np.linalg.norm(got - ref))
        errors[name] = diff / denom if denom > 0 else diff
    worst = max(errors.values()) if errors else math.nan
    passed = bool(errors) and all(np.isfinite(e) and e <= tolerance for e in errors.values())
    return {"max_rel_err": _json_float(worst), "passed": passed, "tolerance": tolerance,
            "rel_err": {k: _json_float(v) for k, v in errors.items()}, "nonfinite": nans}


def _json_float(x: float):
    return x if math.isfinite(x) else str(x)


def flops(workload, n: int) -> tuple[float | None, str | None]:
    """(flop count, where it came from): the spec's `flops` expression if it has one, else 2*m*n*k
    read off a reference with one matrix product X @ Y (k = sqrt(|X||Y| / |out|)), else (None, None)."""
    expr = getattr(workload, "flops", None)
    if expr is not None:
        return float(eval_expr(expr, workload.size_env(n), f"{workload.name}: flops")), "spec"
    if len(workload.reference) != 1:
        return None, None
    (out_name, ref), = workload.reference.items()
    if "einsum" in ref and "@" not in ref:
        return _einsum_flops(workload, n, ref)
    try:
        tree = ast.parse(ref, mode="eval")
    except SyntaxError:
        return None, None
    products = [x for x in ast.walk(tree) if isinstance(x, ast.BinOp) and isinstance(x.op, ast.MatMult)]
    buffers = {a.name: a for a in workload.args if a.kind == "buffer"}
    if len(products) != 1 or out_name not in buffers:
        return None, None
    sizes = []
    for side in (products[0].left, products[0].right):
        names = {x.id for x in ast.walk(side) if isinstance(x, ast.Name) and x.id in buffers}
        if len(names) != 1:
            return None, None
        sizes.append(math.prod(workload.buffer_shape(buffers[names.pop()], n)))
    out = math.prod(workload.buffer_shape(buffers[out_name], n))
    k = math.sqrt(sizes[0] * sizes[1] / out)
    return 2.0 * out * round(k), "reference A@B: 2*|C|*k"


class _CountingNumpy:
    """numpy, except that einsum only counts 2 * prod(index extents) flops and returns zeros."""

    def __init__(self):
        self.flops = 0.0

    def __getattr__(self, name):
        return getattr(np, name)

    def einsum(self, subscripts: str, *ops):
        ins, out = subscripts.replace(" ", "").split("->")
        extent = {}
        for spec, op in zip(ins.split(","), ops):
            extent.update(zip(spec, np.shape(op)))
        self.flops += 2.0 * math.prod(extent.values())
        return np.broadcast_to(np.float64(0.0), tuple(extent[c] for c in out))


def _einsum_flops(workload, n: int, ref: str) -> tuple[float | None, str | None]:
    """Evaluate the reference on zero-stride stand-ins, counting the flops of its einsum calls."""
    counter = _CountingNumpy()
    env = {"np": counter, **workload.size_env(n)}
    for a in workload.args:
        if a.kind == "buffer":
            env[a.name] = np.broadcast_to(np.float64(0.0), workload.buffer_shape(a, n))
        else:
            env[a.name] = DTYPES[a.dtype](eval_expr(a.value, workload.size_env(n), f"{workload.name}: {a.name}"))
    try:
        eval_expr(ref, env, f"{workload.name}: reference")
    except Exception:  # an expression this shortcut cannot follow: no flop count
        return None, None
    return (counter.flops, "reference einsum: 2*prod(index extents)") if counter.flops else (None, None)


def is_aat(workload) -> bool:
    return bool(AAT_KERNELS.match(workload.name) or AAT_KERNELS.match(workload.kernel))


def select_sizes(workload, sizes_from: str = "spec", max_gib: float = 8.0) -> list[tuple[int, str | None]]:
    """[(n, skip reason or None)]: the spec's sizes in the measurement window, or an explicit 'N,N' list."""
    if sizes_from == "spec":
        if is_aat(workload):
            sizes = [s for s in workload.sizes if s >= AAT_MIN]
        else:
            sizes = [s for s in workload.sizes if GEMM_MIN <= s <= GEMM_MAX]
    else:
        sizes = [int(x) for x in sizes_from.split(",") if x.strip()]
    out = []
    for n in sorted(set(sizes)):
        nbytes = buffer_bytes(workload, n)
        out.append((n, f"buffers need {nbytes / GIB:.1f} GiB > {max_gib:g} GiB" if nbytes > max_gib * GIB else None))
    return out
