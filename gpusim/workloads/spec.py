"""Workload spec (YAML, validated by pydantic).

A spec names a CUDA source, the kernel (with template arguments), the launch geometry as integer
expressions of the problem size ``n`` (and any extra named sizes), the arguments (buffers with dtype,
logical shape, memory order and random initialisation; scalars), and a numpy expression computing the
reference output. Bringing a new kernel = writing a new spec; no code change.

Expressions are Python arithmetic over the size variables (``n``, ``m``, ``k``...) and, for the
reference, over the argument names and ``np``. They are evaluated with no builtins.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gpusim import TRACES_DIR
from gpusim.errors import SpecError, pydantic_one_line

ARCHS = ("sm_35", "sm_52", "sm_90")
DTYPES = {"float32": np.float32, "float64": np.float64, "int32": np.int32, "uint32": np.uint32}
ELEMENT_BYTES = {"float32": 4, "float64": 8, "int32": 4, "uint32": 4}


def eval_expr(expr: str | int | float, env: dict, where: str):
    """Evaluate a spec expression (no builtins) in ``env``; errors name the field."""
    if isinstance(expr, (int, float)):
        return expr
    try:
        return eval(compile(str(expr), where, "eval"), {"__builtins__": {}}, env)  # noqa: S307
    except Exception as exc:  # the user's expression: report it as one line
        raise SpecError(f"cannot evaluate '{expr}': {type(exc).__name__}: {exc}", where) from None


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Launch(_Strict):
    grid: list[str | int] = Field(min_length=1, max_length=3)
    block: list[str | int] = Field(min_length=1, max_length=3)
    dynamic_shared_bytes: str | int = 0


class Init(_Strict):
    kind: Literal["uniform", "normal", "zeros", "poison"] = "uniform"
    low: float = -1.0
    high: float = 1.0


class BufferArg(_Strict):
    name: str
    kind: Literal["buffer"]
    dtype: Literal["float32", "float64", "int32", "uint32"]
    shape: list[str | int] = Field(min_length=1)
    order: Literal["C", "F"] = "C"  # memory layout of the logical array: row-major C, column-major F
    init: Init = Init()
    output: bool = False
    const: bool = False


class ScalarArg(_Strict):
    name: str
    kind: Literal["scalar"]
    dtype: Literal["float32", "float64", "int32", "uint32"]
    value: str | int | float


class Workload(_Strict):
    name: str
    description: str
    source: str  # path of the .cu file, relative to the spec file
    kernel: str  # C++ name with template arguments, e.g. "simpleMatMatMul<32>"
    archs: list[Literal["sm_35", "sm_52", "sm_90"]] = list(ARCHS)
    sizes: list[int] = Field(min_length=1)  # problem sizes n the kernel supports (tests use the smallest)
    variables: dict[str, str] = {}  # other sizes as expressions of n, e.g. {m: "n", k: "32"}
    launch: Launch
    args: list[Annotated[BufferArg | ScalarArg, Field(discriminator="kind")]] = Field(min_length=1)
    reference: dict[str, str]  # output buffer name -> numpy expression
    tolerance: float | None = None  # max relative error; default by dtype
    notes: str = ""
    spec_path: Path | None = Field(default=None, exclude=True)

    @field_validator("sizes")
    @classmethod
    def _positive(cls, v):
        if any(s <= 0 for s in v):
            raise ValueError("sizes must be positive integers")
        return v

    @model_validator(mode="after")
    def _outputs_have_references(self):
        names = {a.name for a in self.args}
        for out in self.reference:
            if out not in names:
                raise ValueError(f"reference names '{out}', which is not an argument")
        return self

    # ---- derived quantities -------------------------------------------------------------------
    @property
    def source_path(self) -> Path:
        base = self.spec_path.parent if self.spec_path else TRACES_DIR / "workloads"
        return (base / self.source).resolve()

    def size_env(self, n: int) -> dict:
        env = {"n": int(n)}
        for var, expr in self.variables.items():
            env[var] = int(eval_expr(expr, env, f"{self.name}: variables.{var}"))
        return env

    def geometry(self, n: int) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
        """(grid, block, dynamic shared bytes) for problem size n."""
        env = self.size_env(n)

        def dims(exprs, field):
            vals = [int(eval_expr(e, env, f"{self.name}: launch.{field}")) for e in exprs]
            return tuple(vals + [1] * (3 - len(vals)))

        shared = int(eval_expr(self.launch.dynamic_shared_bytes, env, f"{self.name}: launch.dynamic_shared_bytes"))
        return dims(self.launch.grid, "grid"), dims(self.launch.block, "block"), shared

    def buffer_shape(self, arg: BufferArg, n: int) -> tuple[int, ...]:
        env = self.size_env(n)
        return tuple(int(eval_expr(s, env, f"{self.name}: args.{arg.name}.shape")) for s in arg.shape)

    def make_inputs(self, n: int, seed: int = 0) -> dict[str, np.ndarray | int | float]:
        """Logical arrays (numpy, with the spec's memory order) and scalar values for size n."""
        rng = np.random.default_rng(seed)
        env = self.size_env(n)
        values: dict = {}
        for arg in self.args:
            dt = DTYPES[arg.dtype]
            if arg.kind == "scalar":
                values[arg.name] = dt(eval_expr(arg.value, env, f"{self.name}: args.{arg.name}.value"))
                continue
            shape = self.buffer_shape(arg, n)
            if arg.init.kind == "uniform":
                a = rng.uniform(arg.init.low, arg.init.high, size=shape)
            elif arg.init.kind == "normal":
                a = rng.standard_normal(size=shape)
            elif arg.init.kind == "poison":
                a = np.full(shape, np.nan if np.issubdtype(dt, np.floating) else 0x7FFFFFFF)
            else:
                a = np.zeros(shape)
            values[arg.name] = np.asarray(a, dtype=dt, order=arg.order)
        return values

    def reference_outputs(self, inputs: dict, n: int) -> dict[str, np.ndarray]:
        """The numpy reference of each output, computed in float64 from the logical inputs."""
        env = {"np": np, **self.size_env(n)}
        for k, v in inputs.items():
            env[k] = v.astype(np.float64) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v
        return {out: np.asarray(eval_expr(expr, env, f"{self.name}: reference.{out}"))
                for out, expr in self.reference.items()}

    def default_tolerance(self) -> float:
        if self.tolerance is not None:
            return self.tolerance
        dts = {a.dtype for a in self.args if a.kind == "buffer" and a.name in self.reference}
        return 1e-12 if dts == {"float64"} else 1e-5


def load_workload(path: str | Path) -> Workload:
    path = Path(path)
    if not path.exists():
        raise SpecError("no such workload spec file", str(path))
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise SpecError(f"invalid YAML ({getattr(exc, 'problem', exc)})", where) from None
    if not isinstance(data, dict):
        raise SpecError("expected a mapping of spec fields at the top level", str(path))
    try:
        wl = Workload.model_validate(data)
    except ValidationError as exc:
        raise SpecError(pydantic_one_line(exc, str(path))) from None
    wl.spec_path = path.resolve()
    if not wl.source_path.exists():
        raise SpecError(f"field 'source': file {wl.source_path} does not exist", str(path))
    return wl


def list_workloads(directory: Path | None = None) -> list[Workload]:
    directory = directory or TRACES_DIR / "workloads"
    return [load_workload(p) for p in sorted(directory.glob("*.yaml"))]


def find_workload(name_or_path: str) -> Workload:
    """A workload by name (from traces/workloads) or by the path of a spec file."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists():
        return load_workload(p)
    candidate = TRACES_DIR / "workloads" / f"{name_or_path}.yaml"
    if candidate.exists():
        return load_workload(candidate)
    names = ", ".join(w.stem for w in sorted((TRACES_DIR / "workloads").glob("*.yaml")))
    raise SpecError(f"unknown workload '{name_or_path}' (known: {names})")
