"""Study files (`configs/studies/*.yaml`): a sweep of GPU-config fields over a set of workloads.

A study names a base card (or several), the workloads and problem sizes, and *axes*: dotted config
paths (the paths `apply_overrides` takes, e.g. ``sm.register_file.banks``) each with a list of values;
the points are the cross product of workloads x sizes x cards x axis values (x the optional
``honour_control_codes`` axis, an argument of the timing run rather than a config field). An axis may
give its values per card (``{k40: [none, kepler], gtx970: [none, control_codes]}``); a card it does not
list keeps its own value.

Everything is validated before anything runs: the file (pydantic, unknown keys rejected), the
workloads and sizes, every axis value on its own (so the error names the axis), then every point's
full config. Errors are `SpecError`, one line.
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gpusim.errors import GpusimError, SpecError, pydantic_one_line

#: the axis name of the timing run's honour_control_codes argument (not a config field)
HONOUR_AXIS = "honour_control_codes"

#: columns of the result table that derived-metric expressions may use (besides earlier derived metrics)
BASE_COLUMNS = ("size", "cycles", "time_s", "ipc", "warp_instructions", "sms_used", "ctas", "waves", "clock_mhz",
                "ctas_per_sm", "warps_per_sm", "shared_accesses", "shared_wavefronts", "shared_conflicts",
                "reg_conflict_cycles", "reuse_hits", "l1_hits", "l1_misses", "l2_hits", "l2_misses", "l2_bytes",
                "dram_bytes")
_FUNCS = {"log": math.log, "log2": math.log2, "log10": math.log10, "sqrt": math.sqrt, "exp": math.exp,
          "abs": abs, "min": min, "max": max}
_ALLOWED_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Load, ast.Call,
                  ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.USub, ast.UAdd)


class StudySpec(BaseModel):
    """The YAML schema of a study file."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    """Short id: the default output folder is out/studies/<name>/."""
    description: str = ""
    base: str | list[str]
    """Card id (k40, gtx970, ...) or a list of them (a card column in the table)."""
    workloads: list[str] = Field(min_length=1)
    sizes: list[int] | dict[str, list[int]]
    """Problem sizes for every workload, or per workload ({workload: [sizes]})."""
    axes: dict[str, list[Any] | dict[str, list[Any]]] = {}
    """Dotted config path -> values (or card -> values). Points are the cross product."""
    mode: Literal["detailed", "sampled"] = "detailed"
    honour_control_codes: list[bool | None] | None = None
    """Optional axis: the timing run's control-code switch (None = the config's own choice)."""
    metric: str = "cycles"
    """The column plotted against each axis (a result column or a derived metric)."""
    derived: dict[str, str] = {}
    """name -> arithmetic expression over result columns (e.g. 2*size**3/time_s/1e9)."""
    baseline: dict[str, Any] | None = None
    """axis -> value: adds <metric>_rel = metric / metric at the baseline point (other coordinates
    equal), and the plots show that ratio."""
    plots: list[str] = []
    """Extra columns to plot against each axis, besides the metric."""

    @field_validator("workloads")
    @classmethod
    def _unique(cls, v: list[str]) -> list[str]:
        dup = sorted({w for w in v if v.count(w) > 1})
        if dup:
            raise ValueError(f"workload(s) listed twice: {', '.join(dup)}")
        return v

    @field_validator("axes")
    @classmethod
    def _axes(cls, v: dict) -> dict:
        for path, values in v.items():
            if path == HONOUR_AXIS:
                raise ValueError(f"'{HONOUR_AXIS}' is a study field of its own, not an axis")
            lists = values.values() if isinstance(values, dict) else [values]
            for vals in lists:
                if not vals:
                    raise ValueError(f"axis '{path}' has no values")
                if len({json.dumps(x, sort_keys=True, default=str) for x in vals}) != len(vals):
                    raise ValueError(f"axis '{path}' lists a value twice")
        return v

    @property
    def cards(self) -> list[str]:
        return [self.base] if isinstance(self.base, str) else list(self.base)

    def sizes_of(self, workload: str) -> list[int]:
        return list(self.sizes) if isinstance(self.sizes, list) else list(self.sizes.get(workload, []))

    def axis_values(self, path: str, card: str) -> list[Any] | None:
        """The values of an axis on one card (None: the axis leaves this card at its own value)."""
        values = self.axes[path]
        if isinstance(values, dict):
            return values.get(card)
        return values


@dataclass
class Point:
    """One simulation of a study: (workload, size, card, axis values, honour_control_codes)."""

    index: int
    workload: str
    size: int
    card: str
    arch: str
    overrides: dict[str, Any]
    """The axis values applied to this card (axes that list the card)."""
    coords: dict[str, Any]
    """Every axis' value at this point, including the card's own value for axes that skip it."""
    honour_control_codes: bool | None
    config_json: str
    key: str = ""
    trace_key: str = ""


@dataclass
class Study:
    """A validated study: its spec, where it came from, and the expanded points."""

    spec: StudySpec
    source: str
    points: list[Point]
    axis_names: list[str]
    """Table columns of the axes, in the file's order (plus honour_control_codes when it is an axis)."""


def _one_line(exc: Exception) -> str:
    """The message of a GpusimError without its own 'where:' prefix."""
    msg = str(exc)
    where = getattr(exc, "where", None)
    if where and msg.startswith(f"{where}: "):
        msg = msg[len(where) + 2:]
    return msg.replace("\n", " ")


def load_study_spec(path: str | Path) -> tuple[StudySpec, str]:
    path = Path(path)
    where = str(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise SpecError(f"cannot read study file: {exc.strerror or exc}", where) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = f"{where}:{mark.line + 1}"
        raise SpecError(f"invalid YAML ({getattr(exc, 'problem', None) or exc})".replace("\n", " "), where) from None
    if not isinstance(data, dict):
        raise SpecError("a study file must be a mapping of fields", where)
    try:
        return StudySpec.model_validate(data), where
    except ValidationError as err:
        raise SpecError(pydantic_one_line(err, where).replace("\n", " ")) from None


def get_path(data: dict, path: str) -> Any:
    node: Any = data
    for part in path.split("."):
        node = node[part]
    return node


def check_expression(expr: str, names: set[str], where: str) -> ast.Expression:
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise SpecError(f"cannot parse '{expr}': {exc.msg}", where) from None
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            raise SpecError(f"'{expr}': only arithmetic, column names and {', '.join(_FUNCS)} are allowed", where)
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in _FUNCS):
            raise SpecError(f"'{expr}': unknown function (allowed: {', '.join(_FUNCS)})", where)
        if isinstance(node, ast.Name) and node.id not in names and node.id not in _FUNCS:
            raise SpecError(f"'{expr}': unknown name '{node.id}' (columns: {', '.join(sorted(names))})", where)
    return tree


def eval_expression(expr: str, row: dict) -> float:
    env = dict(_FUNCS)
    env.update(row)
    return eval(compile(expr, "<derived>", "eval"), {"__builtins__": {}}, env)  # noqa: S307 - checked by check_expression


def load_study(path: str | Path) -> Study:
    """Read and validate a study file and every point's config; raises SpecError (one line) on any problem."""
    from gpusim.config import apply_overrides, load_gpu
    from gpusim.timing.stalls import REASONS
    from gpusim.toolchain.listings import listing_path
    from gpusim.workloads import find_workload

    spec, where = load_study_spec(path)

    # cards
    configs = {}
    for card in spec.cards:
        try:
            configs[card] = load_gpu(card)
        except GpusimError as exc:
            raise SpecError(f"field 'base': {_one_line(exc)}", where) from None
    if len(set(spec.cards)) != len(spec.cards):
        raise SpecError("field 'base': a card is listed twice", where)

    # workloads and sizes
    wls = {}
    if isinstance(spec.sizes, dict):
        extra = sorted(set(spec.sizes) - set(spec.workloads))
        if extra:
            raise SpecError(f"field 'sizes': workload(s) {', '.join(extra)} not in 'workloads'", where)
    for name in spec.workloads:
        try:
            wl = find_workload(name)
        except GpusimError as exc:
            raise SpecError(f"field 'workloads': {_one_line(exc)}", where) from None
        sizes = spec.sizes_of(name)
        if not sizes:
            raise SpecError(f"field 'sizes': no sizes for workload {name}", where)
        bad = [s for s in sizes if not wl.supports(s)]
        if bad:
            raise SpecError(f"field 'sizes': workload {name} does not support size(s) {bad} (sizes: {wl.sizes})",
                            where)
        for card, cfg in configs.items():
            if cfg.arch not in wl.archs or (wl.is_suite and not listing_path(wl.name, cfg.arch).exists()):
                raise SpecError(f"field 'workloads': {name} has no {cfg.arch} listing for card {card}", where)
        wls[name] = wl

    # axes: every value on its own first, so an error names the axis
    for path, values in spec.axes.items():
        if isinstance(values, dict):
            unknown = sorted(set(values) - set(spec.cards))
            if unknown:
                raise SpecError(f"axis '{path}': values given for card(s) {', '.join(unknown)} not in 'base' "
                                f"({', '.join(spec.cards)})", where)
        for card, cfg in configs.items():
            for value in spec.axis_values(path, card) or []:
                try:
                    apply_overrides(cfg, {path: value})
                except GpusimError as exc:
                    raise SpecError(f"axis '{path}' value {value!r} on {card}: {_one_line(exc)}", where) from None
    if spec.mode != "detailed":
        raise SpecError(f"field 'mode': '{spec.mode}' is not implemented yet (use detailed)", where)

    axis_names = list(spec.axes)
    honour_values: list[bool | None] = [None]
    if spec.honour_control_codes is not None:
        if not spec.honour_control_codes:
            raise SpecError(f"field '{HONOUR_AXIS}': no values", where)
        honour_values = list(spec.honour_control_codes)
        axis_names.append(HONOUR_AXIS)

    # every point's full config
    points: list[Point] = []
    combos: dict[str, list[tuple[dict, dict, str]]] = {}
    for card, cfg in configs.items():
        base_dump = cfg.model_dump()
        lists = []
        for path in spec.axes:
            vals = spec.axis_values(path, card)
            lists.append([(path, v, True) for v in vals] if vals is not None
                         else [(path, get_path(base_dump, path), False)])
        out = []
        for combo in itertools.product(*lists):
            overrides = {p: v for p, v, applied in combo if applied}
            coords = {p: v for p, v, _ in combo}
            try:
                c = apply_overrides(cfg, overrides) if overrides else cfg
            except GpusimError as exc:
                desc = ", ".join(f"{p}={v!r}" for p, v in overrides.items())
                raise SpecError(f"axes {desc} on {card} do not make a valid config: {_one_line(exc)}",
                                where) from None
            out.append((overrides, coords, c.model_dump_json()))
        combos[card] = out
    for name in spec.workloads:
        for size in spec.sizes_of(name):
            for card in spec.cards:
                for overrides, coords, cjson in combos[card]:
                    for honour in honour_values:
                        c = dict(coords)
                        if spec.honour_control_codes is not None:
                            c[HONOUR_AXIS] = honour
                        points.append(Point(index=len(points), workload=name, size=size, card=card,
                                            arch=configs[card].arch, overrides=overrides, coords=c,
                                            honour_control_codes=honour, config_json=cjson))

    # metrics
    names = set(BASE_COLUMNS) | {f"stall_{r}" for r in REASONS}
    for dname, expr in spec.derived.items():
        if dname in names:
            raise SpecError(f"derived metric '{dname}' shadows a result column", where)
        check_expression(expr, names, f"{where}: derived.{dname}")
        names.add(dname)
    for m in [spec.metric, *spec.plots]:
        if m not in names:
            raise SpecError(f"metric '{m}' is neither a result column nor a derived metric "
                            f"(derived: {', '.join(spec.derived) or 'none'})", where)
    if spec.baseline:
        for path, value in spec.baseline.items():
            if path not in axis_names:
                raise SpecError(f"field 'baseline': '{path}' is not an axis of this study", where)
            if not any(p.coords.get(path) == value for p in points):
                raise SpecError(f"field 'baseline': value {value!r} is not among the values of axis '{path}'",
                                where)
    return Study(spec=spec, source=where, points=points, axis_names=axis_names)


def content_hash(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()
