#!/usr/bin/env python3
"""gpusim H100 microbenchmark: the CTA turnaround, the cycles an SM's CTA slot stays empty between one
CTA's end and the next CTA's first instruction, by CTA size (warps), CTAs per SM and CTA length
(cta_turnaround.cu beside this file says what runs).

    python3 bench/micro/cta_turnaround.py --out RESULTS.json     # on the GPU machine (cupy, nvcc)
    python3 bench/micro/cta_turnaround.py --dry-run              # compile only

Per case (threads per CTA, CTAs an SM holds at once by shared memory, spin cycles, waves of CTAs): per SM,
CTAs sorted by start; a CTA's turnaround is the start of the k-th CTA after it minus its end, where k is the
number of CTAs the SM holds (the CTA that took its slot, slots freeing in end order); median and quartiles
over all SMs and CTAs past the first wave; also each SM's span per CTA slot against the spin. gpusim models
the turnaround as `cta_launch_cycles` (the delay before a launched CTA's warps can issue).
"""
from __future__ import annotations

import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run_micro import micro_main  # noqa: E402

SRC = os.path.join(HERE, "cta_turnaround.cu")
# (kernel, threads per CTA, CTAs per SM, spin cycles)
CASES = [("cta_spin", 32, 1, 4000), ("cta_spin", 256, 1, 4000), ("cta_spin", 1024, 1, 4000),
         ("cta_spin", 32, 8, 4000), ("cta_spin", 256, 8, 4000), ("cta_spin", 1024, 2, 4000),
         ("cta_spin", 256, 1, 1000), ("cta_spin", 1024, 1, 1000), ("cta_spin", 256, 4, 1000),
         ("cta_regs", 256, 1, 4000), ("cta_regs", 256, 2, 4000)]
WAVES = 12
SHARED_PER_SM = 228 * 1024


def shared_for(ctas_per_sm: int) -> int:
    """Dynamic shared memory per CTA that lets an SM hold `ctas_per_sm` CTAs at most (1 KiB reserved each)."""
    return (SHARED_PER_SM // ctas_per_sm - 1024) // 1024 * 1024 if ctas_per_sm < 32 else 0


def analyse(o, warps: int, ctas_per_sm: int, spin: int) -> dict:
    import numpy as np
    o = o.reshape(-1, warps, 3)
    sm = o[:, 0, 0]
    start, end = o[:, :, 1].min(axis=1), o[:, :, 2].max(axis=1)
    warp_starts = o[:, :, 1].max(axis=1) - start  # the last warp's start after the first's, per CTA
    warp_ends = end - o[:, :, 2].min(axis=1)
    gaps, per_slot, held = [], [], []
    for s in np.unique(sm):
        idx = np.flatnonzero(sm == s)
        st, en = start[idx], end[idx]
        order = np.argsort(st)
        st, en = st[order], en[order]
        k = ctas_per_sm
        # the CTA that took a slot: slots free in end order, the (i + k)-th start follows the i-th end
        ends = np.sort(en)
        g = st[k:] - ends[:len(st) - k]
        gaps.extend(g[k:].tolist())  # past the first wave
        per_slot.append(float(en.max() - st.min()) / (len(idx) / k))
        # CTAs running at once, sampled at every start
        held.extend([int(((st <= t) & (en > t)).sum()) for t in st[k:]])
    q = np.percentile(gaps, [25, 50, 75]) if gaps else [None] * 3
    return {"turnaround_cycles_quartiles": [round(float(x), 1) for x in q],
            "turnaround_cycles_mean": round(float(np.mean(gaps)), 1) if gaps else None,
            "span_per_cta_slot_cycles_median": round(statistics.median(per_slot), 1),
            "ctas_running_at_starts_median": statistics.median(held) if held else None,
            "warp_start_spread_cycles_median": float(np.median(warp_starts)),
            "warp_end_spread_cycles_median": float(np.median(warp_ends)),
            "sms": int(len(np.unique(sm))), "ctas": int(len(start))}


def measure(cubin: str) -> list:
    import cupy as cp
    import numpy as np
    mod = cp.RawModule(path=cubin)
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    sink = cp.zeros(1024, dtype=cp.float32)
    res = []
    for kernel, threads, per_sm, spin in CASES:
        warps = threads // 32
        grid = sms * per_sm * WAVES
        out = cp.zeros(grid * warps * 3, dtype=cp.int64)
        f = mod.get_function(kernel)
        shared = shared_for(per_sm)
        if shared > 48 * 1024:
            f.max_dynamic_shared_size_bytes = shared
        args = (out, np.int32(spin)) if kernel == "cta_spin" else (out, sink, np.int32(spin), np.float32(1.0001))
        reps = []
        for _ in range(3):
            f((grid,), (threads,), args, shared_mem=shared)
            cp.cuda.runtime.deviceSynchronize()
            reps.append(analyse(cp.asnumpy(out), warps, per_sm, spin))
        r = {"kernel": kernel, "threads_per_cta": threads, "ctas_per_sm": per_sm, "spin_cycles": spin,
             "grid": grid, "dynamic_shared_bytes": shared, **reps[-1], "reps": reps}
        print(json.dumps({k: r[k] for k in r if k != "reps"}), flush=True)
        res.append(r)
    return res


def main() -> int:
    return micro_main(__doc__, "cta_turnaround.py", SRC, lambda cubin: {"cases": measure(cubin)})


if __name__ == "__main__":
    sys.exit(main())
