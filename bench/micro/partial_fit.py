#!/usr/bin/env python3
"""Which structure for partly written L2 lines reproduces the `pkeep` microbenchmarks? (issue 12, DRAM
write bytes; a study for a future change to gpusim/timing/mem/l2.py, nothing here is imported by gpusim.)

    python3 bench/micro/partial_fit.py               # ~4 minutes on one core (H200 fit, then the H100 check)
    python3 bench/micro/partial_fit.py --h100-only   # the H100 check alone (~2 minutes)
    python3 bench/micro/partial_fit.py --scale 16    # finer (slower), to check the scale

The measurements (validation/h100/micro/dram_pkeep_h200.json and its _run1 to _run3, H200, Nsight Compute,
L2 flushed before each launch) are st_keep's grid-stride sweeps (bench/micro/dram_writes.cu): S MiB of
32-byte sectors, each thread writing w0 of a sector's 8 floats with 4-byte stores, then optionally w1
more in a second sweep; `spread` 1 puts a warp store's 32 sectors in 8 lines, 4 in 32 lines; `cpsm` CTAs
of 256 threads per SM on 132 SMs. The cost is the DRAM bytes read (nothing but the stores runs): a
sector read, merged and written. Writes mostly equal the reads; where they do not (one float a sector at
16-32 MiB: fewer writes; 32 MiB finished at once: more, whole lines over the capacity) the reads are the
ones this mechanism moves.

The trace: the grid sweeps in lockstep. In each iteration every thread holds one sector (the sectors
t + k x threads); the iteration's pieces arrive store by store (piece j of every sector, then piece
j + 1), so all of an iteration's lines are open at once: the most concurrency the launch allows. One
event is a (line, sectors) pair a store touches: 4 sectors of a line (spread 1) or one (spread 4).

The candidate structure: a table of E line entries in E / A sets of A ways (lines hashed to sets at
random). A store that writes part of a sector needs its line's entry (allocated if absent). When a set is
full, a victim leaves: `lru` (the least recently written), `fifo` (the oldest allocated) or `random`.
A victim whose line still has a sector neither untouched nor whole has those sectors read, merged and
written (32 bytes written and 32 read each), and they count as whole from then on: their later pieces need
no entry. `free` says whether an entry leaves as soon as its line has no unfinished
sector (True) or stays until evicted (False). E, A, the policy and `free` are fitted by a grid search on
the measured reads (MAE in MiB); everything is at 1/`scale` of the chip (lines, threads, entries).
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
import time
from collections import OrderedDict

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILES = [f"validation/h100/micro/dram_pkeep_h200{s}.json" for s in ("", "_run1", "_run2", "_run3")]
MIB = 1 << 20
SMS, BLOCK = 132, 256


def load_cases() -> list[dict]:
    """st_keep cases (and st_after without a first phase, the same launch), mean over the runs."""
    runs: dict[tuple, list[float]] = {}
    for f in FILES:
        for c in json.load(open(os.path.join(REPO, f)))["ncu"]["cases"]:
            if c["kernel"] not in ("st_keep", "st_after") or c.get("X"):  # (st_keepk: its lines k apart)
                continue
            key = (c["S"], c["w0"], c.get("w1") or 0, c["spread"], c.get("cpsm") or 8)
            runs.setdefault(key, []).append((c["dram_write_MiB"], c["dram_read_MiB"]))
    return [{"S": k[0], "w0": k[1], "w1": k[2], "spread": k[3], "cpsm": k[4], "write": float(np.mean([x[0] for x in v])),
             "read": float(np.mean([x[1] for x in v])), "runs": len(v)} for k, v in sorted(runs.items())]


def events(c: dict, scale: int) -> list[tuple[int, int, int]]:
    """(line, first sector, number of sectors) per store event, in lockstep order (module docstring);
    a piece number is implied by the order: the table only needs how many pieces each sector has had."""
    sectors = c["S"] * MIB // 32 // scale
    threads = c["cpsm"] * SMS * BLOCK // scale
    spread = c["spread"]
    per = sectors // spread
    out = []
    for lo, hi in ((0, c["w0"]), (c["w0"], c["w0"] + c["w1"])):
        if hi <= lo:
            continue
        for k0 in range(0, sectors, threads):
            i = np.arange(k0, min(sectors, k0 + threads))
            s = i if spread == 1 else (i % per) * spread + i // per
            if spread == 1:  # 4 sectors of a line at once (the line's 4 sectors are 4 neighbouring lanes)
                lines = np.unique(s // 4)
                ev = [(int(l), 0, 4) for l in lines]
            else:
                ev = [(int(x // 4), int(x % 4), 1) for x in s]
            out += ev * (hi - lo)
    return out


def simulate(ev, entries: int, ways: int, policy: str, free: bool, seed: int = 1) -> int:
    """Sectors written out (read-modify-write) by the partial-line table; see the module docstring."""
    nsets = max(1, entries // ways)
    rng = random.Random(seed)
    salt = rng.getrandbits(61)
    sets: list[OrderedDict] = [OrderedDict() for _ in range(nsets)]
    pieces: dict[int, list[int]] = {}  # line -> pieces per sector so far (8: whole, or made whole)
    cost = 0
    for line, s0, n in ev:
        p = pieces.get(line)
        if p is None:
            p = pieces[line] = [0, 0, 0, 0]
        if all(p[q] >= 8 for q in range(s0, s0 + n)):  # whole sectors take pieces without an entry
            continue
        st = sets[hash((line, salt)) % nsets]
        if line not in st:
            if len(st) >= ways:
                if policy == "random":
                    victim = rng.choice(list(st))
                    del st[victim]
                else:
                    victim = st.popitem(last=False)[0]
                v = pieces[victim]
                for q in range(4):  # its unfinished sectors are read, merged and written: whole from now on
                    if 0 < v[q] < 8:
                        cost += 1
                        v[q] = 8
            st[line] = None
        elif policy == "lru":
            st.move_to_end(line)
        for q in range(s0, s0 + n):
            p[q] += 1
        if free and all(x == 0 or x >= 8 for x in p):
            del st[line]
    return cost


def predict(evs, scale, entries, ways, policy, free) -> np.ndarray:
    """MiB written out per trace (the chip's, from 1/`scale` of it)."""
    return np.array([simulate(ev, entries // scale, ways, policy, free) * 32 * scale / MIB for ev in evs])


# ---- the H100: st_stride (the `pstride` set) and transpose_naive, with their measured open CTAs ------------
H100_FILE = "validation/h100/micro/dram_pstride_h100.json"
OPEN = "validation/h100/micro/memory11_h100.json"  # st_order: CTAs of an SM between first and last store


def h100_cases() -> list[dict]:
    """st_stride launches at 8 CTAs per SM (open: st_order's ctas8) and at 2 (smem 100 KiB: ctas2), without
    `spin` (that changes no order here), mean over repeats. The cost is the DRAM reads: at 64 MiB the writes
    also carry whole lines over the capacity."""
    opened = {k: v["mean_open_ctas_per_sm"] for k, v in json.load(open(os.path.join(REPO, OPEN)))["st_order"]["cases"].items()}
    runs: dict[tuple, list[float]] = {}
    for c in json.load(open(os.path.join(REPO, H100_FILE)))["ncu"]["cases"]:
        if c.get("spin") or c.get("swap") or c.get("smem") not in (None, 100):
            continue
        runs.setdefault((c["S"], c["k"], 2 if c.get("smem") else 8), []).append(c["dram_read_MiB"])
    return [{"S": s, "k": k, "cpsm": n, "open": opened["ctas8" if n == 8 else "ctas2"], "read": float(np.mean(v))}
            for (s, k, n), v in sorted(runs.items())]


def cta_events(rows: int, k: int, open_per_sm: float, scale: int) -> list[tuple[int, int, int]]:
    """st_stride's stores (rows x 32 k floats; CTA (bx, by) of 32 x 8 threads writes float ty + 8 j of the
    segment at column 32 by of rows 32 bx + lane, j = 0..3: sector j of 32 lines, a piece from each of its
    8 warps; transpose_naive's output stores are the same with k = m / 32), CTAs in launch order (bx
    fastest), `open_per_sm` x 132 of them storing in lockstep at a time: for j, for ty, their 32 lines."""
    gx, gy = rows // 32, k
    ctas = [(bx, by) for by in range(gy) for bx in range(gx)]
    ctas = ctas[: max(1, len(ctas) // scale)]  # 1/scale of the grid, the open CTAs scaled alike
    group = max(1, int(round(open_per_sm * SMS / scale)))
    out = []
    lanes = np.arange(32)
    for g0 in range(0, len(ctas), group):
        gen = ctas[g0:g0 + group]
        lines = [((bx * 32 + lanes) * k + by).tolist() for bx, by in gen]
        for j in range(4):
            for _ty in range(8):
                for ls in lines:
                    out += [(l, j, 1) for l in ls]
    return out


def h100_section(scale: int) -> None:
    cases = h100_cases()
    evs = []
    for c in cases:
        rows = c["S"] * MIB // (4 * 32 * c["k"]) // 32 * 32
        evs.append(cta_events(rows, c["k"], c["open"], scale))
    reads = np.array([c["read"] for c in cases])
    print(f"\nH100: {len(cases)} st_stride launches ({H100_FILE}), CTAs open at once from {OPEN}; "
          f"{sum(map(len, evs)):,} events per evaluation")
    lines_mib = MIB // 128
    tried = []
    for policy in ("lru", "random"):
        for e_mib, ways in itertools.product((1, 2, 3, 4, 6), (4, 16, 32)):
            pred = predict(evs, scale, e_mib * lines_mib, ways, policy, False)
            tried.append((float(np.mean(np.abs(pred - reads))), policy, e_mib, ways, pred))
    mae, policy, e_mib, ways, pred = min(tried, key=lambda t: t[0])
    print(f"best: {policy}, E = {e_mib} MiB of lines in {ways}-way sets, entries staying until evicted "
          f"(read MAE {mae:.2f} MiB)")
    print(f"{'S':>3s} {'k':>3s} {'cpsm':>4s} {'open':>5s} {'read':>6s} {'model':>6s}   (MiB)")
    for c, p in zip(cases, pred):
        print(f"{c['S']:3d} {c['k']:3d} {c['cpsm']:4d} {c['open']:5.2f} {c['read']:6.2f} {p:6.2f}")
    tp_open = json.load(open(os.path.join(REPO, OPEN)))["st_order"]["cases"]["tp_naive"]["mean_open_ctas_per_sm"]
    print(f"\ntranspose_naive (not fitted; its stores are st_stride's with k = m / 32, {tp_open:.1f} CTAs open per SM as "
          f"st_order measured it), extra DRAM reads beyond the input, MiB:")
    for m, measured in ((2048, 3.49), (4096, 13.95), (8192, 64.15)):
        ev = cta_events(m, m // 32, tp_open, scale)
        p = simulate(ev, e_mib * lines_mib // scale, ways, policy, False) * 32 * scale / MIB
        print(f"  m = {m} ({m * m * 4 // MIB} MiB): model {p:6.2f}, measured {measured:6.2f} "
              f"(validate's records, reads - {m * m * 4 // MIB})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=int, default=32, help="simulate 1/scale of the chip (default 32)")
    ap.add_argument("--h100-only", action="store_true", help="only the H100 section")
    a = ap.parse_args(argv)
    t0 = time.time()
    if a.h100_only:
        h100_section(a.scale)
        print(f"\ntotal {time.time() - t0:.0f} s")
        return 0
    cases = load_cases()
    evs = [events(c, a.scale) for c in cases]
    reads = np.array([c["read"] for c in cases])
    writes = np.array([c["write"] for c in cases])
    print(f"partial-line table fit: {len(cases)} st_keep cases (H200), 1/{a.scale} scale, "
          f"{sum(map(len, evs)):,} events per evaluation; fitted to the DRAM reads (one per sector read, merged\n"
          f"and written), the writes shown beside them\n")
    lines_mib = MIB // 128
    tried = []
    for policy, free in itertools.product(("lru", "random"), (False, True)):
        for e_mib, ways in itertools.product((6, 7, 8, 9, 10, 12), (4, 8, 16)):
            pred = predict(evs, a.scale, e_mib * lines_mib, ways, policy, free)
            tried.append((float(np.mean(np.abs(pred - reads))), float(np.mean(np.abs(pred - writes))), policy, free,
                          e_mib, ways, pred))
        top = min((t for t in tried if t[2] == policy and t[3] == free), key=lambda t: t[0])
        print(f"{policy:6s} entries freed when finished: {str(free):5s}  best E = {top[4]:2d} MiB of lines, "
              f"{top[5]:2d} ways: read MAE {top[0]:.2f} MiB, write MAE {top[1]:.2f}  [{time.time() - t0:.0f} s]", flush=True)
    mae_r, mae_w, policy, free, e_mib, ways, pred = min(tried, key=lambda t: t[0])
    print(f"\nbest: {policy}, freed when finished: {free}, E = {e_mib} MiB of lines in {ways}-way sets "
          f"(read MAE {mae_r:.2f} MiB, write MAE {mae_w:.2f})")
    print(f"{'S':>3s} {'w0':>2s} {'w1':>2s} {'spread':>6s} {'cpsm':>4s} {'written':>7s} {'read':>6s} {'model':>6s}   (MiB)")
    for c, p in zip(cases, pred):
        print(f"{c['S']:3d} {c['w0']:2d} {c['w1']:2d} {c['spread']:6d} {c['cpsm']:4d} {c['write']:7.2f} {c['read']:6.2f} {p:6.2f}")
    h100_section(a.scale)
    print(f"\ntotal {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
