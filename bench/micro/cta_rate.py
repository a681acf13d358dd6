#!/usr/bin/env python3
"""gpusim H100 microbenchmark: the rate at which the chip gets through CTAs when a grid has many more
than the SMs hold, whether that rate is the SM's or the chip's, whether it is the CTAs' starts (a first
wave's) or their ends, and what it does to copies of short CTAs (cta_rate.cu beside this file says what
runs; gpusim's `cta_retire_cycles`).

    python3 bench/micro/cta_rate.py --out RESULTS.json     # on the GPU machine (cupy, nvcc, ncu), ~1 minute
    python3 bench/micro/cta_rate.py --dry-run              # compile only, list the cases

Three parts:
- `ncu`: each case of CASES launched once under Nsight Compute (`--cache-control all`, `--clock-control
  none`): gpc__cycles_elapsed.max, gpu__time_duration.sum, DRAM bytes. Empty CTAs of 32-1024 threads,
  64-4096 per SM; CTAs of 8 warps spinning 0-2,000 cycles, 8 resident per SM, 512 per SM; copies of one float
  or one float4 per thread over 256 MiB with 64-1024 threads per CTA; the same copies of one float, float2
  or float4 per step as grid-stride loops of 8 CTAs per SM.
- `events`: the same cases timed with CUDA events, median of 10 launches after 2 (host-paced).
- `order`: per SM, which CTAs of a grid's first wave it got and how far apart they started (`stamp`).
- `beside`: 4,096 empty CTAs per SM launched on one stream while `hog` CTAs (one fills an SM) keep 0, 33,
  66 or 99 SMs busy from another: if the launch rate is each SM's, the grid takes longer on fewer SMs; if it
  is the chip's, as long. Also the SMs each grid's CTAs ran on (`empty_sm`'s counts, the hogs' SM ids).
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run_micro import micro_build, micro_parser, ncu_raw_rows, run_cmd, run_meta, write_json  # noqa: E402

SRC = os.path.join(HERE, "cta_rate.cu")
METRICS = ["gpc__cycles_elapsed.max", "gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum"]
KERNELS = ("empty_k", "spin_k", "copy1", "copy4", "copy1_gs", "copy2_gs", "copy4_gs")
COPY_BYTES = 256 << 20
SHARED_MAX = 227 * 1024  # the largest dynamic shared memory of one CTA: a hog leaves none to others


def cases() -> list[dict]:
    """The launches of the `ncu` and `events` parts, in order."""
    out = [{"kernel": "empty_k", "block": b, "per_sm": k} for b in (32, 256, 1024) for k in (64, 512, 4096)]
    out += [{"kernel": "empty_k", "block": 128, "per_sm": 512}]
    out += [{"kernel": "spin_k", "block": 256, "per_sm": 512, "spin": s} for s in (0, 250, 500, 1000, 2000)]
    out += [{"kernel": k, "block": b} for k in ("copy1", "copy4") for b in (64, 128, 256, 1024)]
    out += [{"kernel": k, "block": 256} for k in ("copy1_gs", "copy2_gs", "copy4_gs")]
    return out


def launcher(mod, cp, np, sms: int, c: dict, bufs: dict):
    """A function launching case `c` once (buffers from `bufs`, made on first use)."""
    f = mod.get_function(c["kernel"])
    if c["kernel"] == "empty_k":
        return lambda: f((sms * c["per_sm"],), (c["block"],), ())
    if c["kernel"] == "spin_k":
        sink = bufs.setdefault("sink", cp.zeros(1024, dtype=cp.float32))
        return lambda: f((sms * c["per_sm"],), (c["block"],), (np.int32(c["spin"]), sink))
    a = bufs.setdefault("a", cp.ones(COPY_BYTES // 4, dtype=cp.float32))
    b = bufs.setdefault("b", cp.zeros(COPY_BYTES // 4, dtype=cp.float32))
    if c["kernel"].endswith("_gs"):  # grid-stride: 8 CTAs per SM, all resident
        n = COPY_BYTES // {"copy1_gs": 4, "copy2_gs": 8, "copy4_gs": 16}[c["kernel"]]
        return lambda: f((8 * sms,), (c["block"],), (a, b, np.int64(n)))
    n = COPY_BYTES // (4 if c["kernel"] == "copy1" else 16)
    return lambda: f((n // c["block"],), (c["block"],), (a, b, np.int32(n)))


def ncu_child(cubin: str) -> None:
    import cupy as cp
    import numpy as np
    mod = cp.RawModule(path=cubin)
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    bufs: dict = {}
    for c in cases():
        launcher(mod, cp, np, sms, c, bufs)()
        cp.cuda.runtime.deviceSynchronize()


def run_ncu(ncu: str, cubin: str) -> dict:
    cmd = [ncu, "--csv", "--page", "raw", "--clock-control", "none", "--metrics", ",".join(METRICS),
           sys.executable, os.path.abspath(__file__), "--ncu-child", cubin]
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=500)
    rows = ncu_raw_rows(r.stdout, KERNELS)
    want = cases()
    out = []
    for c, row in zip(want, rows):
        v = lambda k: float(row[k].replace(",", "")) if row.get(k) not in (None, "", "n/a") else None  # noqa: E731
        out.append(dict(c, kernel_name=row.get("Kernel Name"), grid=row.get("Grid Size"), **{k: v(k) for k in METRICS}))
    return {"command": " ".join(map(shlex.quote, cmd)), "seconds": round(time.time() - t, 1), "returncode": r.returncode,
            "rows_expected": len(want), "rows_parsed": len(rows), "stderr_tail": r.stderr[-1500:], "cases": out}


def event_ms(cp, fn, reps: int = 10, stream=None) -> float:
    """Median CUDA-event time of `fn` (launched on `stream`, default the current one), after 2 warm-ups."""
    times = []
    for i in range(reps + 2):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record(stream)
        fn()
        e1.record(stream)
        e1.synchronize()
        if i >= 2:
            times.append(cp.cuda.get_elapsed_time(e0, e1))
    return statistics.median(times)


def measure(cubin: str) -> dict:
    import cupy as cp
    import numpy as np
    mod = cp.RawModule(path=cubin)
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    bufs: dict = {}
    events = []
    for c in cases():
        events.append(dict(c, event_ms=round(event_ms(cp, launcher(mod, cp, np, sms, c, bufs)), 5)))
        print(json.dumps(events[-1]), flush=True)
    # beside: empty CTAs on stream s2 while hogs hold some SMs from stream s1
    hog, empty, empty_sm = mod.get_function("hog"), mod.get_function("empty_k"), mod.get_function("empty_sm")
    hog.max_dynamic_shared_size_bytes = SHARED_MAX
    s1, s2 = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    sink = cp.zeros(1024, dtype=cp.float32)
    grid = sms * 4096
    beside = []
    for nhog in (0, 33, 66, 99, 0):
        sm_of = cp.full(max(1, nhog), 999, dtype=cp.uint32)
        cnt = cp.zeros(1024, dtype=cp.uint32)

        def start_hogs():
            if nhog:
                with s1:
                    hog((nhog,), (1024,), (np.int32(8_000_000), np.float32(1.0001), sink, sm_of), shared_mem=SHARED_MAX)
                time.sleep(0.0005)  # let them take their SMs

        times = []
        for rep in range(4):
            start_hogs()
            with s2:
                t = event_ms(cp, lambda: empty((grid,), (32,), ()), reps=1, stream=s2)
            s1.synchronize()
            if rep:
                times.append(t)
        start_hogs()
        with s2:
            empty_sm((grid,), (32,), (cnt,))
        s2.synchronize()
        s1.synchronize()
        counts = cp.asnumpy(cnt)[:sms]
        hog_sms = sorted(set(int(x) for x in cp.asnumpy(sm_of))) if nhog else []
        r = {"hog_ctas": nhog, "empty_ctas": grid, "block": 32, "event_ms_median": round(statistics.median(times), 5),
             "event_ms": [round(x, 5) for x in times], "hog_sms_distinct": len(hog_sms),
             "sms_running_empty_ctas": int((counts > 0).sum()),
             "empty_ctas_on_hog_sms": int(sum(int(counts[s]) for s in hog_sms if s < sms)),
             "empty_ctas_per_sm_range": [int(counts[counts > 0].min()), int(counts.max())] if counts.any() else None}
        print(json.dumps(r), flush=True)
        beside.append(r)
    return {"events": events, "beside": beside, "order": first_wave_order(mod, cp, np, sms)}


def first_wave_order(mod, cp, np, sms: int) -> list:
    """`stamp` CTAs of 256 threads (8 per SM at once), 3 waves, spinning 4,000 cycles: per SM the CTA ids
    it ran first and how far apart (its own clock) the first wave's 8 CTAs started; over the chip, the
    first wave's starts on %globaltimer."""
    f = mod.get_function("stamp")
    res = []
    for per_sm, waves in ((8, 3), (2, 3)):
        grid = sms * per_sm * waves
        out = cp.zeros(grid * 3, dtype=cp.int64)
        shared = 0 if per_sm == 8 else 100 * 1024  # (two CTAs of 256 threads per SM)
        if shared:
            f.max_dynamic_shared_size_bytes = shared
        f((grid,), (256,), (out, np.int32(4000)), shared_mem=shared)
        cp.cuda.runtime.deviceSynchronize()
        o = cp.asnumpy(out).reshape(-1, 3)
        spreads, firsts, gaps = [], [], []
        for s in range(sms):
            idx = np.flatnonzero(o[:, 0] == s)
            idx = idx[np.argsort(o[idx, 1])][:per_sm]
            st = np.sort(o[idx, 1])
            spreads.append(int(st[-1] - st[0]))
            gaps.extend(np.diff(st).tolist())
            firsts.append(sorted(int(i) for i in idx))
        g0 = o[: sms * per_sm, 2]
        r = {"ctas_per_sm": per_sm, "grid": grid,
             "first_wave_spread_cycles_quartiles": [float(x) for x in np.percentile(spreads, [25, 50, 75])],
             "first_wave_gap_cycles_quartiles": [float(x) for x in np.percentile(gaps, [25, 50, 75])],
             "first_wave_ctas_of_sms_0_to_3": firsts[:4],
             "first_wave_globaltimer_span_ns": int(g0.max() - g0.min()),
             "sm_of_ctas_0_to_15": [int(x) for x in o[:16, 0]]}
        print(json.dumps(r), flush=True)
        res.append(r)
    return res


def main() -> int:
    ap = micro_parser(__doc__, ncu_child=True)
    args = ap.parse_args()
    if args.ncu_child:
        ncu_child(args.ncu_child)
        return 0
    comp = micro_build(ap, args, "cta_rate.py", SRC)
    if comp is None:
        return 2
    if args.dry_run:
        print(json.dumps({**comp, "cases": len(cases())}))
        return 0
    errors: list = []
    ncu = shutil.which("ncu") or "/opt/nvidia/nsight-compute/2025.3.1/ncu"
    R = {"meta": run_meta(comp, errors, ncu_version=run_cmd([ncu, "--version"]).strip().splitlines()[-1]),
         "errors": errors}
    R.update(measure(comp["cubin"]))
    write_json(args.out, R)  # (the in-process parts, kept should Nsight's pass fail)
    R["ncu"] = run_ncu(ncu, comp["cubin"])
    write_json(args.out, R)
    for c in R["ncu"]["cases"]:
        print(json.dumps({k: c.get(k) for k in ("kernel", "block", "per_sm", "spin", "gpc__cycles_elapsed.max",
                                                 "gpu__time_duration.sum", "dram__bytes_read.sum")}))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
