"""Recompile every workload for every architecture it lists and rewrite traces/sass/<arch>/<name>.sass.

Needs the toolchains (scripts/install_toolchains.sh). Usage: python scripts/regenerate_listings.py [NAME ...]
"""

import sys
from concurrent.futures import ThreadPoolExecutor

from gpusim.errors import GpusimError
from gpusim.toolchain.compile import compile_workload
from gpusim.workloads import list_workloads


def main(names: list[str]) -> int:
    jobs = [(wl, arch) for wl in list_workloads() if not names or wl.name in names for arch in wl.archs]

    def one(job):
        wl, arch = job
        try:
            r = compile_workload(wl, arch)
            return f"{wl.name:34s} {arch}: {r['instructions']:5d} instructions, {r['registers']:3d} registers"
        except GpusimError as exc:
            return f"{wl.name:34s} {arch}: ERROR {exc}"

    with ThreadPoolExecutor(max_workers=2) as pool:
        lines = list(pool.map(one, jobs))
    print("\n".join(lines))
    return 1 if any("ERROR" in ln for ln in lines) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
