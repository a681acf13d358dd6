"""Load GPU configs from YAML (`configs/gpus/<card>.yaml`) with `extends:` inheritance.

A file may say `extends: <stem>`; the stem is looked up next to the file, then in
`configs/gpus/arch/` (architecture presets such as gk110, gm204, gh100, gf110), then in
`configs/gpus/`. The base is loaded (recursively), the file's own keys are deep-merged over it
(mappings merge key by key, everything else replaces), and only the final result is validated, so
a preset may be partial. Errors are SpecError, one line naming the file and the dotted field path.
"""

from __future__ import annotations

import copy

import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from gpusim.config.models import GpuConfig
from gpusim.errors import SpecError, pydantic_one_line

from gpusim import CONFIGS_DIR, DATA_ROOT as REPO_ROOT  # noqa: E402  (the checkout, or an installed wheel's data)

#: Where cards live; GPUSIM_GPU_DIR overrides (e.g. for a private set).
GPU_DIR = Path(os.environ.get("GPUSIM_GPU_DIR", CONFIGS_DIR / "gpus"))
PRESET_DIR_NAME = "arch"


def _gpu_dir() -> Path:
    return Path(os.environ.get("GPUSIM_GPU_DIR", GPU_DIR))


def _show(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key given twice in one mapping (the later would silently win)."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False):
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first on line {seen[key] + 1})", key_node.start_mark)
        seen[key] = key_node.start_mark.line
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _read_yaml(path: Path) -> dict[str, Any]:
    """The parsed file, read again only when it changed (a sweep or a job list loads each card many
    times; 45 loads were a second of `python run_sim.py`). Callers get their own copy."""
    try:
        st = path.stat()
        key = (str(path), st.st_mtime_ns, st.st_size)
    except OSError:
        key = None
    if key is not None and key in _PARSED:
        return copy.deepcopy(_PARSED[key])
    data = _parse_yaml(path)
    if key is not None:
        _PARSED[key] = copy.deepcopy(data)
    return data


_PARSED: dict[tuple, dict[str, Any]] = {}


def _parse_yaml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise SpecError(f"cannot read GPU config: {exc.strerror or exc}", _show(path)) from None
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{_show(path)}:{mark.line + 1}" if mark is not None else _show(path)
        problem = getattr(exc, "problem", None) or str(exc)
        raise SpecError(f"invalid YAML: {problem}".replace("\n", " "), where) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SpecError(f"a GPU config must be a mapping of fields, got {type(data).__name__}", _show(path))
    return data


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Mappings merge key by key (recursively); any other value in `over` replaces the base's."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _resolve_extends(name: Any, child: Path) -> Path:
    if not isinstance(name, str) or not name.strip():
        raise SpecError(f"field 'extends': expected the stem of another config file, got {name!r}", _show(child))
    name = name.strip()
    stem = name[:-5] if name.endswith(".yaml") else name
    gdir = _gpu_dir()
    candidates = [child.parent / f"{stem}.yaml", gdir / PRESET_DIR_NAME / f"{stem}.yaml", gdir / f"{stem}.yaml"]
    for cand in candidates:
        if cand.is_file():
            return cand
    presets = sorted(p.stem for p in (gdir / PRESET_DIR_NAME).glob("*.yaml"))
    raise SpecError(f"field 'extends': no config '{name}' (presets: {', '.join(presets) or 'none'}; "
                    f"cards: {', '.join(list_gpus()) or 'none'})", _show(child))


def load_raw(path: Path, _chain: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The merged (not yet validated) mapping of one file and everything it extends."""
    path = path.resolve()
    if path in _chain:
        cycle = " -> ".join(p.stem for p in (*_chain, path))
        raise SpecError(f"'extends' cycle: {cycle}", _show(_chain[0]))
    data = _read_yaml(path)
    parent = data.pop("extends", None)
    if parent is None:
        return data
    base = load_raw(_resolve_extends(parent, path), (*_chain, path))
    return deep_merge(base, data)


def list_gpus() -> list[str]:
    """Card ids accepted by load_gpu / --gpu (the YAML stems in configs/gpus/, presets excluded)."""
    gdir = _gpu_dir()
    return sorted(p.stem for p in gdir.glob("*.yaml") if p.is_file())


def _card_path(card_or_path: str) -> tuple[Path, bool]:
    text = str(card_or_path)
    as_path = Path(text)
    if text.endswith((".yaml", ".yml")) or os.sep in text or "/" in text:
        if not as_path.is_file():
            raise SpecError("no such GPU config file", text)
        return as_path, False
    cand = _gpu_dir() / f"{text}.yaml"
    if cand.is_file():
        return cand, True
    raise SpecError(f"unknown GPU '{text}' (known: {', '.join(list_gpus())})")


def load_gpu(card_or_path: str) -> GpuConfig:
    """Load a card by id ('k40', 'gtx970', 'h100', ...) or a YAML file path, and validate it."""
    path, by_id = _card_path(card_or_path)
    merged = load_raw(path)
    try:
        cfg = GpuConfig.model_validate(merged)
    except ValidationError as err:
        raise SpecError(pydantic_one_line(err, _show(path)).replace("\n", " ")) from None
    if by_id and cfg.card != path.stem:
        raise SpecError(f"field 'card': '{cfg.card}' does not match the file name (expected '{path.stem}')",
                        _show(path))
    return cfg


def load_all() -> dict[str, GpuConfig]:
    return {card: load_gpu(card) for card in list_gpus()}
