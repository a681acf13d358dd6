"""The user's workspace: SASS listings of specs outside the suite, cached by content.

A spec anywhere on disk is compiled on first use and its listing cached beside it, in
`<spec folder>/.gpusim/sass/<arch>/<name>-<key>.sass`, or under a cache folder given with
`--cache-dir DIR` (or $GPUSIM_CACHE_DIR). The key is a SHA-256 over everything that decides the
code: the source and every header it includes (found in its folder and the spec's `include_dirs`;
system headers are left out, the toolchain version covers them), the flags, defines, template
instances, kernel name, architecture and the nvcc/nvdisasm versions. It is never the name alone:
two specs called `dgemm_unroll` in different folders get different listings, and neither uses the
suite's. A cached listing is used only when the key in its header equals the key computed now;
otherwise it is rebuilt. Without a toolchain, a listing whose inputs (all but the toolchain
version) match is used, and its header says which toolchain made it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from pathlib import Path

from gpusim.errors import SpecError, ToolchainError

CACHE_ENV = "GPUSIM_CACHE_DIR"
KEY_FORMAT = 1  # bump when what goes into the key changes
_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def cache_root(workload) -> Path:
    """Where `workload`'s listings are cached: $GPUSIM_CACHE_DIR (set by --cache-dir) or beside the spec."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser().resolve() if env else workload.spec_dir / ".gpusim"


def set_cache_dir(path: Path | None) -> None:
    """Apply a command's --cache-dir (it reaches every later step, including worker processes)."""
    if path is not None:
        os.environ[CACHE_ENV] = str(Path(path).expanduser().resolve())


def dependencies(workload) -> list[Path]:
    """The source and the headers it includes, recursively, that resolve in its folder or the spec's
    include_dirs (a header found nowhere there is a system header and is left out)."""
    seen: dict[Path, None] = {}
    todo = [workload.source_path]
    search = workload.include_paths
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen[path] = None
        try:
            text = path.read_text(errors="replace")
        except OSError as exc:
            raise SpecError(f"cannot read {path}: {exc.strerror}", str(workload.spec_path)) from None
        for quote, name in _INCLUDE.findall(text):
            dirs = ([path.parent] if quote == '"' else []) + search
            found = next((d / name for d in dirs if (d / name).is_file()), None)
            if found is not None:
                todo.append(found.resolve())
    return list(seen)


def inputs_digest(workload, arch: str) -> str:
    """SHA-256 of what decides the code except the toolchain: sources, flags, kernel, arch."""
    h = hashlib.sha256()
    h.update(json.dumps({"format": KEY_FORMAT, "kernel": workload.kernel, "arch": arch,
                         "flags": list(workload.nvcc_flags), "include_dirs": list(workload.include_dirs),
                         "defines": {k: workload.defines[k] for k in sorted(workload.defines)},
                         "instantiate": list(workload.instantiate)}, sort_keys=True).encode())
    src_dir = workload.source_path.parent
    for dep in dependencies(workload):
        try:
            name = str(dep.relative_to(src_dir))
        except ValueError:
            name = dep.name
        h.update(f"\0{name}\0".encode() + dep.read_bytes())
    return h.hexdigest()


def listing_key(inputs: str, versions: str) -> str:
    return hashlib.sha256(f"{inputs}\0{versions}".encode()).hexdigest()


def _header_keys(path: Path) -> tuple[str | None, str | None]:
    """(key, inputs) recorded in a cached listing's header."""
    try:
        with path.open() as f:
            head = "".join(f.readline() for _ in range(6))
    except OSError:
        return None, None
    m = re.search(r"^// gpusim key (\w+) inputs (\w+)", head, re.M)
    return (m.group(1), m.group(2)) if m else (None, None)


def cached_listing(workload, arch: str, rebuild: bool = False) -> Path:
    """The listing of `workload` on `arch` in the workspace cache, compiled now if missing or stale."""
    from gpusim.toolchain.compile import compile_workload, tool_versions, toolchain

    if arch not in workload.archs:
        raise SpecError(f"workload {workload.name} is not built for {arch} (archs: {', '.join(workload.archs)})",
                        str(workload.spec_path))
    inputs = inputs_digest(workload, arch)
    folder = cache_root(workload) / "sass" / arch
    try:
        tools = toolchain(arch)
    except ToolchainError:
        # no toolchain: a listing built from exactly these inputs by another toolchain will do
        for path in sorted(folder.glob(f"{workload.name}-*.sass")) if folder.is_dir() else []:
            if _header_keys(path)[1] == inputs and not rebuild:
                return path
        raise
    key = listing_key(inputs, tool_versions(tools))
    path = folder / f"{workload.name}-{key[:16]}.sass"
    if path.exists() and not rebuild:
        if _header_keys(path)[0] == key:
            return path
        sys.stderr.write(f"gpusim: {path}: key in its header does not match the spec; rebuilding it\n")
    _ensure_writable(folder, workload)
    compile_workload(workload, arch, path, key_line=f"// gpusim key {key} inputs {inputs}\n")
    return path


def _ensure_writable(folder: Path, workload) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        where = "beside the spec" if not os.environ.get(CACHE_ENV) else "in the cache folder"
        raise SpecError(f"cannot write SASS listings {where} ({folder}: {exc.strerror or exc}); "
                        "pass --cache-dir DIR (or set GPUSIM_CACHE_DIR) to cache them elsewhere",
                        str(workload.spec_path)) from None


def compile_spec(workload, arch: str, out: Path | None = None, compare: Path | None = None) -> dict:
    """`gpusim compile`: the suite's listings go to traces/sass/ (or `out`), a user's spec's to its
    workspace cache (built only if missing or stale). `compare`: the user's own binary or
    cuobjdump -sass text, compared with the listing instruction by instruction."""
    from gpusim.isa.parser import parse_listing, parse_listing_text
    from gpusim.toolchain.compile import compile_workload

    if out is not None or workload.is_suite:
        result = compile_workload(workload, arch, out)
    else:
        path = cached_listing(workload, arch)
        program = parse_listing(path)
        result = {"workload": workload.name, "arch": arch, "kernel": program.kernel, "listing": str(path),
                  "instructions": len(program), "registers": program.registers, "toolchain": program.toolchain,
                  "nvcc_flags": _header_flags(path), "build": workload.build_info()}
    if compare is not None:
        from gpusim.toolchain.importsass import compare as compare_programs, import_listing

        mine = parse_listing(result["listing"])
        text, _ = import_listing(workload, arch, Path(compare))
        theirs = parse_listing_text(text, str(compare))
        result["compare"] = compare_programs(mine, theirs, str(compare))
    return result


def _header_flags(path: Path) -> list[str]:
    with path.open() as f:
        head = f.readline() + f.readline()
    m = re.search(r"flags: (.*?); nvdisasm", head)
    return m.group(1).split() if m else []
