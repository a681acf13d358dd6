"""Derive the MUFU interpolation tables (gpusim/emu/mufu_tab.py) from the exhaustive H100 measurement.

Input: the folder written by bench/micro/mufu_tables.py (not in git; sha256 list in
bench/micro/mufu_h100.sha256). Structure (Tesla SFU as documented by envytools nvhw/sfu.c, which the
H100 data follow): the top mantissa bits index a table of integer triples (C0, C1, C2); the low bits x
enter linearly and through a truncated squarer; P = C0 << a + C1*x + C2*sq(x) << b + K; the result is
P >> s (SIN/COS: P normalised and truncated; measured as functions of x, the MUFU operand being the
compiler's FMUL.RZ(x, 1/2pi): Spec.operand). For each segment this script finds integer coefficients that put P inside the interval every
measured output allows: least squares for an estimate, then a scan of (C1, C2) around it, with the
range of C0 that fits every point computed directly. A segment is only written if some triple
reproduces every measured output of that segment exactly.

    python3 scripts/fit_mufu.py /work/mufu_data [rcp rsq ...]       # fit, write gpusim/emu/mufu_tab.py
                                                                    # (sin or cos: their shared table 'sin')
    python3 scripts/fit_mufu.py /work/mufu_data --check [rcp ...]   # model vs every measured output
    python3 scripts/fit_mufu.py /work/mufu_data --sample            # tests/difftest/golden/mufu_h100_sample.npz
"""
from __future__ import annotations

import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench", "micro"))

import mufu_tables  # noqa: E402  (decode() of the measurement)

from gpusim.emu import mufu  # noqa: E402  (the model: squarer, shapes of each function)


def load_slice(data, name, sign, exp):
    return mufu_tables.decode(name, sign, exp, np.load(os.path.join(data, name + ".npz")))


def solve_segment(lo, hi, a, x, s, r1=48, r2=6):
    """Integer (C0, C1, C2) with lo <= C0*2^a + C1*x + C2*s <= hi for every point, or None."""
    A = np.stack([np.full(x.shape, 2.0 ** a), x.astype(np.float64), s.astype(np.float64)], 1)
    c, *_ = np.linalg.lstsq(A, (lo + hi) / 2.0, rcond=None)
    c1s = np.round(c[1]) + np.arange(-r1, r1 + 1)
    best = None
    for c2 in np.round(c[2]) + np.arange(-r2, r2 + 1):
        v = c1s[:, None].astype(np.int64) * x[None, :] + np.int64(c2) * s[None, :]
        c0lo = -((-(lo[None, :] - v).max(1)) >> a)  # ceil
        c0hi = (hi[None, :] - v).min(1) >> a
        ok = np.nonzero(c0lo <= c0hi)[0]
        for i in ok:
            cand = (int((c0lo[i] + c0hi[i]) // 2), int(c1s[i]), int(c2))
            dist = abs(cand[1] - c[1]) + abs(cand[2] - c[2])
            if best is None or dist < best[0]:
                best = (dist, cand)
    return None if best is None else best[1]


def fit(table, data):
    """Per segment: the pre-shift intervals from the measured slices of every function using the table
    (SIN and COS share one), then solve_segment."""
    users = [(n, sp) for n, sp in mufu.SPEC.items() if (sp.table or n) == table]
    spec = users[0][1]
    los, his, xs, idxs = [], [], [], []
    for name, sp in users:
        for sign, exp in sp.fit_slices:
            u = np.arange(1 << 23, dtype=np.uint32) | np.uint32((sign << 31) | (exp << 23))
            out = load_slice(data, name, sign, exp)
            idx, x, lo, hi = sp.intervals(sp.operand(u), out)
            keep = lo <= hi
            los.append(lo[keep]), his.append(hi[keep]), xs.append(x[keep]), idxs.append(idx[keep])
    lo, hi, x, idx = (np.concatenate(v) for v in (los, his, xs, idxs))
    tab = []
    for j in range(spec.entries):
        k = idx == j
        xj = x[k].astype(np.int64)
        c = solve_segment(lo[k], hi[k], spec.a, xj, spec.sq(xj))
        print(f"{table} segment {j}: {k.sum()} points -> {c}", flush=True)
        if c is None:
            return None
        tab.append(c)
    return tab


def check(name, data):
    """Model vs every measured output: each full slice and the subsample of every (sign, exponent)."""
    spec = mufu.SPEC[name]
    z = np.load(os.path.join(data, name + ".npz"))
    bad = 0
    for key in sorted(k[4:] for k in z.files if k.startswith("res_")):
        sign, exp = map(int, key.split("_"))
        u = np.arange(1 << 23, dtype=np.uint32) | np.uint32((sign << 31) | (exp << 23))
        n = int((spec.model(spec.operand(u)) != load_slice(data, name, sign, exp)).sum())
        print(f"{name} slice {key}: {n} of {u.size} differ")
        bad += n
    u, out = z["sub_in"], z["sub_out"]
    got = spec.model(spec.operand(u))
    n = int((got != out).sum())
    print(f"{name} subsample: {n} of {u.size} differ" + "".join(
        f"\n  in {a:#010x}: H100 {b:#010x} model {c:#010x}" for a, b, c in
        zip(u[got != out][:5], out[got != out][:5], got[got != out][:5])))
    return bad + n


SAMPLE = os.path.join(ROOT, "tests", "difftest", "golden", "mufu_h100_sample.npz")
BASE = {"rcp": (0, 127), "rsq": (0, 127), "lg2": (0, 127), "ex2": (0, 127), "sin": (0, 127), "cos": (0, 127),
        "rcp64h": (0, 1023), "rsq64h": (0, 1023)}


def sample(data, per=128):
    """A small committed sample for tests (tests/test_mufu.py): per function, `per` random points of the
    subsample (every sign and exponent, specials included) and `per` of the base slice, all measured."""
    rng = np.random.default_rng(13)
    out = {}
    for name, (sign, exp) in BASE.items():
        f = "f64" if name.endswith("64h") else name
        z = np.load(os.path.join(data, f + ".npz"))
        pre = name + "." if f == "f64" else ""
        i = rng.choice(z[pre + "sub_in"].size, per, replace=False)
        is64 = f == "f64"
        m = rng.choice(1 << (20 if is64 else 23), per, replace=False).astype(np.uint32)
        full = mufu_tables.decode(name, sign, exp, z)
        u = np.concatenate([z[pre + "sub_in"][i], m | np.uint32((sign << 31) | (exp << (20 if is64 else 23)))])
        out[name] = np.stack([u, np.concatenate([z[pre + "sub_out"][i], full[m]])]).astype(np.uint32)
    np.savez_compressed(SAMPLE, **out)
    print(f"wrote {SAMPLE} ({os.path.getsize(SAMPLE)} bytes)")


def main():
    data = sys.argv[1] if len(sys.argv) > 1 else "/work/mufu_data"
    names = [n for n in sys.argv[2:] if n != "--check"] or list(mufu.SPEC)
    if "--sample" in sys.argv:
        sample(data)
        return
    names = [n for n in names if n != "--sample"]
    if "--check" in sys.argv:
        sys.exit(1 if sum(check(n, data) for n in names) else 0)
    tabs = {}
    for name in dict.fromkeys(mufu.SPEC[n].table or n for n in names):  # tables, each once
        tab = fit(name, data)
        if tab is None:
            print(f"{name}: no exact table with this structure")
            continue
        tabs[name] = tab
    path = os.path.join(ROOT, "gpusim", "emu", "mufu_tab.py")
    old = dict(mufu.TABLES)
    old.update(tabs)
    with open(path, "w") as f:
        f.write('"""MUFU interpolation tables (C0, C1, C2) per segment, fitted to the H100 by scripts/fit_mufu.py\n'
                'from the exhaustive measurement of bench/micro/mufu_tables.py. Generated: do not edit."""\n\n'
                "TABLES = {\n")
        for name, tab in old.items():
            f.write(f"    {name!r}: [\n")
            for c in tab:
                f.write(f"        ({c[0]:#x}, {c[1]}, {c[2]}),\n")
            f.write("    ],\n")
        f.write("}\n")
    print(f"wrote {path}: {', '.join(old)}")


if __name__ == "__main__":
    main()
