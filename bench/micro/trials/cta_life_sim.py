#!/usr/bin/env python3
"""gpusim's side of bench/micro/cta_life.py: the same summaries (slot_cycles, life_cycles, load_cycles,
store_spread) from the object engine's own events for a user's copy spec.

    python3 bench/micro/trials/cta_life_sim.py SPEC.yaml --size N [gpusim run options...]

A CTA's start is its first warp's first issue, a warp's "store issue" the issue of its global store (as
cta_life.cu reads its clock just after the store issues).
"""
import json
import sys

import numpy as np

from gpusim.timing import sm as smmod
from gpusim.timing.gpu import GPU
from gpusim.timing.static import GSTORE

GPU.engine = "objects"
first: dict = {}  # warp gid -> (sm, cta, first issue)
store: dict = {}  # warp gid -> store issue
_execute = smmod.SM._execute


clock_pcs: set = set()  # instructions reading the SM clock (cta_life.cu's kernels: t0, t1)


def _rec(self, sp, w, pc, now):
    if not clock_pcs:
        clock_pcs.update(i for i, ins in enumerate(self.gpu.program.instructions) if "SR_CLOCKLO" in ins.text)
        clock_pcs.add(-1)
    if w.pos == 0:
        first[w.gid] = (self.index, w.cta.cid, now)
    # t1: cta_life.cu's second clock read; else (cta_rate.cu's copies) the global store's issue
    if pc in clock_pcs:  # (the later read overwrites the earlier)
        store[w.gid] = now
    elif len(clock_pcs) == 1 and self.execute_facts[pc][0] == GSTORE and w.gid not in store:
        store[w.gid] = now
    return _execute(self, sp, w, pc, now)


smmod.SM._execute = _rec


def summary() -> dict:
    from collections import defaultdict
    ctas = defaultdict(list)
    for g, (s, c, t0) in first.items():
        if g in store:
            ctas[(s, c)].append((t0, store[g]))
    by_sm = defaultdict(list)
    for (s, c), ws in ctas.items():
        by_sm[s].append(min(t for t, _ in ws))
    slots = []
    keep = set()
    per_sm = None
    for s, starts in by_sm.items():
        t = np.sort(starts)
        lo, hi = t[0] + 0.1 * (t[-1] - t[0]), t[0] + 0.9 * (t[-1] - t[0])
        mid = t[(t >= lo) & (t <= hi)]
        if len(mid) > 1:
            slots.append((mid[-1] - mid[0]) / (len(mid) - 1))
        keep |= {(s, c) for (s2, c), ws in ctas.items() if s2 == s and lo <= min(x for x, _ in ws) <= hi}
    life = [max(b for _, b in ctas[k]) - min(a for a, _ in ctas[k]) for k in keep]
    load = [b - a for k in keep for a, b in ctas[k]]
    spread = [max(b for _, b in ctas[k]) - min(b for _, b in ctas[k]) for k in keep]
    q = lambda x: {"mean": round(float(np.mean(x)), 1), "p50": round(float(np.median(x)), 1),
                   "p95": round(float(np.percentile(x, 95)), 1)} if len(x) else {}
    return {"start_interval_per_sm": q(slots), "life_cycles": q(life), "load_cycles": q(load), "store_spread": q(spread),
            "ctas_kept": len(keep)}


if __name__ == "__main__":
    from gpusim.cli import app
    try:
        app(["run"] + sys.argv[1:])
    except SystemExit:
        pass
    print(json.dumps(summary()))
