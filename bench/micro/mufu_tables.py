"""Exhaustive H100 measurement of the bare MUFU approximations (issue 13, task B: bit-exact MUFU).

Each kernel of bench/micro/mufu.cu runs exactly one MUFU per output through inline PTX
(*.approx.ftz.*; checked in its SASS: MUFU.RCP/RSQ/EX2/LG2/RCP64H/RSQ64H alone, MUFU.SIN/COS after
the compiler's FMUL.RZ by 1/2pi, which no PTX form avoids). The non-ftz f32 forms add pre/post scaling
around the same MUFU (denormal handling), so the bare MUFU flushes denormals.

What is measured, per function (FP32: all 2^32 inputs; 64H forms: all 2^32 high words, low word 0):
  * sweep: every (sign, exponent) slice, a histogram of the residual d = ord(out) - ord(ref) in ulps,
    where ref is the exactly rounded value (float64, FTZ on input and output) and ord() maps the bit
    pattern to a signed integer ordered like the value; plus how many lanes have the same residual as
    the function's base slice of the same sign (and exponent parity for RSQ), NaN counts;
  * full slices (primary ones first, then secondary ones while the size budget lasts): the residual of
    every mantissa as int8, lzma-compressed, with exceptions (|d| > 127, NaNs, or a float64 reference
    within 2^-40 relative of a float32 rounding boundary, where another libm could round the other
    way) stored as full output bits. The reconstruction is out = ref + d, exceptions overriding; the
    sha256 of each slice's raw output bits is kept to check it (decode() below);
  * a subsample: 512 mantissas of every (sign, exponent) slice (first 128, last 128, 256 spread; 64H
    forms 64: 16, 16, 32), full output bits.
Output folder: meta.json + one npz per function group (rcp, rsq, ex2, lg2, sin, cos, f64): 8 files.

    # on the GPU machine (cupy + numpy; the cubin is built here, carried in bench/micro/build)
    python3 bench/micro/mufu_tables.py --out $OUT/mufu
    # here: nvcc 13.0 -> bench/micro/build/mufu.cubin (sha256 checked against mufu.cubin.sha256)
    python3 bench/micro/mufu_tables.py --build
    # here, plumbing test with the exactly rounded stand-in posing as the device (numpy, a few slices)
    python3 bench/micro/mufu_tables.py --fake --out /tmp/mufu_fake
"""
from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CUBIN = os.path.join(HERE, "build", "mufu.cubin")
SHA_FILE = os.path.join(HERE, "mufu.cubin.sha256")
C_2PI = float(np.float32(0.15915493667125701904))  # FMUL.RZ's immediate before MUFU.SIN/COS

# (name, kernel, 64-bit?, primary full slices, secondary full slices); a slice is (sign, exponent)
FUNCS = [
    ("rcp", "k_rcp", False, [(0, 127)], [(1, 127), (0, 128), (0, 1), (0, 2), (0, 252), (0, 253), (0, 254)]),
    ("rsq", "k_rsq", False, [(0, 127), (0, 128)], [(0, 126), (0, 1), (0, 2), (0, 253), (0, 254)]),
    ("lg2", "k_lg2", False, [(0, 127), (0, 126)], [(0, 128), (0, 125), (0, 150), (0, 1), (0, 254)]),
    ("ex2", "k_ex2", False, [(0, 127), (1, 127), (0, 126), (1, 126)],
     [(0, 125), (1, 125), (0, 128), (1, 128), (0, 120), (1, 120), (0, 133), (1, 133), (0, 110), (0, 104)]),
    ("sin", "k_sin", False, [(0, 127), (0, 128), (0, 129)], [(0, 126), (0, 125), (1, 128), (0, 120), (0, 110), (0, 140)]),
    ("cos", "k_cos", False, [(0, 127), (0, 128), (0, 129)], [(0, 126), (0, 125), (1, 128), (0, 120), (0, 110), (0, 140)]),
    ("rcp64h", "k_rcp64h", True, [(0, 1023)], [(1, 1023), (0, 1024), (0, 1), (0, 2), (0, 2045), (0, 2046)]),
    ("rsq64h", "k_rsq64h", True, [(0, 1023), (0, 1024)], [(0, 1022), (0, 1), (0, 2046)]),
]
HIST = 19  # residual bins -8..8, then |d| > 8 finite, then exceptions (NaN or flagged)
BUDGET = 40 << 20  # bytes of full-slice data in all npz files together (the device returns at most 64 MiB, 16 MiB a file)


def geometry(is64):
    """(mantissa bits, exponent bits) of the 32-bit input word."""
    return (20, 11) if is64 else (23, 8)


def slice_inputs(xp, sign, exp, is64):
    mb, _ = geometry(is64)
    base = (sign << 31) | (exp << mb)
    return xp.arange(1 << mb, dtype=xp.uint32) + xp.uint32(base)


def subsample_mantissas(is64):
    mb, _ = geometry(is64)
    n = 1 << mb
    k = 16 if is64 else 128  # 64H: 4096 slices, 64 mantissas each
    spread = np.linspace(k, n - k - 1, 2 * k).astype(np.uint32)
    return np.concatenate([np.arange(k), spread, np.arange(n - k, n)]).astype(np.uint32)


# ---- the exactly rounded reference (same code for numpy and cupy) ------------------------------------
def _f32_bits_to_f64(xp, u):
    x = u.view(xp.float32).astype(xp.float64)
    tiny = xp.abs(x) < 2.0 ** -126  # FTZ input
    return xp.where(tiny, xp.copysign(0.0, x), x)


def _rz_f32(xp, p):
    """float64 -> float32 rounded toward zero (p is an exact product of two floats)."""
    r = p.astype(xp.float32)
    over = xp.abs(r.astype(xp.float64)) > xp.abs(p)
    return xp.where(over, xp.nextafter(r, xp.float32(0)), r)


def ref64(xp, name, u):
    """The exact value (float64) of the function for 32-bit input words u."""
    with np.errstate(all="ignore"):
        if name in ("rcp64h", "rsq64h"):
            x = (u.astype(xp.uint64) << xp.uint64(32)).view(xp.float64)
            x = xp.where(xp.abs(x) < 2.0 ** -1022, xp.copysign(0.0, x), x)
            return 1.0 / x if name == "rcp64h" else 1.0 / xp.sqrt(x)
        x = _f32_bits_to_f64(xp, u)
        if name == "rcp":
            return 1.0 / x
        if name == "rsq":
            return 1.0 / xp.sqrt(x)
        if name == "ex2":
            return xp.exp2(x)
        if name == "lg2":
            return xp.log2(x)
        y = _rz_f32(xp, x * C_2PI).astype(xp.float64)  # revolutions, as FMUL.RZ computes them
        f = y - xp.rint(y)  # exact; in [-0.5, 0.5]
        f = xp.where(xp.isfinite(y), f, xp.nan)
        return xp.sin(2 * np.pi * f) if name == "sin" else xp.cos(2 * np.pi * f)


def ref_bits(xp, name, u):
    """(reference output word, flagged): the exactly rounded result's bits (FTZ), and the lanes whose
    float64 value lies within 2^-40 relative of a rounding boundary."""
    r = ref64(xp, name, u)
    with np.errstate(all="ignore"):
        if name in ("rcp64h", "rsq64h"):
            r = xp.where(xp.abs(r) < 2.0 ** -1022, xp.copysign(0.0, r), r)
            hi = lambda v: (v.view(xp.uint64) >> xp.uint64(32)).astype(xp.uint32)  # noqa: E731
            bits = hi(r)
            flag = hi(r * (1 - 2.0 ** -40)) != hi(r * (1 + 2.0 ** -40))
            return bits, flag & xp.isfinite(r) & (r != 0)
        f = r.astype(xp.float32)
        f = xp.where(xp.abs(f) < xp.float32(2.0 ** -126), xp.copysign(xp.float32(0), f), f)
        lo, hi_ = (r * (1 - 2.0 ** -40)).astype(xp.float32), (r * (1 + 2.0 ** -40)).astype(xp.float32)
        flag = (lo != hi_) & xp.isfinite(r) & (r != 0)
        return f.view(xp.uint32), flag


def ordered(xp, bits):
    v = (bits & xp.uint32(0x7FFFFFFF)).astype(xp.int64)
    return xp.where(bits >> xp.uint32(31) != 0, -v, v)


def is_nan(xp, bits, is64):
    if is64:
        return ((bits & xp.uint32(0x7FF00000)) == xp.uint32(0x7FF00000)) & ((bits & xp.uint32(0xFFFFF)) != 0)
    return ((bits & xp.uint32(0x7F800000)) == xp.uint32(0x7F800000)) & ((bits & xp.uint32(0x7FFFFF)) != 0)


def residual(xp, name, is64, u, out):
    """(d as int64, exception mask)."""
    rb, flag = ref_bits(xp, name, u)
    d = ordered(xp, out) - ordered(xp, rb)
    exc = flag | is_nan(xp, out, is64) | is_nan(xp, rb, is64)
    return d, exc


def decode(name, sign, exp, blob):
    """The measured output words of one full slice from its stored parts (numpy): blob is the npz."""
    is64 = name.endswith("64h")
    key = f"{sign}_{exp}"
    blob = {k[len(name) + 1:] if k.startswith(name + ".") else k: blob[k] for k in blob}  # f64.npz: prefixed
    u = slice_inputs(np, sign, exp, is64)
    d = np.frombuffer(lzma.decompress(blob["res_" + key].tobytes()), np.int8).astype(np.int64)
    rb, _ = ref_bits(np, name, u)
    o = ordered(np, rb) + d
    out = np.where(o < 0, (-o) | (1 << 31), o).astype(np.uint32)
    out[blob["exi_" + key]] = blob["exo_" + key]
    return out


# ---- the device ----------------------------------------------------------------------------------
class Device:
    def __init__(self, cubin):
        import cupy

        self.cp = cupy
        self.mod = cupy.RawModule(path=cubin)
        self.k = {}

    def run(self, kernel, u, is64):
        cp = self.cp
        k = self.k.setdefault(kernel, self.mod.get_function(kernel))
        n = int(u.size)
        out = cp.empty(2 * n if is64 else n, dtype=cp.uint32)
        k(((n + 255) // 256,), (256,), (u, out, np.uint32(n)))
        if is64:
            return out[0::2].copy(), out[1::2].copy()
        return out, None

    def info(self):
        cp = self.cp
        p = cp.cuda.runtime.getDeviceProperties(0)
        return {"name": p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"]),
                "driver": cp.cuda.runtime.driverGetVersion(), "runtime": cp.cuda.runtime.runtimeGetVersion(),
                "cupy": cp.__version__}


class Fake:
    """The exactly rounded stand-in posing as the device (numpy): tests the plumbing only."""

    cp = np

    def run(self, kernel, u, is64):
        name = kernel[2:]
        rb, _ = ref_bits(np, name, u)
        return (rb, np.zeros_like(rb)) if is64 else (rb, None)

    def info(self):
        return {"name": "fake (exactly rounded stand-in)"}


def sha256_file(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def build():
    nvcc = os.environ.get("GPUSIM_NVCC13", "nvcc")
    os.makedirs(os.path.dirname(CUBIN), exist_ok=True)
    subprocess.run([nvcc, "-arch=sm_90", "-O3", "-cubin", "-o", CUBIN, os.path.join(HERE, "mufu.cu")], check=True)
    print(f"{CUBIN}: sha256 {sha256_file(CUBIN)}")


def measure(dev, out_dir, fake=False):
    xp = dev.cp
    os.makedirs(out_dir, exist_ok=True)
    t0 = time.time()
    meta = {"device": dev.info(), "hist_bins": "d=-8..8, |d|>8 finite, exception", "functions": {}}
    if not fake:
        meta["cubin_sha256"] = sha256_file(CUBIN)
    used = 0
    f64 = {}
    for name, kernel, is64, primary, secondary in FUNCS:
        mb, eb = geometry(is64)
        n_exp = 1 << eb
        exps = range(n_exp) if not fake else sorted({e for _, e in primary + secondary} | {0, n_exp - 1})
        hist = np.zeros((2, n_exp, HIST), np.int64)
        same = np.full((2, n_exp), -1, np.int64)
        nan_out = np.zeros((2, n_exp), np.int64)
        lo_nonzero = np.zeros((2, n_exp), np.int64)
        base_res = {}
        base_of = (lambda s, e: (s, 1023 + ((e - 1023) & 1)) if is64 else (s, 127 + ((e - 127) & 1))) \
            if name.startswith("rsq") else (lambda s, e: (s, 1023 if is64 else 127))
        order = sorted({base_of(s, e) for s in (0, 1) for e in exps}) + [(s, e) for s in (0, 1) for e in exps]
        seen = set()
        sub_m = xp.asarray(subsample_mantissas(is64))
        sub_in, sub_out = [], []
        blob = {}
        full = primary + secondary
        for s, e in order:
            if (s, e) in seen:
                continue
            seen.add((s, e))
            u = slice_inputs(xp, s, e, is64)
            out, lo = dev.run(kernel, u, is64)
            d, exc = residual(xp, name, is64, u, out)
            bins = xp.where(exc, 18, xp.where(xp.abs(d) > 8, 17, d + 8))  # 0..16: d = -8..8
            h = xp.bincount(bins.astype(xp.int64), minlength=HIST)
            hist[s, e] = np.asarray(h.get() if hasattr(h, "get") else h)
            nan_out[s, e] = int(is_nan(xp, out, is64).sum())
            if lo is not None:
                lo_nonzero[s, e] = int((lo != 0).sum())
            if (s, e) == base_of(s, e):
                base_res[(s, e)] = xp.where(exc, 1 << 40, d)
            b = base_res.get(base_of(s, e))
            if b is not None:
                same[s, e] = int((xp.where(exc, 1 << 40, d) == b).sum())
            sub_in.append(u[sub_m])
            sub_out.append(out[sub_m])
            late = time.time() - t0 > 420  # a 600 s limit: past 7 minutes, primary slices only
            if (s, e) in full and ((s, e) in primary or (used < BUDGET and not late)):
                key = f"{s}_{e}"
                small = (xp.abs(d) <= 127) & ~exc
                res = xp.where(small, d, 0).astype(xp.int8)
                res = np.asarray(res.get() if hasattr(res, "get") else res)
                blob["res_" + key] = np.frombuffer(lzma.compress(res.tobytes(), preset=2), np.uint8)
                idx = xp.nonzero(~small)[0].astype(xp.uint32)
                blob["exi_" + key] = np.asarray(idx.get() if hasattr(idx, "get") else idx)
                o = out[idx]
                blob["exo_" + key] = np.asarray(o.get() if hasattr(o, "get") else o)
                o = np.asarray(out.get() if hasattr(out, "get") else out)
                blob["sha_" + key] = np.frombuffer(hashlib.sha256(o.tobytes()).digest(), np.uint8)
                used += sum(blob[k + key].nbytes for k in ("res_", "exi_", "exo_"))
                print(f"{name} slice {key}: {blob['res_' + key].nbytes} B residual, "
                      f"{blob['exi_' + key].size} exceptions ({time.time() - t0:.0f} s)", flush=True)
        cat = lambda a: np.asarray(xp.concatenate(a).get() if hasattr(xp, "asnumpy") else np.concatenate(a))  # noqa
        blob.update(hist=hist, same_as_base=same, nan_out=nan_out, lo_nonzero=lo_nonzero,
                    sub_in=cat(sub_in), sub_out=cat(sub_out))
        if is64:  # both 64H functions in f64.npz, keys prefixed with the name
            f64.update({f"{name}.{k}": v for k, v in blob.items()})
            if name == "rsq64h":
                np.savez_compressed(os.path.join(out_dir, "f64.npz"), **f64)
        else:
            np.savez_compressed(os.path.join(out_dir, name + ".npz"), **blob)
        meta["functions"][name] = {"kernel": kernel, "full_slices": [k[4:] for k in blob if k.startswith("res_")],
                                   "exps_swept": len(exps), "seconds": round(time.time() - t0, 1)}
        print(f"{name}: done ({time.time() - t0:.0f} s, {used >> 20} MiB of slices so far)", flush=True)
        json.dump(meta, open(os.path.join(out_dir, "meta.json"), "w"), indent=1)  # after each: partial runs keep it
    print(f"wrote {out_dir} in {time.time() - t0:.0f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out")
    ap.add_argument("--build", action="store_true", help="compile the cubin here (nvcc 13.0)")
    ap.add_argument("--fake", action="store_true", help="numpy stand-in instead of the GPU (plumbing test)")
    a = ap.parse_args()
    if a.build:
        build()
        return
    if not a.out:
        ap.error("--out is required")
    if a.fake:
        measure(Fake(), a.out, fake=True)
        return
    want = open(SHA_FILE).read().split()[0]
    if not os.path.exists(CUBIN) or sha256_file(CUBIN) != want:
        sys.exit(f"mufu_tables.py: {CUBIN} missing or not the committed cubin (sha256 {want}); "
                 "build it with --build and carry bench/micro/build")
    measure(Device(CUBIN), a.out)


if __name__ == "__main__":
    main()
