#!/usr/bin/env python3
"""gpusim H100 microbenchmark: DRAM write bytes as a function of bytes written and bytes read alongside
(dram_writes.cu beside this file; issue 12, the L2 write-back rule).

    python3 bench/micro/run_dram_writes.py --out RESULTS.json     # on the GPU machine (cupy + ncu)
    python3 bench/micro/run_dram_writes.py --dry-run              # compile only, list the cases
    python3 bench/micro/run_dram_writes.py --set partial --out R  # partial-sector stores, copies near capacity
    python3 bench/micro/run_dram_writes.py --set transpose --out R  # transpose_naive and variants
    python3 bench/micro/run_dram_writes.py --set copy --out R       # streamed copies, finer write-then-read
    python3 bench/micro/run_dram_writes.py --set layout --out R     # copies/transposes: buffer placement, data
    python3 bench/micro/run_dram_writes.py --set upload --out R     # the same, buffers uploaded just before
    python3 bench/micro/run_dram_writes.py --set first --out R      # a copy as the process's first kernel
    python3 bench/micro/run_dram_writes.py --set fresh --out R      # newly allocated memory against reused
    python3 bench/micro/run_dram_writes.py --set tpose2 --out R     # transpose_naive variants
    python3 bench/micro/run_dram_writes.py --set stload --out R     # partial-sector stores, loads between
    python3 bench/micro/run_dram_writes.py --set pitch --out R      # transpose_naive, padded output rows
    python3 bench/micro/run_dram_writes.py --set pstride --out R    # partial-sector stores: stride, order, occupancy
    python3 bench/micro/run_dram_writes.py --set pgroup --out R     # the same, a warp's lines in groups of g
    python3 bench/micro/run_dram_writes.py --set popen --out R      # the same, 1-4 segments of 32 lines open per CTA
    python3 bench/micro/run_dram_writes.py --set hota --out R       # wr_hot with a stream beside the hot input
    python3 bench/micro/run_dram_writes.py --set dmix --out R       # DRAM rate of read/write mixes, tile writes
    python3 bench/micro/run_dram_writes.py --set epi --out R        # hot_wr's writes in four store forms
    python3 bench/micro/run_dram_writes.py --set run --out R        # DRAM rate against contiguous run length
    python3 bench/micro/run_dram_writes.py --set pkeep --out R      # sectors left partly written, or finished later

Every case is one launch profiled once by Nsight Compute (`--cache-control all`, its default: L2 is
flushed before the launch, so it starts cold) with a small metric set (DRAM bytes read/written, L2
sectors, cycles). A few cases are profiled a second time with the full metric set of run_memory.py
(many replay passes), to see whether the profiler's replay changes the DRAM write bytes. Nothing here
changes clocks or any device setting.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run_micro import cupy_missing, ncu_raw_rows, run_cmd, run_meta, write_json  # noqa: E402
from run_memory import NCU_METRICS as FULL_METRICS  # noqa: E402

SRC = os.path.join(HERE, "dram_writes.cu")
METRICS = ["gpc__cycles_elapsed.max", "gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
           "lts__t_sectors_op_read.sum", "lts__t_sectors_op_write.sum"]
MB = 1 << 20
KERNELS = ("wr_rd", "wr_hot", "wr_twice", "st_tpose", "st_sector", "copy_il", "tp_naive", "tp_sector", "tp_colread",
           "st_delay", "copy_1pt", "copy_1pt_plain", "copy_gs1", "tp_naive_nc", "tp_sync", "tp_ldcg", "tp_hot", "tp_stcs",
           "st_tpose_ld", "tp_pitch", "tp_stonly", "st_stride", "st_group", "st_open", "wr_hot_a", "wr_wave_a",
           "mix_rw", "copy_tile", "hot_wr", "hot_ep", "copy_run", "st_keep", "st_after", "st_keepk")


def cases() -> list[dict]:
    """Every launch, in launch order (the ncu CSV rows follow it). Sizes in MiB."""
    out = []
    for w in (4, 8, 16, 24):  # write W, then read R
        for r in (0, 8, 16, 24, 32, 48, 64):
            out.append({"kernel": "wr_rd", "order": "write_then_read", "W": w, "R": r})
    for r in (8, 24, 32, 64):  # read-only
        out.append({"kernel": "wr_rd", "order": "write_then_read", "W": 0, "R": r})
    for w in (8, 16):  # read R, then write W
        for r in (16, 32, 64):
            out.append({"kernel": "wr_rd", "order": "read_then_write", "W": w, "R": r})
    for w, hot in ((16, 8), (16, 16), (16, 24), (16, 32), (8, 24), (32, 16)):
        out.append({"kernel": "wr_hot", "W": w, "H": hot, "passes": 16})
    for w in (16, 32, 64):
        out.append({"kernel": "wr_twice", "W": w})
    return out


def hota_cases() -> list[dict]:
    """wr_hot with a stream A beside the hot input H (wr_hot_a: persistent CTAs, 16 passes; wr_wave_a: one
    wave of 8 x SMs CTAs per pass). Sizes in MiB; `ar`: how many times each pass reads its chunk of A."""
    out = []
    for k in ("wr_hot_a", "wr_wave_a"):
        for w, hot, a, ar in ((16, 16, 0, 1), (16, 16, 8, 8), (16, 16, 16, 1), (16, 16, 16, 8), (16, 8, 16, 8),
                              (16, 16, 32, 8), (8, 16, 16, 8), (32, 8, 16, 8)):
            out.append({"kernel": k, "W": w, "H": hot, "A": a, "ar": ar, "passes": 16})
    return out


def dmix_cases() -> list[dict]:
    """Set "dmix": DRAM rates. mix_rw streams reading a and writing b float4s per unit, the larger side
    1 GiB (a : b from read-only to write-only; two repeated at the end); copy_tile moves m x m floats as
    transpose_smem does, its writes in place (mode 0), where the transpose writes them (1), or its reads
    from there (2), at 256 MiB and 1 GiB; hot_wr reads H MiB k times, then writes W MiB."""
    out = [{"kernel": "mix_rw", "a": a, "b": b} for a, b in ((1, 0), (4, 1), (2, 1), (1, 1), (1, 2), (1, 4), (0, 1))]
    out += [{"kernel": "copy_tile", "m": m, "mode": mode} for m in (8192, 16384) for mode in (0, 1, 2)]
    out += [{"kernel": "hot_wr", "H": hot, "k": k, "W": 16} for hot in (16, 24, 32, 40) for k in (1, 2, 4)]
    out += [{"kernel": "hot_wr", "H": 32, "k": 4, "W": 8}]
    out += [{"kernel": "mix_rw", "a": a, "b": b} for a, b in ((1, 1), (1, 0))]
    return out


def run_cases() -> list[dict]:
    """Set "run": copy_run (dram_writes.cu), 256 MiB per matrix (m = 8192), the resident CTAs touching runs
    of g x 128 contiguous bytes per row; dir 0 copy, 1 read only, 2 write only. What DRAM gives where
    concurrent accesses are scattered in short runs (copy_tile with transpose_smem's output placement,
    about 512 bytes: 6-7% slower on the H100, dram_dmix_h100.json). The last three repeat g = 256 and 4."""
    out = [{"kernel": "copy_run", "m": 8192, "g": g, "dir": d} for d in (0, 1, 2) for g in (1, 2, 4, 8, 16, 32, 64, 256)]
    return out + [{"kernel": "copy_run", "m": 8192, "g": g, "dir": 0} for g in (256, 4, 1)]


def pkeep_cases() -> list[dict]:
    """Set "pkeep": st_keep (dram_writes.cu), S MiB of sectors (`cpsm` CTAs per SM, default 8, grid-stride), pass 1 writing
    w0 of each sector's 8 floats, pass 2 (after pass 1 has covered the buffer) w1 more. Does L2 hold sectors
    left partly written (w0 < 8, w1 = 0) as it holds whole ones (a copy's 16 MiB stay: 0.1-0.2 MiB written
    back), or only so many of them, each written out with a DRAM read beside it? `spread` 4 puts a warp
    store's 32 sectors in 32 lines. And does a sector finished later (w0 + w1 = 8) cost what one never
    finished does?"""
    out = [{"kernel": "st_keep", "S": s, "w0": 1, "w1": 0, "spread": 1} for s in (2, 4, 8, 12, 16, 24, 32)]
    out += [{"kernel": "st_keep", "S": s, "w0": 1, "w1": 0, "spread": 4} for s in (4, 8, 16, 32)]
    out += [{"kernel": "st_keep", "S": 16, "w0": w, "w1": 0, "spread": 1} for w in (2, 4, 7, 8)]
    out += [{"kernel": "st_keep", "S": s, "w0": 1, "w1": 7, "spread": 1} for s in (4, 8, 16, 32)]
    out += [{"kernel": "st_keep", "S": 16, "w0": 4, "w1": 4, "spread": 1}, {"kernel": "st_keep", "S": 16, "w0": 8, "w1": 0, "spread": 4}]
    out += [{"kernel": "st_keep", "S": s, "w0": 1, "w1": 0, "spread": 1} for s in (8, 16)]  # repeats
    # second run: sectors finished by one thread's 8 stores in a row (w0 = 8), the partly written lines open at
    # once set by `cpsm` CTAs per SM (the grid: each thread has one sector open) and `spread` (lines per warp
    # store: 8 / 16 / 32), at S = 4-32; and whether never-finished sectors depend on CTAs per SM (a capacity
    # should not)
    out += [{"kernel": "st_keep", "S": s, "w0": 8, "w1": 0, "spread": 1} for s in (4, 8, 32)]
    out += [{"kernel": "st_keep", "S": 16, "w0": 8, "w1": 0, "spread": sp, "cpsm": c} for sp in (1, 4) for c in (1, 2, 4)]
    out += [{"kernel": "st_keep", "S": 16, "w0": 8, "w1": 0, "spread": 2}, {"kernel": "st_keep", "S": 4, "w0": 8, "w1": 0, "spread": 4}]
    out += [{"kernel": "st_keep", "S": 16, "w0": 1, "w1": 0, "spread": 1, "cpsm": c} for c in (1, 4)]
    # third run (st_after): the same stores after X MiB of whole lines written (`pre` "w", dirty) or read
    # (`pre` "r", clean) by the same grid. Does the data already in L2 crowd partly written lines out, and
    # does clean data do it as dirty data does?
    out += [{"kernel": "st_after", "S": 4, "w0": 8, "spread": 1, "pre": p, "X": x}
            for p, x in (("w", 0), ("w", 8), ("w", 16), ("w", 24), ("r", 8), ("r", 16), ("r", 32))]
    out += [{"kernel": "st_after", "S": 8, "w0": 1, "spread": 1, "pre": p, "X": x}
            for p, x in (("w", 0), ("w", 8), ("w", 16), ("r", 16), ("r", 32))]
    out += [{"kernel": "st_after", "S": 4, "w0": 8, "spread": 4, "pre": "w", "X": 16},
            {"kernel": "st_after", "S": 4, "w0": 8, "spread": 1, "pre": "w", "X": 16, "cpsm": 1}]
    # fourth run (st_keepk): a warp store's lines k apart instead of neighbours, at the same lines open at once
    out += [{"kernel": "st_keepk", "S": 16, "w0": 8, "spread": 4, "k": k, "cpsm": c} for c in (1, 2) for k in (1, 3, 8, 64)]
    out += [{"kernel": "st_keepk", "S": 16, "w0": 8, "spread": 1, "k": k, "cpsm": c} for c in (4, 8) for k in (1, 64)]
    return out + [{"kernel": "st_keepk", "S": 8, "w0": 1, "spread": 1, "k": k} for k in (1, 64)]


def epi_cases() -> list[dict]:
    """Set "epi": hot_ep (dram_writes.cu), H MiB read k times, then 16 MiB (m = 2048) written in store form
    `form` (0 float4, 1 float, 2 a warp's 8 stores complete each sector, 3 a sector's pieces from 8 warps):
    do single-wave GEMMs that store 4 bytes a lane write back more of their output than those storing 16
    (H100: sgemm_maxas_64 and sgemm_regtile2d at 2048 0.57 / 0.28 MiB, sgemm_vec4 and sgemm_warptile
    0.11 / 0.06)? The next two repeat form 2 and 3 at H = 32, k = 4 (the spread). Then forms 2 and 3 alone
    (H = 0) with `cpsm` CTAs per SM (the grid-stride loop's CTAs: fewer lines written at once) at m = 2048
    and 1024 (4 MiB: the GEMMs at n = 1024 write back nothing). Last, `rows` rows of m floats (default m):
    4-32 MiB at row pitches of 2-16 KiB."""
    out = [{"kernel": "hot_ep", "H": h, "k": k, "m": 2048, "form": f}
           for h, k in ((0, 1), (16, 4), (32, 1), (32, 4), (40, 2)) for f in (0, 1, 2, 3)]
    out += [{"kernel": "hot_ep", "H": 32, "k": 4, "m": 2048, "form": f} for f in (2, 3)]
    out += [{"kernel": "hot_ep", "H": 0, "k": 1, "m": m, "form": f, "cpsm": c}
            for m in (2048, 1024) for f in (2, 3) for c in (1, 2, 4, 8)]
    # rows of m floats, `rows` of them: is it the row pitch or the MiB written that sets the cost?
    return out + [{"kernel": "hot_ep", "H": 0, "k": 1, "m": m, "rows": r, "form": f}
                  for m, r in ((1024, 2048), (1024, 4096), (1024, 8192), (2048, 512), (2048, 1024), (2048, 1536),
                               (2048, 4096), (4096, 256), (4096, 1024), (512, 8192))
                  for f in (2, 3)]


def partial_cases() -> list[dict]:
    """Set "partial": partial-sector stores (transpose_naive's order) against whole sectors, and copies whose
    reads and writes together come near the L2's capacity. Sizes in MiB (of the output)."""
    out = []
    for s in (4, 16, 64, 256):
        out.append({"kernel": "st_tpose", "S": s})
    for s in (16, 64, 256):
        out.append({"kernel": "st_sector", "S": s})
    for s in (8, 12, 14, 16, 18, 20, 24, 32):
        out.append({"kernel": "copy_il", "S": s})
    for s in (16, 64):  # repeats: the launch-to-launch spread
        out.append({"kernel": "st_tpose", "S": s})
    for s in (16, 20):
        out.append({"kernel": "copy_il", "S": s})
    return out


def transpose_cases() -> list[dict]:
    """Set "transpose": transpose_naive and variants that keep one of its features (S: MiB per matrix;
    st_delay's `spin` in cycles)."""
    out = []
    for k in ("tp_naive", "tp_sector", "tp_colread"):
        for s in (16, 64, 256):
            out.append({"kernel": k, "S": s})
    for spin in (0, 500, 2000, 8000):
        out.append({"kernel": "st_delay", "S": 64, "spin": spin})
    out.append({"kernel": "st_delay", "S": 16, "spin": 2000})
    return out


def copy_cases() -> list[dict]:
    """Set "copy": streamed copies in copy_float4's order near the L2's capacity (S: MiB per buffer), the
    same with plain loads and with a one-element grid-stride loop; writes of 4 MiB followed by reads of
    R MiB at finer steps than set "writes" (how the write-back grows with the data touched after a
    line); transpose_naive with read-only loads; repeats of four cases (the launch-to-launch spread)."""
    out = [{"kernel": "copy_1pt", "S": s} for s in (8, 12, 14, 16, 18, 20, 24, 32, 64)]
    out += [{"kernel": k, "S": s} for k in ("copy_1pt_plain", "copy_gs1") for s in (16, 20, 24)]
    out += [{"kernel": "wr_rd", "order": "write_then_read", "W": 4, "R": r} for r in (20, 22, 26, 28, 30, 34, 36, 40, 44)]
    out += [{"kernel": "tp_naive_nc", "S": s} for s in (16, 64)]
    out += [{"kernel": "copy_1pt", "S": s} for s in (16, 20)]
    out += [{"kernel": "wr_rd", "order": "write_then_read", "W": 4, "R": r} for r in (28, 32)]
    return out


def tpose2_cases() -> list[dict]:
    """Set "tpose2": transpose_naive (tp_naive) and four variants (dram_writes.cu), S MiB per matrix."""
    return [{"kernel": k, "S": s} for k in ("tp_naive", "tp_sync", "tp_ldcg", "tp_hot", "tp_stcs",
           "st_tpose_ld", "tp_pitch", "tp_stonly", "st_stride", "st_group", "st_open", "wr_hot_a", "wr_wave_a",
           "mix_rw", "copy_tile", "hot_wr") for s in (16, 64)]


def stload_cases() -> list[dict]:
    """Set "stload": st_tpose_ld (dram_writes.cu) with k L2-hit loads between a warp's stores, S MiB."""
    return [{"kernel": "st_tpose_ld", "S": s, "k": k} for s in (16, 64) for k in (0, 1, 4, 16)]


def pitch_cases() -> list[dict]:
    """Set "pitch": tp_pitch (dram_writes.cu), the output's row pitch m + `pad` floats, then tp_stonly (its
    stores without loads), S MiB per matrix."""
    return [{"kernel": "tp_pitch", "S": s, "pad": pad} for s in (16, 64) for pad in (0, 8, 32, 1024)] + \
        [{"kernel": "tp_stonly", "S": s} for s in (16, 64)]


def pstride_cases() -> list[dict]:
    """Set "pstride": st_stride (dram_writes.cu), S MiB of output, the lines a warp store touches `k` lines
    (128 B) apart (pitch 32 k floats; k = 1: st_tpose, k = m / 32: tp_stonly); `swap`: CTAs launched
    along the rows; `smem`: KiB of dynamic shared memory per CTA (CTAs per SM: 228 KiB / it);
    `spin`: cycles between a warp's stores, times (ty + 1)."""
    out = [{"kernel": "st_stride", "S": 16, "k": k} for k in (1, 2, 4, 8, 16, 32, 64)]
    out += [{"kernel": "st_stride", "S": 64, "k": k} for k in (1, 8, 32, 128)]
    out += [{"kernel": "st_stride", "S": 16, "k": 64, "swap": 1}, {"kernel": "st_stride", "S": 64, "k": 128, "swap": 1}]
    out += [{"kernel": "st_stride", "S": 16, "k": 64, "smem": kib} for kib in (64, 100, 200)]
    out += [{"kernel": "st_stride", "S": 16, "k": 64, "spin": 2000}, {"kernel": "st_stride", "S": 16, "k": 1, "spin": 2000}]
    out += [{"kernel": "st_stride", "S": 16, "k": k} for k in (64, 1)]  # repeats: the spread
    # strides that are not a power of two (rows rounded down to a multiple of 32: about S MiB), and more
    # CTAs-per-SM steps (228 KiB / smem: 5, 4 per SM; k = 1 at 1 per SM, the control)
    out += [{"kernel": "st_stride", "S": 16, "k": k} for k in (3, 5, 6, 12, 48, 63, 65)]
    out += [{"kernel": "st_stride", "S": 16, "k": 64, "smem": kib} for kib in (45, 56)]
    out += [{"kernel": "st_stride", "S": 16, "k": 1, "smem": 200}]
    return out


def pgroup_cases() -> list[dict]:
    """Set "pgroup": st_group (dram_writes.cu), S MiB of output, a warp store's 32 lines in groups of `g`
    consecutive lines, consecutive CTAs' groups side by side (so the groups of one CTA lie 32 / g x CTAs
    lines apart... g lines x grid CTAs); `smem` KiB of dynamic shared memory per CTA (CTAs per SM)."""
    out = [{"kernel": "st_group", "S": 16, "g": g} for g in (1, 2, 4, 8, 16, 32)]
    out += [{"kernel": "st_group", "S": 64, "g": g} for g in (1, 4, 32)]
    out += [{"kernel": "st_group", "S": 16, "g": g, "smem": 100} for g in (1, 32)]
    return out


def popen_cases() -> list[dict]:
    """Set "popen": st_open (dram_writes.cu), 16 MiB of lines, each CTA holding R segments of 32 lines open at
    once (R x 32 lines: 1056 resident CTAs hold 34 k x R lines), lines k apart (1: one consecutive range;
    64: scattered, as transpose_naive's at m = 2048); `nsec` sectors of each line written; `smem` KiB of
    dynamic shared memory per CTA (100: 2 CTAs per SM). If the cost goes with the open lines, R = 2 at
    8 CTAs per SM is dearer than R = 1, and R = 4 at 2 CTAs per SM costs what R = 1 at 8 does."""
    out = [{"kernel": "st_open", "S": 16, "k": 1, "R": r, "nsec": 4} for r in (1, 2, 3, 4)]
    out += [{"kernel": "st_open", "S": 16, "k": 64, "R": r, "nsec": 4} for r in (1, 2, 4)]
    out += [{"kernel": "st_open", "S": 16, "k": k, "R": 4, "nsec": 4, "smem": 100} for k in (1, 64)]
    out += [{"kernel": "st_open", "S": 16, "k": 64, "R": r, "nsec": n} for r, n in ((1, 1), (4, 1), (1, 2))]
    out += [{"kernel": "st_open", "S": 16, "k": 1, "R": 4, "nsec": 1}]
    return out


def layout_cases() -> list[dict]:
    """Set "layout": does where the buffers lie, or what they hold, change the write-back of a copy or
    transpose near capacity? `layout` far: input and output 256 MiB apart (the other sets); adjacent:
    the output right after the input in one allocation (as consecutive allocations of a pool lie, the
    validation harness's case); gap: adjacent plus 2 MiB + 384 KiB. `values` random: the input holds
    random floats instead of ones (the harness's inputs)."""
    out = []
    for s in (16, 20):
        for lay in ("far", "adjacent", "gap"):
            out.append({"kernel": "copy_1pt", "S": s, "layout": lay})
        out.append({"kernel": "copy_1pt", "S": s, "layout": "far", "values": "random"})
    for lay in ("far", "adjacent"):
        out.append({"kernel": "tp_naive", "S": 16, "layout": lay})
        out.append({"kernel": "tp_colread", "S": 16, "layout": lay})
    out += [{"kernel": "copy_1pt", "S": 16, "layout": lay} for lay in ("adjacent", "far")]  # repeats
    return out


def upload_cases() -> list[dict]:
    """Set "upload": the same copies and transposes with their buffers filled by host-to-device copies
    just before the launch, as `gpusim measure` fills them (`upload`: input and output, `upload_in`,
    `upload_out`: one of them; the rest as set "layout"'s `far`)."""
    out = []
    for k, s in (("copy_1pt", 16), ("copy_1pt", 20), ("tp_naive", 16), ("tp_colread", 16)):
        for up in ("upload", "upload_in", "upload_out", None):
            out.append({"kernel": k, "S": s, "fill": up})
    out += [{"kernel": "copy_1pt", "S": 16, "fill": up} for up in ("upload", None)]  # repeats
    return out


FULL_CASES = [  # profiled again with the full (multi-pass) metric set
    {"kernel": "wr_rd", "order": "write_then_read", "W": 0, "R": 64},
    {"kernel": "wr_rd", "order": "write_then_read", "W": 16, "R": 32},
    {"kernel": "wr_hot", "W": 16, "H": 16, "passes": 16},
]


def compile_cubin(nvcc: str, build: str) -> dict:
    os.makedirs(build, exist_ok=True)
    cubin = os.path.join(build, "dram_writes.cubin")
    cmd = [nvcc, "-arch=sm_90", "-O3", "-cubin", "-o", cubin, SRC]
    run_cmd(cmd)
    return {"cubin": cubin, "command": " ".join(map(shlex.quote, cmd)), "nvcc_version": run_cmd([nvcc, "--version"]).strip()}


def first_cases() -> list[dict]:
    """Set "first": is the first kernel a process launches different? copy_1pt of S MiB with buffers
    uploaded by host-to-device copies and no kernel before it in the process (as `gpusim measure
    --single` launches a validation kernel), then the same launch repeated in that process. The child
    runs in its own process per set, so the first case below is the process's first kernel."""
    return [{"kernel": "copy_1pt", "S": s, "fill": "upload", "launch": i} for i, s in enumerate((16, 16, 20, 16))]


def first_child(mod, cp, np) -> None:
    for c in first_cases():
        nbytes = c["S"] * MB
        inp = cp.asarray(np.random.default_rng(0).random(nbytes // 4, dtype=np.float32))
        out = cp.asarray(np.full(nbytes // 4, np.nan, dtype=np.float32))
        cp.cuda.runtime.deviceSynchronize()
        n = np.int64(nbytes // 16)
        mod.get_function("copy_1pt")((int(n // 256),), (256,), (inp, out, n))
        cp.cuda.runtime.deviceSynchronize()
        del inp, out


FRESH_STEPS = (  # (kernel, MiB, what the buffers are), in launch order; set "fresh"
    ("read", 64, "fresh"), ("read", 64, "again"), ("read", 128, "fresh"),
    ("copy_1pt", 16, "fresh"), ("copy_1pt", 16, "again"), ("copy_1pt", 16, "fresh"),
    ("copy_1pt", 16, "fresh, read first"), ("copy_1pt", 16, "fresh, written first"))


def fresh_cases() -> list[dict]:
    """Set "fresh": does the first GPU kernel to touch newly allocated memory leave dirty data in L2
    (set "first": a copy as the process's first kernel wrote back 0.98 MiB, its repeat 0.17)? In one
    process, with no kernel before the first: read-only kernels (wr_rd with W = 0) and copies on buffers
    `fresh` (the memory pool emptied, cudaMalloc'd anew, filled by host-to-device copies), used `again`,
    or fresh but first read (`read first`: a read-only kernel over both, not profiled apart: it is a
    profiled launch of its own, listed as kernel "read") or written (`written first`: cupy fill kernels)."""
    out = []
    for k, mib, how in FRESH_STEPS:
        if how == "fresh, read first":
            out += [{"kernel": "wr_rd", "order": "write_then_read", "W": 0, "R": mib, "step": "touch input"},
                    {"kernel": "wr_rd", "order": "write_then_read", "W": 0, "R": mib, "step": "touch output"}]
        out.append({"kernel": "wr_rd", "order": "write_then_read", "W": 0, "R": mib, "step": how} if k == "read"
                   else {"kernel": k, "S": mib, "step": how})
    return out


def fresh_child(mod, cp, np) -> None:
    pool = cp.get_default_memory_pool()
    sink = cp.zeros(1, dtype=cp.float32)  # (a memset: no kernel)
    upload = lambda mib, v: cp.asarray(np.full(mib * MB // 4, v, dtype=np.float32))  # noqa: E731
    read = lambda buf, mib: mod.get_function("wr_rd")(  # noqa: E731
        (8 * 132,), (256,), (buf, np.int64(0), buf, np.int64(mib * MB // 16), sink, np.int32(0), np.float32(0)))
    bufs = None
    for k, mib, how in FRESH_STEPS:
        if how != "again":
            bufs = None
            pool.free_all_blocks()
            bufs = (upload(mib, 1.0), upload(mib, np.nan))
            if how == "fresh, written first":
                bufs[0].fill(1.0), bufs[1].fill(0.0)
            cp.cuda.runtime.deviceSynchronize()
            if how == "fresh, read first":
                read(bufs[0], mib), read(bufs[1], mib)
        n = np.int64(mib * MB // 16)
        if k == "read":
            read(bufs[0], mib)
        else:
            mod.get_function(k)((int(n // 256),), (256,), (bufs[0], bufs[1], n))
        cp.cuda.runtime.deviceSynchronize()


def ncu_child(cubin: str, which: str) -> None:
    """The launches Nsight Compute profiles (one each)."""
    import cupy as cp
    import numpy as np
    mod = cp.RawModule(path=cubin)
    if which in ("first", "fresh"):  # no buffers made by kernels before the first launch
        (first_child if which == "first" else fresh_child)(mod, cp, np)
        return
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    grid, block = 8 * sms, 256
    wbuf = cp.zeros(64 * MB // 4, dtype=cp.float32)
    rbuf = cp.ones(64 * MB // 4, dtype=cp.float32)
    sink = cp.zeros(1, dtype=cp.float32)
    n4 = lambda mib: np.int64(mib * MB // 16)  # noqa: E731
    big = abuf = gib = None
    for c in SETS[which]():
        if c["kernel"] in ("st_keep", "st_keepk", "st_after"):  # set pkeep: the stores into the 64 MiB write buffer
            keep = (wbuf, np.int64(c["S"] * MB // 32), np.int32(c["spread"]))
            if c["kernel"] == "st_keep":
                args = keep + (np.int32(c["w0"]), np.int32(c["w1"]), np.float32(2.0))
            elif c["kernel"] == "st_keepk":
                args = keep + (np.int32(c["k"]), np.int32(c["w0"]), np.float32(2.0))
            else:  # st_after: its first phase in a part of the 1 GiB read or write buffer
                if gib is None:
                    gib = (cp.ones(1024 * MB // 4, dtype=cp.float32), cp.zeros(1024 * MB // 4, dtype=cp.float32))
                kind = {"w": 1, "r": 2}[c["pre"]] if c["X"] else 0
                args = (gib[1], gib[0], n4(c["X"]), np.int32(kind)) + keep + (np.int32(c["w0"]), sink, np.float32(2.0))
            mod.get_function(c["kernel"])((c.get("cpsm", 8) * sms,), (block,), args)
            cp.cuda.runtime.deviceSynchronize()
            continue
        if "S" in c:  # sets partial, transpose, copy, layout: 256 MiB buffers, made at the first such case
            if big is None:
                big = (cp.zeros(256 * MB // 4, dtype=cp.float32), cp.ones(256 * MB // 4, dtype=cp.float32))
            out, inp = big
            lay, nbytes = c.get("layout", "far"), c["S"] * MB
            if lay != "far":  # input then output in one allocation: `whole`, made per case
                gap = 0 if lay == "adjacent" else 2 * MB + 384 * 1024
                whole = cp.ones((2 * nbytes + gap) // 4, dtype=cp.float32)
                inp, out = whole[: nbytes // 4], whole[(nbytes + gap) // 4:]
            if c.get("values") == "random":
                inp = cp.random.default_rng(0).random(nbytes // 4, dtype=cp.float32)
            if c.get("fill") in ("upload", "upload_in"):  # host-to-device copies (no kernel)
                inp = cp.asarray(np.random.default_rng(0).random(nbytes // 4, dtype=np.float32))
            if c.get("fill") in ("upload", "upload_out"):
                out = cp.asarray(np.full(nbytes // 4, np.nan, dtype=np.float32))
            cp.cuda.runtime.deviceSynchronize()
            k, lines = c["kernel"], np.int64(c["S"] * MB // 128)
            if k == "st_tpose":
                mod.get_function(k)((int(lines // 32),), (32, 8), (out, lines, np.float32(2.0)))
            elif k == "st_tpose_ld":
                hot = inp[: 65536]
                mod.get_function(k)((int(lines // 32),), (32, 8), (out, lines, hot, np.int32(c["k"]), np.float32(0.0),
                                                                 inp[65536:65537]))
            elif k == "tp_pitch":  # (the 256 MiB output buffer holds m x (m + 1024) floats at S <= 64)
                m = int(round((c["S"] * MB // 4) ** 0.5))
                mod.get_function(k)((m // 32, m // 32), (32, 8), (inp, out, np.int32(m), np.int32(m + c["pad"])))
            elif k == "st_stride":
                pitch = 32 * c["k"]
                rows = c["S"] * MB // (4 * pitch) // 32 * 32
                fn, smem = mod.get_function(k), c.get("smem", 0) * 1024
                if smem:  # (over 48 KiB needs the opt-in)
                    fn.max_dynamic_shared_size_bytes = smem
                g = (pitch // 32, rows // 32) if c.get("swap") else (rows // 32, pitch // 32)
                fn(g, (32, 8), (out, np.int32(pitch), np.int32(c.get("swap", 0)), np.int32(c.get("spin", 0)),
                                np.float32(2.0)), shared_mem=smem)
            elif k == "st_group":
                fn, smem = mod.get_function(k), c.get("smem", 0) * 1024
                if smem:
                    fn.max_dynamic_shared_size_bytes = smem
                fn((int(lines // 32),), (32, 8), (out, np.int32(c["g"]), np.int32(0), np.float32(2.0)), shared_mem=smem)
            elif k == "st_open":
                fn, smem = mod.get_function(k), c.get("smem", 0) * 1024
                if smem:
                    fn.max_dynamic_shared_size_bytes = smem
                gx = int(lines // (32 * c["R"] * c["k"]))
                fn((gx, c["k"]), (32, 8), (out, np.int32(c["R"]), np.int32(c["k"]), np.int32(c["nsec"]), np.float32(2.0)),
                   shared_mem=smem)
            elif k == "st_delay":
                mod.get_function(k)((int(lines // 32),), (32, 8), (out, lines, np.float32(2.0), np.int32(c["spin"])))
            elif k == "st_sector":
                mod.get_function(k)((int(lines // 64),), (32, 8), (out, lines, np.float32(2.0)))
            elif k in ("copy_il", "copy_gs1"):
                mod.get_function(k)((grid,), (block,), (inp, out, n4(c["S"])))
            elif k in ("copy_1pt", "copy_1pt_plain"):
                mod.get_function(k)((int(n4(c["S"]) // block),), (block,), (inp, out, n4(c["S"])))
            else:  # the transposes, of m x m floats
                m = int(round((c["S"] * MB // 4) ** 0.5))
                mod.get_function(k)((m // 32, m // 32), (32, 8), (inp, out, np.int32(m)))
            cp.cuda.runtime.deviceSynchronize()
            continue
        if c["kernel"] in ("mix_rw", "copy_tile"):  # set dmix: 1 GiB buffers, made at the first such case
            if gib is None:
                gib = (cp.ones(1024 * MB // 4, dtype=cp.float32), cp.zeros(1024 * MB // 4, dtype=cp.float32))
            inp, out = gib
            if c["kernel"] == "mix_rw":
                units = np.int64(1024 * MB // 16 // max(c["a"], c["b"]))
                mod.get_function("mix_rw")((grid,), (block,), (inp, out, units, np.int32(c["a"]), np.int32(c["b"]), sink,
                                                              np.float32(2.0)))
            else:
                m = c["m"]
                mod.get_function("copy_tile")((m // 32, m // 32), (32, 8), (inp, out, np.int32(m), np.int32(c["mode"])))
            cp.cuda.runtime.deviceSynchronize()
            continue
        if c["kernel"] == "copy_run":  # 256 MiB matrices (the set's 1 GiB buffers)
            if gib is None:
                gib = (cp.ones(1024 * MB // 4, dtype=cp.float32), cp.zeros(1024 * MB // 4, dtype=cp.float32))
            m = c["m"]
            mod.get_function("copy_run")(((m // 32) ** 2,), (32, 8), (gib[0], gib[1], np.int32(m), np.int32(c["g"]),
                                                                     np.int32(c["dir"]), sink))
            cp.cuda.runtime.deviceSynchronize()
            continue
        if c["kernel"] == "hot_ep":
            mod.get_function("hot_ep")((c.get("cpsm", 8) * sms,), (block,), (rbuf, n4(c["H"]), np.int32(c["k"]), wbuf, np.int32(c["m"]),
                                                                 np.int32(c.get("rows", c["m"])), np.int32(c["form"]), sink,
                                                                 np.float32(2.0)))
            cp.cuda.runtime.deviceSynchronize()
            continue
        if c["kernel"] == "hot_wr":
            mod.get_function("hot_wr")((grid,), (block,), (rbuf, n4(c["H"]), np.int32(c["k"]), wbuf, n4(c["W"]), sink,
                                                          np.float32(2.0)))
            cp.cuda.runtime.deviceSynchronize()
            continue
        if c["kernel"] in ("wr_hot_a", "wr_wave_a"):
            if abuf is None:
                abuf = cp.ones(32 * MB // 4, dtype=cp.float32)
            args = (wbuf, n4(c["W"]), rbuf, n4(c["H"]), abuf, n4(c["A"]), sink, np.int32(c["passes"]),
                    np.int32(c["ar"]), np.float32(2.0))
            if c["kernel"] == "wr_wave_a":
                mod.get_function(c["kernel"])((grid * c["passes"],), (block,), args + (np.int32(grid),))
            else:
                mod.get_function(c["kernel"])((grid,), (block,), args)
            cp.cuda.runtime.deviceSynchronize()
            continue
        if c["kernel"] == "wr_rd":
            args = (wbuf, n4(c["W"]), rbuf, n4(c["R"]), sink, np.int32(c["order"] == "read_then_write"), np.float32(2.0))
        elif c["kernel"] == "wr_hot":
            args = (wbuf, n4(c["W"]), rbuf, n4(c["H"]), sink, np.int32(c["passes"]), np.float32(2.0))
        else:
            args = (wbuf, n4(c["W"]), np.float32(2.0))
        mod.get_function(c["kernel"])((grid,), (block,), args)
        cp.cuda.runtime.deviceSynchronize()


def run_ncu(ncu: str, cubin: str, which: str, metrics: list[str]) -> dict:
    cmd = [ncu, "--csv", "--page", "raw", "--clock-control", "none", "--metrics", ",".join(metrics),
           sys.executable, os.path.abspath(__file__), "--ncu-child", cubin, "--which", which]
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=400)
    rows = ncu_raw_rows(r.stdout, KERNELS)  # (only ours: cupy's fill kernels are profiled too)
    want = SETS[which]()
    out = []
    for c, row in zip(want, rows):
        v = lambda k: float(row[k].replace(",", "")) if row.get(k) not in (None, "", "n/a") else None  # noqa: E731
        rec = dict(c, kernel_name=row.get("Kernel Name"), grid=row.get("Grid Size"), block=row.get("Block Size"))
        rec.update({k: v(k) for k in METRICS if k in row})
        if rec.get("dram__bytes_write.sum") is not None:
            rec["dram_write_MiB"] = round(rec["dram__bytes_write.sum"] / MB, 3)
            rec["dram_read_MiB"] = round(rec["dram__bytes_read.sum"] / MB, 3)
        out.append(rec)
    return {"command": " ".join(map(shlex.quote, cmd)), "seconds": round(time.time() - t, 1), "returncode": r.returncode,
            "rows_expected": len(want), "rows_parsed": len(rows), "stderr_tail": r.stderr[-1500:], "cases": out}


SETS = {"all": cases, "full": lambda: FULL_CASES, "partial": partial_cases, "transpose": transpose_cases,
        "copy": copy_cases, "layout": layout_cases,
        "upload": upload_cases, "first": first_cases, "fresh": fresh_cases, "tpose2": tpose2_cases,
        "stload": stload_cases, "pitch": pitch_cases, "pstride": pstride_cases,
        "pgroup": pgroup_cases, "popen": popen_cases, "hota": hota_cases, "dmix": dmix_cases,
        "epi": epi_cases, "run": run_cases, "pkeep": pkeep_cases}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--ncu-child", metavar="CUBIN", help=argparse.SUPPRESS)
    ap.add_argument("--which", default="all", help=argparse.SUPPRESS)
    ap.add_argument("--set", choices=("writes", "partial", "transpose", "copy", "layout", "upload", "first", "fresh", "tpose2", "stload", "pitch", "pstride", "pgroup", "popen", "hota", "dmix", "epi", "run", "pkeep"), default="writes",
                    help="writes: the write-back cases (default); partial: partial-sector stores and copies near "
                         "capacity; transpose: transpose_naive and variants; copy: streamed copies in copy_float4's "
                         "order, finer write-then-read steps; layout: the same copies and transposes with the "
                         "buffers placed differently, or random data; upload: the same with buffers filled by "
                         "host-to-device copies just before the launch; first: a copy as the process's first kernel; "
                         "fresh: kernels on newly allocated memory against reused; tpose2: transpose_naive variants; stload: partial-sector stores with loads between them; pitch: "
                         "transpose_naive with padded output rows; pstride: partial-sector stores, line stride, "
                         "CTA order, occupancy; pgroup: the same with a warp's lines in groups of g; "
                         "popen: the same with 1-4 segments of 32 lines open per CTA; hota: wr_hot with a stream "
                         "beside the hot input, persistent CTAs and one wave per pass; dmix: DRAM rates of "
                         "read/write mixes and of a transpose's write segments, writes after re-read inputs; epi: "
                         "hot_wr's writes in four store forms (a GEMM epilogue's); run: DRAM rate against the contiguous "
                         "bytes the resident CTAs touch per row; pkeep: sectors left partly written, or finished in a second pass")
    ap.add_argument("--nvcc", default=os.environ.get("GPUSIM_NVCC13") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    args = ap.parse_args()
    if args.ncu_child:
        ncu_child(args.ncu_child, args.which)
        return 0
    if not args.dry_run and not args.out:
        ap.error("--out is required unless --dry-run")
    comp = compile_cubin(args.nvcc, os.path.join(HERE, "build"))
    if args.dry_run:
        print(json.dumps({"compile": comp["command"], "set": args.set, "cases": len(SETS.get(args.set, cases)())}, indent=1))
        return 0
    if cupy_missing("run_dram_writes.py"):
        return 2
    ncu = shutil.which("ncu") or "/opt/nvidia/nsight-compute/2025.3.1/ncu"
    R = {"meta": run_meta(comp, ncu_version=run_cmd([ncu, "--version"]).strip().splitlines()[-1],
                          launch="8 x SMs CTAs x 256 threads, 16-byte accesses, grid-stride; sizes in MiB")}
    runs = (("ncu", "all", METRICS), ("ncu_full_metrics", "full", FULL_METRICS + ["gpu__time_duration.sum"]))
    if args.set != "writes":
        runs = (("ncu", args.set, METRICS),)
    for key, which, metrics in runs:
        t = time.time()
        R[key] = run_ncu(ncu, comp["cubin"], which, metrics)
        print(f"[{time.time() - t:6.1f} s] {key}: {R[key]['rows_parsed']}/{R[key]['rows_expected']} rows", flush=True)
        write_json(args.out, R)
    R["meta"]["nvidia_smi_end"] = run_cmd(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,temperature.gpu",
                                           "--format=csv,noheader"]).strip()
    write_json(args.out, R)
    for c in R["ncu"]["cases"]:
        print({k: c.get(k) for k in ("kernel", "order", "W", "R", "H", "A", "ar", "S", "k", "g", "nsec", "swap", "smem", "spin",
                                     "a", "b", "m", "rows", "mode", "form", "cpsm", "dir", "w0", "w1", "spread", "pre", "X", "dram_write_MiB", "dram_read_MiB", "gpu__time_duration.sum",
                                     "lts__t_sectors_op_read.sum", "lts__t_sectors_op_write.sum")})
    for c in R.get("ncu_full_metrics", {}).get("cases", []):
        print("full", {k: c.get(k) for k in ("kernel", "order", "W", "R", "H", "dram_write_MiB", "dram_read_MiB")})
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
