#!/usr/bin/env python3
"""gpusim H100 microbenchmarks of the load/store and memory path (memory.cu beside this file).

    python3 bench/micro/run_memory.py --out RESULTS.json [--ncu]   # on the GPU machine (numpy + cupy)
    python3 bench/micro/run_memory.py --dry-run                    # compile + check the SASS only

Rates come from the SM's own clock (clock64 in the kernels): with one CTA per SM, the SM's span is
max(end) - min(start) over its warps, and a rate is the CTA's warp instructions over that span.
Nothing here changes clocks or any device setting. `--ncu` also profiles the L2-state kernels, the
empty kernel and a few rate kernels once each with Nsight Compute (DRAM bytes, cycles, stall
reasons). The JSON says how each figure was taken; README.md beside this file maps them to config fields.
"""
from __future__ import annotations

import argparse
import itertools
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
from run_micro import cupy_missing, ncu_raw_rows, run_cmd, run_meta  # noqa: E402  (the ALU/latency microbenchmarks beside this file)

SRC = os.path.join(HERE, "memory.cu")
U = 16  # accesses per loop iteration (memory.cu)
NQ = 48  # accesses of the issue-timestamp kernels
NW = 32  # wide shared loads of issue_lds<bits>_w
SMS = None  # set from the device

NCU_METRICS = [
    "gpc__cycles_elapsed.max", "sm__cycles_elapsed.avg", "smsp__inst_executed.sum",
    "dram__bytes_read.sum", "dram__bytes_write.sum",
    "lts__t_sectors_op_read.sum", "lts__t_sectors_op_write.sum",
    "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum", "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
    "smsp__inst_executed_op_global_ld.sum", "smsp__inst_executed_op_global_st.sum",
] + [f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio" for r in (
    "barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "lg_throttle", "long_scoreboard",
    "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction", "not_selected", "selected",
    "short_scoreboard", "sleeping", "tex_throttle", "wait")]


def compile_cubin(nvcc: str, build: str) -> dict:
    os.makedirs(build, exist_ok=True)
    cubin = os.path.join(build, "memory.cubin")
    cmd = [nvcc, "-arch=sm_90", "-O3", "-std=c++20", "-cubin", "-o", cubin, SRC]
    run_cmd(cmd)
    return {"cubin": cubin, "command": " ".join(map(shlex.quote, cmd)), "nvcc_version": run_cmd([nvcc, "--version"]).strip()}


def sass_counts(cubin: str) -> dict:
    """Per kernel: how many global/shared accesses of each SASS form (checks that ptxas kept them)."""
    dis = shutil.which("nvdisasm") or shutil.which("cuobjdump")
    if dis is None:
        try:
            import nvidia  # the PyPI nvidia-cuda-nvdisasm package puts it under nvidia/cu13/bin
            for p in nvidia.__path__:
                cand = os.path.join(p, "cu13", "bin", "nvdisasm")
                if os.path.exists(cand):
                    dis = cand
        except ImportError:
            pass
    if dis is None:
        return {"error": "no nvdisasm/cuobjdump"}
    text = run_cmd([dis, "-c", cubin] if dis.endswith("nvdisasm") else [dis, "-sass", cubin])
    out, cur = {}, None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith(".text.") and s.endswith(":"):
            cur = s[6:-1]
            out[cur] = {}
        elif cur and "/*" in s and ";" in s:
            ins = s.split("*/", 1)[1].strip().split(";")[0].split()
            if ins and ins[0].startswith("@"):
                ins = ins[1:]
            if ins and ins[0].split(".")[0] in ("LDG", "STG", "LDS", "STS"):
                out[cur][ins[0]] = out[cur].get(ins[0], 0) + 1
    return out


class Bench:
    def __init__(self, cubin):
        import cupy as cp
        import numpy as np
        self.cp, self.np = cp, np
        self.mod = cp.RawModule(path=cubin)
        self.sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]

    def launch(self, name, grid, block, args, shared=0):
        f = self.mod.get_function(name)
        if shared > 48 * 1024:
            f.max_dynamic_shared_size_bytes = shared
        f((grid,), (block,), args, shared_mem=shared)

    def sync(self):
        self.cp.cuda.runtime.deviceSynchronize()

    def spans(self, out, warps_per_cta, ctas):
        """Per CTA: max(end) - min(start) of its warps' clock64 stamps (SM cycles)."""
        o = out.get().reshape(ctas, warps_per_cta, 2)
        return [int(c[:, 1].max() - c[:, 0].min()) for c in o]

    def event_ms(self, name, grid, block, args, reps=20, warm=3, shared=0):
        cp = self.cp
        for _ in range(warm):
            self.launch(name, grid, block, args, shared)
        self.sync()
        ts = []
        for _ in range(reps):
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            self.launch(name, grid, block, args, shared)
            b.record()
            b.synchronize()
            ts.append(cp.cuda.get_elapsed_time(a, b))
        return statistics.median(ts)


def rate_case(b: Bench, kernel, warps, args_fn, insts_per_warp, shared=0, reps=3):
    """One CTA per SM, `warps` warps each: warp instructions per SM-cycle (median over SMs, median of reps)."""
    cp, np = b.cp, b.np
    ctas = b.sms
    out = cp.zeros(ctas * warps * 2, dtype=cp.int64)
    vals = []
    for _ in range(reps):
        b.launch(kernel, ctas, 32 * warps, args_fn(out), shared)
        b.sync()
        spans = b.spans(out, warps, ctas)
        vals.append(statistics.median(warps * insts_per_warp / s for s in spans))
    return {"warp_inst_per_sm_cycle": round(statistics.median(vals), 4), "reps": [round(v, 4) for v in vals],
            "warps_per_sm": warps, "ctas": ctas}


def m_ldg_rates(b: Bench) -> dict:
    cp, np = b.cp, b.np
    buf = cp.zeros(64 << 20, dtype=cp.uint8)  # 64 MB of zeros: loads stay within the first 2 MB
    sink = cp.zeros(1 << 16, dtype=cp.uint32)
    iters = 256
    res = {"method": f"ldg_<q><bits>: {U} independent loads per iteration at base + lane*stride + k*4096, "
                     f"{iters} iterations timed after one untimed pass; .ca = L1-cached (hits after the first pass), "
                     ".cg = L2 only; 1 CTA per SM; rate = warp loads / SM cycle", "by_warps": {}, "by_stride": {}}
    for q in ("ca", "cg"):
        for bits in (32, 64, 128):
            k = f"ldg_{q}{bits}"
            for w in (1, 2, 4, 8, 16, 32):
                res["by_warps"][f"{k}_w{w}"] = rate_case(
                    b, k, w, lambda out: (buf, sink, out, np.int32(iters), np.int32(bits // 8), np.uint64(0)), iters * U)
        for stride in (0, 4, 8, 16, 32, 64, 128):
            k = f"ldg_{q}32"
            r = rate_case(b, k, 32, lambda out: (buf, sink, out, np.int32(iters), np.int32(stride), np.uint64(0)), iters * U)
            lines = 1 if stride == 0 else max(1, 32 * stride // 128)
            sectors = 1 if stride == 0 else min(32, max(1, 32 * stride // 32))
            r.update({"stride_bytes": stride, "lines_per_request": lines, "sectors_per_request": sectors})
            res["by_stride"][f"{k}_s{stride}"] = r
    del buf
    return res


def m_bcast(b: Bench) -> dict:
    """L1-hitting loads of 32, 64 and 128 bits with every lane on one address (stride 0: one sector, but
    32 x width bytes of register data) against the coalesced ones (stride = width): does a warp load
    pass the L1 at one line per cycle, or at 128 bytes of lane data per cycle? 1 CTA per SM."""
    cp, np = b.cp, b.np
    buf = cp.zeros(64 << 20, dtype=cp.uint8)
    sink = cp.zeros(1 << 16, dtype=cp.uint32)
    iters = 256
    res = {"method": f"ldg_ca<bits> as group ldg (L1 hits), lanes `stride` bytes apart; rate = warp loads / SM cycle",
           "cases": {}}
    for bits in (32, 64, 128):
        for stride in (0, bits // 8):
            for w in (8, 32):
                r = rate_case(b, f"ldg_ca{bits}", w,
                              lambda out: (buf, sink, out, np.int32(iters), np.int32(stride), np.uint64(0)), iters * U)
                r.update({"bits": bits, "stride_bytes": stride, "lines_per_request": max(1, 32 * stride // 128),
                          "lane_bytes_per_request": 32 * bits // 8})
                res["cases"][f"ldg_ca{bits}_s{stride}_w{w}"] = r
    del buf
    return res


def m_stream(b: Bench) -> dict:
    """Loads that miss L1 and L2 (each warp walks its own fresh chunk of a 2+ GB buffer)."""
    cp, np = b.cp, b.np
    res = {"method": "ldg_stream_cg<bits>: each warp reads its own contiguous chunk once (DRAM); 1 CTA per SM",
           "cases": {}}
    for bits, iters in ((32, 256), (128, 64)):
        for w in (4, 16, 32):
            nbytes = b.sms * w * iters * U * 32 * (bits // 8)
            buf = cp.zeros(nbytes, dtype=cp.uint8)
            sink = cp.zeros(1 << 16, dtype=cp.uint32)
            r = rate_case(b, f"ldg_stream_cg{bits}", w, lambda out: (buf, sink, out, np.int32(iters)), iters * U, reps=2)
            r["bytes"] = nbytes
            res["cases"][f"stream{bits}_w{w}"] = r
            del buf
            cp.get_default_memory_pool().free_all_blocks()
    return res


def m_stg(b: Bench) -> dict:
    cp, np = b.cp, b.np
    res = {"method": f"stg_<bits>: {U} coalesced stores per iteration per warp, consecutive chunks, wrapped "
                     "inside `mask`+1 bytes (4 MB: L2-resident; 2 GB: DRAM); 1 CTA per SM of 32 warps", "cases": {}}
    buf = cp.zeros(2 << 30, dtype=cp.uint8)
    for bits in (32, 64, 128):
        for label, mask in (("l2_4MB", (4 << 20) - 1), ("dram_2GB", (2 << 30) - 1)):
            iters = 256
            for w in (8, 32):
                r = rate_case(b, f"stg_{bits}", w, lambda out: (buf, out, np.int32(iters), np.uint64(mask), np.uint32(7)),
                              iters * U, reps=2)
                r["bytes_per_sm_cycle"] = round(r["warp_inst_per_sm_cycle"] * 32 * bits / 8, 1)
                res["cases"][f"stg{bits}_{label}_w{w}"] = r
    del buf
    cp.get_default_memory_pool().free_all_blocks()
    return res


def m_stg_scatter(b: Bench) -> dict:
    """Stores whose 32 lanes write 4 bytes each, 1..32 lines and partial sectors apart (a transpose's
    column writes): the rate per SM (no Nsight profile of this group yet)."""
    cp, np = b.cp, b.np
    res = {"method": f"stg_scatter32: lane l stores 4 B at p + l*stride, {U} stores 4 KB apart per iteration, the "
                     "window moving on per iteration and wrapping inside `mask`+1 bytes (4 MB: L2-resident; 2 GB: "
                     "DRAM); 1 CTA per SM", "cases": {}}
    buf = cp.zeros(2 << 30, dtype=cp.uint8)
    for stride in (4, 8, 16, 32, 64, 128):
        for label, mask in (("l2_4MB", (4 << 20) - 1), ("dram_2GB", (2 << 30) - 1)):
            iters = 64
            for w in (8, 32):
                r = rate_case(b, "stg_scatter32", w, lambda out: (buf, out, np.int32(iters), np.uint64(mask),
                                                                   np.int32(stride), np.uint32(7)), iters * U, reps=2)
                res["cases"][f"s{stride}_{label}_w{w}"] = r
    del buf
    cp.get_default_memory_pool().free_all_blocks()
    return res


def m_scatter(b: Bench) -> dict:
    """Loads that miss L1 and touch 1..32 lines of 4..1 sectors: whether a warp's limit on outstanding
    misses counts lines, sectors or neither."""
    cp, np = b.cp, b.np
    res = {"method": "ldg_scatter_plain32: lane l at p + l*stride, 16 loads 4 KB apart per iteration, 64 KB "
                     "per warp per iteration moving through a 16 MB window (L1 misses, L2 hits); 1 CTA per SM",
           "cases": {}}
    buf = cp.zeros(32 << 20, dtype=cp.uint8)
    sink = cp.zeros(1 << 16, dtype=cp.uint32)
    for stride in (4, 8, 16, 32, 64, 128):
        for w in (1, 4, 8):
            r = rate_case(b, "ldg_scatter_plain32", w, lambda out: (buf, sink, out, np.int32(64),
                                                                    np.uint64((16 << 20) - 1), np.int32(stride)),
                          64 * U, reps=3)
            r.update({"stride_bytes": stride, "lines_per_request": max(1, 32 * stride // 128),
                      "sectors_per_request": max(1, 32 * stride // 32) if stride < 32 else 32})
            res["cases"][f"s{stride}_w{w}"] = r
    del buf
    cp.get_default_memory_pool().free_all_blocks()
    return res


def m_sts(b: Bench) -> dict:
    np = b.np
    res = {"method": f"sts_<bits>: {U} shared stores per iteration at lane*stride + k*128; 1 CTA per SM of 32 "
                     "warps; wavefronts = conflict degree x (bits/32 for 64/128-bit: 2 or 4 per request)", "cases": {}}
    iters = 256
    for bits, strides in ((32, (4, 8, 16, 128)), (64, (8, 16, 256)), (128, (16, 32, 512))):
        for stride in strides:
            r = rate_case(b, f"sts_{bits}", 32, lambda out: (out, np.int32(iters), np.int32(stride), np.uint32(3)),
                          iters * U, shared=24 * 1024)
            r["stride_bytes"] = stride
            res["cases"][f"sts{bits}_s{stride}"] = r
    return res


def m_lds(b: Bench) -> dict:
    """Conflict-free shared loads (lds_<bits>, stride = the access width: 1 / 2 / 4 wavefronts) by warps
    per SM, one CTA per SM: with 1, 2 and 4 warps each on its own sub-partition (warp id mod 4), 8 and 16
    two and four per sub-partition. wavefronts per cycle = rate x wavefronts per load."""
    cp, np = b.cp, b.np
    sink = cp.zeros(1 << 16, dtype=cp.uint32)
    iters = 256
    res = {"method": f"lds_<bits>: {U} independent shared loads per iteration at lane*stride + k*512 (stride = "
                     f"bits/8: conflict-free), folded by LOP3 into 4 accumulators; {iters} iterations timed after one "
                     "untimed pass; 1 CTA per SM; rate = warp loads / SM cycle", "by_warps": {}}
    for bits in (32, 64, 128):
        for w in (1, 2, 4, 8, 16, 32):
            r = rate_case(b, f"lds_{bits}", w, lambda out: (out, sink, np.int32(iters), np.int32(bits // 8),
                                                            np.uint32(0)), iters * U, shared=24 * 1024)
            r["wavefronts_per_sm_cycle"] = round(r["warp_inst_per_sm_cycle"] * (bits // 32), 4)
            res["by_warps"][f"lds{bits}_w{w}"] = r
    # one sub-partition alone: issue_lds<bits>_w (warp 0, or warps 0 and 4 of 8), gaps after each load
    res["issue"] = {}
    for bits in (64, 128):
        for label, block, every in (("w1", 32, 1), ("sp2", 256, 4)):
            runs, _ = _issue_runs(b, f"issue_lds{bits}_w", block, every, 0, None, sink, n=NW, shared=32 * 1024,
                                  args=lambda out, every=every: (out, sink, np.int32(every)))
            res["issue"][f"lds{bits}_{label}"] = {"gaps": runs[-1], "all_runs": runs}
    # load-to-use latency: one warp's dependent chain (chase_lds<bits>), 4096 steps
    # (chase1_lds<bits>: the same chain run by lane 0 alone)
    res["chase"] = {}
    for kernel, label in (("chase_lds", "lds"), ("chase1_lds", "lane1_lds")):
        for bits in (32, 64, 128):
            out = cp.zeros(2, dtype=cp.int64)
            vals = []
            for _ in range(3):
                b.launch(f"{kernel}{bits}", 1, 32, (out, sink, np.int32(4096)), shared=32 * 1024)
                b.sync()
                o = out.get()
                vals.append(round(float(o[1] - o[0]) / 4096, 2))
            res["chase"][f"{label}{bits}"] = {"cycles_per_load": vals}
    return res


def m_align(b: Bench) -> dict:
    """Conflict-free shared accesses on and off their 128-byte alignment (memory.cu `lds_at*`, `lds_row32`,
    `sts_at32`): rate by case at 32 and 8 warps per SM, one CTA per SM. Do the lanes of a conflict-free access
    that span two aligned 128-byte blocks, or 32 rows, cost the shared pipe more than one wavefront each?
    And what does a broadcast (stride 0: every lane at one address) of 32 / 64 / 128 bits cost?"""
    cp, np = b.cp, b.np
    sink = cp.zeros(1 << 16, dtype=cp.uint32)
    iters = 256
    res = {"method": f"{U} independent shared accesses per iteration at lane*stride + offset + k*512 (lds_row32: "
                     f"+ k*132, the rows of a float[..][33] tile), folded into 4 accumulators; {iters} iterations "
                     "timed after one untimed pass; 1 CTA per SM; rate = warp accesses / SM cycle; wavefronts "
                     "per cycle = rate x width/32 (the bank rule's wavefronts: all conflict-free; stride 0: every lane at one address, a broadcast)", "cases": {}}
    cases = [("lds_at32", 4, 0), ("lds_at32", 4, 4), ("lds_at32", 4, 64), ("lds_at32", 4, 124), ("lds_row32", 4, 0),
             ("lds_at32", 132, 0), ("lds_at32", 132, 4), ("lds_at64", 8, 0), ("lds_at64", 8, 8), ("lds_at64", 8, 64),
             ("lds_at128", 16, 0), ("lds_at128", 16, 16), ("lds_at128", 16, 64), ("sts_at32", 4, 0), ("sts_at32", 4, 4),
             ("sts_at32", 132, 0), ("lds_at32", 0, 0), ("lds_at64", 0, 0), ("lds_at128", 0, 0), ("lds_at128", 0, 16)]
    for kernel, stride, offset in cases:
        bits = 128 if kernel.endswith("128") else 64 if kernel.endswith("64") else 32
        for w in (32, 8):
            if kernel.startswith("sts"):
                args = (lambda out, stride=stride, offset=offset: (out, np.int32(iters), np.int32(stride),
                                                                   np.int32(offset), np.uint32(3)))
            else:
                args = (lambda out, stride=stride, offset=offset: (out, sink, np.int32(iters), np.int32(stride),
                                                                   np.int32(offset), np.uint32(0)))
            r = rate_case(b, kernel, w, args, iters * U, shared=24 * 1024)
            r["wavefronts_per_sm_cycle"] = round(r["warp_inst_per_sm_cycle"] * max(1, bits // 32), 4)
            r.update({"stride_bytes": stride, "offset_bytes": offset, "bits": bits})
            res["cases"][f"{kernel}_s{stride}_o{offset}_w{w}"] = r
    return res


def m_s2r(b: Bench) -> dict:
    """memory.cu `s2r_probe`: one CTA of 8 warps per SM; warp 0 issues n 32-way-conflicting LDS, warps 4
    (its sub-partition) and 1 (another) time an S2R 400 cycles in (the 32-wavefront LDS fill the queue by ~120): medians over SMs of three launches."""
    cp, np = b.cp, b.np
    sink = cp.zeros(1 << 12, dtype=cp.uint32)
    res = {"method": "s2r_probe: warp 0 issues n 32-way-conflicting LDS (32 wavefronts each); 400 cycles after "
                     "the start warps 4 (same sub-partition) and 1 (another) read %warpid between two clock reads "
                     "(the second after an add using it); cycles between, median over SMs", "cases": {}}
    for n in (0, 8, 32, 48):
        vals = _probe_medians(b, "s2r_probe", lambda out, n=n: (out, sink, np.int32(n)), (1, 4), 8 * 1024)
        res["cases"][f"n{n}"] = {"other_sp_cycles": vals[1], "same_sp_cycles": vals[4]}
    return res


def m_issue(b: Bench) -> dict:
    """Warps issue 48 accesses back to back with a clock read after each: the gaps show when a
    warp's next access waits (a queue full), and how fast the queue then drains. `w1`: one warp;
    `sp2`: warps 0 and 4 of an 8-warp CTA (one sub-partition, if warps map to sub-partitions
    by warp id mod 4), each recording its own stamps: a queue per sub-partition is shared by them,
    a queue per warp is not."""
    cp = b.cp
    res = {"method": f"issue_<kind>: {NQ} accesses each followed by CS2R SR_CLOCKLO; second of two passes "
                     "(warm L1); gaps[k] = t[k+1] - t[k] in SM cycles", "cases": {}}
    g = cp.zeros(1 << 20, dtype=cp.uint8)
    sink = cp.zeros(64, dtype=cp.uint32)
    for label, block, every in (("w1", 32, 1), ("sp2", 256, 4)):
        for kind in ("lds", "sts", "ldg", "stg"):
            for stride in (4, 128):
                runs, t = _issue_runs(b, f"issue_{kind}", block, every, stride, g, sink)
                res["cases"][f"{kind}_s{stride}_{label}"] = {"gaps": runs[-1], "starts": {int(w): int(t[w, 0])
                                                             for w in range(0, block // 32, every)},
                                                             "all_runs": runs, "stride_bytes": stride}
    return res


def m_mioq(b: Bench) -> dict:
    """Is the MIO queue that one warp fills with ~30 conflicting LDS (`issue`'s lds_s128_w1) one per
    sub-partition or shared? `mioq_lds` (memory.cu): the warps of one CTA whose bit is set in the mask
    (warp w on sub-partition w mod 4) start together after a barrier, each issuing 48 32-way conflicting
    LDS with a clock read after each. Per-sub-partition queues let each warp on its own sub-partition
    queue ~30 at 4-cycle gaps; a pool shared by sub-partitions lets them together queue about what one
    warp does. Masks: one warp, pairs of sub-partitions (0+1, 0+2, 0+3), three, four, and two warps on
    each of one / four sub-partitions (256 threads)."""
    res = {"method": f"mioq_lds: {NQ} LDS.32 at lane x 128 bytes (32 wavefronts each), each followed by CS2R "
                     "SR_CLOCKLO, after a warm-up pass and a barrier; gaps[k] = t[k+1] - t[k] in SM cycles; "
                     "starts: each warp's t[0]; queued: the loads issued before the first gap over 16 cycles; "
                     "one CTA on one SM, three launches", "cases": {}}
    cp, np = b.cp, b.np
    sink = cp.zeros(64, dtype=cp.uint32)
    for label, block, mask in (("m1", 128, 0x1), ("m3", 128, 0x3), ("m5", 128, 0x5), ("m9", 128, 0x9), ("m7", 128, 0x7),
                               ("mF", 128, 0xF), ("m11", 256, 0x11), ("mFF", 256, 0xFF)):
        runs = []
        for _ in range(3):
            out = cp.zeros((block // 32) * (NQ + 1), dtype=cp.int64)
            b.launch("mioq_lds", 1, block, (out, sink, np.uint32(mask)), shared=16 * 1024)
            b.sync()
            t = out.get().reshape(block // 32, NQ + 1)
            warps = [w for w in range(block // 32) if mask >> w & 1]
            gaps = {w: [int(t[w, i + 1] - t[w, i]) for i in range(NQ)] for w in warps}
            queued = {w: next((i for i, g in enumerate(gaps[w]) if g > 16), NQ) for w in warps}
            runs.append({"gaps": gaps, "starts": {w: int(t[w, 0]) for w in warps}, "queued": queued,
                         "queued_total": sum(queued.values())})
        res["cases"][f"lds_s128_{label}"] = {"block": block, "mask": mask, "runs": runs}
    return res


def _probe_medians(b: Bench, kernel: str, args, warps, shared: int) -> dict:
    """Three launches of a probe kernel, one CTA of 256 threads on each SM writing one figure per warp
    (out[CTA * 8 + w]): per warp of `warps`, the median over the SMs of each launch. `args(out)` gives
    the kernel's arguments."""
    vals = {w: [] for w in warps}
    for _ in range(3):
        out = b.cp.zeros(b.sms * 8, dtype=b.cp.int64)
        b.launch(kernel, b.sms, 256, args(out), shared=shared)
        b.sync()
        o = out.get().reshape(b.sms, 8)
        for w in warps:
            vals[w].append(float(b.np.median(o[:, w])))
    return vals


def m_s2rq(b: Bench) -> dict:
    """Does an S2R wait for its MIO queue? `s2r_q_<reg>` (memory.cu): warps of the `fill` mask fill their
    queues with 32-way conflicting LDS; 300 cycles later warps 4 (sub-partition 0) and 5 (sub-partition 1)
    each read a special register (%tid.y, %laneid, %warpid, %ctaid.x, %smid): the cycles from the clock
    before the read to the clock after an add that uses it, medians over the SMs' CTAs (one CTA of 8
    warps on each SM), three launches."""
    cp, np = b.cp, b.np
    res = {"method": "s2r_q_<reg>: one CTA of 256 threads per SM; fill warps issue 48 LDS.32 at lane x 128 bytes "
                     "after a barrier, warps 4 and 5 read a special register 300 cycles later; cycles per "
                     "read (median over SMs) for w4 (sub-partition 0) and w5 (sub-partition 1)", "cases": {}}
    sink = cp.zeros(64, dtype=cp.uint32)
    for fill_label, fill in (("none", 0x0), ("sp0", 0x1), ("sp0_sp1", 0x3), ("all", 0xF)):
        for sr_label in ("tid_y", "laneid", "warpid", "ctaid_x", "smid"):
            vals = _probe_medians(b, f"s2r_q_{sr_label}", lambda out, fill=fill: (out, sink, np.uint32(fill)), (4, 5),
                                  16 * 1024)
            res["cases"][f"{sr_label}_fill_{fill_label}"] = {"w4_sp0_cycles": vals[4], "w5_sp1_cycles": vals[5]}
    return res


def _issue_runs(b: Bench, kernel: str, block: int, every: int, stride: int, g, sink, n: int = NQ,
                args=None, shared: int = 16 * 1024) -> tuple[list, object]:
    """Three launches of issue kernel `kernel` (one CTA of `block` threads, every `every`-th warp
    issuing): per launch, each issuing warp's gaps between its `n` accesses; and the last launch's
    stamps. The kernel's arguments: (g, out, sink, stride, every), or `args(out)`."""
    cp, np = b.cp, b.np
    out = cp.zeros((block // 32) * (n + 1), dtype=cp.int64)
    launch_args = args(out) if args else (g, out, sink, np.int32(stride), np.int32(every))
    runs = []
    for _ in range(3):
        b.launch(kernel, 1, block, launch_args, shared=shared)
        b.sync()
        t = out.get().reshape(block // 32, n + 1)
        runs.append({int(w): [int(t[w, i + 1] - t[w, i]) for i in range(n)] for w in range(0, block // 32, every)})
    return runs, t


def m_xq(b: Bench) -> dict:
    """One warp issues 32 accesses of one kind that fill its queue (32-line LDG, or 32-way conflicting
    LDS: lanes 128 B apart), then 16 of the other kind (one line / conflict-free), a clock read after
    each (issue_xq_ldg_lds, issue_xq_lds_ldg): if the second kind issues every ~4 cycles, LDS and LDG
    have queues of their own; if it waits as the first kind's queue drains, they share one."""
    cp, np = b.cp, b.np
    res = {"method": f"issue_xq_<first>_<then>: {NQ} accesses each followed by CS2R SR_CLOCKLO (32 of the first kind "
                     "at lane*128, 16 of the other at lane*4); second of two passes; gaps[k] = t[k+1] - t[k]", "cases": {}}
    g = cp.zeros(1 << 20, dtype=cp.uint8)
    sink = cp.zeros(64, dtype=cp.uint32)
    for label, block, every in (("w1", 32, 1), ("sp2", 256, 4)):
        for kind in ("ldg_lds", "lds_ldg"):
            runs, _ = _issue_runs(b, f"issue_xq_{kind}", block, every, 128, g, sink)
            res["cases"][f"{kind}_{label}"] = {"gaps": runs[-1], "all_runs": runs}
    return res


ORDER_NS = (0, 1, 2, 4, 8, 16)


def m_order(b: Bench) -> dict:
    """Does a shared load pass global loads queued before it (memory.cu order_probe_<N>)? One CTA of 8
    warps: warp 0 issues N LDG.E (32 lines each at stride 128, one line at 4) that hit L1 (`l1`: loaded
    before the barrier), L2 (`l2`) or DRAM (`dram`: a region no launch read before), then one conflict-free LDS whose use is timed: by warp 0 itself
    (`same_warp`), or `delay` cycles after the barrier by warp 4 (`same_sp`, warp 0's sub-partition) or
    warp 1 (`other_sp`). If the LDS passes the queued LDGs its time stays near an LDS's latency (~30
    cycles); if it waits for them in its sub-partition's queue it grows with N x lines / 0.5 per cycle."""
    cp, np = b.cp, b.np
    res = {"method": "order_probe_<N>: one CTA of 256 threads, 4 KiB shared; stamps: t0 before warp 0's LDGs, "
                     "t1 after warp 0's use of its LDS, t2 after its use of all LDGs, t3/t4 before the probe warp's "
                     "LDS and after its use; three launches, all kept (the first may find the lines in neither L1 "
                     "nor L2)", "cases": {}}
    g = cp.zeros(4 << 20, dtype=cp.uint8)
    fresh = cp.zeros(256 << 20, dtype=cp.uint8)  # `dram`: each launch reads 2 MiB never read before
    regions = itertools.count()
    sink = cp.zeros(64, dtype=cp.uint32)
    out = cp.zeros(8, dtype=cp.int64)
    for stride in (128, 4):
        for hot, where in ((1, "l1"), (0, "l2"), (0, "dram")):
            for probe, who, delay in ((0, "same_warp", 0), (4, "same_sp", 100), (1, "other_sp", 100)):
                for n in ORDER_NS:
                    runs = []
                    for _ in range(3):
                        out.fill(0)
                        src = g if where != "dram" else fresh[(next(regions) % 128) * (2 << 20):]
                        b.launch(f"order_probe_{n}", 1, 256, (src, sink, out, np.int32(stride), np.int32(hot),
                                                               np.int32(probe), np.int32(delay)), shared=4096)
                        b.sync()
                        t = [int(x) for x in out.get()]
                        rec = {"ldg_used": t[2] - t[0]}
                        if probe == 0:
                            rec["lds_used"] = t[1] - t[0]
                        else:
                            rec["lds_issue"] = t[3] - t[0]
                            rec["lds_latency"] = t[4] - t[3]
                        runs.append(rec)
                    res["cases"][f"s{stride}_{where}_{who}_n{n}"] = {"stride": stride, "hot": hot, "probe": probe,
                                                                     "delay": delay, "n": n, "runs": runs}
    return res


DSTAGE_KERNELS = ("dstage0_12", "dstage1_12", "dstage4_12", "dstage4_24", "dstage4_1", "dfree0_12", "dfree1_12",
                  "dfree4_12")


def m_dstage(b: Bench) -> dict:
    """A DGEMM loop in skeleton (memory.cu dstage<G>_<L>): per iteration every warp issues G 32-wavefront
    LDG.E.64 (L1 hits), then L conflict-free LDS.64, stamps the use of its first and last LDS and of its
    LDGs, and meets the others at a barrier (dfree<G>_<L>: no barrier, the warps drift apart); one CTA of 8
    or 32 warps per SM, 64 iterations. Per case the
    medians over SMs, warps and iterations 8-63 of each stamp after the iteration's start, and the median
    iteration period."""
    cp, np = b.cp, b.np
    iters = 64
    g = cp.zeros(b.sms * 32 * 4352 + (1 << 20), dtype=cp.uint8)
    sink = cp.zeros(1024, dtype=cp.uint32)
    res = {"method": "dstage<G>_<L>, one CTA per SM, 64 iterations; cycles after each iteration's start (median "
                     "over SMs, warps, iterations 8-63): first LDS used, last LDS used, LDGs used; period: median "
                     "start-to-start", "cases": {}}
    for warps in (8, 32):
        out = cp.zeros(b.sms * warps * iters * 4, dtype=cp.int64)
        for k in DSTAGE_KERNELS:
            runs = []
            for _ in range(3):
                b.launch(k, b.sms, 32 * warps, (g, sink, out, np.int32(iters)), shared=16 * 1024)
                b.sync()
                o = out.get().reshape(b.sms, warps, iters, 4)[:, :, 8:, :].astype(np.int64)
                start = o[..., 0]
                runs.append({"first_lds": float(np.median(o[..., 1] - start)),
                             "last_lds": float(np.median(o[..., 2] - start)),
                             "ldgs": float(np.median(o[..., 3] - start)),
                             "period": float(np.median(np.diff(start, axis=2)))})
            res["cases"][f"{k}_w{warps}"] = {"kernel": k, "warps": warps, "runs": runs}
    return res


def m_issue4(b: Bench) -> dict:
    """As `issue`, with warps 0-3 of a 4-warp CTA: one warp on each sub-partition (warp id mod 4).
    How many 32-way-conflicting LDS (32-line LDG) each issues before its first long gap says whether
    the ~30-deep queue of `issue.*_w1` is per sub-partition (each ~30) or per SM (~30 in all); the
    steady gaps say how the SM's stage is shared (4 x 32 units per gap: 128 cycles at 1 per cycle)."""
    cp = b.cp
    res = {"method": f"issue_<kind>: {NQ} accesses each followed by CS2R SR_CLOCKLO, warps 0-3 of one 128-thread "
                     "CTA (one per sub-partition); second of two passes; gaps[k] = t[k+1] - t[k] in SM cycles",
           "cases": {}}
    g = cp.zeros(1 << 20, dtype=cp.uint8)
    sink = cp.zeros(64, dtype=cp.uint32)
    for kind in ("lds", "ldg"):
        for stride in (4, 128):
            runs, _ = _issue_runs(b, f"issue_{kind}", 128, 1, stride, g, sink)
            res["cases"][f"{kind}_s{stride}_sp4"] = {"gaps": runs[-1], "all_runs": runs, "stride_bytes": stride}
    return res


def m_issue_st(b: Bench) -> dict:
    """Stores with their own data registers (issue_st_*: none reused by the clock reads, see memory.cu):
    the gaps between one warp's stores show how many it has in flight before it waits, and the drain
    rate after. `w1`: one warp; `sp2`: warps 0 and 4 of an 8-warp CTA (one sub-partition); `sp4`: warps
    0-3 of a 4-warp CTA (one per sub-partition). Stride 4: each store one line (full sectors); 128: 32
    lines (4 bytes in each)."""
    cp = b.cp
    res = {"method": f"issue_st_<kind>: {NQ} stores, each of its own data register, each followed by CS2R "
                     "SR_CLOCKLO; second of two passes; gaps[k] = t[k+1] - t[k] in SM cycles", "cases": {}}
    g = cp.zeros(1 << 20, dtype=cp.uint8)
    sink = cp.zeros(64, dtype=cp.uint32)
    for label, block, every in (("w1", 32, 1), ("sp2", 256, 4), ("sp4", 128, 1)):
        for kind in ("sts", "stg"):
            for stride in (4, 128):
                runs, _ = _issue_runs(b, f"issue_st_{kind}", block, every, stride, g, sink)
                res["cases"][f"{kind}_s{stride}_{label}"] = {"gaps": runs[-1], "all_runs": runs, "stride_bytes": stride}
    return res


WAR_FILLS = (0, 4, 8, 16, 24, 32)


def m_war(b: Bench) -> dict:
    """When does an access read its registers (memory.cu war_*)? One warp (`w1`), or warps 0 and 4 of an
    8-warp CTA (`sp2`, one sub-partition), issues FILL accesses of one kind (immediate offsets from one
    base), then a probe access of the same kind whose address (LDG, LDS) or data (STG, STS) register the
    next instruction overwrites (LDG: an LDS.64 reloads the pointer; the others: an in-place add), then
    reads the clock. `fill` = t1 - t0 (the FILL accesses' issue), `probe` = t2 - t1 (the probe's issue and
    the overwrite's wait for the probe's register read). If registers are read only as an access starts to
    pass the SM's stage (gpusim), `probe` grows with the accesses queued in front; if at queue entry, not."""
    cp, np = b.cp, b.np
    res = {"method": "war_<kind>_f<FILL>: FILL accesses, CS2R, probe access + overwrite of its register, CS2R; "
                     "second of two passes; three launches", "cases": {}}
    g = cp.zeros(1 << 20, dtype=cp.uint8)
    sink = cp.zeros(64, dtype=cp.uint32)
    for label, block, every in (("w1", 32, 1), ("sp2", 256, 4)):
        for kind, strides in (("ldg", (4, 128)), ("ldgcg", (128,)), ("stg", (4, 128)), ("lds", (4, 128)),
                              ("sts", (4, 128))):
            for stride in strides:
                for fill in WAR_FILLS:
                    out = cp.zeros((block // 32) * 3, dtype=cp.int64)
                    runs = []
                    for _ in range(3):
                        b.launch(f"war_{kind}_f{fill}", 1, block, (g, out, sink, np.int32(stride), np.int32(every),
                                                                  np.int64(0)), shared=16 * 1024)
                        b.sync()
                        t = out.get().reshape(block // 32, 3)
                        runs.append({int(w): {"fill": int(t[w, 1] - t[w, 0]), "probe": int(t[w, 2] - t[w, 1])}
                                     for w in range(0, block // 32, every)})
                    res["cases"][f"{kind}_s{stride}_f{fill}_{label}"] = {"runs": runs, "stride_bytes": stride,
                                                                          "fill": fill}
    return res


def m_st_order(b: Bench) -> dict:
    """st_order (memory.cu): 16 MiB of st_stride k = 64 stores (4096 CTAs of 8 warps, 8 per SM, or 2 with
    100 KiB of shared memory each), a clock after each store; `tp_naive`: tp_order, transpose_naive's loads
    and stores (m = 2048: the same CTAs and output lines) with the same stamps; `tp_stonly`: tps_order, its
    stores alone. Per SM: how many CTAs are between their
    first and last store at once (time-weighted mean over the SM's store span) and, for SM 0, the CTA of
    each store in issue order (first 200)."""
    cp, np = b.cp, b.np
    k, rows = 64, 16 * (1 << 20) // (4 * 32 * 64) // 32 * 32
    gx = rows // 32
    n = gx * (32 * 64 // 32)
    res = {"method": "st_order: st_stride k=64 S=16 MiB with clock64 after each store; per CTA its span from the "
                     "first store of any warp to the last store of all; open = CTAs of the SM inside their span",
           "cases": {}}
    out = cp.zeros(16 * (1 << 20) // 4, dtype=cp.float32)
    inp = cp.ones(16 * (1 << 20) // 4, dtype=cp.float32)
    for label, smem in (("ctas8", 0), ("ctas2", 100 * 1024), ("tp_naive", 0), ("tp_stonly", 0)):
        stamps = cp.zeros(n * 8 * 6, dtype=cp.int64)
        for _ in range(2):  # the second launch is kept
            if label.startswith("tp_"):  # 2048 x 2048 floats: the same 4096 CTAs and lines
                b.launch("tp_order" if label == "tp_naive" else "tps_order", n, 256, (inp, out, stamps, np.int32(2048)),
                         shared=smem)
            else:
                b.launch("st_order", n, 256, (out, stamps, np.int32(k), np.int32(gx), np.float32(2.0)), shared=smem)
            b.sync()
        t = stamps.get().reshape(n, 8, 6)
        sm = t[:, 0, 5]
        first, last = t[:, :, 1].min(axis=1), t[:, :, 4].max(axis=1)
        per_sm = []
        for s in range(b.sms):
            c = np.flatnonzero(sm == s)
            if not len(c):
                continue
            ev = np.r_[first[c], last[c]]
            d = np.r_[np.ones(len(c)), -np.ones(len(c))]
            o = np.argsort(ev, kind="stable")
            ev, level = ev[o], np.cumsum(d[o])
            span = ev[-1] - ev[0]
            per_sm.append(float((level[:-1] * np.diff(ev)).sum() / span) if span > 0 else 0.0)
        c0 = np.flatnonzero(sm == 0)
        order = sorted((int(t[c, w, j]), int(c), w, j - 1) for c in c0 for w in range(8) for j in range(1, 5))
        res["cases"][label] = {"mean_open_ctas_per_sm": round(float(np.mean(per_sm)), 3),
                               "open_ctas_sm_quartiles": [round(float(x), 3) for x in np.percentile(per_sm, [25, 50, 75])],
                               "ctas_on_sm0": len(c0), "cta_span_cycles_median": int(np.median(last - first)),
                               "cta_life_cycles_median": int(np.median(t[:, :, 4].max(axis=1) - t[:, :, 0].min(axis=1))),
                               "sm0_order": order[:200]}
    return res


MIX_CASES = (  # name: (active warps, warps doing LDG) as bit masks over warp ids 0-31 (sub-partition = id mod 4)
    ("lds32", 0xFFFFFFFF, 0), ("ldg32", 0xFFFFFFFF, 0xFFFFFFFF),
    ("lds16", 0x0F0F0F0F, 0), ("ldg16", 0xF0F0F0F0, 0xF0F0F0F0),
    ("mix16_16", 0xFFFFFFFF, 0xF0F0F0F0),       # every sub-partition: 4 LDS warps and 4 LDG warps
    ("mix16_16_by_sp", 0xFFFFFFFF, 0xCCCCCCCC))  # LDS on sub-partitions 0-1, LDG on 2-3


def _mix_spans(b: Bench, cases, lds_iters: int, ldg_iters: int, lds_stride: int, ldg_stride: int,
               kernel: str = "mix_lds_ldg", wavefronts: int | None = None) -> dict:
    """`kernel` (mix_lds_ldg, or mix_lds64_ldg / mix_lds128_ldg with `wavefronts` 2 / 4) for each (name,
    active, ldg) of `cases`: spans and units per cycle (see m_mix)."""
    cp, np = b.cp, b.np
    lines = min(32, max(1, 32 * ldg_stride // 128))  # lines one LDG touches
    if wavefronts is None:
        wavefronts = min(32, max(1, lds_stride // 4))  # wavefronts one LDS.32 takes (stride 4: none conflict)
    units_lds, units_ldg = lds_iters * U * wavefronts, ldg_iters * U * lines
    buf = cp.zeros(64 << 20, dtype=cp.uint8)
    sink = cp.zeros(1 << 16, dtype=cp.uint32)
    ctas, warps = b.sms, 32
    out_cases = {}
    for name, active, ldg in cases:
        out = cp.zeros(ctas * warps * 2, dtype=cp.int64)
        reps = []
        for _ in range(3):
            b.launch(kernel, ctas, 32 * warps,
                     (buf, sink, out, np.int32(lds_iters), np.int32(ldg_iters), np.int32(lds_stride),
                      np.int32(ldg_stride), np.uint32(ldg), np.uint32(active), np.uint32(8192), np.uint64(0)),
                     shared=24 * 1024)
            b.sync()
            o = out.get().reshape(ctas, warps, 2)
            on = [w for w in range(warps) if active >> w & 1]
            spans = [int(c[on, 1].max() - c[on, 0].min()) for c in o]
            reps.append({"span": statistics.median(spans),
                         "end_offsets_sm0": [int(o[0, w, 1] - o[0, on, 0].min()) for w in on]})
        span = statistics.median(r["span"] for r in reps)
        n_ldg = bin(active & ldg).count("1")
        n_lds = bin(active & ~ldg & 0xFFFFFFFF).count("1")
        units = n_lds * units_lds + n_ldg * units_ldg
        out_cases[name] = {"active_mask": hex(active), "ldg_mask": hex(ldg), "lds_warps": n_lds, "ldg_warps": n_ldg,
                           "lines_per_ldg": lines, "wavefronts_per_lds": wavefronts,
                           "span_cycles": span, "units_per_cycle": round(units / span, 4),
                           "spans": [r["span"] for r in reps], "end_offsets_sm0": reps[-1]["end_offsets_sm0"]}
    del buf
    return {"units_per_lds_warp": units_lds, "units_per_ldg_warp": units_ldg, "cases": out_cases}


def m_mix(b: Bench) -> dict:
    """Shared-memory wavefronts and L1-hitting global lines side by side (mix_lds_ldg): 1 CTA of 32
    warps per SM; an LDS warp runs lds_iters x 16 conflict-free LDS (1 wavefront each), an LDG warp
    ldg_iters x 16 LDG.E touching 32 lines each (L1 hits), the same units per warp. If the two pass
    one SM-wide data stage at ~1 unit per cycle, mix16_16 takes about lds16 + ldg16; if they pass
    stages of their own, about the longer of the two."""
    lds_iters, ldg_iters, ldg_stride = 1024, 32, 128
    res = {"method": f"mix_lds_ldg, 1 CTA of 32 warps per SM (24 KB dynamic shared); LDS warp: {lds_iters} x {U} "
                     f"ld.shared.u32 at lane*4 (1 wavefront each); LDG warp: {ldg_iters} x {U} ld.global.ca.u32 at "
                     f"lane*{ldg_stride} (32 lines each, L1 hits); second of two passes; span = max end - min start "
                     "over the SM's active warps (median over SMs, median of 3 launches); units = wavefronts + lines"}
    res.update(_mix_spans(b, MIX_CASES, lds_iters, ldg_iters, 4, ldg_stride))
    c = res["cases"]
    res["mix_over_sum_of_parts"] = round(c["mix16_16"]["span_cycles"] /
                                         (c["lds16"]["span_cycles"] + c["ldg16"]["span_cycles"]), 3)
    res["mix_over_longer_part"] = round(c["mix16_16"]["span_cycles"] /
                                        max(c["lds16"]["span_cycles"], c["ldg16"]["span_cycles"]), 3)
    return res


MIX2_CASES = (("lds16", 0x0F0F0F0F, 0), ("ldg16", 0xF0F0F0F0, 0xF0F0F0F0), ("mix16_16", 0xFFFFFFFF, 0xF0F0F0F0),
              ("mix24_8", 0xFFFFFFFF, 0xF000F000),   # every sub-partition: 6 LDS warps and 2 LDG warps
              ("mix8_24", 0xFFFFFFFF, 0xFFF0FFF0))   # every sub-partition: 2 LDS warps and 6 LDG warps


def m_mix2(b: Bench) -> dict:
    """What a shared load and a global line cost each other in the data stage: mix_lds_ldg (see m_mix)
    with the lines one LDG touches swept (1, 2, 4, 8, 32: ldg_stride 4-128 bytes per lane), with 32-way
    conflicting LDS (32 wavefronts each) beside 32-line LDG, and with 24 + 8 / 8 + 24 warps. The same
    units per warp in every case. A cost per line switched, per instruction switched or per unit of
    either kind predict different spans for these."""
    res = {"method": "mix_lds_ldg as m_mix, units per warp 16384; per sweep point: lds16, ldg16 (each kind alone, 16 "
                     "warps), mix16_16, mix24_8 (24 LDS + 8 LDG warps), mix8_24; lds = conflict-free LDS unless "
                     "the point says s128 (32-way conflicts)", "points": {}}
    for lines in (1, 2, 4, 8, 32):
        res["points"][f"ldg{lines}l_lds1w"] = _mix_spans(b, MIX2_CASES, 1024, 1024 // lines, 4, 4 * lines)
    res["points"]["ldg32l_lds32w"] = _mix_spans(b, MIX2_CASES, 32, 32, 128, 128)
    res["points"]["ldg2l_lds32w"] = _mix_spans(b, MIX2_CASES, 32, 512, 128, 8)
    return res


def m_mix3(b: Bench) -> dict:
    """Wide shared loads beside global lines: conflict-free LDS.64 / LDS.128 (2 / 4 wavefronts by width,
    mix_lds64_ldg / mix_lds128_ldg) beside 32-line and 2-line LDG, and for comparison LDS.32 with 4-way
    conflicts (4 wavefronts by conflicts) beside 32-line LDG; the cases of m_mix2, 16384 units per warp.
    A DGEMM's LDS.128 operand loads run beside 32-line LDGs: does the mixing cost of mix2 (a small
    access beside a large one pays 1 - small/large per unit) hold for wavefronts that come from width?"""
    res = {"method": "as m_mix2; lds = conflict-free LDS.128 / LDS.64 (mix_lds128_ldg / mix_lds64_ldg, lane*16 / "
                     "lane*8 + k*512 / k*256) or LDS.32 at lane*16 (4-way conflicts)", "points": {}}
    res["points"]["ldg32l_lds128"] = _mix_spans(b, MIX2_CASES, 256, 32, 16, 128, "mix_lds128_ldg", 4)
    res["points"]["ldg32l_lds64"] = _mix_spans(b, MIX2_CASES, 512, 32, 8, 128, "mix_lds64_ldg", 2)
    res["points"]["ldg2l_lds128"] = _mix_spans(b, MIX2_CASES, 256, 512, 16, 8, "mix_lds128_ldg", 4)
    res["points"]["ldg32l_lds4w"] = _mix_spans(b, MIX2_CASES, 256, 32, 16, 128)
    # the global lines new to L1 (L1 misses, L2 hits): 8192 units per warp (32 MiB walked)
    res["points"]["ldg32lmiss_lds1w"] = _mix_spans(b, MIX2_CASES, 512, 16, 4, 128, "mix_lds_ldgmiss", 1)
    res["points"]["ldg32lmiss_lds128"] = _mix_spans(b, MIX2_CASES, 128, 16, 16, 128, "mix_lds128_ldgmiss", 4)
    res["points"]["ldg2lmiss_lds128"] = _mix_spans(b, MIX2_CASES, 128, 256, 16, 8, "mix_lds128_ldgmiss", 4)
    # plain loads (LDG.E, as compiled kernels issue them; the points above use ld.global.ca: LDG.E.STRONG.SM)
    res["points"]["ldg32lplain_lds1w"] = _mix_spans(b, MIX2_CASES, 1024, 32, 4, 128, "mix_lds_ldgplain", 1)
    res["points"]["ldg32lplain_lds128"] = _mix_spans(b, MIX2_CASES, 256, 32, 16, 128, "mix_lds128_ldgplain", 4)
    res["points"]["ldg2lplain_lds1w"] = _mix_spans(b, MIX2_CASES, 1024, 512, 4, 8, "mix_lds_ldgplain", 1)
    return res


BURST_GROUPS = 24
BURST_LDS = 0xFFFFFFF0  # warps 4-31: 7 LDS warps per sub-partition (warps 0-3: one per sub-partition)


def m_burst(b: Bench) -> dict:
    """When do an L1 miss's lines take the SM's data stage (mix_burst)? 1 CTA of 32 warps per SM: warps
    4-31 run BURST_GROUPS groups of 16 conflict-free LDS.64 and stamp each group's end; at the same start,
    warps 0-3 (`ldg4`) or 0-1 (`ldg2`) each issue 16 LDG.E touching 32 lines (512 lines, 64 KiB per warp,
    new to L1) and stamp when all have returned. The LDGs' region is new to L2 (`dram`: each launch its
    own) or was read by the launch before (`l2`: the same region twice, the second launch kept). Per
    case: the median over SMs of each group's end (the latest LDS warp of the CTA, cycles from the CTA's
    first stamp), the LDG warps' return, three launches. `none`: no LDG warps. If a miss's lines take
    the stage at issue, the first groups end later than in `none`; if as the data return, later ones do."""
    cp, np = b.cp, b.np
    G, warps = BURST_GROUPS, 32
    region = b.sms * 4 * U * 4096  # bytes one launch's LDG warps may read
    buf = cp.zeros(12 * region, dtype=cp.uint8)
    sink = cp.zeros(1 << 16, dtype=cp.uint32)
    out = cp.zeros(b.sms * warps * (G + 1), dtype=cp.int64)
    res = {"method": f"mix_burst, 1 CTA of 32 warps per SM (16 KB dynamic shared); LDS warps (mask {BURST_LDS:#x}): "
                     f"{G} x 16 ld.shared.v2.u32 at lane*8 + k*256, clock after each group; LDG warps: 16 ld.global.u32 "
                     "at lane*128 + k*4096 (32 lines each, 64 KiB per warp), clock when all returned; cycles from the "
                     "CTA's first stamp, median over SMs; three launches", "groups": G, "cases": {}}

    def launch(ldg, goff, lds_mask=BURST_LDS):
        b.launch("mix_burst", b.sms, 32 * warps, (buf, sink, out, np.int32(G), np.uint32(ldg), np.uint32(lds_mask),
                                                  np.int64(goff)), shared=16 * 1024)
        b.sync()
        o = out.get().reshape(b.sms, warps, G + 1)
        lds = [w for w in range(warps) if lds_mask >> w & 1]
        ldw = [w for w in range(warps) if ldg >> w & 1]
        t0 = o[:, :, 0][:, lds + ldw].min(axis=1)
        rec = {}
        if lds:
            ends = (o[:, lds, 1:].max(axis=1) - t0[:, None])  # (sms, G)
            rec["group_end"] = [float(np.median(ends[:, g])) for g in range(G)]
            rec["group_end_sm0"] = [int(x) for x in ends[0]]
        if ldw:
            ret = o[:, ldw, 1] - t0[:, None]
            rec["ldg_return_median"] = float(np.median(ret.max(axis=1)))
            rec["ldg_return_sm0"] = [int(x) for x in ret[0]]
        return rec

    fresh = itertools.count()  # regions 0-10 in turn (a region's last reader ran 10 launches before: out of L2)
    for name, ldg, mode in (("none", 0, None), ("ldg4_dram", 0xF, "dram"), ("ldg2_dram", 0x3, "dram"),
                            ("ldg2_l2", 0x3, "l2"), ("ldg4_l2", 0xF, "l2")):
        runs = []
        for _ in range(3):
            if mode == "dram":
                runs.append(launch(ldg, next(fresh) % 11 * region))
            elif mode == "l2":
                goff = 11 * region
                launch(ldg, goff)  # brings the region into L2
                runs.append(launch(ldg, goff))
            else:
                runs.append(launch(ldg, 0))
        res["cases"][name] = {"ldg_mask": hex(ldg), "region": mode, "runs": runs}
    # the LDG warps from DRAM, 1-4 per SM (one per sub-partition), with the LDS warps and alone: where
    # does the LDS warps' early wait (ldg4_dram) start, and do the returns alone slow down with it?
    for n in (1, 2, 3, 4):
        ldg = (1 << n) - 1
        for lds_mask, tag in ((BURST_LDS, "lds"), (0, "alone")):
            runs = [launch(ldg, next(fresh) % 11 * region, lds_mask) for _ in range(3)]
            res["cases"][f"sweep_ldg{n}_{tag}"] = {"ldg_mask": hex(ldg), "region": "dram", "lds": tag, "runs": runs}
    del buf
    return res


PACE_LDS = 0x0F0F0F0F  # warps 0-3, 8-11, ...: 4 LDS warps per sub-partition (warp id mod 4)
PACE_LDG = 0xF0F0F0F0  # the other 16: 4 LDG warps per sub-partition


def m_pace(b: Bench) -> dict:
    """The data stage below saturation (memory.cu mix_pace): 16 LDS warps (one LDS.128 each step, then
    `lds_pad` dependent FFMAs) and 16 LDG warps (bursts of four 32-line LDGs, then `ldg_pad` FFMAs), each
    kind alone and together, one 32-warp CTA per SM. Per run and kind: the median over SMs of the mean
    span of that kind's warps. If a shared load pays the mixing cost whenever global lines are queued,
    the LDS warps' steps lengthen beside the LDG warps even where the two kinds' demands add up to less
    than the stage's one unit per cycle."""
    cp, np = b.cp, b.np
    buf = cp.zeros(64 << 20, dtype=cp.uint8)
    sink = cp.zeros(1 << 16, dtype=cp.uint32)
    ctas, warps = b.sms, 32
    lds_iters = 512
    res = {"method": "mix_pace, 1 CTA of 32 warps per SM (24 KB dynamic shared); LDS warps 0x0F0F0F0F: "
                     f"{lds_iters} x (LDS.128, lds_pad FFMAs); LDG warps 0xF0F0F0F0: ldg_iters x (4 x 32-line "
                     "LDG, ldg_pad FFMAs); second of two passes; span per warp = end - start; per kind the mean "
                     "over its warps, median over SMs and 3 launches", "runs": {}}

    def run(name, active, lds_pad, ldg_pad, ldg_iters, kernel="mix_pace"):
        out = cp.zeros(ctas * warps * 2, dtype=cp.int64)
        reps = []
        for _ in range(3):
            b.launch(kernel, ctas, 32 * warps,
                     (buf, sink, out, np.int32(lds_iters), np.int32(ldg_iters), np.int32(lds_pad),
                      np.int32(ldg_pad), np.uint32(PACE_LDG), np.uint32(active)), shared=24 * 1024)
            b.sync()
            o = out.get().reshape(ctas, warps, 2)
            span = o[:, :, 1] - o[:, :, 0]
            rep = {}
            for kind, mask in (("lds", PACE_LDS), ("ldg", PACE_LDG)):
                on = [w for w in range(warps) if (active & mask) >> w & 1]
                if on:
                    rep[kind] = float(np.median(span[:, on].mean(axis=1)))
            reps.append(rep)
        r = {"kernel": kernel, "active_mask": hex(active), "lds_pad": lds_pad, "ldg_pad": ldg_pad, "lds_iters": lds_iters,
             "ldg_iters": ldg_iters, "reps": reps}
        for kind in reps[0]:
            r[f"{kind}_span"] = statistics.median(x[kind] for x in reps)
        res["runs"][name] = r

    ldg_iters = {256: 32, 1024: 8}
    for lds_pad in (0, 8, 24):
        run(f"lds_p{lds_pad}", PACE_LDS, lds_pad, 0, 1)
    for ldg_pad, it in ldg_iters.items():
        run(f"ldg_q{ldg_pad}", PACE_LDG, 0, ldg_pad, it)
    for lds_pad in (0, 8, 24):
        for ldg_pad, it in ldg_iters.items():
            run(f"mix_p{lds_pad}_q{ldg_pad}", PACE_LDS | PACE_LDG, lds_pad, ldg_pad, it)
    # the same with plain loads (mix_pace_plain: LDG.E instead of LDG.E.STRONG.SM)
    for ldg_pad, it in ldg_iters.items():
        run(f"plain_ldg_q{ldg_pad}", PACE_LDG, 0, ldg_pad, it, "mix_pace_plain")
    for lds_pad in (0, 8, 24):
        for ldg_pad, it in ldg_iters.items():
            run(f"plain_mix_p{lds_pad}_q{ldg_pad}", PACE_LDS | PACE_LDG, lds_pad, ldg_pad, it, "mix_pace_plain")
    # the "LDG" warps without their loads (mix_pace_noload: FFMA pad loops only)
    for ldg_pad, it in ldg_iters.items():
        run(f"noload_ldg_q{ldg_pad}", PACE_LDG, 0, ldg_pad, it, "mix_pace_noload")
    for lds_pad in (0, 8, 24):
        for ldg_pad, it in ldg_iters.items():
            run(f"noload_mix_p{lds_pad}_q{ldg_pad}", PACE_LDS | PACE_LDG, lds_pad, ldg_pad, it, "mix_pace_noload")
    # the FFMA chains unrolled (mix_pace_u<P>_<Q>: no branch inside a step; plain loads); iterations for
    # spans near the looped ones'
    for p_, q_, it in ((0, 256, 256), (8, 256, 256), (32, 256, 256), (8, 1024, 64)):
        k = f"mix_pace_u{p_}_{q_}"
        run(f"unrolled_lds_p{p_}_q{q_}", PACE_LDS, 0, 0, it, k)
        run(f"unrolled_ldg_p{p_}_q{q_}", PACE_LDG, 0, 0, it, k)
        run(f"unrolled_mix_p{p_}_q{q_}", PACE_LDS | PACE_LDG, 0, 0, it, k)
    # the FFMA pad loops alone with 1, 2 and 4 warps per sub-partition (mix_pace_noload): is a loop
    # iteration's time per warp (the same at 1) or per sub-partition (shorter at 1)?
    for label, mask in (("w1", 0x000000F0), ("w2", 0x0000F0F0), ("w4", PACE_LDG)):
        run(f"noload_ldg_q256_{label}", mask, 0, 256, 32, "mix_pace_noload")
    # unrolled and without loads (mix_pace_un<P>_<Q>): the other warps have neither loads nor branches
    for p_, q_, it in ((0, 256, 256), (8, 256, 256)):
        k = f"mix_pace_un{p_}_{q_}"
        run(f"unrolled_noload_ldg_p{p_}_q{q_}", PACE_LDG, 0, 0, it, k)
        run(f"unrolled_noload_mix_p{p_}_q{q_}", PACE_LDS | PACE_LDG, 0, 0, it, k)
    del buf
    return res


def m_wrap(b: Bench) -> dict:
    """Plain loads (LDG.E, as compiled kernels issue them) that miss L1: 16 MB footprint (L2 hits) and
    2 GB (DRAM), by warps per SM."""
    cp, np = b.cp, b.np
    res = {"method": "ldg_wrap_plain<bits>: warp w reads chunk w + i*warps (U loads of 32 x width bytes), "
                     "wrapped inside the footprint; 1 CTA per SM", "cases": {}}
    buf = cp.zeros(2 << 30, dtype=cp.uint8)
    sink = cp.zeros(1 << 16, dtype=cp.uint32)
    for bits in (32, 128):
        for label, mask in (("l2_16MB", (16 << 20) - 1), ("dram_2GB", (2 << 30) - 1)):
            iters = 128 if bits == 32 else 32
            for w in (1, 4, 8, 16, 32):
                r = rate_case(b, f"ldg_wrap_plain{bits}", w,
                              lambda out: (buf, sink, out, np.int32(iters), np.uint64(mask)), iters * U, reps=2)
                r["bytes_per_sm_cycle"] = round(r["warp_inst_per_sm_cycle"] * 32 * bits / 8, 2)
                res["cases"][f"plain{bits}_{label}_w{w}"] = r
    del buf
    cp.get_default_memory_pool().free_all_blocks()
    return res


def m_partition(b: Bench) -> dict:
    """Near/far L2: CTA 0 walks a 4 MB pointer ring (.cg, L1 bypassed); then CTA t walks it again,
    timed, for t = 0..SMs-1, the ring re-walked by CTA 0 before each (lines another SM read last).
    A bimodal spread of cycles per load across SMs is the two partitions."""
    cp, np = b.cp, b.np
    lines = (4 << 20) // 128
    perm = np.random.default_rng(0).permutation(lines)
    ring = cp.zeros(lines * 16, dtype=cp.uint64)  # one pointer per 128-byte line
    base = int(ring.data.ptr)
    nxt = np.empty(lines, dtype=np.uint64)
    nxt[perm] = base + 128 * np.roll(perm, -1).astype(np.uint64)
    host = np.zeros(lines * 16, dtype=np.uint64)
    host[::16] = nxt
    ring.set(host)
    out = cp.zeros(4, dtype=cp.int64)
    loads = 4096
    res = {"method": "ring_walk: 4 MB ring of 128 B lines in random order, .cg loads; CTA 0 walks it (4096 loads), "
                     "then CTA t walks it timed; cycles per load per SM (smid)", "per_cta": []}
    for t in range(b.sms):
        b.launch("ring_walk", b.sms, 32, (ring, out, np.int32(0), np.int32(loads)))
        b.launch("ring_walk", b.sms, 32, (ring, out, np.int32(t), np.int32(loads)))
        b.sync()
        smid, cyc, _ = (int(v) for v in out.get()[:3])
        res["per_cta"].append({"cta": t, "smid": smid, "cycles_per_load": round(cyc / loads, 1)})
    v = sorted(r["cycles_per_load"] for r in res["per_cta"])
    res["quartiles"] = [v[0], v[len(v) // 4], v[len(v) // 2], v[3 * len(v) // 4], v[-1]]
    return res


def _l2_flusher(b: Bench):
    """A launch of read_twice over 256 MiB (8 CTAs of 256 threads per SM): what a group launches before
    each measured launch so that none of the lines it times is left in L2."""
    cp, np = b.cp, b.np
    n4 = (256 << 20) // 16
    buf, sink = cp.ones(n4 * 4, dtype=cp.float32), cp.zeros(1, dtype=cp.float32)
    return lambda: b.launch("read_twice", 8 * b.sms, 256, (buf, sink, np.int64(n4)))


def m_chase_sm(b: Bench) -> dict:
    """The latency of an n-line request on each SM (`chase_sm`, memory.cu): one warp per SM chases 64
    dependent loads whose n lanes each read a new line per step. Patterns: `rows` (lanes' lines 8 KiB apart,
    the l1rows rows_chase pattern), `rows16k` (16 KiB apart, gemv_rowthread's rows at n = 4096), `lines`
    (the n lines consecutive). Cold: a 256 MiB read (read_twice) before the launch leaves none of them in L2;
    warm: the same launch just before (L2 hits; L1 starts empty). Alone: CTA t chases while the other SMs'
    CTAs idle, t = 0 .. SMs - 1 (rows, n = 1 and 32); together: every SM, or 16 of them (every 8th CTA, or
    CTAs 0-15) at once (three launches each). Cycles per step per CTA (smid)."""
    cp, np = b.cp, b.np
    steps, ctas = 64, b.sms
    shapes = {"rows": (32 * 2048, 2048, 32), "rows16k": (32 * 4096, 4096, 32), "lines": (steps * 1024, 32, 1024)}
    A = cp.zeros(ctas * 32 * 4096, dtype=cp.float32)
    out = cp.zeros(3 * ctas, dtype=cp.int64)
    flush = _l2_flusher(b)
    res = {"method": f"chase_sm: grid {ctas} x 32 threads, {steps} dependent steps, lanes < n chase, lane l of CTA b "
                     "at step s reads float b*cta + l*pitch + s*step (floats): " +
                     ", ".join(f"{k} {v}" for k, v in shapes.items()) + "; cold: a 256 MiB read_twice before the "
                     "launch, warm: the same launch before it; cycles per step (clock64 around the chase)",
           "steps": steps, "cases": {}}

    def launch(shape, lanes, frm, every, count, warm=False):
        args = (A, out, np.int32(steps), np.int32(lanes), np.int32(frm), np.int32(every), np.int32(count),
                *(np.int64(v) for v in shapes[shape]))
        flush()
        if warm:
            b.launch("chase_sm", ctas, 32, args)
        b.launch("chase_sm", ctas, 32, args)
        b.sync()
        o = out.get().reshape(ctas, 3)
        return [{"cta": int(t), "smid": int(o[t, 0]), "cycles_per_step": round(int(o[t, 1]) / steps, 1)}
                for t in range(ctas) if o[t, 2]]

    for lanes in (1, 32):
        res["cases"][f"rows_alone_n{lanes}"] = [launch("rows", lanes, t, 1, 1)[0] for t in range(ctas)]
    for shape, ns in (("rows", (1, 2, 4, 8, 12, 16, 20, 24, 28, 32)), ("rows16k", (1, 8, 16, 32)),
                      ("lines", (1, 4, 8, 16, 24, 32))):
        for lanes in ns:
            res["cases"][f"{shape}_all_n{lanes}"] = [launch(shape, lanes, 0, 1, ctas) for _ in range(3)]
            res["cases"][f"{shape}_warm_all_n{lanes}"] = [launch(shape, lanes, 0, 1, ctas, True) for _ in range(3)]
    for lanes in (1, 32):
        res["cases"][f"rows_every8_n{lanes}"] = [launch("rows", lanes, 0, 8, 16) for _ in range(3)]
        res["cases"][f"rows_first16_n{lanes}"] = [launch("rows", lanes, 0, 1, 16) for _ in range(3)]
    return res


def m_hbm(b: Bench) -> dict:
    """Does an L1 hit wait for an earlier miss of the same warp (`hit_behind_miss`, memory.cu)? One warp per
    SM loads its hit line(s) into L1, then issues one load that misses to DRAM (32 rows 8 KiB apart, 1 line,
    or none) and K loads of the hit line(s) (32 consecutive lines, or 1), and times the use of the hits and
    then of the miss from before the miss; `w<W>_*`: the miss in warp 0, the hits in warp W of the same CTA
    (4: the same sub-partition, 1: another) 64 cycles later (`hit_behind_miss_w`); `q_*`: warp 0 a 32-row miss
    and 0 / 8 / 15 32-line hits, warp 4 or 1 four 32-line hits of its own 100 or 700 cycles later
    (`hit_behind_miss_q`, whose hits share no scoreboard with the miss: in `hit_behind_miss` the 4th hit shares
    the miss's, so its use waits for the miss whatever the hardware does). A 256 MiB read before each launch
    (three launches); medians over the SMs."""
    cp, np = b.cp, b.np
    ctas = b.sms
    M = cp.zeros(ctas * 32 * 2048, dtype=cp.float32)
    H = cp.zeros(ctas * 1024, dtype=cp.float32)
    H2 = cp.zeros(ctas * 2048, dtype=cp.float32)
    out = cp.zeros(4 * ctas, dtype=cp.int64)
    flush = _l2_flusher(b)
    res = {"method": "hit_behind_miss: grid SMs x 32 threads; hit lines loaded and waited for, then clock, one miss "
                     "load (miss_lines: 32 rows 8 KiB apart / 1 line / none), clock, K hit loads (.ca), use of the hits "
                     "(clock), use of the miss (clock); 256 MiB read_twice before each launch; medians over SMs",
           "cases": {}}

    def three(kernel, block, args, second="miss_use"):
        """Three launches of `kernel` (one CTA of `block` threads per SM), each after a flush: the medians over
        the SMs of out[4 x CTA + 1] (the hits' use) and out[4 x CTA + 2] (`second`)."""
        runs = []
        for _ in range(3):
            flush()
            b.launch(kernel, ctas, block, (M, *args))
            b.sync()
            o = out.get().reshape(ctas, 4)
            runs.append({"hit_use": float(np.median(o[:, 1])), second: float(np.median(o[:, 2]))})
        return runs

    i32 = np.int32
    for miss in (0, 1, 32):
        for hit_lines in (1, 32):
            for hits in (1, 8, 15):
                res["cases"][f"miss{miss}_hitlines{hit_lines}_k{hits}"] = three(
                    "hit_behind_miss", 32, (H, out, i32(miss), i32(hits), i32(hit_lines), np.int64(0)))
    # the other load paths: .nc (LDG.E.CONSTANT) and .cg (L2 only: its "hits" are L2 hits)
    for kind in ("nc", "cg"):
        for miss in (0, 32):
            for hit_lines, hits in ((1, 1), (32, 1), (32, 8)):
                res["cases"][f"{kind}_miss{miss}_hitlines{hit_lines}_k{hits}"] = three(
                    f"hit_behind_miss_{kind}", 32, (H, out, i32(miss), i32(hits), i32(hit_lines), np.int64(0)))
    # across warps (`hit_behind_miss_w`): warp 0 misses, warp 4 (its sub-partition) or 1 (another) hits 64 cycles later
    for miss in (1, 32):
        for hit_warp in (1, 4):
            for hit_lines, hits in ((1, 1), (32, 1), (32, 8)):
                res["cases"][f"w{hit_warp}_miss{miss}_hitlines{hit_lines}_k{hits}"] = three(
                    "hit_behind_miss_w", 256, (H, out, i32(miss), i32(hits), i32(hit_lines), i32(hit_warp)))
    # whose loads wait behind a warp's gated hits (`hit_behind_miss_q`): warp 0 a 32-row miss and hits0 32-line
    # hits; warp 4 (same sub-partition) or 1 (another) `delay` cycles later 4 32-line hits of its own lines
    for hits0 in (0, 8, 15):
        for hit_warp in (1, 4):
            for delay in (100, 700):
                res["cases"][f"q_w{hit_warp}_h0{hits0}_d{delay}"] = three(
                    "hit_behind_miss_q", 256, (H2, out, i32(hits0), i32(4), i32(hit_warp), i32(delay), np.int64(0)),
                    second="warp0_use")
    return res


def m_launch(b: Bench) -> dict:
    cp, np = b.cp, b.np
    res = {"method": "empty kernel, CUDA events around one launch, median of 30 after 5 warm-up", "cases": {}}
    for block in (32, 256, 1024):
        for grid in (1, b.sms, 8 * b.sms, 64 * b.sms, 512 * b.sms, 4096 * b.sms):
            ms = b.event_ms("empty", grid, block, (np.uint64(0),), reps=30, warm=5)
            res["cases"][f"g{grid}_b{block}"] = {"grid": grid, "block": block, "median_ms": ms}
    return res


def m_bandwidth_events(b: Bench) -> dict:
    cp, np = b.cp, b.np
    res = {"method": "read_twice / write_once timed with CUDA events (same buffers relaunched: warm L2), "
                     "grid 8 x SMs x 256 threads", "cases": {}}
    for mb in (8, 16, 24, 32, 48, 64, 256, 1024):
        n4 = (mb << 20) // 16
        buf = cp.ones(n4 * 4, dtype=cp.float32)
        sink = cp.zeros(1, dtype=cp.float32)
        res["cases"][f"read_twice_{mb}MB"] = {"ms": b.event_ms("read_twice", 8 * b.sms, 256, (buf, sink, np.int64(n4))),
                                              "bytes_read": 2 * n4 * 16}
        res["cases"][f"write_once_{mb}MB"] = {"ms": b.event_ms("write_once", 8 * b.sms, 256,
                                                                 (buf, np.int64(n4), np.float32(2.0))),
                                              "bytes_written": n4 * 16}
        del buf
        cp.get_default_memory_pool().free_all_blocks()
    return res


NCU_SIZES_MB = (8, 16, 24, 32, 40, 48, 64, 96, 256)


def ncu_child(cubin: str, only: str = "") -> None:
    """The launches Nsight Compute profiles (one each; ncu flushes caches before each)."""
    b = Bench(cubin)
    cp, np = b.cp, b.np
    sink = cp.zeros(1 << 16, dtype=cp.uint32)
    out = cp.zeros(b.sms * 64, dtype=cp.int64)
    if only in ("", "wrap"):
        big = cp.zeros(2 << 30, dtype=cp.uint8)
        for bits, iters in ((32, 128), (128, 32)):
            for mask in ((16 << 20) - 1, (2 << 30) - 1):
                b.launch(f"ldg_wrap_plain{bits}", b.sms, 1024, (big, sink, out, np.int32(iters), np.uint64(mask)))
        b.sync()
        del big
        cp.get_default_memory_pool().free_all_blocks()
    if only == "wrap":
        return
    if only == "l1wf":  # data-stage wavefronts of global loads (L1WF_LAUNCHES), and of the mix kernels' two kinds
        g = cp.zeros(b.sms * 8 * (64 << 10) + (1 << 20), dtype=cp.uint8)
        for k, stride, warps in L1WF_LAUNCHES:  # (32 warps: 4,352 bytes each, so that all their lines fit L1)
            b.launch(k, b.sms, 32 * warps, (g, sink, np.int32(stride), np.int32(256),
                                            np.int32(64 << 10 if warps == 8 else 4352)))
        b.sync()
        return
    if only == "l2half":  # read_twice_on: a buffer read twice by all SMs or by half of them (L2HALF_LAUNCHES)
        for mb, sel in L2HALF_LAUNCHES:
            n4 = (mb << 20) // 16
            buf = cp.ones(n4 * 4, dtype=cp.float32)
            nxt = cp.zeros(2, dtype=cp.uint64)
            b.launch("read_twice_on", 8 * b.sms, 256, (buf, cp.zeros(1, dtype=cp.float32), np.int64(n4), nxt,
                                                     np.int32(sel), np.int32(b.sms // 2)))
            b.sync()
            del buf
            cp.get_default_memory_pool().free_all_blocks()
        return
    if only == "align":  # shared wavefronts of the off-alignment and broadcast loads (ALIGN_LAUNCHES)
        for k, stride in ALIGN_LAUNCHES:
            b.launch(k, b.sms, 1024, (out, sink, np.int32(64), np.int32(stride), np.int32(0), np.uint32(0)),
                     shared=24 * 1024)
        b.sync()
        return
    if only == "burst":  # mix_burst's LDG warps alone: 2 and 4 per SM, 16 LDG each of one sector in each of 32 lines
        region = b.sms * 4 * U * 4096
        g = cp.zeros(2 * region, dtype=cp.uint8)
        for i, ldg in enumerate((0x3, 0xF)):
            b.launch("mix_burst", b.sms, 1024, (g, sink, cp.zeros(b.sms * 32 * (BURST_GROUPS + 1), dtype=cp.int64),
                                                np.int32(BURST_GROUPS), np.uint32(ldg), np.uint32(0), np.int64(i * region)),
                     shared=16 * 1024)
        b.sync()
        big = cp.zeros(b.sms * 32 * U * 4096, dtype=cp.uint8)
        for block in (1024, 32):  # 32 warps per SM: 1 MiB of pairs per SM, more than L1 and (all SMs) L2 hold; 1 warp: 32 KiB
            for second in (32, 64):
                b.launch("pair_probe", b.sms, block, (big, sink, np.int32(second)))
        b.sync()
        return
    for mb in NCU_SIZES_MB:
        n4 = (mb << 20) // 16
        buf = cp.ones(n4 * 4, dtype=cp.float32)
        b.launch("read_twice", 8 * b.sms, 256, (buf, cp.zeros(1, dtype=cp.float32), np.int64(n4)))
        b.launch("write_once", 8 * b.sms, 256, (buf, np.int64(n4), np.float32(2.0)))
        b.sync()
        del buf
        cp.get_default_memory_pool().free_all_blocks()
    for grid in (1, b.sms, 64 * b.sms, 4096 * b.sms):
        b.launch("empty", grid, 256, (np.uint64(0),))
    g = cp.zeros(64 << 20, dtype=cp.uint8)
    for k, stride in (("ldg_ca32", 4), ("ldg_ca32", 128), ("ldg_ca128", 16), ("ldg_cg32", 4), ("ldg_cg128", 16)):
        b.launch(k, b.sms, 1024, (g, sink, out, np.int32(64), np.int32(stride), np.uint64(0)))
    for k, stride in (("sts_32", 4), ("sts_32", 128), ("sts_128", 16)):
        b.launch(k, b.sms, 1024, (out, np.int32(64), np.int32(stride), np.uint32(3)), shared=24 * 1024)
    b.launch("stg_128", b.sms, 1024, (g, out, np.int32(64), np.uint64((4 << 20) - 1), np.uint32(7)))
    b.sync()


# (kernel, lane stride in bytes): 32 lines at one offset (128), at offsets 8 B apart (136), one request (4 / 8)
# (kernel, lane stride in bytes, warps per SM): 32 lines at one offset (128), at offsets 8 B apart (136), one
# request (4 / 8), the column loads of A in dgemm_unroll at n = 512 (4096); 32 warps for the rates
L1WF_LAUNCHES = (("l1p4_ca", 128, 8), ("l1p4_ca", 136, 8), ("l1p4_ca", 4, 8), ("l1p8_ca", 128, 8), ("l1p8_ca", 136, 8),
                 ("l1p8_ca", 8, 8), ("l1p4_nc", 128, 8), ("l1p8_nc", 128, 8), ("l1p8_nc", 136, 8), ("l1p8_nc", 8, 8),
                 ("l1p8_nc", 4096, 8), ("l1p4_ca", 128, 32), ("l1p4_ca", 136, 32), ("l1p4_ca", 132, 32),
                 ("l1p4_ca", 4, 32), ("l1p8_nc", 128, 32), ("l1p8_nc", 136, 32), ("l1p8_nc", 8, 32))
L1WF_METRICS = ["gpc__cycles_elapsed.max", "smsp__inst_executed_op_global_ld.sum",
                "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
                "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
                "l1tex__data_pipe_lsu_wavefronts_mem_lgds_cmd_read.sum", "l1tex__data_pipe_lsu_wavefronts.sum",
                "l1tex__data_bank_conflicts_pipe_lsu_mem_gds_op_ld.sum", "l1tex__data_bank_reads.sum"]


# (MiB, sel): read_twice_on's buffer sizes and SM selections (0 all, 1 even ids, 2 ids < SMs / 2, 3 odd, 4 the rest)
L2HALF_LAUNCHES = tuple((mb, sel) for mb in (16, 24, 32, 40, 48) for sel in (0, 1, 2, 3, 4))
# (kernel, lane stride): conflict-free 32/64/128-bit loads, the padded rows, broadcasts (stride 0); 32 warps per SM
ALIGN_LAUNCHES = (("lds_at32", 4), ("lds_row32", 4), ("lds_at32", 0), ("lds_at64", 8), ("lds_at64", 0),
                  ("lds_at128", 16), ("lds_at128", 0))
ALIGN_METRICS = ["gpc__cycles_elapsed.max", "smsp__inst_executed_op_shared_ld.sum",
                 "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                 "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]


def m_ncu(cubin: str, ncu: str, only: str = "") -> dict:
    metrics = L1WF_METRICS if only == "l1wf" else ALIGN_METRICS if only == "align" else \
        ["gpc__cycles_elapsed.max", "dram__bytes_read.sum", "lts__t_sectors_op_read.sum"] if only == "l2half" else NCU_METRICS
    cmd = [ncu, "--csv", "--page", "raw", "--clock-control", "none", "--metrics", ",".join(metrics),
           sys.executable, os.path.abspath(__file__), "--ncu-child", cubin] + (["--ncu-only", only] if only else [])
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=420)
    rows = ncu_raw_rows(r.stdout)
    keep = ["Kernel Name", "Grid Size", "Block Size"] + metrics
    if only == "l2half":
        return {"command": " ".join(map(shlex.quote, cmd)), "seconds": round(time.time() - t, 1),
                "returncode": r.returncode, "stderr_tail": r.stderr[-1500:],
                "launch_order": "read_twice_on, 8 CTAs of 256 threads per SM (those of unselected SMs exit at "
                                "once), (MiB, sel): " + ", ".join(f"({m}, {s})" for m, s in L2HALF_LAUNCHES),
                "rows": [{k: row.get(k) for k in keep} for row in rows]}
    if only == "align":
        return {"command": " ".join(map(shlex.quote, cmd)), "seconds": round(time.time() - t, 1),
                "returncode": r.returncode, "stderr_tail": r.stderr[-1500:],
                "launch_order": "one CTA of 32 warps per SM, 64 iterations: " + ", ".join(
                    f"{k} stride {s}" for k, s in ALIGN_LAUNCHES),
                "rows": [{k: row.get(k) for k in keep} for row in rows]}
    if only == "l1wf":
        return {"command": " ".join(map(shlex.quote, cmd)), "seconds": round(time.time() - t, 1),
                "returncode": r.returncode, "stderr_tail": r.stderr[-1500:],
                "launch_order": "one CTA per SM, 256 loads per warp: " + ", ".join(
                    f"{k} stride {s} {w} warps" for k, s, w in L1WF_LAUNCHES),
                "rows": [{k: row.get(k) for k in keep} for row in rows]}
    return {"command": " ".join(map(shlex.quote, cmd)), "seconds": round(time.time() - t, 1),
            "returncode": r.returncode, "stderr_tail": r.stderr[-1500:],
            "launch_order": "ldg_wrap_plain32 16MB, 2GB (128 iters), ldg_wrap_plain128 16MB, 2GB (32 iters), "
                            "32 warps/SM; then (unless --ncu-only wrap) read_twice/write_once per size MB " + ",".join(map(str, NCU_SIZES_MB)) +
                            "; empty at grids 1, SMs, 64 SMs, 4096 SMs; ldg_ca32 s4, ldg_ca32 s128, ldg_ca128 s16, "
                            "ldg_cg32 s4, ldg_cg128 s16 (64 iters, 32 warps/SM); sts_32 s4, sts_32 s128, sts_128 s16; "
                            "stg_128 4MB",
            "rows": [{k: row.get(k) for k in keep} for row in rows]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--ncu", action="store_true", help="also profile with Nsight Compute")
    ap.add_argument("--ncu-child", metavar="CUBIN", help=argparse.SUPPRESS)
    ap.add_argument("--ncu-only", default="", help="with --ncu: 'wrap' profiles only the wrapped-load kernels, 'burst' only mix_burst's LDG warps and pair_probe, 'l1wf' only the l1p kernels (data-stage wavefronts)")
    ap.add_argument("--nvcc", default=os.environ.get("GPUSIM_NVCC13") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    ap.add_argument("--only", default="", help="comma list: ldg,bcast,wrap,scatter,partition,stream,stg,stg_scatter,sts,lds,align,s2r,issue,mioq,s2rq,chase_sm,hbm,issue4,xq,order,dstage,issue_st,war,st_order,mix,mix2,mix3,pace,burst,launch,bandwidth")
    args = ap.parse_args()
    if args.ncu_child:
        ncu_child(args.ncu_child, args.ncu_only)
        return 0
    if not args.dry_run and not args.out:
        ap.error("--out is required unless --dry-run")
    if not args.dry_run and cupy_missing("run_memory.py"):
        return 2
    comp = compile_cubin(args.nvcc, os.path.join(HERE, "build"))
    counts = sass_counts(comp["cubin"])
    if args.dry_run:
        print(json.dumps(counts, indent=1))
        return 0
    errors: list = []
    R = {"meta": run_meta(comp, errors), "sass_counts": counts, "errors": errors}
    b = Bench(comp["cubin"])
    b.launch("empty", 1, 32, (b.np.uint64(0),))
    groups = {"ldg": m_ldg_rates, "bcast": m_bcast, "wrap": m_wrap, "scatter": m_scatter, "partition": m_partition, "stream": m_stream, "stg": m_stg, "stg_scatter": m_stg_scatter, "sts": m_sts, "lds": m_lds, "align": m_align, "s2r": m_s2r, "issue": m_issue, "mioq": m_mioq, "s2rq": m_s2rq, "chase_sm": m_chase_sm, "hbm": m_hbm,
              "issue4": m_issue4, "xq": m_xq, "order": m_order, "dstage": m_dstage, "issue_st": m_issue_st, "war": m_war, "st_order": m_st_order, "mix": m_mix, "mix2": m_mix2, "mix3": m_mix3, "pace": m_pace, "burst": m_burst,
              "launch": m_launch, "bandwidth": m_bandwidth_events}
    only = {s for s in args.only.split(",") if s}
    for name, fn in groups.items():
        if only and name not in only:
            continue
        t = time.time()
        try:
            R[name] = fn(b)
        except Exception as e:  # noqa: BLE001
            R[name] = {"error": repr(e)}
            R["errors"].append(f"{name}: {e!r}")
        print(f"[{time.time() - t:6.1f} s] {name}", flush=True)
        with open(args.out, "w") as f:  # partial results survive a time-out
            json.dump(R, f, indent=1, default=str)
    if args.ncu:
        ncu = shutil.which("ncu") or "/opt/nvidia/nsight-compute/2025.3.1/ncu"
        t = time.time()
        try:
            R["ncu"] = m_ncu(comp["cubin"], ncu, args.ncu_only)
        except Exception as e:  # noqa: BLE001
            R["ncu"] = {"error": repr(e)}
            R["errors"].append(f"ncu: {e!r}")
        print(f"[{time.time() - t:6.1f} s] ncu", flush=True)
    R["meta"]["nvidia_smi_end"] = run_cmd(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,temperature.gpu",
                                           "--format=csv,noheader"]).strip()
    with open(args.out, "w") as f:
        json.dump(R, f, indent=1, default=str)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
