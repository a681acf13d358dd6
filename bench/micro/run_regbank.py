#!/usr/bin/env python3
"""gpusim H100 microbenchmark: FFMA / DFMA issue rate against their register sources (regbank.cu).

    python3 bench/micro/run_regbank.py --out RESULTS.json [--ncu]   # on the GPU machine (numpy + cupy)
    python3 bench/micro/run_regbank.py --dry-run                    # compile and print the timed loops

Each kernel runs as one CTA per SM (each CTA reserves 120 KB of shared memory, so two never share an
SM) with 4, 8, 16 or 32 warps (1 to 8 per sub-partition, as its
registers and launch bounds allow). A warp's span is its own clock64 stamps around the timed loop
(after a warm-up pass); the SM's rate is its CTA's FMAs over max(end) - min(start) of its warps,
and the figure is the median over SMs of the median of `--reps` launches. The timed loop's SASS (as
this machine's nvcc compiled it: every instruction between the clock reads, with both 64-bit words
so the control bits can be decoded) is stored beside its rates, so that any register-bank rule can
be scored against them later (gpusim/timing/precompute.py). `--ncu` profiles each kernel at 1 and
at 8 warps per sub-partition (or its most) with Nsight Compute: stall reasons per issue, and the FMA
and FP64 pipes' instruction counts. Nothing here changes clocks or any device setting.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run_memory import Bench as MemoryBench  # noqa: E402  (launches, CuPy module, SM count)
from run_micro import cupy_missing, find_disasm, ncu_raw_rows, parse_sass, run_cmd, run_meta, write_json  # noqa: E402

SRC = os.path.join(HERE, "regbank.cu")
FMAS_PER_ITER = 64  # per warp per loop iteration, every kernel (regbank.cu)
# dynamic shared memory each CTA reserves (unused) so that no SM holds two CTAs: the first run, without
# it, had 16 and 32 warps per CTA at half the rate Nsight Compute measured for the same launch (2 CTAs
# of 1024 threads fit on an SM; with 120 KB each, one does)
RESERVE_SHARED = 120 * 1024
# kernel: (element bytes, launch bound in threads)
KERNELS = {
    "tp_ffma": (4, 1024), "abc_ffma": (4, 1024), "abc4_ffma": (4, 1024), "abc16_ffma": (4, 512),
    "outer_ffma": (4, 512), "outer8_ffma": (4, 256),
    "tp_dfma": (8, 1024), "abc_dfma": (8, 1024), "abc4_dfma": (8, 1024), "abc16_dfma": (8, 512),
    "outer_dfma": (8, 512),
}
# --park: warps 0-7 run the loop, the rest wait at a named barrier the whole run (regbank.cu "parked warps")
PARK = {"park_tp_ffma": (4, 1024), "park_abc_ffma": (4, 1024)}
ACTIVE = 8
# --slots: 16 warps, the 8 in the slots of the kernel's mask run the loop (regbank.cu "slots"), 2 per sub-partition
SLOTS = {f"slots{a}{b}_{k}_ffma": (4, 1024) for k in ("tp", "abc") for a, b in ((0, 1), (0, 2), (1, 3), (0, 3))}


def slot_warps(name: str) -> list[int]:
    """The warps of a 16-warp CTA that run `name`'s loop: those in its two slots (warp w in slot w // 4)."""
    a, b = int(name[5]), int(name[6])
    return [w for w in range(16) if w // 4 in (a, b)]


# --mix (regbank.cu k_ops): abc's FFMAs each followed by 1 or 2 IADD3s (mixN); split_ffma, whose warps 4-7,
# 12-15, ... (one per sub-partition in each group of 4) run the same loop with IADD3s for FFMAs; imad_i /
# imadw_i / imadwi_i: 64 IMADs / IMAD.WIDE.U32s / IMAD.WIDEs by an immediate per warp per iteration (the rate
# counts them); fimad_ffma / fimadw_ffma: abc's FFMAs each followed by an IMAD / IMAD.WIDE.U32 (it counts FFMAs)
MIX = {"mix1_ffma": (4, 1024), "mix2_ffma": (4, 1024), "split_ffma": (4, 1024), "imad_i": (4, 1024),
       "imadw_i": (4, 1024), "fimad_ffma": (4, 1024), "fimadw_ffma": (4, 1024), "imadwi_i": (4, 1024),
       "tp0_ffma": (4, 1024), "mixtp1_ffma": (4, 1024)}
ALL = {**KERNELS, **PARK, **MIX, **SLOTS}
NCU_STALLS = [f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio" for r in (
    "barrier", "dispatch_stall", "long_scoreboard", "math_pipe_throttle", "mio_throttle", "misc",
    "no_instruction", "not_selected", "selected", "short_scoreboard", "wait")] + [
    "sm__cycles_elapsed.avg", "smsp__inst_executed.sum"]
NCU_PIPES = ["sm__inst_executed_pipe_fma.sum", "sm__inst_executed_pipe_fmaheavy.sum",
             "sm__inst_executed_pipe_fmalite.sum", "sm__inst_executed_pipe_fp64.sum",
             "sm__pipe_fma_cycles_active.sum", "sm__pipe_fmaheavy_cycles_active.sum",
             "sm__pipe_fp64_cycles_active.sum"]


def compile_cubin(nvcc: str) -> dict:
    build = os.path.join(HERE, "build")
    os.makedirs(build, exist_ok=True)
    cubin = os.path.join(build, "regbank.cubin")
    cmd = [nvcc, "-arch=sm_90", "-O3", "-cubin", "-o", cubin, SRC]
    run_cmd(cmd)
    return {"cubin": cubin, "command": " ".join(map(shlex.quote, cmd)), "nvcc_version": run_cmd([nvcc, "--version"]).strip()}


def timed_loops(cubin: str, dis: str, kind: str) -> dict:
    """Per kernel: the instructions between its first two clock reads (the warm-up pass's timed loop,
    the same code as the recorded pass), as `run_micro.parse_sass` reads them (address, text, both
    64-bit words)."""
    text = run_cmd([dis, "-c", "-hex", cubin] if kind == "nvdisasm" else [dis, "-sass", cubin])
    loops = {}
    for k, v in parse_sass(text).items():
        ins = v["ins"]
        clocks = [i for i, x in enumerate(ins) if "SR_CLOCKLO" in x["text"]]
        body = ins[clocks[0] + 1:clocks[1]] if len(clocks) >= 2 else []
        fmas = [x for x in body if x["op"] in ("FFMA", "DFMA")]
        loops[k] = {"instructions": body, "fma_count": len(fmas), "other_count": len(body) - len(fmas)}
    return loops


class Bench(MemoryBench):
    def _buffers(self, name, warps):
        """The kernel's parameters (values near 1: no overflow in 64 * iters FMAs), sink and stamps."""
        cp, np = self.cp, self.np
        dt = np.float32 if ALL[name][0] == 4 else np.float64
        return (cp.asarray(1.0 + np.arange(128, dtype=dt) / 1024.0), cp.zeros(self.sms * 32 * warps, dtype=dt),
                cp.zeros(self.sms * warps * 2, dtype=cp.int64))

    def sweep(self, name, warps, iters_list) -> list:
        """Rate against loop length at one warp count, with CUDA-event time around each launch: whether
        long launches run slower per SM cycle (the span in cycles over the event time gives the clock)."""
        cp, np = self.cp, self.np
        p, sink, out = self._buffers(name, warps)
        res = []
        for iters in iters_list:
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            self.launch(name, self.sms, 32 * warps, (out, sink, p, np.int32(iters)), RESERVE_SHARED)
            b.record()
            b.synchronize()
            o = out.get().reshape(self.sms, warps, 2)
            spans = [int(c[:, 1].max() - c[:, 0].min()) for c in o]
            starts = o[:, :, 0] - o[:, :, 0].min(axis=1, keepdims=True)
            ends = o[:, :, 1] - o[:, :, 0].min(axis=1, keepdims=True)
            spread = [float((c[:, 1].max() - c[:, 1].min()) / max(1, c[:, 1].max() - c[:, 0].min())) for c in o]
            res.append({"iters": iters, "event_ms": round(cp.cuda.get_elapsed_time(a, b), 4),
                        "end_spread_over_span_median": round(statistics.median(spread), 4),
                        "end_spread_over_span_max": round(max(spread), 4),
                        "span_median": statistics.median(spans), "span_max": max(spans),
                        "fma_per_sm_cycle": round(warps * FMAS_PER_ITER * iters / statistics.median(spans), 4),
                        "sm0_starts": starts[0].tolist(), "sm0_ends": ends[0].tolist()})
        return res

    def run(self, name, warps, iters, reps, counted=None):
        """Median rate over reps of the median over SMs; `counted`: the warps whose FMAs and stamps count
        (--park: the 8 that run the loop; --mix's split: its FFMA warps), None for all: the rate is theirs."""
        p, sink, out = self._buffers(name, warps)
        rates = []
        pick = list(range(warps)) if counted is None else list(counted)
        n = len(pick)
        for _ in range(reps):
            self.launch(name, self.sms, 32 * warps, (out, sink, p, self.np.int32(iters)), RESERVE_SHARED)
            self.sync()
            o = out.get().reshape(self.sms, warps, 2)[:, pick]
            spans = [int(c[:, 1].max() - c[:, 0].min()) for c in o]
            rates.append(statistics.median(n * FMAS_PER_ITER * iters / s for s in spans))
        return {"fma_per_sm_cycle": round(statistics.median(rates), 4), "reps": [round(r, 4) for r in rates]}


def max_warps(name: str, regs: int | None) -> int:
    bound = ALL[name][1] // 32
    if regs:
        bound = min(bound, 65536 // (32 * ((regs + 7) // 8 * 8)))
    return bound


def ncu_child(cubin: str, plan: str) -> None:
    b = Bench(cubin)
    for name, warps in json.loads(plan):
        b.run(name, warps, 64, 1)  # (the launch's own clock rates are not kept)


def m_ncu(cubin: str, ncu: str, plan: list, metrics: list) -> dict:
    cmd = [ncu, "--csv", "--page", "raw", "--clock-control", "none", "--metrics", ",".join(metrics),
           sys.executable, os.path.abspath(__file__), "--ncu-child", cubin, "--plan", json.dumps(plan)]
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=400)
    rows = ncu_raw_rows(r.stdout)
    keep = ["Kernel Name", "Block Size"] + metrics
    return {"command": " ".join(map(shlex.quote, cmd)), "seconds": round(time.time() - t, 1), "returncode": r.returncode,
            "stderr_tail": r.stderr[-1500:], "launches": plan, "rows": [{k: row.get(k) for k in keep} for row in rows]}


def time_set(b, R, key, names, warp_counts, counted, args, label=()):
    """Time each kernel of `names` at the warp counts `warp_counts(name)` gives, the rate counting the warps
    `counted(name, warps)` gives (None: all), into R[key][name][str(warps)]; a failed launch is noted in
    R["errors"] and the others go on. R is written out after each kernel."""
    R.setdefault(key, {})
    for name in names:
        R[key][name] = {}
        for w in warp_counts(name):
            try:
                R[key][name][str(w)] = b.run(name, w, args.iters, args.reps, counted(name, w))
            except Exception as e:  # noqa: BLE001
                R["errors"].append(f"{name} w{w}: {e!r}")
        print(*label, name, {w: v["fma_per_sm_cycle"] for w, v in R[key][name].items()}, flush=True)
        write_json(args.out, R)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--ncu", action="store_true")
    ap.add_argument("--ncu-child", help=argparse.SUPPRESS)
    ap.add_argument("--plan", help=argparse.SUPPRESS)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--sweep", action="store_true", help="also: rate against loop length (tp_ffma, abc_ffma, abc_dfma)")
    ap.add_argument("--order", action="store_true",
                    help="also: which warps finish first at 2 warps per sub-partition (the scheduler's policy)")
    ap.add_argument("--iters", type=int, default=256)
    ap.add_argument("--warps", default="4,8,16,32", help="warps per CTA (one CTA per SM) to time, comma-separated")
    ap.add_argument("--park", action="store_true",
                    help="also: 8 warps run the loop beside 0 / 8 / 24 warps parked at a barrier (resident, idle)")
    ap.add_argument("--mix", action="store_true",
                    help="also: abc's FFMAs diluted with 1 or 2 IADD3 each, FFMA warps beside IADD3 warps (split), "
                         "IMAD and IMAD.WIDE chains alone and after each FFMA")
    ap.add_argument("--slots", action="store_true",
                    help="also: tp and abc with 2 warps per sub-partition in slots 0+1, 0+2, 1+3 or 0+3 of 4 (16 warps, "
                         "the other 8 parked)")
    ap.add_argument("--only-extra", action="store_true", help="skip the main kernels (time only --park/--mix/--slots')")
    ap.add_argument("--nvcc", default=os.environ.get("GPUSIM_NVCC13") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    args = ap.parse_args()
    if args.ncu_child:
        ncu_child(args.ncu_child, args.plan)
        return 0
    if not args.dry_run and not args.out:
        ap.error("--out is required unless --dry-run")
    if not args.dry_run and cupy_missing("run_regbank.py"):
        return 2
    comp = compile_cubin(args.nvcc)
    dis, kind = find_disasm(os.environ.get("GPUSIM_NVDISASM13"), args.nvcc)
    loops = timed_loops(comp["cubin"], dis, kind) if dis else {}
    regs = {}
    cuobj = os.path.join(os.path.dirname(dis), "cuobjdump") if dis else None
    if cuobj and os.path.exists(cuobj):
        for line in run_cmd([cuobj, "-res-usage", comp["cubin"]]).splitlines():
            m = re.search(r"Function (\w+):", line)
            if m:
                name = m.group(1)
            m2 = re.search(r"REG:(\d+)", line)
            if m2:
                regs[name] = int(m2.group(1))
    if args.dry_run:
        for k in KERNELS:
            lp = loops.get(k, {})
            print(k, "regs", regs.get(k), "fmas", lp.get("fma_count"), "other", lp.get("other_count"))
        return 0 if all(loops.get(k, {}).get("fma_count") == FMAS_PER_ITER for k in KERNELS) else 1
    errors: list = []
    R = {"meta": run_meta(comp, errors, disassembler=dis,
                          method="one CTA per SM; rate = CTA FMAs / (max end - min start) of its warps' clock64; median "
                                 "over SMs, median of reps; timed loop = 64 FMAs per warp per iteration + loop overhead "
                                 "(other_count instructions per iteration)"),
         "registers": regs, "loops": loops, "rates": {}, "errors": errors}
    b = Bench(comp["cubin"])
    plan = []
    counts = [int(x) for x in args.warps.split(",")]
    top = {name: max_warps(name, regs.get(name)) for name in {**KERNELS, **MIX}}
    if not args.only_extra:
        time_set(b, R, "rates", KERNELS, lambda name: [w for w in counts if w <= top[name]], lambda name, w: None, args)
        plan += [(name, w) for name in KERNELS for w in (4, min(32, top[name]))]
    if args.park:
        time_set(b, R, "park", PARK, lambda name: (8, 16, 32), lambda name, w: range(ACTIVE), args, ("park",))
        plan += [(name, w) for name in PARK for w in (8, 32)]
    if args.slots:
        time_set(b, R, "slots", SLOTS, lambda name: (16,), lambda name, w: slot_warps(name), args, ("slots",))
        plan += [(name, 16) for name in SLOTS]
    if args.mix:
        # split_ffma's FFMA warps: the first 4 of every 8 (warp w runs on sub-partition w % 4), from 8 warps on
        split = lambda name: name == "split_ffma"  # noqa: E731
        time_set(b, R, "mix", MIX, lambda name: [w for w in counts if w <= top[name] and not (split(name) and w < 8)],
                 lambda name, w: [i for i in range(w) if (i // 4) % 2 == 0] if split(name) else None, args, ("mix",))
        plan += [(name, w) for name in MIX for w in (8, min(32, top[name]))]
    if args.sweep:
        R["sweep"] = {}
        for name, w in (("tp_ffma", 32), ("abc_ffma", 32), ("abc_ffma", 4), ("abc_dfma", 32)):
            R["sweep"][f"{name}_w{w}"] = b.sweep(name, w, [16, 64, 128, 256, 512, 1024])
            print("sweep", name, w, [(x["iters"], x["fma_per_sm_cycle"], x["event_ms"]) for x in R["sweep"][f"{name}_w{w}"]], flush=True)
    if args.order:
        # 8 warps (2 per sub-partition: warps w and w + 4 share one): a greedy oldest-first scheduler
        # runs one warp of each pair to its end before the other (ends about half the span apart);
        # a round-robin one finishes both together. Per SM: (latest end - earliest end) / span.
        R["order"] = {}
        for name in ("tp_ffma", "abc_ffma", "tp_dfma", "outer8_ffma"):
            res = b.sweep(name, 8, [256])[0]
            R["order"][name] = res
            print("order", name, res["sm0_starts"], res["sm0_ends"], flush=True)
    if args.ncu:
        ncu = shutil.which("ncu") or "/opt/nvidia/nsight-compute/2025.3.1/ncu"
        for key, metrics in (("ncu_stalls", NCU_STALLS), ("ncu_pipes", NCU_PIPES)):
            try:
                R[key] = m_ncu(comp["cubin"], ncu, plan, metrics)
            except Exception as e:  # noqa: BLE001
                R[key] = {"error": repr(e)}
                R["errors"].append(f"{key}: {e!r}")
            print(key, R[key].get("returncode"), len(R[key].get("rows", [])), flush=True)
    write_json(args.out, R)
    return 0


if __name__ == "__main__":
    sys.exit(main())
