"""Where a workload's SASS listing lives, and loading its Program.

The suite's specs (traces/workloads/) use the listings committed under traces/sass/<arch>/ (no
toolchain needed). Any other spec uses its workspace cache (gpusim.toolchain.workspace), keyed by
content, never by name, or the SASS of the user's own binary when it names one (`sass: FILE`).
"""

from __future__ import annotations

from pathlib import Path

from gpusim import TRACES_DIR
from gpusim.errors import ListingError


def listing_path(workload_name: str, arch: str) -> Path:
    return TRACES_DIR / "sass" / arch / f"{workload_name}.sass"


def workload_listing(workload, arch: str) -> Path:
    """The listing file `workload` runs on `arch`: committed for the suite, else the workspace cache's."""
    if arch not in workload.archs:
        raise ListingError(f"workload {workload.name} is not built for {arch} (archs: {', '.join(workload.archs)})")
    if workload.is_suite:
        return listing_path(workload.name, arch)
    if workload.sass:
        from gpusim.toolchain.importsass import imported_listing

        return imported_listing(workload, arch)
    from gpusim.toolchain.workspace import cached_listing

    return cached_listing(workload, arch)


_PARSED: dict = {}  # (listing path, its mtime and size) -> Program: a run asks for it more than once
_PARSED_MAX = 16


def _parsed(path: Path):
    """The Program of the listing at `path`, parsed once per process while the file is unchanged
    (a sampled run's CTA choice and its emulation each load it: 0.1 s per parse). Programs are not
    modified after parsing."""
    from gpusim.isa.parser import parse_listing

    try:
        stat = path.stat()
    except OSError:
        return parse_listing(path)  # (the parser reports what is wrong)
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    program = _PARSED.get(key)
    if program is None:
        program = parse_listing(path)
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.pop(next(iter(_PARSED)))
        _PARSED[key] = program
    return program


def load_program(workload, arch: str):
    """The Program of `workload` on `arch` (see workload_listing)."""
    from gpusim.isa.parser import parse_listing

    if not workload.is_suite:
        return parse_listing(workload_listing(workload, arch))
    if arch not in workload.archs:
        raise ListingError(f"workload {workload.name} is not built for {arch} (archs: {', '.join(workload.archs)})")
    path = listing_path(workload.name, arch)
    beside = workload.spec_path and workload.spec_path.parent / f"{workload.name}_{arch}.sass"
    if not path.exists() and beside and beside.exists():  # a spec outside traces/ with its listing beside it
        path = beside
    if not path.exists():
        raise ListingError(f"no listing for {workload.name} on {arch}; run `gpusim compile {workload.name} "
                           f"--arch {arch}` (needs the CUDA toolchain)", str(path))
    return _parsed(path)
