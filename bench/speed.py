"""Speed and memory of the two timing modes, per workload, card and size (issue 16's table).

For the DGEMM family on the GTX 970 and the H100 and the two SGEMMs on the H100: warp-instructions, wall time
end to end (emulation and the output check included: what a user waits for), the rate, peak
memory (the maximum resident set of the process, plus that of the emulating process where detailed
mode uses two: an upper bound, the pages they share, device memory and what the child inherited at
the fork, counted twice), and the wall seconds of each stage:
- detailed mode (streamed, `gpusim/timing/compiled/stream.py`): emulate, trace (building records from
  the emulator's log), columns (precompute and global sectors), arena (keeping and appending records),
  engine (the compiled timing loop), check (outputs against numpy); the stages interleave, slice by
  slice, and the rest of the wall time is set-up (inputs, the GPU's per-instruction facts). With two
  processes (`compiled/producer.py`; GPUSIM_WORKERS=1 forces one, `processes` says which ran) the first
  three are the child's and run beside the engine: they add up to more than the wall time, and `wait`
  is the engine's process waiting for slices;
- sampled mode: inputs, emulate (the sampled CTAs, and beside them those the grid's footprints need),
  check, time (trace and the sampled run).
Each case runs in a fresh process (its own peak memory, no warm caches but numba's). Results are
appended to bench/results/speed.json as they come (a rerun skips the cases already there), then
printed as a table with sampled-vs-detailed cycles where both ran.

    python bench/speed.py [--sizes 1024,2048,4096] [--detailed-max 1024] [--detailed-max-fp64 512]
                          [--only sgemm_maxas_64:h100] [--modes detailed,sampled] [--only-table]
    python bench/speed.py --one sgemm_maxas_64 h100 4096 detailed     (one case, JSON on stdout)
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "speed.json"
DGEMMS = ["dgemm_unroll", "dgemm_unroll_128b", "dgemm_unroll_128b_prefsmem", "dgemm_unroll_db",
          "dgemm_unroll_db_128b", "dgemm_unroll_db_128b_prefsmem"]
CASES = [(w, "gtx970") for w in DGEMMS] + [("sgemm_maxas_64", "h100"), ("sgemm_maxas_128", "h100")] + \
    [(w, "h100") for w in DGEMMS]


def _peak_mb() -> tuple[float, float]:
    """(this process's peak resident set, its finished children's largest) in MB."""
    return tuple(resource.getrusage(who).ru_maxrss / 1024 for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))


def one(name: str, card: str, n: int, mode: str) -> dict:
    """Run one case in this process; what it measured."""
    from gpusim.config import load_gpu
    from gpusim.emu.run import emulate, verify
    from gpusim.timing import driver as D
    from gpusim.workloads import find_workload

    t0 = time.perf_counter()
    cfg = load_gpu(card)
    wl = find_workload(name)
    stages = {}
    if mode == "detailed":
        if not D.streams(cfg, mode, None):
            raise SystemExit("bench/speed.py: detailed runs here are the streamed ones (a cold L2, the compiled engine)")
        emu, inputs, r = D.time_streamed(wl, cfg, n)
        stages.update(emu.stage_seconds)
        t = time.perf_counter()
        verify(wl, emu, inputs, n)
        stages["check"] = time.perf_counter() - t
    else:
        ctas = D.sampled_ctas(wl, n, cfg)
        t = time.perf_counter()
        emulated = ctas + D.beside_ctas(wl, n, cfg, ctas)  # (as `gpusim run` does)
        emu, inputs = emulate(wl, cfg.arch, n, ctas=emulated)  # (make_inputs, then the emulation)
        stages["inputs+emulate"] = time.perf_counter() - t
        t = time.perf_counter()
        verify(wl, emu, inputs, n, ctas)
        stages["check"] = time.perf_counter() - t
        t = time.perf_counter()
        r = D.time_emulated(emu, wl, cfg, n, mode, ctas=ctas)
        stages["time"] = time.perf_counter() - t
    wall = time.perf_counter() - t0
    main, child = _peak_mb()
    out = {"cycles": r.cycles, "wall_s": round(wall, 2), "warp_instructions": r.warp_instructions,
           "rate": round(r.warp_instructions / wall), "peak_mb": round(main + child),
           "stages_s": {k: round(v, 2) for k, v in stages.items()}}
    if mode == "detailed":
        out.update(processes=2 if "wait" in stages else 1, peak_mb_main=round(main), peak_mb_child=round(child))
    return out


def measure(name: str, card: str, n: int, mode: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--one", name, card, str(n), mode], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{name} {card} {n} {mode} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def load() -> dict:
    return json.loads(RESULTS.read_text()) if RESULTS.exists() else {}


def table(results: dict, sizes: list[int], cases) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title="gpusim timing modes: wall time end to end (emulation and output check included), "
                    "rate, peak memory; stages in seconds")
    for col in ("workload", "card", "n", "mode", "warp-instr", "wall s", "M warp-instr/s", "peak MB", "stages s",
                "vs detailed"):
        t.add_column(col, justify="right" if col not in ("stages s", "mode") else "left")
    for n in sizes:
        for name, card in cases:
            d = results.get(f"{name}:{card}:{n}:detailed")
            for mode in ("detailed", "detailed:1", "sampled"):  # (detailed:1: GPUSIM_WORKERS=1 beside the default)
                r = results.get(f"{name}:{card}:{n}:{mode}")
                if not r:
                    continue
                diff = f"{(r['cycles'] - d['cycles']) / d['cycles']:+.2%}" if mode == "sampled" and d else "-"
                st = " ".join(f"{k} {v:g}" for k, v in r["stages_s"].items())
                processes = r.get("processes")
                how = f"detailed, {processes} process{'es' if processes == 2 else ''}" if processes else mode
                t.add_row(name, card, str(n), how, f"{r['warp_instructions']:,}", f"{r['wall_s']:.1f}",
                          f"{r['rate'] / 1e6:.2f}", f"{r['peak_mb']:,}", st, diff)
    Console(width=200).print(t)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1024,2048,4096")
    ap.add_argument("--detailed-max", type=int, default=1024)
    ap.add_argument("--detailed-max-fp64", type=int, default=512,
                    help="detailed-mode limit for the FP64-bound DGEMMs on the GTX 970 (minutes per case above)")
    ap.add_argument("--only", default=None, help="workload:card[,workload:card...]")
    ap.add_argument("--modes", default="detailed,sampled")
    ap.add_argument("--only-table", action="store_true")
    ap.add_argument("--one", nargs=4, metavar=("WORKLOAD", "CARD", "N", "MODE"))
    args = ap.parse_args()
    if args.one:
        name, card, n, mode = args.one
        print(json.dumps(one(name, card, int(n), mode)))
        return
    cases = [tuple(c.split(":")) for c in args.only.split(",")] if args.only else CASES
    sizes = [int(s) for s in args.sizes.split(",")]
    results = load()
    if not args.only_table:
        for n in sizes:
            for name, card in cases:
                for mode in args.modes.split(","):
                    key = f"{name}:{card}:{n}:{mode}"
                    limit = args.detailed_max_fp64 if name.startswith("dgemm") else args.detailed_max
                    if key in results or (mode == "detailed" and n > limit):
                        continue
                    results[key] = measure(name, card, n, mode)
                    RESULTS.parent.mkdir(parents=True, exist_ok=True)
                    RESULTS.write_text(json.dumps(results, indent=1))
                    print(f"{key}: {results[key]['wall_s']} s, {results[key]['peak_mb']} MB", flush=True)
    table(results, sizes, cases)


if __name__ == "__main__":
    main()
