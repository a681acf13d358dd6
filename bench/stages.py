"""Per-stage wall times of one detailed simulation on the whole trace: emulate, trace building, GPU
init (precompute), run. (The whole-trace path is what timelines and a warm L2 use; a cold detailed
run streams its trace, and `bench/speed.py` gives that path's stages.)

    PYTHONPATH=. python3 bench/stages.py sgemm_maxas_64 h100 512 [--no-run] [--profile STAGE]

Prints seconds and warp-instructions/s per stage (and peak RSS so far). `sectors` and `streams` are
what the run otherwise does lazily (global sectors, each warp's stream); `--no-run` stops before the
timing loop (the fixed costs around it); `--profile trace|gpu|emulate|run` prints a cProfile of that
stage. `--sampled` times the sampled pipeline's stages instead (sampled CTAs, make_inputs, verify,
elided trace).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import resource
import time


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("workload")
    ap.add_argument("gpu")
    ap.add_argument("size", type=int)
    ap.add_argument("--no-run", action="store_true", help="stop before the timing loop")
    ap.add_argument("--sampled", action="store_true", help="the sampled pipeline's stages")
    ap.add_argument("--profile", default=None, help="cProfile this stage (inputs, emulate, verify, trace, gpu, sectors, streams, run)")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()

    from gpusim.config import load_gpu
    from gpusim.emu.emulator import Emulator
    from gpusim.emu.run import build_launch, verify
    from gpusim.timing.driver import input_bytes, sampled_ctas
    from gpusim.timing.gpu import GPU
    from gpusim.toolchain.listings import load_program
    from gpusim.trace import DynamicTrace
    from gpusim.workloads import find_workload

    cfg = load_gpu(args.gpu)
    wl = find_workload(args.workload)
    n = args.size
    n_instr = [0]

    def stage(name, fn):
        prof = cProfile.Profile() if args.profile == name else None
        t = time.perf_counter()
        if prof:
            prof.enable()
        out = fn()
        if prof:
            prof.disable()
        dt = time.perf_counter() - t
        rate = f"{n_instr[0] / dt / 1e6:8.2f} M warp-instr/s" if n_instr[0] and dt > 0 else ""
        print(f"{name:10s} {dt:7.2f} s  {rate}  (peak RSS {_rss_mb():.0f} MB)", flush=True)
        if prof:
            pstats.Stats(prof).sort_stats("cumulative").print_stats(args.top)
        return out

    t_start = time.perf_counter()
    program = load_program(wl, cfg.arch)
    ctas = sampled_ctas(wl, n, cfg) if args.sampled else None
    launch, params, memory, inputs = stage("inputs", lambda: build_launch(wl, program, n))
    emu = stage("emulate", lambda: Emulator(program, launch, params, memory, ctas=ctas).run())
    n_instr[0] = emu.warp_instructions
    print(f"           {emu.warp_instructions} warp instructions", flush=True)
    if args.sampled:
        stage("verify", lambda: verify(wl, emu, inputs, n))
        from gpusim.timing.sampling import KEEP_HEAD, KEEP_TAIL
        keep = (KEEP_HEAD, KEEP_TAIL)
    else:
        keep = None
    tr = stage("trace", lambda: DynamicTrace.from_emulator(emu, workload=wl.name, size=n, keep_loop=keep))
    g = stage("gpu", lambda: GPU(emu.program, tr, cfg, footprint_bytes=input_bytes(wl, n),
                                 **({"mode": "sampled"} if args.sampled else {})))
    # what the run does lazily: every global access's sectors, every warp's stream (at CTA launch;
    # the object model's lists: sampled mode; detailed mode's compiled engine reads the arrays)
    stage("sectors", g._global_sectors)
    if args.sampled:
        stage("streams", lambda: [g.stream(int(w)) for w in tr.warp_ids])
    if args.no_run:
        return
    r = stage("run", lambda: g.run(wl.name, n))
    total = time.perf_counter() - t_start
    print(f"           cycles {r.cycles}; end to end {total:.2f} s, {n_instr[0] / total / 1e6:.2f} M warp-instr/s "
          f"(peak RSS {_rss_mb():.0f} MB)")


if __name__ == "__main__":
    main()
