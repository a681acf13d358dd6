"""Workload spec (YAML, validated by pydantic).

A spec names a CUDA source, the kernel (with template arguments), the launch geometry as integer
expressions of the problem size ``n`` (and any extra named sizes), the arguments (buffers with dtype,
logical shape, memory order and random initialisation; scalars), and a numpy expression computing the
reference output. Bringing a new kernel = writing a new spec; no code change.

Expressions are Python arithmetic over the size variables (``n``, ``m``, ``k``...) and, for the
reference, over the argument names and ``np``. They are evaluated with no builtins. An argument whose
name is a Python keyword (``in``, ``lambda``) is written ``in_`` in expressions (or ``args['in']``).

A spec may also say how to build the kernel (``nvcc_flags``, ``include_dirs``, ``defines``,
``instantiate``) or bring the SASS of the user's own binary (``sass``), and may accept any size that
satisfies its ``constraints`` (``["n % 128 == 0"]``) instead of, or beside, a fixed list of ``sizes``.
"""

from __future__ import annotations

import keyword
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gpusim import TRACES_DIR
from gpusim.errors import SpecError, pydantic_one_line

ARCHS = ("sm_35", "sm_52", "sm_90")
OWNED_FLAGS = {"-arch", "--gpu-architecture", "-code", "--gpu-code", "-o", "--output-file", "-cubin", "--cubin",
               "-c", "--compile", "-ptx", "--ptx", "-fatbin", "--fatbin", "-E", "-M", "-lib", "-link"}
DTYPES = {"float32": np.float32, "float64": np.float64, "int32": np.int32, "uint32": np.uint32,
          "int64": np.int64, "uint64": np.uint64}
ELEMENT_BYTES = {"float32": 4, "float64": 8, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8}
# C spellings accepted as dtypes (LP64, as nvcc on Linux: long is 64-bit)
DTYPE_ALIASES = {"float": "float32", "double": "float64", "int": "int32", "unsigned": "uint32",
                 "unsigned int": "uint32", "size_t": "uint64", "long": "int64", "long long": "int64",
                 "unsigned long": "uint64", "unsigned long long": "uint64", "int64_t": "int64",
                 "uint64_t": "uint64", "int32_t": "int32", "uint32_t": "uint32", "ptrdiff_t": "int64"}
DType = Literal["float32", "float64", "int32", "uint32", "int64", "uint64"]


def _canonical_dtype(v):
    return DTYPE_ALIASES.get(" ".join(str(v).split()), v) if isinstance(v, str) else v


def expr_name(name: str) -> str:
    """The name an argument has in spec expressions (``in`` -> ``in_``)."""
    return name + "_" if keyword.iskeyword(name) else name


def check_int_range(value, dtype: str, where: str) -> int:
    """An integer scalar's value, or SpecError if it is not an integer or does not fit `dtype`."""
    info = np.iinfo(DTYPES[dtype])
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        value = int(value)
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise SpecError(f"{dtype} scalar needs an integer value, got {value!r}", where)
    if not info.min <= int(value) <= info.max:
        raise SpecError(f"value {int(value)} is out of range for {dtype} ({info.min}..{info.max})", where)
    return int(value)


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
    dtype: DType
    shape: list[str | int] = Field(min_length=1)
    order: Literal["C", "F"] = "C"  # memory layout of the logical array: row-major C, column-major F
    init: Init = Init()
    output: bool = False
    const: bool = False

    @field_validator("dtype", mode="before")
    @classmethod
    def _c_spelling(cls, v):
        return _canonical_dtype(v)


class ScalarArg(_Strict):
    name: str
    kind: Literal["scalar"]
    dtype: DType
    value: str | int | float

    @field_validator("dtype", mode="before")
    @classmethod
    def _c_spelling(cls, v):
        return _canonical_dtype(v)

    @model_validator(mode="after")
    def _literal_in_range(self):
        if self.dtype in ELEMENT_BYTES and self.dtype.startswith(("int", "uint")) and not isinstance(self.value, str):
            try:
                check_int_range(self.value, self.dtype, "")
            except SpecError as exc:
                raise ValueError(str(exc).lstrip(": ")) from None
        return self


class Workload(_Strict):
    name: str
    description: str
    source: str  # path of the .cu file, relative to the spec file
    kernel: str  # C++ name with template arguments, e.g. "simpleMatMatMul<32>"
    archs: list[Literal["sm_35", "sm_52", "sm_90"]] = list(ARCHS)
    sizes: list[int] = []  # problem sizes n the kernel supports (tests use the smallest)
    constraints: list[str] = []  # or: any n for which every expression is true, e.g. "n % 128 == 0"
    # how to build the kernel (user specs; the suite's specs use the defaults)
    nvcc_flags: list[str] = []  # extra nvcc flags, e.g. [-std=c++17, -DNDEBUG, --use_fast_math]
    include_dirs: list[str] = []  # -I folders, relative to the spec file
    defines: dict[str, str | int | float | None] = {}  # -D NAME=VALUE (None: -D NAME)
    instantiate: list[str] = []  # template instances to emit, e.g. ["sgemm<128, 128, 8>"]
    sass: str | None = None  # SASS of the user's own binary: cuobjdump -sass output, .cubin or executable
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

    @field_validator("instantiate", mode="before")
    @classmethod
    def _one_or_many(cls, v):
        return [v] if isinstance(v, str) else v

    @field_validator("nvcc_flags")
    @classmethod
    def _flags_we_do_not_own(cls, v):
        for f in v:
            head = f.split("=", 1)[0]
            if head in OWNED_FLAGS or f.startswith(("-gencode", "--gpu-architecture", "--generate-code")):
                raise ValueError(f"flag '{f}' is set by gpusim (it builds -cubin for each arch in 'archs'); "
                                 "remove it")
        return v

    @model_validator(mode="after")
    def _sizes_or_constraints(self):
        if not self.sizes and not self.constraints:
            raise ValueError("give 'sizes' (a list of problem sizes) or 'constraints' (e.g. [\"n % 64 == 0\"])")
        return self

    @model_validator(mode="after")
    def _outputs_have_references(self):
        names = {a.name for a in self.args}
        for out in self.reference:
            if out not in names:
                raise ValueError(f"reference names '{out}', which is not an argument")
        return self

    # ---- derived quantities -------------------------------------------------------------------
    @property
    def spec_dir(self) -> Path:
        return self.spec_path.parent if self.spec_path else TRACES_DIR / "workloads"

    @property
    def is_suite(self) -> bool:
        """A spec of the suite (traces/workloads/): its listings are committed under traces/sass/."""
        return self.spec_path is not None and self.spec_path.parent == (TRACES_DIR / "workloads").resolve()

    def check_size(self, n: int) -> None:
        """SpecError unless n is listed in `sizes` or satisfies every constraint."""
        if n in self.sizes:
            return
        if not self.constraints:
            raise SpecError(f"size {n} is not among the sizes workload {self.name} supports: {self.sizes}")
        if n <= 0:
            raise SpecError(f"size {n} must be a positive integer", f"{self.spec_path}: constraints")
        env = {"n": int(n)}
        for i, c in enumerate(self.constraints):
            if not eval_expr(c, env, f"{self.spec_path}: constraints.{i}"):
                raise SpecError(f"size {n} does not satisfy '{c}'", f"{self.spec_path}: constraints")
        self.size_env(n)  # the variables must evaluate for it too

    def supports(self, n: int) -> bool:
        try:
            self.check_size(n)
            return True
        except SpecError:
            return False

    def build_info(self) -> dict:
        """How the kernel was built (echoed in results): flags, include folders, defines, instances."""
        return {"nvcc_flags": list(self.nvcc_flags), "include_dirs": [str(p) for p in self.include_paths],
                "defines": dict(self.defines), "instantiate": list(self.instantiate), "sass": self.sass}

    @property
    def include_paths(self) -> list[Path]:
        return [(self.spec_dir / d).resolve() for d in self.include_dirs]

    @property
    def sass_path(self) -> Path | None:
        return (self.spec_dir / self.sass).resolve() if self.sass else None

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

    def make_inputs(self, n: int, seed: int = 0, into: dict | None = None,
                    only: set | None = None) -> dict[str, np.ndarray | int | float]:
        """Logical arrays (numpy, with the spec's memory order) and scalar values for size n.
        `into`: arrays of the buffers' logical shapes to fill (and return) instead of new ones (the
        emulator's device memory: `emu.run.build_launch`); `only`: the buffers to make, the others'
        random values drawn and dropped, so that these get the values a full call gives them."""
        rng = np.random.default_rng(seed)
        env = self.size_env(n)
        into = into or {}
        values: dict = {}
        for arg in self.args:
            dt = DTYPES[arg.dtype]
            if arg.kind == "scalar":
                where = f"{self.spec_path or self.name}: args.{arg.name}.value"
                v = eval_expr(arg.value, env, where)
                if np.issubdtype(dt, np.integer):
                    v = check_int_range(v, arg.dtype, where)
                values[arg.name] = dt(v)
                continue
            shape = self.buffer_shape(arg, n)
            keep = only is None or arg.name in only
            if arg.init.kind in ("uniform", "normal"):
                a = _random_array(rng, arg.init, shape, dt, arg.order, into.get(arg.name), keep)
                if keep:
                    values[arg.name] = a
                continue
            if not keep:
                continue
            a = into.get(arg.name)
            if a is None:
                a = np.empty(shape, dtype=dt, order=arg.order)
            if arg.init.kind == "poison":
                a[...] = np.nan if np.issubdtype(dt, np.floating) else 0x7FFFFFFF
            else:
                a[...] = 0
            values[arg.name] = a
        return values

    def reference_outputs(self, inputs: dict, n: int) -> dict[str, np.ndarray]:
        """The numpy reference of each output, computed in float64 from the logical inputs."""
        env = {"np": np, **self.size_env(n)}
        args = {k: v.astype(np.float64) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v
                for k, v in inputs.items()}
        env.update({expr_name(k): v for k, v in args.items()}, args=args)
        return {out: np.asarray(eval_expr(expr, env, f"{self.name}: reference.{out}"))
                for out, expr in self.reference.items()}

    def default_tolerance(self) -> float:
        if self.tolerance is not None:
            return self.tolerance
        dts = {a.dtype for a in self.args if a.kind == "buffer" and a.name in self.reference}
        return 1e-12 if dts == {"float64"} else 1e-5


RANDOM_BLOCK = 1 << 20  # float64 draws per block of `_random_array` (bounds its temporary memory)


def _random_array(rng, init, shape, dtype, order, out: np.ndarray | None = None, keep: bool = True):
    """rng.uniform(low, high, shape) or rng.standard_normal(shape) as `dtype` in `order` (into `out`
    where given), drawn a block of leading-axis rows at a time: the generator fills arrays element
    by element in C order, so consecutive blocks hold the values one draw would (float64 draws, then
    rounded to dtype), without the whole float64 array in memory. `keep` False: the same draws, dropped
    (the generator left where the whole array's draw leaves it); None."""
    if out is None and keep:
        out = np.empty(shape, dtype=dtype, order=order)
    size = int(np.prod(shape, dtype=np.int64))
    if not size:
        return out
    rows = shape[0] if len(shape) else 1
    per_row = size // rows
    step = max(1, RANDOM_BLOCK // max(per_row, 1))
    view = None if not keep else (out.reshape(1) if not len(shape) else out)
    for i in range(0, rows, step):
        part = (min(step, rows - i),) + tuple(shape[1:])
        block = rng.uniform(init.low, init.high, size=part) if init.kind == "uniform" else rng.standard_normal(size=part)
        if keep:
            view[i:i + step] = block
    return out


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
