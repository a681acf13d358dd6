"""Where committed SASS listings live, and loading a workload's Program from them (no toolchain needed)."""

from __future__ import annotations

from pathlib import Path

from gpusim import TRACES_DIR
from gpusim.errors import ListingError


def listing_path(workload_name: str, arch: str) -> Path:
    return TRACES_DIR / "sass" / arch / f"{workload_name}.sass"


def load_program(workload, arch: str):
    """The Program of `workload` on `arch`, from its committed listing (traces/sass/<arch>/<name>.sass,
    or <name>_<arch>.sass beside a spec kept elsewhere)."""
    from gpusim.isa.parser import parse_listing

    if arch not in workload.archs:
        raise ListingError(f"workload {workload.name} is not built for {arch} (archs: {', '.join(workload.archs)})")
    path = listing_path(workload.name, arch)
    beside = workload.spec_path and workload.spec_path.parent / f"{workload.name}_{arch}.sass"
    if not path.exists() and beside and beside.exists():  # a spec outside traces/ with its listing beside it
        path = beside
    if not path.exists():
        raise ListingError(f"no listing for {workload.name} on {arch}; run `gpusim compile {workload.name} "
                           f"--arch {arch}` (needs the CUDA toolchain)", str(path))
    return parse_listing(path)
