"""Measure workload kernels on the local GPU: correctness, CUDA-event timing with clocks, Nsight Compute.

    python3 -m gpusim.measure.run --out DIR [--workloads a,b] [--sizes-from spec|N,N] [--reps 50] [--ncu]

Phases (the parent process never touches the GPU itself):
1. compile every workload's kernel once (cubins cached under DIR/cubins, the flags of
   gpusim.toolchain.compile);
2. one child process per workload (`--in-process`) checks and times each size and writes
   DIR/<workload>__n<size>.json, so a kernel that corrupts its CUDA context spoils only its workload;
3. with --ncu, one ncu run per workload profiles one launch of each size, made by a `--single`
   child, and adds the counters to each size's JSON;
4. DIR/summary.csv and a compact table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import statistics
import sys
import time
import traceback
from pathlib import Path

from gpusim import REPO_ROOT
from gpusim.measure import marshal, record
from gpusim.measure.build import BuildError, CubinCache, base_name, find_tool, tool_version
from gpusim.measure.clocks import ClockSampler, environment
from gpusim.measure.procs import run_group


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line and exit 2, not argparse's usage block
        print(f"{self.prog}: {message}", file=sys.stderr)
        raise SystemExit(2)


def parse_args(argv=None) -> argparse.Namespace:
    p = _Parser(prog="python3 -m gpusim.measure.run", description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, help="output directory (JSON per run, summary.csv)")
    p.add_argument("--workloads", default=None, help="comma-separated names or spec paths (default: all)")
    p.add_argument("--sizes-from", default="spec", help="'spec' (spec sizes in the measurement window) or N,N,...")
    p.add_argument("--reps", type=int, default=50, help="timed launches, at least (0: no timing)")
    p.add_argument("--queued", action="store_true",
                   help="time the launches in batches queued behind a blocking kernel, so that the host's launch "
                        "rate does not pace short kernels (gpusim.measure.backend)")
    p.add_argument("--warmup", type=int, default=5, help="untimed launches before timing, at least ...")
    p.add_argument("--warmup-seconds", type=float, default=0.1, help="... and at least this long (clocks ramp up)")
    p.add_argument("--min-seconds", type=float, default=0.2, help="time at least this long (more reps) ...")
    p.add_argument("--max-reps", type=int, default=1000, help="... but never more than this many reps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-gib", type=float, default=8.0, help="skip sizes whose buffers need more")
    p.add_argument("--no-check", action="store_true", help="skip the correctness check")
    p.add_argument("--ncu", action="store_true", help="also profile one launch per run with Nsight Compute")
    p.add_argument("--ncu-path", default=None, help="ncu executable (default: PATH, /opt/nvidia/nsight-compute)")
    p.add_argument("--ncu-sizes", default="all", help="all | largest | smallest | N,N: which sizes ncu profiles")
    p.add_argument("--ncu-metrics", default="all", choices=("all", "dram", "l1", "l2"),
                   help="all: every metric group (many replay passes); dram: DRAM bytes and cycles in one pass; "
                        "l1: the L1 data stage's wavefronts by memory space; l2: L2 sectors by source (SMs, the "
                        "other L2 partition), hits and misses, with DRAM bytes")
    p.add_argument("--ncu-timeout", type=float, default=300.0, help="seconds per ncu invocation")
    p.add_argument("--nvcc", default=None, help="nvcc executable (default: $GPUSIM_NVCC13, PATH, /usr/local/cuda)")
    p.add_argument("--cache-dir", type=Path, default=None, help="cubin cache (default DIR/cubins)")
    p.add_argument("--no-isolate", action="store_true", help="time in this process, not one child per workload")
    p.add_argument("--child-timeout", type=float, default=1800.0, help="seconds per workload child")
    p.add_argument("--deadline", type=float, default=None,
                   help="seconds after start: start no new workload after it, and cut children off at it "
                        "(so the summary is written before an outer time limit kills the run)")
    p.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)  # a per-workload child
    p.add_argument("--single", default=None, metavar="WORKLOAD", help="set up and launch once (ncu's target)")
    p.add_argument("--size", default=None, help="with --single: the problem size(s), N or N,N,... (one launch each)")
    a = p.parse_args(argv)
    if a.single is None and a.out is None:
        p.error("--out is required")
    if a.single is not None and a.size is None:
        p.error("--single needs --size")
    return a


def say(msg: str) -> None:
    print(msg, flush=True)


def load_workloads(spec: str | None) -> list:
    from gpusim.workloads.spec import find_workload, list_workloads
    return list_workloads() if not spec else [find_workload(t.strip()) for t in spec.split(",") if t.strip()]


def one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:500]


def cache_for(args) -> CubinCache:
    return CubinCache(args.cache_dir or (args.out / "cubins" if args.out else Path.home() / ".cache/gpusim/measure"),
                      nvcc=args.nvcc)


def base_record(wl, n: int, env: dict, cache) -> dict:
    """A record with launch geometry, flops and kernel symbol filled in (no GPU needed)."""
    rec = record.new_record(wl.name, n, env)
    grid, block, shared = wl.geometry(n)
    rec["launch"] = {"grid": list(grid), "block": list(block), "dynamic_shared_bytes": shared}
    rec["flops"], rec["flops_source"] = marshal.flops(wl, n)
    built = cache.build(wl)
    rec["kernel"] = {"name": wl.kernel, "demangled": built["demangled"], "mangled": built["mangled"],
                     "cubin": Path(built["cubin"]).name, "source": str(wl.source_path),
                     "cubin_sha256": hashlib.sha256(Path(built["cubin"]).read_bytes()).hexdigest()}
    rec["commands"]["nvcc"] = built["nvcc_cmd"]
    rec["_cubin"] = built["cubin"]
    return rec


# ---- timing and checking (inside a process that owns the GPU) -------------------------------------
def measure(device, cache, wl, n: int, args, sampler, env: dict) -> dict:
    """Check and time `wl` at size n on `device`; every failure ends up in rec['error']."""
    rec = record.new_record(wl.name, n, env)
    launchable = None
    try:
        rec = base_record(wl, n, env, cache)
        cubin = rec.pop("_cubin")
        grid, block, shared = wl.geometry(n)
        inputs = wl.make_inputs(n, args.seed)
        launchable = marshal.Launchable(device, wl, inputs)
        kernel = device.load_kernel(cubin, rec["kernel"]["mangled"], shared)
        if hasattr(device, "kernel_attributes"):
            rec["kernel"]["attributes"] = device.kernel_attributes(kernel)
        if not args.no_check:
            launchable.reset_outputs()
            device.launch(kernel, grid, block, shared, launchable.args)
            device.synchronize()
            outputs = launchable.read_outputs(n)
            rec["check"] = marshal.check(outputs, marshal.reference(wl, inputs, n), wl.default_tolerance())
        del inputs
        if args.reps > 0:
            # a short pilot estimates the launch time; then warm up for --warmup-seconds (so the SM clock
            # has ramped up) and time at least --reps launches and at least --min-seconds
            pilot, _ = device.time_launches(kernel, grid, block, shared, launchable.args, args.warmup, 3)
            est = max(statistics.median(pilot), 1e-4)
            warm = max(1, min(args.max_reps, math.ceil(args.warmup_seconds * 1e3 / est)))
            reps = max(args.reps, min(args.max_reps, math.ceil(args.min_seconds * 1e3 / est)))
            t0 = time.monotonic()
            all_ms, span = device.time_launches(kernel, grid, block, shared, launchable.args, warm, reps,
                                                queued=args.queued)
            t1 = time.monotonic()
            rec["timing"] = record.timing_stats(all_ms, span, args.warmup + 3 + warm, rec["flops"], queued=args.queued)
            # clocks over the timed launches: the window starts when the warm-up should have ended
            rec["clocks"] = sampler.window(min(t1, t0 + warm * est * 1e-3), t1) if sampler else None
    except Exception as exc:  # recorded, and the run goes on with the next size
        rec["error"] = one_line(exc)
        rec["traceback"] = traceback.format_exc(limit=4)[-1500:]
    finally:
        del launchable
        try:
            device.release()
        except Exception as exc:
            rec["error"] = rec["error"] or f"release: {one_line(exc)}"
    return rec


def progress(rec: dict) -> str:
    """One line per run (the remote tool returns only the last 12,000 characters of output)."""
    head = f"  {rec['workload']} n={rec['size']}:"
    if rec.get("skipped") or rec.get("error"):
        return f"{head} {'SKIPPED' if rec.get('skipped') else 'ERROR'} {rec.get('skipped') or rec.get('error')}"
    t, c = rec.get("timing") or {}, rec.get("check") or {}
    mhz = ((rec.get("clocks") or {}).get("sm_mhz") or {}).get("median")
    err = c.get("max_rel_err")
    parts = [f"{t['median_ms']:.4f} ms x{t['reps']}" if t else "untimed",
             f"{t['gflops']:.0f} GFLOP/s" if t.get("gflops") else "",
             {True: "PASS", False: "FAIL"}.get(c.get("passed"), "unchecked"),
             f"err={err:.1e}" if isinstance(err, float) else f"err={err}",
             f"sm={mhz:.0f}MHz" if mhz else "sm=?"]
    return " ".join([head] + [p for p in parts if p])


def in_process(args, workloads) -> list[dict]:
    """Phase 2 in this process: check and time every selected size of `workloads`."""
    from gpusim.measure.backend import CupyDevice

    env_file = args.out / "env.json"
    env = json.loads(env_file.read_text()) if env_file.exists() else environment(None, None, None)
    device = CupyDevice()
    env = {**env, "cupy": device.version, "device": device.name}
    cache = cache_for(args)
    sampler = ClockSampler()
    sampler.wait_first()
    records = []
    try:
        for wl in workloads:
            for n, skip in marshal.select_sizes(wl, args.sizes_from, args.max_gib):
                if skip:
                    rec = record.new_record(wl.name, n, env)
                    rec["skipped"] = skip
                else:
                    rec = measure(device, cache, wl, n, args, sampler, env)
                record.write_record(args.out, rec)
                records.append(rec)
                say(progress(rec))
    finally:
        sampler.stop()
    return records


def single(args) -> int:
    """ncu's target: for each size of `--single W --size N,N`, set up and launch the kernel exactly once
    (no warm-up). Inputs are uploaded with copies; the only other kernel is `prime`'s, launched first (its
    name matches no workload's, so ncu does not profile it), so no profiled launch is the process's first
    kernel (`CupyDevice.prime`: the first carries dirty data of the process's start)."""
    from gpusim.measure.backend import CupyDevice

    wl = load_workloads(args.single)[0]
    built = cache_for(args).build(wl)
    device = CupyDevice()
    device.prime()
    for n in (int(x) for x in str(args.size).split(",") if x.strip()):
        grid, block, shared = wl.geometry(n)
        launchable = marshal.Launchable(device, wl, wl.make_inputs(n, args.seed))
        kernel = device.load_kernel(built["cubin"], built["mangled"], shared)
        device.synchronize()
        device.launch(kernel, grid, block, shared, launchable.args)
        device.synchronize()
        del launchable
        device.release()
        print(f"single: launched {built['mangled']} n={n} grid={grid} block={block}", file=sys.stderr, flush=True)
    return 0


# ---- the orchestrating parent ---------------------------------------------------------------------
def child_command(args, token: str) -> list[str]:
    cmd = [sys.executable, "-m", "gpusim.measure.run", "--in-process", "--out", str(args.out), "--workloads", token,
           "--sizes-from", args.sizes_from, "--reps", str(args.reps), "--warmup", str(args.warmup),
           "--min-seconds", str(args.min_seconds), "--warmup-seconds", str(args.warmup_seconds), "--max-reps", str(args.max_reps), "--seed", str(args.seed),
           "--max-gib", str(args.max_gib), "--cache-dir", str(cache_for(args).directory)]
    return cmd + (["--no-check"] if args.no_check else []) + (["--queued"] if args.queued else []) + \
        (["--nvcc", args.nvcc] if args.nvcc else [])


def remaining(args) -> float:
    """Seconds left before --deadline (infinite without one)."""
    return math.inf if args.deadline is None else args.deadline - (time.monotonic() - args.t_start)


def timing_phase(args, workloads, tokens, env) -> None:
    from gpusim.measure.ncu import child_env

    cache = cache_for(args)
    for wl, token in zip(workloads, tokens):
        sizes = [n for n, _ in marshal.select_sizes(wl, args.sizes_from, args.max_gib)]
        if remaining(args) < 5:
            say(f"[time] {wl.name}: SKIPPED, --deadline reached")
            for n in sizes:
                rec = record.new_record(wl.name, n, env)
                rec["skipped"] = "--deadline reached before this workload"
                record.write_record(args.out, rec)
            continue
        say(f"[time] {wl.name}")
        before = {n: record.record_path(args.out, wl.name, n).stat().st_mtime
                  if record.record_path(args.out, wl.name, n).exists() else None for n in sizes}
        timeout = min(args.child_timeout, remaining(args))
        rc, _, err = run_group(child_command(args, token), timeout, capture_stdout=False, env=child_env(REPO_ROOT))
        why = f"child exited {rc}: " + " | ".join(err.strip().splitlines()[-3:])
        if rc != 0:
            sys.stderr.write(err[-800:])
        for n in sizes:  # sizes the child never wrote: record why
            path = record.record_path(args.out, wl.name, n)
            if not path.exists() or path.stat().st_mtime == before[n]:
                try:
                    rec = base_record(wl, n, env, cache)
                    rec.pop("_cubin")
                except Exception as exc:
                    rec = record.new_record(wl.name, n, env)
                    why = f"{why}; {one_line(exc)}"
                rec["error"] = why[:500]
                record.write_record(args.out, rec)
                say(progress(rec))


def ncu_sizes(rule: str, sizes: list[int]) -> list[int]:
    if rule == "all" or not sizes:
        return sizes
    if rule == "largest":
        return [max(sizes)]
    if rule == "smallest":
        return [min(sizes)]
    wanted = {int(x) for x in rule.split(",") if x.strip()}
    return [n for n in sizes if n in wanted]


def grid_of(info: dict) -> list[int] | None:
    """ncu's 'Grid Size' column, '(16, 16, 1)' -> [16, 16, 1]."""
    import re
    vals = [int(x) for x in re.findall(r"\d+", str(info.get("Grid Size", "")))]
    return vals or None


def ncu_phase(args, workloads, tokens, ncu: str, env: dict) -> None:
    """One ncu run per workload, profiling one launch of each selected size (in size order)."""
    from gpusim.measure.ncu import NcuProfiler, child_env

    prof = NcuProfiler(ncu, args.out, timeout=args.ncu_timeout, env=child_env(REPO_ROOT), metric_set=args.ncu_metrics)
    cache = cache_for(args)
    for wl, token in zip(workloads, tokens):
        sizes = [n for n, skip in marshal.select_sizes(wl, args.sizes_from, args.max_gib) if not skip]
        recs = {}
        for n in ncu_sizes(args.ncu_sizes, sizes):
            path = record.record_path(args.out, wl.name, n)
            try:
                rec = json.loads(path.read_text()) if path.exists() else base_record(wl, n, env, cache)
                rec.pop("_cubin", None)
            except Exception as exc:  # no cubin, no kernel to profile
                say(f"  ncu {wl.name} n={n}: ERROR {one_line(exc)}")
                continue
            if (rec.get("kernel") or {}).get("mangled"):
                recs[n] = rec
        if not recs:
            continue
        if remaining(args) < 10:
            say(f"  ncu {wl.name}: SKIPPED, --deadline reached")
            continue
        prof.timeout = min(args.ncu_timeout, remaining(args))
        order = sorted(recs)
        child = [sys.executable, "-m", "gpusim.measure.run", "--single", token, "--size", ",".join(map(str, order)),
                 "--seed", str(args.seed), "--cache-dir", str(cache.directory)]
        t0 = time.monotonic()
        res = prof.profile(wl.name, base_name(wl.kernel), child, count=len(order))
        for i, n in enumerate(order):
            rec = recs[n]
            k = res["kernels"][i] if i < len(res["kernels"]) else None
            rec["ncu"] = {"metric_set": args.ncu_metrics, "metrics": k["metrics"] if k else {},
                          "kernel": k["info"] if k else None,
                          "launch_index": i, "launches_profiled": len(res["kernels"]), "primed": True,
                          "commands": res["commands"],
                          "logs": [Path(p).name for p in res["logs"]], "rejected": res["rejected"],
                          "error": res["error"] if not k else None}
            if k and grid_of(k["info"]) and grid_of(k["info"]) != rec["launch"].get("grid"):
                rec["ncu"]["error"] = f"ncu grid {grid_of(k['info'])} != launch grid {rec['launch'].get('grid')}"
            rec["commands"]["ncu"] = res["commands"]
            record.write_record(args.out, rec)
        cyc = [((k["metrics"].get("gpc__cycles_elapsed.max") or {}).get("value")) for k in res["kernels"]]
        say(f"  ncu {wl.name} n={','.join(map(str, order))}: {len(res['kernels'])} launches, "
            f"{len(res['kernels'][0]['metrics']) if res['kernels'] else 0} metrics, gpc cycles {cyc}, "
            f"{time.monotonic() - t0:.1f} s" + (f" ERROR {res['error'][:150]}" if res["error"] else ""))


def orchestrate(args) -> int:
    t_start = args.t_start = time.monotonic()
    args.out.mkdir(parents=True, exist_ok=True)
    workloads, tokens = [], []
    for token in (args.workloads.split(",") if args.workloads else []) or [None]:
        try:
            found = load_workloads(token.strip() if token else None)
        except Exception as exc:  # a bad spec: say so and measure the others
            say(f"[spec] {token}: ERROR {one_line(exc)}")
            continue
        workloads += found
        tokens += [token.strip()] if token else [str(wl.spec_path) for wl in found]
    cache = cache_for(args)
    ncu = find_tool("ncu", override=args.ncu_path) if args.ncu else None
    env = environment(cache.nvcc_version, tool_version(ncu) if ncu else None, None)
    env["nvcc_path"], env["ncu_path"] = cache.nvcc, ncu
    (args.out / "env.json").write_text(json.dumps(env, indent=1))
    say(f"[env] {env['gpu'].get('name')} driver {env['gpu'].get('driver_version')}; nvcc {env['nvcc']}; "
        f"ncu {env['ncu'] or '-'}; {len(workloads)} workloads")
    for wl in workloads:  # phase 1: compile once, before any GPU work
        try:
            built = cache.build(wl)
            say(f"[build] {wl.name}: {built['mangled']} ({'cached' if built['cached'] else 'compiled'})")
        except BuildError as exc:
            say(f"[build] {wl.name}: ERROR {exc}")
    if args.reps > 0 or not args.no_check:
        if args.no_isolate:
            in_process(args, workloads)
        else:
            timing_phase(args, workloads, tokens, env)
    if args.ncu:
        if not ncu:
            say("[ncu] ncu not found (PATH, /opt/nvidia/nsight-compute/*/ncu); pass --ncu-path")
        else:
            say(f"[ncu] {ncu}")
            ncu_phase(args, workloads, tokens, ncu, env)
    records = []
    for wl in workloads:
        for n, _ in marshal.select_sizes(wl, args.sizes_from, args.max_gib):
            path = record.record_path(args.out, wl.name, n)
            if path.exists():
                records.append(json.loads(path.read_text()))
    record.write_summary(args.out, records)
    say(record.table(records))
    say(f"[done] {len(records)} records in {args.out} ({time.monotonic() - t_start:.0f} s)")
    return 0


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.single is not None:
        return single(args)
    if args.in_process:
        in_process(args, load_workloads(args.workloads))
        return 0
    return orchestrate(args)


if __name__ == "__main__":
    sys.exit(main())
