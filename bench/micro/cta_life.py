#!/usr/bin/env python3
"""gpusim H100 microbenchmark: where a short CTA's time goes in a one-shot copy (cta_life.cu beside this
file says what runs). A copy of one float per thread over 256 MiB takes 440 k cycles with 256-thread CTAs
and 515 k with 1,024, where the same copy of float4s takes 343 k and grid-stride loops 360-371 k
(cta_rate_h100.json): this tells whether the CTAs' loads wait longer, their slots stay empty between
CTAs, or a CTA waits for its slowest warp.

    python3 bench/micro/cta_life.py --out RESULTS.json     # on the GPU machine (cupy, nvcc), ~30 s
    python3 bench/micro/cta_life.py --dry-run              # compile only, list the cases

Per case (kernel, threads per CTA), from the last of several launches on the same buffers (256 MiB each),
over the recorded CTAs (one in 8) that start between 10% and 90% of their SM's span:
- `slot_cycles_from_starts`: how long a CTA holds its slot: CTAs per SM x the mean time between two CTA
  starts on an SM (from the recorded CTAs' starts); `slot_cycles_from_event`: the same from the event time;
- `life_cycles`: a CTA's first warp start to its last warp's store issue (quantiles);
- `load_cycles`: each warp's start to its store issue (its load's latency) (quantiles);
- `warp_start_spread`, `store_spread`: a CTA's first to last warp start, first to last store issue;
- `copy1s`: copy1 with the load's use (t1) and the store's issue (t2) read apart: `store_issue_cycles`
  (t2 - t1 per warp; all recorded CTAs) and `life_to_store_cycles` (first start to last store issue);
- `event_ms`: median of 5 launches, with the records and (copy1) without, to tell what recording costs.
"""
from __future__ import annotations

import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run_micro import micro_main  # noqa: E402

SRC = os.path.join(HERE, "cta_life.cu")
COPY_BYTES = 256 << 20
SHIFT = 3  # one CTA in 2^SHIFT records its warps
CASES = [("copy1", b) for b in (64, 128, 256, 512, 1024)] + [("copy4", b) for b in (256, 1024)] + \
    [(k, b) for k in ("read1", "write1", "copy1s") for b in (256, 1024)]
QS = (5, 25, 50, 75, 95, 99)


def quantiles(np, x) -> dict:
    x = np.asarray(x, dtype=np.float64)
    if not len(x):
        return {}
    return {"mean": round(float(x.mean()), 1), **{f"p{q}": round(float(np.percentile(x, q)), 1) for q in QS}}


def analyse(np, block: int, warp, sm) -> dict:
    """The summaries of one launch's records (see the module docstring): `warp` (recorded CTA, warp,
    [t0, t1]), `sm` the recorded CTAs' SMs."""
    per_sm = min(32, 2048 // block)
    t0, t1 = warp[:, :, 0].astype(np.int64), warp[:, :, 1].astype(np.int64)
    start = t0.min(1)
    gaps, keep = [], np.zeros(len(start), dtype=bool)
    for s in np.unique(sm):
        idx = np.flatnonzero(sm == s)
        t = np.sort(start[idx])
        lo, hi = t[0] + 0.1 * (t[-1] - t[0]), t[0] + 0.9 * (t[-1] - t[0])
        mid = t[(t >= lo) & (t <= hi)]
        if len(mid) > 1:
            gaps.append((mid[-1] - mid[0]) / (len(mid) - 1))
        keep[idx[(start[idx] >= lo) & (start[idx] <= hi)]] = True
    t0, t1 = t0[keep], t1[keep]
    every = 1 << SHIFT
    return {"ctas_per_sm": per_sm, "recorded_ctas": int(len(start)), "recorded_ctas_kept": int(keep.sum()),
            "sms": int(len(np.unique(sm))),
            # an SM's recorded CTAs start every `every` of its CTAs on average: a slot turns over per_sm times as often
            "slot_cycles_from_starts": round(float(np.mean(gaps)) * per_sm / every, 1) if gaps else None,
            "life_cycles": quantiles(np, t1.max(1) - t0.min(1)),
            "load_cycles": quantiles(np, (t1 - t0).ravel()),
            "warp_start_spread": quantiles(np, t0.max(1) - t0.min(1)),
            "store_spread": quantiles(np, t1.max(1) - t1.min(1)),
            "load_hist_100cyc": np.bincount(np.minimum((t1 - t0).ravel() // 100, 199)).tolist()}


def measure(cubin: str) -> list:
    import cupy as cp
    import numpy as np
    mod = cp.RawModule(path=cubin)
    a = cp.ones(COPY_BYTES // 4, dtype=cp.float32)
    b = cp.zeros(COPY_BYTES // 4, dtype=cp.float32)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    clock_hz = cp.cuda.runtime.getDeviceProperties(0)["clockRate"] * 1e3
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    res = []
    for kernel, block in CASES:
        n = COPY_BYTES // (16 if kernel == "copy4" else 4)
        grid = n // block
        nrec = -(-grid >> SHIFT)
        warp = cp.zeros(2 * nrec * (block // 32) * (2 if kernel == "copy1s" else 1), dtype=cp.int64)
        sm = cp.zeros(nrec, dtype=cp.uint32)
        life = mod.get_function(kernel + "_life")
        runs = {"life": lambda: life((grid,), (block,), (a, b, np.int32(n), warp, sm, np.int32(SHIFT)))}
        if kernel == "copy1":
            plain = mod.get_function("copy1")
            runs["plain"] = lambda: plain((grid,), (block,), (a, b, np.int32(n)))
        ms = {}
        for name, go in runs.items():
            go()
            times = []
            for _ in range(5):
                start.record()
                go()
                stop.record()
                stop.synchronize()
                times.append(cp.cuda.get_elapsed_time(start, stop))
            ms[name] = round(statistics.median(times), 5)
        runs["life"]()  # the records of this launch (after the timed ones: L2 as the copy leaves it)
        cp.cuda.runtime.deviceSynchronize()
        w = cp.asnumpy(warp)[:2 * nrec * (block // 32)].reshape(nrec, block // 32, 2)
        extra = {}
        if kernel == "copy1s":  # t2: the store's issue; t1 the load's use
            t2 = cp.asnumpy(warp)[2 * nrec * (block // 32):].reshape(nrec, block // 32, 2)[:, :, 0]
            extra = {"store_issue_cycles": quantiles(np, (t2 - w[:, :, 1]).ravel()),
                     "life_to_store_cycles": quantiles(np, t2.max(1) - w[:, :, 0].min(1))}
        r = {"kernel": kernel, "block": block, "grid": grid, "event_ms": ms,
             # how long a slot is held, from the event time at the reported clock (launch overhead included)
             "slot_cycles_from_event": round(ms["life"] * 1e-3 * clock_hz * sms * min(32, 2048 // block) / grid, 1),
             **analyse(np, block, w, cp.asnumpy(sm)), **extra}
        print(json.dumps({k: v for k, v in r.items() if k != "load_hist_100cyc"}), flush=True)
        res.append(r)
        del warp, sm
    return res


def main() -> int:
    return micro_main(__doc__, "cta_life.py", SRC, lambda cubin: {
        "copy_bytes": COPY_BYTES, "record_every": 1 << SHIFT, "cases": measure(cubin)},
        [f"{k} {b}" for k, b in CASES])


if __name__ == "__main__":
    sys.exit(main())
