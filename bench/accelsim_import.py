"""Accel-Sim trace import rate (issue 15: >= 1 M warp instructions per second, every trace).

Exports the suite's kernels as Accel-Sim traces (`gpusim trace --format accelsim`: emulated, all
CTAs) into a cache folder, once, then times reading each back into a DynamicTrace with the fast
reader (`gpusim.trace.accelsim_fast`, what `gpusim run --trace` uses): each read in a fresh
process, as a user's run pays it (page faults of new memory included), best of --repeat. Prints
wall and CPU seconds, the rate, and the memory the read added to the process (peak RSS over the
RSS before it; the trace it returns, mostly 256 bytes of addresses per memory instruction,
included). With --compare it also runs the line-by-line reader once per trace and checks that
both give the same trace.

Traces: every suite workload for --arch at --size (default 256: 0.13 M to 2.6 M warp instructions,
5 to 120 MB), plus --large (default sgemm_maxas_64 at n=512: 4.8 M warp instructions, 243 MB).

Measured 2026-11-25 on the shared 2-core machine (other developers' jobs running; best of 3, a
fresh process each): 1.4 to 3.3 M warp instructions/s over the 33 traces; the 240 MB one in 1.8 s
(2.6 M/s), adding 305 MB to the process of which 204 MB are the trace it returns. The reader before
(9ad583d): 0.25 to 1.0 M/s, 19 s and 6.1 GB for the 240 MB trace. Per trace, before and after:
bench/results/accelsim_import.txt (this script's --out table, the old reader timed the same way beside it).

Usage: python bench/accelsim_import.py [--workload NAME[,NAME]] [--arch sm_90] [--size 256]
       [--large sgemm_maxas_64:512] [--repeat 3] [--compare] [--cache DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def export(name: str, arch: str, size: int, cache: Path) -> Path:
    """The folder of the Accel-Sim trace of `name` (exported once; kernelslist.g is written last)."""
    folder = cache / f"{name}_{arch}_{size}"
    if not (folder / "kernelslist.g").exists():
        from gpusim.emu.run import emulate
        from gpusim.trace import DynamicTrace
        from gpusim.trace.accelsim import export_accelsim
        from gpusim.workloads import find_workload

        wl = find_workload(name)
        emu, _ = emulate(wl, arch, size)
        export_accelsim(DynamicTrace.from_emulator(emu, workload=wl.name, size=size), emu.program, folder)
    return folder


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def time_one(folder: Path, name: str, arch: str, compare: bool) -> dict:
    """One read in this process (run in a fresh one by `main`)."""
    from gpusim.toolchain.listings import load_program
    from gpusim.trace.accelsim_fast import read_dynamic_trace
    from gpusim.workloads import find_workload

    program = load_program(find_workload(name), arch)
    kernel = folder / "kernel-1.traceg"
    before = rss_bytes()
    w, c = time.perf_counter(), time.process_time()
    trace = read_dynamic_trace(kernel, program)
    wall, cpu = time.perf_counter() - w, time.process_time() - c
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if trace is None:
        return {"error": "the fast reader did not take the trace"}
    out = {"n": trace.n_warp_instructions, "mb": kernel.stat().st_size / 1e6, "wall": wall, "cpu": cpu,
           "added_mb": (peak - before) / 1e6,
           "result_mb": (trace.records.nbytes + trace.addresses.nbytes + trace.access_bytes.nbytes) / 1e6}
    if compare:
        from gpusim.trace.accelsim import read_kernel_trace, to_dynamic_trace

        w = time.perf_counter()
        same = to_dynamic_trace(read_kernel_trace(kernel, arch), program) == trace
        out.update(line_reader_wall=time.perf_counter() - w, same=same)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", help="comma-separated workloads (default: every suite kernel with --arch)")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--large", default="sgemm_maxas_64:512", help="extra NAME:SIZE traces, comma-separated "
                    "('' for none; left out with --workload)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--compare", action="store_true", help="also run the line-by-line reader, check equality")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "gpusim-accelsim-bench")
    ap.add_argument("--out", type=Path, help="also write the table to this file")
    ap.add_argument("--time-one", nargs=3, metavar=("FOLDER", "WORKLOAD", "ARCH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.time_one:
        folder, name, arch = args.time_one
        print(json.dumps(time_one(Path(folder), name, arch, args.compare)))
        return

    from gpusim.workloads import list_workloads

    if args.workload:
        jobs = [(name, args.size) for name in args.workload.split(",")]
    else:
        jobs = [(wl.name, args.size if args.size in wl.sizes else min(wl.sizes, key=lambda s: abs(s - args.size)))
                for wl in list_workloads() if args.arch in wl.archs]
        jobs += [(spec.split(":")[0], int(spec.split(":")[1])) for spec in args.large.split(",") if spec]
    args.cache.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    lines = [f"Accel-Sim import, fast reader, {args.arch}; best of {args.repeat} reads, each in a fresh process",
             f"{'trace':38s} {'warp instr':>10s} {'MB':>6s} {'wall s':>7s} {'M/s':>6s} {'CPU M/s':>7s} "
             f"{'added MB':>8s} {'result MB':>9s}" + ("  line reader" if args.compare else "")]
    print("\n".join(lines), flush=True)
    rates = []
    for name, size in jobs:
        folder = export(name, args.arch, size, args.cache)
        runs = []
        for k in range(args.repeat):
            cmd = [sys.executable, __file__, "--time-one", str(folder), name, args.arch]
            cmd += ["--compare"] if args.compare and k == 0 else []
            done = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if done.returncode:
                sys.exit(f"{name}: {done.stderr.strip().splitlines()[-1]}")
            runs.append(json.loads(done.stdout))
            if "error" in runs[-1]:
                sys.exit(f"{name}: {runs[-1]['error']}")
        best = min(runs, key=lambda r: r["wall"])
        rates.append(best["n"] / best["wall"])
        line = (f"{name + ' n=' + str(size):38s} {best['n']:10,d} {best['mb']:6.1f} {best['wall']:7.3f} "
                f"{best['n'] / best['wall'] / 1e6:6.2f} {best['n'] / min(r['cpu'] for r in runs) / 1e6:7.2f} "
                f"{max(r['added_mb'] for r in runs):8.0f} {best['result_mb']:9.0f}")
        if args.compare:
            r0 = runs[0]
            line += f"  {r0['n'] / r0['line_reader_wall'] / 1e6:.3f} M/s, same trace: {r0['same']}"
            if not r0["same"]:
                line += "  <- DIFFERENT"
        print(line, flush=True)
        lines.append(line)
    summary = (f"slowest {min(rates) / 1e6:.2f} M/s, fastest {max(rates) / 1e6:.2f} M/s over {len(rates)} traces "
               f"(goal >= 1 M/s: {'met' if min(rates) >= 1e6 else 'NOT met'})")
    print(summary)
    lines.append(summary)
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
