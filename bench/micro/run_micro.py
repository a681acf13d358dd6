#!/usr/bin/env python3
"""gpusim H100 microbenchmarks: compile micro.cu, check its SASS, run every measurement, write one JSON.

    python3 bench/micro/run_micro.py --out RESULTS.json      # on the GPU machine (numpy + cupy)
    python3 bench/micro/run_micro.py --dry-run               # compile + SASS checks only (no cupy)

Needs only the standard library, numpy and cupy (cupy is imported only when measuring).  Never
changes clocks or any device setting.  See README.md beside this file for the methods and for how
the results map to configs/gpus/arch/gh100.yaml.
"""
from __future__ import annotations

import argparse
import collections
import csv
import datetime as _dt
import io
import json
import math
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "micro.cu")

# body lengths: must match micro.cu
LAT_LEN = {"a": 128, "b": 256}          # LAT_LEN_A / LAT_LEN_B
TP_NCH = 8                               # independent chains per thread
TP_STEPS = {"a": 8, "b": 16}             # TP_STEPS_A / TP_STEPS_B
SMEM_TP_LEN = {"a": 16, "b": 32}         # SMEM_TP_LEN_A / SMEM_TP_LEN_B
SMEM_TP_BYTES = 8192                     # flip distance (micro.cu SMEM_TP_BYTES)

LAT_OPS = {  # name -> SASS mnemonic of the chain instruction
    "ffma": "FFMA", "fadd": "FADD", "dfma": "DFMA", "imad": "IMAD",
    "iadd3": "IADD3", "lop3": "LOP3.LUT", "mufu_ex2": "MUFU.EX2",
}
TP_OPS = {"ffma": "FFMA", "dfma": "DFMA", "imad": "IMAD", "iadd3": "IADD3", "lop3": "LOP3.LUT",
          "mufu_ex2": "MUFU.EX2"}
SMEM_TP_OPS = {"32": "LDS", "64": "LDS.64", "128": "LDS.128"}
GCHASE_OPS = {"ca": "LDG.E.64.STRONG.SM", "cg": "LDG.E.64.STRONG.GPU", "plain": "LDG.E.64",
              "nc": "LDG.E.64.CONSTANT"}

# loop-control instructions allowed in a timed loop body besides the measured ones
LOOP_CTRL = re.compile(r"^(UIADD3|VIADD|IADD3|ISETP\.\S+|UISETP\.\S+|PLOP3\.LUT|BRA|NOP|ULDC(\.\S+)?)$")


# ----------------------------------------------------------------------------------------------
# toolchain
# ----------------------------------------------------------------------------------------------
def find_nvcc(explicit: str | None) -> str:
    for c in (explicit, os.environ.get("GPUSIM_NVCC13"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if c and os.path.exists(c):
            return c
    raise FileNotFoundError("nvcc not found (set --nvcc or $GPUSIM_NVCC13)")


def find_disasm(explicit: str | None, nvcc: str) -> tuple[str | None, str]:
    """Return (path, kind) with kind 'nvdisasm' or 'cuobjdump'."""
    cands = [(explicit, "nvdisasm"), (os.environ.get("GPUSIM_NVDISASM13"), "nvdisasm")]
    dirs = [os.path.dirname(os.path.realpath(nvcc)), os.path.dirname(nvcc), "/usr/local/cuda/bin",
            "/usr/local/cuda-13.0/bin", "/opt/gpusim-cuda13/bin"]
    for d in dirs:
        cands.append((os.path.join(d, "nvdisasm"), "nvdisasm"))
    cands.append((shutil.which("nvdisasm"), "nvdisasm"))
    try:  # the PyPI package nvidia-cuda-nvdisasm puts it under nvidia/cu13/bin
        import nvidia
        cands += [(os.path.join(p, "cu13", "bin", "nvdisasm"), "nvdisasm") for p in nvidia.__path__]
    except ImportError:
        pass
    cands.append((os.environ.get("GPUSIM_CUOBJDUMP13"), "cuobjdump"))
    for d in dirs:
        cands.append((os.path.join(d, "cuobjdump"), "cuobjdump"))
    cands.append((shutil.which("cuobjdump"), "cuobjdump"))
    for c, kind in cands:
        if c and os.path.exists(c):
            return c, kind
    return None, ""


def cupy_missing(script: str, dry_run_does: str = "compile only") -> bool:
    """True (after one line on stderr naming `script`) where measuring cannot run: no cupy, no GPU."""
    try:
        import cupy  # noqa: F401
    except ImportError:
        print(f"{script}: measuring needs cupy and an NVIDIA GPU (use --dry-run to {dry_run_does})", file=sys.stderr)
        return True
    return False


def run_cmd(cmd: list[str], timeout: float = 120) -> str:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()[:2000]}")
    return r.stdout


def ncu_raw_rows(text: str, kernels=None) -> list[dict]:
    """The launches in `ncu --csv --page raw` output `text`, from its '"ID"' header on (the row after it
    holds units): one {column: value} per launch; with `kernels`, only the launches of kernels so named
    (Nsight profiles cupy's own kernels, its fills, too)."""
    start = text.find('"ID"')
    if start < 0:
        return []
    rd = list(csv.reader(io.StringIO(text[start:])))
    rows = [dict(zip(rd[0], row)) for row in rd[2:] if len(row) == len(rd[0])]
    return rows if kernels is None else [row for row in rows if row.get("Kernel Name") in kernels]


SMI_QUERY = ["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem", "--format=csv,noheader"]


def run_meta(comp: dict, errors: list | None = None, **extra) -> dict:
    """The `meta` block the microbenchmark runners write: command line, UTC date, host, the compile record
    `comp`, `extra`, and nvidia-smi's card, driver and clocks. A failing nvidia-smi raises, or with `errors`
    is noted there and left out."""
    meta = {"command_line": " ".join(map(shlex.quote, [sys.executable] + sys.argv)),
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": platform.node(), "compile": comp,
            **extra}
    try:
        meta["nvidia_smi"] = run_cmd(SMI_QUERY).strip()
    except Exception as e:  # noqa: BLE001
        if errors is None:
            raise
        errors.append(f"nvidia-smi: {e!r}")
    return meta


def build_cubin(nvcc: str, src: str) -> dict:
    """`src` (a .cu beside this file) compiled for sm_90 into build/<name>.cubin, as the scripts here
    build their kernels: {"cubin": path, "command": the nvcc command line}."""
    build = os.path.join(os.path.dirname(os.path.abspath(__file__)), "build")
    os.makedirs(build, exist_ok=True)
    cubin = os.path.join(build, os.path.splitext(os.path.basename(src))[0] + ".cubin")
    cmd = [nvcc, "-arch=sm_90", "-O3", "-cubin", "-o", cubin, src]
    run_cmd(cmd)
    return {"cubin": cubin, "command": " ".join(map(shlex.quote, cmd))}


def micro_parser(doc: str, ncu_child: bool = False) -> argparse.ArgumentParser:
    """The command line of the one-kernel-file runners (cta_turnaround.py, cta_rate.py, dram_load.py):
    --out, --dry-run, --nvcc, and with `ncu_child` the hidden --ncu-child CUBIN their Nsight pass runs."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out")
    ap.add_argument("--dry-run", action="store_true")
    if ncu_child:
        ap.add_argument("--ncu-child", metavar="CUBIN", help=argparse.SUPPRESS)
    ap.add_argument("--nvcc", default=os.environ.get("GPUSIM_NVCC13") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    return ap


def micro_build(ap: argparse.ArgumentParser, args, script: str, src: str) -> dict | None:
    """Such a runner's start: --out is required unless --dry-run; a run that would measure without cupy
    gets None (`cupy_missing` has said so in one line: exit 2); else `build_cubin`'s record for `src`."""
    if not args.dry_run and not args.out:
        ap.error("--out is required unless --dry-run")
    if not args.dry_run and cupy_missing(script):
        return None
    return build_cubin(args.nvcc, src)


def micro_main(doc: str, script: str, src: str, measure, cases=None) -> int:
    """The whole `main()` of a one-kernel-file runner that measures in-process (cta_turnaround.py,
    dram_load.py, cta_life.py): `micro_build`; with --dry-run print the build record (with `cases`, if
    given); else write {"meta", "errors", **measure(cubin)} to --out."""
    ap = micro_parser(doc)
    args = ap.parse_args()
    comp = micro_build(ap, args, script, src)
    if comp is None:
        return 2
    if args.dry_run:
        print(json.dumps(comp if cases is None else {**comp, "cases": cases}))
        return 0
    errors: list = []
    meta = run_meta(comp, errors)
    write_json(args.out, {"meta": meta, "errors": errors, **measure(comp["cubin"])})
    print(f"wrote {args.out}")
    return 0


def write_json(path: str, results: dict) -> None:
    """A runner's results file (indented JSON)."""
    with open(path, "w") as fh:
        json.dump(results, fh, indent=1)


def compile_cubin(nvcc: str, build_dir: str) -> dict:
    os.makedirs(build_dir, exist_ok=True)
    cubin = os.path.join(build_dir, "micro.cubin")
    cmd = [nvcc, "-arch=sm_90", "-O3", "-cubin", "-o", cubin, SRC]
    t = time.time()
    run_cmd(cmd, timeout=300)
    return {"cubin": cubin, "command": " ".join(shlex.quote(c) for c in cmd),
            "seconds": round(time.time() - t, 2),
            "nvcc_version": run_cmd([nvcc, "--version"]).strip()}


# ----------------------------------------------------------------------------------------------
# SASS parsing and checks
# ----------------------------------------------------------------------------------------------
INS_RE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;(?:\s*/\*\s*(0x[0-9a-f]+)\s*\*/)?")
HI_RE = re.compile(r"^\s*/\*\s*(0x[0-9a-f]+)\s*\*/\s*$")
LABEL_RE = re.compile(r"^\s*(\.L_x_\d+):")


def parse_sass(text: str) -> dict:
    """kernel -> {'ins': [dict(addr, text, op, hi, labels_before)], 'labels': {label: index}}"""
    kernels: dict = {}
    cur = None
    pending_labels: list[str] = []
    last = None
    for line in text.splitlines():
        m = re.match(r"^\s*\.text\.(\w+):", line) or re.match(r"^\s*Function : (\w+)", line)
        if m:
            cur = {"ins": [], "labels": {}}
            kernels[m.group(1)] = cur
            pending_labels, last = [], None
            continue
        if cur is None:
            continue
        m = LABEL_RE.match(line)
        if m:
            cur["labels"][m.group(1)] = len(cur["ins"])
            continue
        m = INS_RE.search(line)
        if m:
            body = m.group(2).strip()
            body_np = re.sub(r"^@!?U?P[T\d]+\s+", "", body)
            op = body_np.split()[0] if body_np else ""
            last = {"addr": int(m.group(1), 16), "text": body, "op": op, "lo": m.group(3), "hi": None}
            cur["ins"].append(last)
            continue
        m = HI_RE.match(line)
        if m and last is not None and last["hi"] is None:
            last["hi"] = m.group(1)
    return kernels


def ctrl(ins: dict) -> dict | None:
    """Volta+ control bits from the high 64-bit word (bits 105..125 of the 128-bit instruction)."""
    if not ins.get("hi"):
        return None
    hi = int(ins["hi"], 16)
    return {"stall": (hi >> 41) & 0xF, "yield": (hi >> 45) & 1, "wbar": (hi >> 46) & 7,
            "rbar": (hi >> 49) & 7, "wait": (hi >> 52) & 0x3F, "reuse": (hi >> 58) & 0xF}


def regs(s: str) -> list[str]:
    return re.findall(r"\bR(\d+)\b", s)


def loops_in(k: dict, lo: int, hi: int) -> list[tuple[int, int]]:
    """Backward branches inside [lo, hi): (label_index, bra_index) pairs."""
    out = []
    for i in range(lo, hi):
        ins = k["ins"][i]
        if ins["op"] == "BRA":
            m = re.search(r"`\((\.L_x_\d+)\)", ins["text"])
            if m and m.group(1) in k["labels"]:
                tgt = k["labels"][m.group(1)]
                if lo < tgt <= i:
                    out.append((tgt, i))
    return out


def check_timed_loops(k: dict, op: str, per_loop: int, n_loops: int, chain: bool | None,
                      extra_ok: re.Pattern | None = None) -> dict:
    """Timed region = first .. last CS2R SR_CLOCKLO; inside it `n_loops` loops, each holding exactly
    `per_loop` instructions `op` plus loop control only.  chain=True: each `op` reads the previous
    one's destination; chain=False: independent chains (reported, not enforced)."""
    ins = k["ins"]
    clocks = [i for i, x in enumerate(ins) if "SR_CLOCKLO" in x["text"]]
    res: dict = {"ok": False, "problems": []}
    if len(clocks) < 2:
        res["problems"].append(f"{len(clocks)} clock reads")
        return res
    lo, hi = clocks[0], clocks[-1]
    loops = [lp for lp in loops_in(k, lo, hi)]
    res["clock_reads"] = len(clocks)
    res["loops"] = []
    if len(loops) != n_loops:
        res["problems"].append(f"{len(loops)} loops in timed region, expected {n_loops}")
    for (a, b) in loops:
        body = ins[a:b + 1]
        hist = collections.Counter(x["op"] for x in body)
        target = [x for x in body if x["op"] == op]
        others = {o: c for o, c in hist.items() if o != op}
        bad = {o: c for o, c in others.items()
               if not (LOOP_CTRL.match(o) or (extra_ok is not None and extra_ok.match(o)))}
        stalls = collections.Counter(ctrl(x)["stall"] for x in target if ctrl(x))
        info = {"target": op, "count": len(target), "expected": per_loop, "other_ops": others,
                "stall_hist": dict(sorted(stalls.items()))}
        if len(target) != per_loop:
            res["problems"].append(f"{len(target)} x {op} in loop, expected {per_loop}")
        if bad:
            res["problems"].append(f"unexpected ops in timed loop: {bad}")
        dests = [regs(x["text"].split(",")[0])[:1] for x in target]
        if chain is True:
            broken = 0
            for p, q in zip(target, target[1:]):
                d = regs(p["text"].split(",")[0])
                src = regs(",".join(q["text"].split(",")[1:]))
                if not d or d[0] not in src:
                    broken += 1
            info["dependent_pairs_broken"] = broken
            if broken:
                res["problems"].append(f"{broken} consecutive {op} pairs not dependent")
        elif chain is False:
            info["distinct_destinations"] = len({tuple(d) for d in dests})
        res["loops"].append(info)
    res["ok"] = not res["problems"]
    return res


def sass_expectations() -> dict:
    exp = {}
    for n, op in LAT_OPS.items():
        for v in "ab":
            exp[f"lat_{n}_{v}"] = dict(op=op, per_loop=LAT_LEN[v], n_loops=1, chain=True)
    for n, op in TP_OPS.items():
        for v in "ab":
            exp[f"tp_{n}_{v}"] = dict(op=op, per_loop=TP_NCH * TP_STEPS[v], n_loops=1, chain=False)
    for v in "ab":
        exp[f"smem_lat_{v}"] = dict(op="LDS", per_loop=LAT_LEN[v], n_loops=1, chain=True)
    for w, op in SMEM_TP_OPS.items():
        for v in "ab":
            exp[f"smem_tp_{w}_{v}"] = dict(op=op, per_loop=SMEM_TP_LEN[v], n_loops=1, chain=None,
                                           extra_ok=re.compile(r"^LOP3\.LUT$"))
    for m, op in GCHASE_OPS.items():
        exp[f"gchase_{m}"] = dict(op=op, per_loop=8, n_loops=2, chain=True)
    return exp


def sass_check(cubin: str, disasm: str | None, kind: str) -> dict:
    if not disasm:
        return {"ok": None, "error": "no nvdisasm/cuobjdump found; SASS not checked"}
    if kind == "nvdisasm":
        text = run_cmd([disasm, "-hex", cubin])
    else:
        text = run_cmd([disasm, "-sass", cubin])
    kernels = parse_sass(text)
    out = {"tool": disasm, "kernels": {}, "ok": True}
    for name, e in sass_expectations().items():
        if name not in kernels:
            out["kernels"][name] = {"ok": False, "problems": ["kernel missing from cubin"]}
            out["ok"] = False
            continue
        r = check_timed_loops(kernels[name], e["op"], e["per_loop"], e["n_loops"], e["chain"],
                              e.get("extra_ok"))
        out["kernels"][name] = r
        out["ok"] = out["ok"] and r["ok"]
    # bandwidth kernels: just confirm the vector memory ops are there
    bw = {"bw_copy": ("LDG.E.128.CONSTANT", "STG.E.128"), "bw_read": ("LDG.E.128.CONSTANT",),
          "bw_write": ("STG.E.128",),
          "bw_l2_read": ("LDG.E.128.STRONG.GPU",), "clock_xcheck": ("CS2R",), "spin_ns": ("CS2R",)}
    for name, ops in bw.items():
        k = kernels.get(name)
        hist = collections.Counter(x["op"] for x in k["ins"]) if k else {}
        miss = [f"no {o}" for o in ops if hist.get(o, 0) == 0]
        # no narrower / other global loads may sneak in (e.g. 32-bit LDG when a float4 is partly used)
        miss += [f"unexpected {o}" for o in hist if o.startswith("LDG") and o not in ops]
        r = {"ok": k is not None and not miss, "problems": miss if k else ["missing"],
             "ops_present": {o: hist.get(o, 0) for o in ops}}
        out["kernels"][name] = r
        out["ok"] = out["ok"] and r["ok"]
    return out


def print_sass_table(chk: dict) -> None:
    print(f"SASS check ({chk.get('tool')}): {'OK' if chk.get('ok') else 'PROBLEMS'}")
    for name, r in chk.get("kernels", {}).items():
        loops = r.get("loops")
        if loops:
            desc = "; ".join(f"{lp['count']}x{lp['target']} (stall {lp['stall_hist']}) + "
                             f"{sum(lp['other_ops'].values())} other" for lp in loops)
        else:
            desc = str(r.get("ops_present", ""))
        flag = "ok " if r.get("ok") else "BAD"
        print(f"  {flag} {name:18s} {desc}" + ("" if r.get("ok") else f"   {r.get('problems')}"))


# ----------------------------------------------------------------------------------------------
# helpers for measuring
# ----------------------------------------------------------------------------------------------
class SmiSampler(threading.Thread):
    QUERY = "clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,temperature.gpu,power.draw"

    def __init__(self, interval: float = 0.5):
        super().__init__(daemon=True)
        self.interval = interval
        self.samples: list = []
        self.error: str | None = None
        self._stop = threading.Event()
        self.t0 = time.time()

    def sample(self, tag: str = "") -> None:
        try:
            s = run_cmd(["nvidia-smi", f"--query-gpu={self.QUERY}", "--format=csv,noheader,nounits"],
                        timeout=20).strip().splitlines()[0]
            vals = [v.strip() for v in s.split(",")]
            rec = dict(zip(self.QUERY.split(","), vals))
            rec["t_s"] = round(time.time() - self.t0, 2)
            if tag:
                rec["tag"] = tag
            self.samples.append(rec)
        except Exception as e:  # noqa: BLE001
            self.error = repr(e)

    def run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def stop(self) -> None:
        self._stop.set()


class Bench:
    def __init__(self, cubin: str, args):
        import cupy as cp
        import numpy as np
        self.cp, self.np, self.args = cp, np, args
        self.mod = cp.RawModule(path=cubin)
        self.dev = cp.cuda.Device(0)
        props = cp.cuda.runtime.getDeviceProperties(0)
        self.props = props
        self.sm_count = int(props["multiProcessorCount"])
        self.mhz = None  # effective SM clock from the clock cross-check
        self.stage = None  # set by the runner: current measurement name (for the smi sampler tag)

    def fn(self, name):
        return self.mod.get_function(name)

    def launch(self, name, grid, block, args, shared=0):
        self.fn(name)((grid,), (block,), args, shared_mem=shared)

    def sync(self):
        self.cp.cuda.runtime.deviceSynchronize()

    def free(self):
        self.sync()
        self.cp.get_default_memory_pool().free_all_blocks()

    def ns(self, cycles):
        return None if (cycles is None or not self.mhz) else cycles * 1e3 / self.mhz


def med(xs):
    return statistics.median(xs) if xs else None


def rnd(x, n=3):
    if x is None or (isinstance(x, float) and (math.isnan(x) or math.isinf(x))):
        return None
    return round(float(x), n)


# ----------------------------------------------------------------------------------------------
# measurements
# ----------------------------------------------------------------------------------------------
def m_clock(b: Bench, spin_cycles: int = 200_000_000) -> dict:
    cp, np = b.cp, b.np
    out = cp.zeros(4, dtype=cp.int64)
    b.launch("clock_xcheck", 1, 1, (out, np.int64(1_000_000)))  # warm-up
    b.sync()
    runs = []
    for _ in range(2):
        b.launch("clock_xcheck", 1, 1, (out, np.int64(spin_cycles)))
        b.sync()
        c0, c1, g0, g1 = (int(v) for v in out.get())
        runs.append({"cycles": c1 - c0, "ns": g1 - g0, "mhz": (c1 - c0) * 1e3 / (g1 - g0)})
    mhz = med([r["mhz"] for r in runs])
    b.mhz = mhz  # later ns / bytes-per-cycle conversions use the most recent cross-check
    return {"method": "one thread spins clock64 for spin_cycles, %globaltimer (ns) read around it",
            "spin_cycles": spin_cycles, "runs": runs, "mhz": rnd(mhz, 2)}


def m_warmup(b: Bench, seconds: float = 0.5) -> dict:
    """Spin all SMs for `seconds` so the SM clock leaves idle before the first measurement."""
    t = time.time()
    b.launch("spin_ns", b.sm_count, 32, (b.np.uint64(int(seconds * 1e9)),))
    b.sync()
    return {"seconds": rnd(time.time() - t, 3), "grid": b.sm_count}


def alu_operands(np) -> dict:
    """Per ALU microbenchmark: (dtype, the 9 kernel parameters: A[4], B[4], the chain's start value)."""
    return {
        "ffma": (np.float32, [0.999, 1.001, 0.9995, 1.0005, 1e-3, -1e-3, 2e-3, -2e-3, 1.0]),
        "fadd": (np.float32, [0.5, -0.25, 0.125, -0.375, 0, 0, 0, 0, 1.0]),
        "dfma": (np.float64, [0.999, 1.001, 0.9995, 1.0005, 1e-3, -1e-3, 2e-3, -2e-3, 1.0]),
        "imad": (np.uint32, [3, 5, 7, 9, 1, 2, 3, 4, 1]),
        "iadd3": (np.uint32, [1, 2, 3, 4, 5, 6, 7, 8, 0]),
        "lop3": (np.uint32, [0xF0F0F0F0, 0x0FF00FF0, 0xAAAA5555, 0x12345678,
                             0x1, 0x80000001, 0x33333333, 0xDEADBEEF, 0x5A5A5A5A]),
        "mufu_ex2": (np.float32, [0, 0, 0, 0, 0, 0, 0, 0, 0.5]),
    }


def m_alu_latency(b: Bench, reps: int) -> dict:
    cp, np = b.cp, b.np
    params = alu_operands(np)
    iters = 16
    res = {}
    for name, (dt, vals) in params.items():
        try:
            p = cp.asarray(np.array(vals, dtype=dt))
            sink = cp.zeros(32, dtype=dt)
            out = cp.zeros(1, dtype=cp.int64)
            t = {"a": [], "b": []}
            for _ in range(reps):
                for v in "ab":
                    b.launch(f"lat_{name}_{v}", 1, 32, (out, sink, p, np.int32(iters)))
                    b.sync()
                    t[v].append(int(out.get()[0]))
            diffs = [(tb - ta) / (iters * (LAT_LEN["b"] - LAT_LEN["a"])) for ta, tb in zip(t["a"], t["b"])]
            res[name] = {
                "cycles_per_op": rnd(med(diffs)),
                "cycles_per_op_all": [rnd(d) for d in diffs],
                "raw_cycles_per_op_len_b": rnd(med(t["b"]) / (iters * LAT_LEN["b"])),
                "ops_timed": {"a": iters * LAT_LEN["a"], "b": iters * LAT_LEN["b"]},
                "cycles": t,
            }
        except Exception as e:  # noqa: BLE001
            res[name] = {"error": repr(e), "trace": traceback.format_exc(limit=3)}
    return {"method": "one warp, dependent chain; (T[256/iter] - T[128/iter]) / (16 * 128); in-kernel warm-up rep",
            "iters": iters, "len": LAT_LEN, "ops": res}


def tp_spans(out_np, nwarps):
    starts = out_np[0:2 * nwarps:2]
    ends = out_np[1:2 * nwarps:2]
    return int(ends.max() - starts.min())


def m_alu_throughput(b: Bench, reps: int) -> dict:
    cp, np = b.cp, b.np
    params = {k: v for k, v in alu_operands(np).items() if k != "fadd"}
    threads, nwarps, iters = 1024, 32, 128
    res = {}
    for name, (dt, vals) in params.items():
        try:
            p = cp.asarray(np.array(vals, dtype=dt))
            sink = cp.zeros(threads, dtype=dt)
            out = cp.zeros(2 * nwarps, dtype=cp.int64)
            spans = {"a": [], "b": []}
            for _ in range(reps):
                for v in "ab":
                    b.launch(f"tp_{name}_{v}", 1, threads, (out, sink, p, np.int32(iters)))
                    b.sync()
                    spans[v].append(tp_spans(out.get(), nwarps))
            d_ops = nwarps * iters * TP_NCH * (TP_STEPS["b"] - TP_STEPS["a"])  # warp-instructions
            rates = [d_ops / (sb - sa) for sa, sb in zip(spans["a"], spans["b"])]
            r = med(rates)
            res[name] = {
                "warp_inst_per_cycle_per_sm": rnd(r, 4),
                "thread_ops_per_cycle_per_sm": rnd(r * 32 if r else None, 2),
                "lanes_per_subpartition": rnd(r * 32 / 4 if r else None, 2),
                "rates_all": [rnd(x, 4) for x in rates],
                "raw_warp_inst_per_cycle_len_b": rnd(nwarps * iters * TP_NCH * TP_STEPS["b"] / med(spans["b"]), 4),
                "spans": spans,
            }
        except Exception as e:  # noqa: BLE001
            res[name] = {"error": repr(e), "trace": traceback.format_exc(limit=3)}
    return {"method": "one CTA x 1024 threads on one SM, 8 independent chains/thread; span = max(end)-min(start) "
                      "of per-warp clock64; rate = d(warp-instructions) / d(span) between 128 and 64 ops/iter",
            "threads": threads, "iters": iters, "chains": TP_NCH, "steps": TP_STEPS, "ops": res}


def m_smem(b: Bench, reps: int) -> dict:
    cp, np = b.cp, b.np
    res: dict = {}
    # latency
    try:
        iters = 16
        out = cp.zeros(1, dtype=cp.int64)
        sink = cp.zeros(1, dtype=cp.uint32)
        t = {"a": [], "b": []}
        for _ in range(reps):
            for v in "ab":
                b.launch(f"smem_lat_{v}", 1, 1, (out, sink, np.int32(iters), np.int32(1)))
                b.sync()
                t[v].append(int(out.get()[0]))
        diffs = [(tb - ta) / (iters * (LAT_LEN["b"] - LAT_LEN["a"])) for ta, tb in zip(t["a"], t["b"])]
        res["latency"] = {"cycles_per_load": rnd(med(diffs)), "all": [rnd(d) for d in diffs],
                          "raw_cycles_per_load_len_b": rnd(med(t["b"]) / (iters * LAT_LEN["b"])),
                          "method": "one thread, ld.shared.u32 p,[p] chase over a 4096-word ring; "
                                    "(T[256/iter]-T[128/iter])/(16*128)", "cycles": t}
    except Exception as e:  # noqa: BLE001
        res["latency"] = {"error": repr(e), "trace": traceback.format_exc(limit=3)}
    # throughput
    cases = [  # (label, width bits, stride bytes, expected wavefronts per warp instruction)
        ("u32_stride1", "32", 4, 1), ("u32_stride2", "32", 8, 2), ("u32_stride4", "32", 16, 4),
        ("u32_stride32", "32", 128, 32), ("u32_stride33", "32", 132, 1),
        ("u64_stride1", "64", 8, 2), ("u128_stride1", "128", 16, 4),
    ]
    threads, nwarps, iters = 1024, 32, 64
    tp = {}
    for label, w, sb_, wf in cases:
        try:
            out = cp.zeros(2 * nwarps, dtype=cp.int64)
            sink = cp.zeros(threads, dtype=cp.uint32)
            spans = {"a": [], "b": []}
            for _ in range(reps):
                for v in "ab":
                    b.launch(f"smem_tp_{w}_{v}", 1, threads,
                             (out, sink, np.int32(iters), np.int32(sb_), np.uint32(SMEM_TP_BYTES)))
                    b.sync()
                    spans[v].append(tp_spans(out.get(), nwarps))
            d_inst = nwarps * iters * (SMEM_TP_LEN["b"] - SMEM_TP_LEN["a"])
            rates = [d_inst / (s_b - s_a) for s_a, s_b in zip(spans["a"], spans["b"])]
            r = med(rates)
            tp[label] = {
                "width_bits": int(w), "stride_bytes": sb_, "expected_wavefronts_per_inst": wf,
                "warp_inst_per_cycle": rnd(r, 4),
                "bytes_per_cycle": rnd(r * 32 * int(w) / 8 if r else None, 2),
                "wavefronts_per_cycle": rnd(r * wf if r else None, 4),
                "rates_all": [rnd(x, 4) for x in rates], "spans": spans,
            }
        except Exception as e:  # noqa: BLE001
            tp[label] = {"error": repr(e), "trace": traceback.format_exc(limit=3)}
    res["throughput"] = {"method": "one CTA x 1024 threads, lane address = lane*stride, 16 vs 32 independent "
                                   "ld.shared per iteration at +k*128 B; rate = d(inst)/d(span)",
                         "threads": threads, "iters": iters, "cases": tp}
    return res


def chase_path_offsets(np, count: int, buf_bytes: int, hop: int, line_shift: int = 256):
    """Byte offsets of `count` nodes: node i at (i*hop) mod buf, moved by line_shift per wrap so that
    every node is on a fresh line.  Returned as uint64 numpy array."""
    i = np.arange(count, dtype=np.uint64)
    lin = i * np.uint64(hop)
    wraps = lin // np.uint64(buf_bytes)
    off = lin % np.uint64(buf_bytes) + wraps * np.uint64(line_shift)
    if int(wraps.max()) > 0:
        assert int(wraps.max()) * line_shift + 8 <= hop, "path wraps too often for this hop"
    assert int(off.max()) + 8 <= buf_bytes
    return off


def write_path(b: Bench, buf, offsets_np, ring: bool):
    """buf[off_i] = base + off_{i+1} (ring: last -> first; path: last -> itself)."""
    cp, np = b.cp, b.np
    base = np.uint64(buf.data.ptr)
    nxt = np.roll(offsets_np, -1)
    if not ring:
        nxt[-1] = offsets_np[-1]
    view = buf.view(cp.uint64) if buf.dtype != cp.uint64 else buf
    view[cp.asarray((offsets_np // np.uint64(8)).astype(np.int64))] = cp.asarray(nxt + base)


def run_chase(b: Bench, kernel: str, start_ptr: int, warm: int, n1: int, n2: int) -> dict:
    cp, np = b.cp, b.np
    out = cp.zeros(3, dtype=cp.int64)
    sink = cp.zeros(1, dtype=cp.uint64)
    b.launch(f"gchase_{kernel}", 1, 1, (out, sink, np.uint64(start_ptr), np.int32(warm // 8),
                                         np.int32(n1 // 8), np.int32(n2 // 8)))
    b.sync()
    t0, t1, t2 = (int(v) for v in out.get())
    return {"seg1": (t1 - t0) / n1, "seg2": (t2 - t1) / n2, "all": (t2 - t0) / (n1 + n2)}


def summarize_chase(runs: list[dict], b: Bench) -> dict:
    c = med([r["seg2"] for r in runs])
    return {"cycles_per_load": rnd(c, 2), "ns_per_load": rnd(b.ns(c), 2),
            "seg2_all": [rnd(r["seg2"], 2) for r in runs], "seg1_all": [rnd(r["seg1"], 2) for r in runs],
            "all_all": [rnd(r["all"], 2) for r in runs]}


def m_cache_latency(b: Bench, reps: int) -> dict:
    cp, np = b.cp, b.np
    res = {}
    n1, n2 = 512, 4096
    # L1: 8 KB ring, 128 B stride (64 nodes)
    try:
        buf = cp.zeros(8192 // 8, dtype=cp.uint64)
        offs = chase_path_offsets(np, 8192 // 128, 8192, 128)
        write_path(b, buf, offs, ring=True)
        b.sync()
        for kern in ("ca", "plain", "nc", "cg"):
            try:
                runs = [run_chase(b, kern, buf.data.ptr, 256, n1, n2) for _ in range(reps)]
                res[f"l1_ring8k_{kern}"] = summarize_chase(runs, b)
            except Exception as e:  # noqa: BLE001
                res[f"l1_ring8k_{kern}"] = {"error": repr(e)}
        del buf
    except Exception as e:  # noqa: BLE001
        res["l1_ring8k"] = {"error": repr(e), "trace": traceback.format_exc(limit=3)}
    # L2: 4 MB ring, 128 B stride (32768 nodes), one full walk as warm-up
    try:
        size = 4 << 20
        buf = cp.zeros(size // 8, dtype=cp.uint64)
        offs = chase_path_offsets(np, size // 128, size, 128)
        write_path(b, buf, offs, ring=True)
        b.sync()
        for kern in ("cg", "plain"):
            try:
                runs = [run_chase(b, kern, buf.data.ptr, size // 128, n1, n2) for _ in range(reps)]
                res[f"l2_ring4m_{kern}"] = summarize_chase(runs, b)
            except Exception as e:  # noqa: BLE001
                res[f"l2_ring4m_{kern}"] = {"error": repr(e)}
        del buf
    except Exception as e:  # noqa: BLE001
        res["l2_ring4m"] = {"error": repr(e), "trace": traceback.format_exc(limit=3)}
    b.free()
    return {"method": "one thread, 64-bit pointer chase; warm-up walk, then clock64 after n1=512 and after "
                      "n1+n2=4608 loads; cycles/load = (t2-t1)/4096; median over reps",
            "n1": n1, "n2": n2, "results": res}


def m_dram_latency(b: Bench, reps: int, big_gb: float) -> dict:
    """Fresh (never-cached) lines: each rep walks its own part of one long path; a 256 MB write of a
    scratch buffer evicts L2 before every rep."""
    cp, np = b.cp, b.np
    warm, n1, n2 = 64, 512, 4096
    per_rep = warm + n1 + n2
    count = per_rep * reps + 8
    res: dict = {}
    big = None
    big_bytes = int(big_gb * (1 << 30))
    try:
        big = cp.empty(big_bytes // 8, dtype=cp.uint64)
    except Exception as e:  # noqa: BLE001
        res["alloc_error"] = f"{big_gb} GB: {e!r}; falling back to 4 GB"
        big_bytes = 4 << 30
        big = cp.empty(big_bytes // 8, dtype=cp.uint64)
    scratch = cp.empty((256 << 20) // 4, dtype=cp.uint32)
    GB = 1 << 30
    variants = [  # (label, buffer span bytes, hop bytes, what it shows)
        ("stride128B_1GB", GB, 128, "consecutive lines: DRAM row hits, TLB hits"),
        ("stride16KB_1GB", GB, 16 << 10, "reproduces the old 684-cycle method (1 GB, 16 KB stride)"),
        ("stride64KB_1GB", GB, 64 << 10, "new DRAM row per load, 32 loads per 2 MB page (TLB mostly hits)"),
        ("stride2MB_1GB", GB, 2 << 20, "one 2 MB page per load over 512 pages (1 GB TLB reach needed)"),
        ("stride2MB_4GB", 4 * GB, 2 << 20, "one 2 MB page per load over 2048 pages"),
        (f"stride2MB_{big_bytes // GB}GB", big_bytes, 2 << 20,
         f"one 2 MB page per load over {big_bytes >> 21} pages (TLB reach exceeded)"),
    ]
    seen = set()
    for label, span, hop, what in variants:
        if label in seen or span > big_bytes:
            continue
        seen.add(label)
        try:
            offs = chase_path_offsets(np, count, span, hop)
            write_path(b, big, offs, ring=False)
            b.sync()
            runs = []
            for r in range(reps):
                scratch.fill(r + 1)  # evict L2 (256 MB of writes)
                b.sync()
                start = int(big.data.ptr) + int(offs[r * per_rep])
                runs.append(run_chase(b, "cg", start, warm, n1, n2))
            s = summarize_chase(runs, b)
            s.update({"span_bytes": span, "hop_bytes": hop, "shows": what})
            res[label] = s
        except Exception as e:  # noqa: BLE001
            res[label] = {"error": repr(e), "trace": traceback.format_exc(limit=3)}
    del big, scratch
    b.free()
    return {"method": "one thread, ld.global.cg pointer chase over fresh lines (L2 flushed by a 256 MB write "
                      "before each rep); 64 warm-up loads, then (t2-t1)/4096 after a 512-load segment; "
                      "median over reps", "reps": reps, "results": res}


def time_kernel(b: Bench, name, grid, block, args, reps: int, warm: int = 2) -> list[float]:
    cp = b.cp
    for _ in range(warm):
        b.launch(name, grid, block, args)
    b.sync()
    ts = []
    for _ in range(reps):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        b.launch(name, grid, block, args)
        e1.record()
        e1.synchronize()
        ts.append(cp.cuda.get_elapsed_time(e0, e1) * 1e-3)
    return ts


def bw_entry(nbytes: int, ts: list[float], b: Bench) -> dict:
    t = med(ts)
    gbs = nbytes / t / 1e9
    return {"bytes": nbytes, "seconds_median": t, "seconds_min": min(ts),
            "gb_s": rnd(gbs, 1), "gb_s_best": rnd(nbytes / min(ts) / 1e9, 1),
            "bytes_per_sm_cycle": rnd(gbs * 1e3 / b.mhz, 1) if b.mhz else None}


def m_bandwidth(b: Bench, reps: int, dram_gb: float) -> dict:
    cp, np = b.cp, b.np
    res: dict = {}
    grid, block = b.sm_count * 8, 256
    nbytes = int(dram_gb * (1 << 30))
    n4 = nbytes // 16
    try:
        src = cp.empty(n4 * 4, dtype=cp.float32)
        dst = cp.empty(n4 * 4, dtype=cp.float32)
        src.fill(1.0)
        sink = cp.zeros(1, dtype=cp.float32)
        res["dram_copy"] = bw_entry(2 * nbytes, time_kernel(b, "bw_copy", grid, block, (src, dst, np.int64(n4)), reps), b)
        res["dram_read"] = bw_entry(nbytes, time_kernel(b, "bw_read", grid, block, (src, sink, np.int64(n4)), reps), b)
        res["dram_write"] = bw_entry(nbytes, time_kernel(b, "bw_write", grid, block,
                                                         (dst, np.int64(n4), np.float32(2.0)), reps), b)
        for k in ("dram_copy", "dram_read", "dram_write"):
            res[k]["grid"], res[k]["block"] = grid, block
        del src, dst
    except Exception as e:  # noqa: BLE001
        res["dram_error"] = {"error": repr(e), "trace": traceback.format_exc(limit=3)}
    b.free()
    for mb in (4, 16, 32):
        try:
            size = mb << 20
            n4 = size // 16
            passes = max(16, (1 << 30) // size)  # >= 1 GB read per launch
            buf = cp.ones(n4 * 4, dtype=cp.float32)
            sink = cp.zeros(1, dtype=cp.float32)
            ts = time_kernel(b, "bw_l2_read", grid, block, (buf, sink, np.int64(n4), np.int32(passes)), reps)
            e = bw_entry(size * passes, ts, b)
            e.update({"buffer_bytes": size, "passes": passes, "grid": grid, "block": block})
            res[f"l2_read_{mb}MB"] = e
            del buf
        except Exception as e:  # noqa: BLE001
            res[f"l2_read_{mb}MB"] = {"error": repr(e), "trace": traceback.format_exc(limit=3)}
    b.free()
    return {"method": "CUDA events around one launch; median of reps after 2 warm-up launches; copy counts "
                      "bytes read + written; L2 read = repeated ld.global.cg passes over a buffer that fits "
                      "in L2 (rotated start per pass)", "results": res}


# ----------------------------------------------------------------------------------------------
# summary / config mapping
# ----------------------------------------------------------------------------------------------
def g(d, *path):
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return None
        d = d[p]
    return d


def config_mapping(R: dict) -> dict:
    lat = lambda n: g(R, "alu_latency", "ops", n, "cycles_per_op")  # noqa: E731
    tp = lambda n: g(R, "alu_throughput", "ops", n, "warp_inst_per_cycle_per_sm")  # noqa: E731
    lanes = lambda n: (round(tp(n) * 32 / 4, 2) if tp(n) else None)  # noqa: E731
    cl = g(R, "cache_latency", "results") or {}
    dr = g(R, "dram_latency", "results") or {}
    bw = g(R, "bandwidth", "results") or {}
    sm_tp = g(R, "shared_memory", "throughput", "cases") or {}
    m = {
        "sm.units.fp32.latency_cycles": {"value": lat("ffma"), "from": "alu_latency.ffma (fadd: %s)" % lat("fadd")},
        "sm.units.fp64.latency_cycles": {"value": lat("dfma"), "from": "alu_latency.dfma"},
        "sm.units.int.latency_cycles": {"value": lat("iadd3"),
                                         "from": "alu_latency.iadd3 (lop3: %s; imad, fma pipe: %s)"
                                                 % (lat("lop3"), lat("imad"))},
        "sm.units.sfu.latency_cycles": {"value": lat("mufu_ex2"), "from": "alu_latency.mufu_ex2"},
        "sm.units.fp32.lanes": {"value": lanes("ffma"), "from": "alu_throughput.ffma x 32 / 4 sub-partitions"},
        "sm.units.fp64.lanes": {"value": lanes("dfma"), "from": "alu_throughput.dfma x 32 / 4"},
        "sm.units.int.lanes": {"value": lanes("iadd3"),
                                "from": "alu_throughput.iadd3 x 32 / 4 (lop3: %s; imad: %s)"
                                        % (lanes("lop3"), lanes("imad"))},
        "sm.units.sfu.lanes": {"value": lanes("mufu_ex2"), "from": "alu_throughput.mufu_ex2 x 32 / 4"},
        "sm.shared_memory.latency_cycles": {"value": g(R, "shared_memory", "latency", "cycles_per_load"),
                                            "from": "shared_memory.latency (also sm.units.smem.latency_cycles)"},
        "sm.shared_memory.wavefronts_per_cycle": {"value": g(sm_tp, "u32_stride1", "wavefronts_per_cycle"),
                                                  "from": "shared_memory.throughput.u32_stride1"},
        "memory.l1.latency_cycles": {"value": g(cl, "l1_ring8k_ca", "cycles_per_load"),
                                     "from": "cache_latency.l1_ring8k_ca (plain: %s)"
                                             % g(cl, "l1_ring8k_plain", "cycles_per_load")},
        "memory.l2.latency_cycles": {"value": g(cl, "l2_ring4m_cg", "cycles_per_load"),
                                     "from": "cache_latency.l2_ring4m_cg"},
        "memory.dram.latency_cycles": {"value": g(dr, "stride64KB_1GB", "cycles_per_load"),
                                       "from": "dram_latency.stride64KB_1GB (row miss, TLB hit mostly); "
                                               "compare stride128B / stride2MB_* in dram_latency"},
        "memory.dram.bandwidth_gb_s": {"value": g(bw, "dram_copy", "gb_s"),
                                       "from": "bandwidth.dram_copy (sustained, read+write bytes; the config "
                                               "now holds the 3352 GB/s interface peak)"},
        "memory.l2.bandwidth_bytes_per_cycle": {"value": g(bw, "l2_read_16MB", "bytes_per_sm_cycle"),
                                                "from": "bandwidth.l2_read_16MB / effective SM MHz"},
        "clock_mhz": {"value": g(R, "clock", "mhz"), "from": "clock64 vs %globaltimer"},
    }
    return m


def print_summary(R: dict) -> None:
    print("\n=== gpusim micro results ===")
    print(f"GPU: {g(R, 'meta', 'gpu_name')}  SM clock (clock64/globaltimer): {g(R, 'clock', 'mhz')} MHz")
    ops = g(R, "alu_latency", "ops") or {}
    tps = g(R, "alu_throughput", "ops") or {}
    print(f"{'op':10s} {'lat clk':>8s} {'warp-inst/clk/SM':>17s} {'lanes/subp':>10s}")
    for n in LAT_OPS:
        lt = g(ops, n, "cycles_per_op") if "error" not in ops.get(n, {}) else "ERR"
        tt = tps.get(n, {})
        print(f"{n:10s} {str(lt):>8s} {str(tt.get('warp_inst_per_cycle_per_sm', '-')):>17s} "
              f"{str(tt.get('lanes_per_subpartition', '-')):>10s}")
    print(f"shared latency: {g(R, 'shared_memory', 'latency', 'cycles_per_load')} clk")
    for k, v in (g(R, "shared_memory", "throughput", "cases") or {}).items():
        print(f"  smem {k:14s} {v.get('bytes_per_cycle')} B/clk  {v.get('wavefronts_per_cycle')} wavefronts/clk"
              + (f"  ERR {v['error']}" if "error" in v else ""))
    for grp in ("cache_latency", "dram_latency"):
        for k, v in (g(R, grp, "results") or {}).items():
            if isinstance(v, dict):
                print(f"  {k:22s} {v.get('cycles_per_load')} clk  {v.get('ns_per_load')} ns"
                      + (f"  ERR {v['error']}" if "error" in v else ""))
    for k, v in (g(R, "bandwidth", "results") or {}).items():
        if isinstance(v, dict):
            print(f"  {k:22s} {v.get('gb_s')} GB/s  {v.get('bytes_per_sm_cycle')} B/SM-clk"
                  + (f"  ERR {v['error']}" if "error" in v else ""))
    print("config mapping:")
    for k, v in (R.get("config_mapping") or {}).items():
        print(f"  {k:42s} {v['value']}")
    if R.get("errors"):
        print(f"ERRORS: {len(R['errors'])} (see JSON 'errors')")


# ----------------------------------------------------------------------------------------------
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="JSON output path (required unless --dry-run)")
    ap.add_argument("--dry-run", action="store_true", help="compile + SASS checks only; no GPU, no cupy")
    ap.add_argument("--nvcc", help="nvcc path (default $GPUSIM_NVCC13, then nvcc on PATH)")
    ap.add_argument("--nvdisasm", help="nvdisasm path (default: next to nvcc, $GPUSIM_NVDISASM13, PATH)")
    ap.add_argument("--build-dir", default=os.path.join(HERE, "build"))
    ap.add_argument("--reps", type=int, default=5, help="repetitions for latency/throughput (median)")
    ap.add_argument("--dram-reps", type=int, default=3)
    ap.add_argument("--dram-gb", type=float, default=2.0, help="DRAM bandwidth buffer (GiB, each of src/dst)")
    ap.add_argument("--tlb-gb", type=float, default=16.0, help="largest pointer-chase buffer (GiB)")
    ap.add_argument("--only", default="", help="comma list of groups: clock,alu_latency,alu_throughput,"
                                               "shared_memory,cache_latency,dram_latency,bandwidth")
    args = ap.parse_args()
    if not args.dry_run and not args.out:
        ap.error("--out is required unless --dry-run")

    t_start = time.time()
    R: dict = {"meta": {}, "errors": []}
    meta = R["meta"]
    meta["command_line"] = " ".join(shlex.quote(a) for a in [sys.executable] + sys.argv)
    meta["date_utc"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    meta["python"] = platform.python_version()
    meta["host"] = platform.node()

    nvcc = find_nvcc(args.nvcc)
    comp = compile_cubin(nvcc, args.build_dir)
    meta["nvcc"] = nvcc
    meta["nvcc_version"] = comp["nvcc_version"]
    meta["compile_command"] = comp["command"]
    print(f"compiled in {comp['seconds']} s: {comp['command']}")
    disasm, kind = find_disasm(args.nvdisasm, nvcc)
    try:
        chk = sass_check(comp["cubin"], disasm, kind)
    except Exception as e:  # noqa: BLE001
        chk = {"ok": None, "error": repr(e)}
    R["sass_check"] = chk
    if "kernels" in chk:
        print_sass_table(chk)
    else:
        print(f"SASS check skipped: {chk.get('error')}")
    if args.dry_run:
        return 0 if chk.get("ok") else 1

    if cupy_missing("run_micro.py", "compile and check only"):
        return 2
    import cupy as cp
    import numpy as np
    meta["cupy"] = cp.__version__
    meta["numpy"] = np.__version__
    smi = SmiSampler(0.5)
    try:
        q = run_cmd(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,"
                     "clocks.max.mem,memory.total,pstate", "--format=csv,noheader,nounits"], 20)
        keys = ["name", "driver_version", "clocks.sm", "clocks.max.sm", "clocks.mem", "clocks.max.mem",
                "memory.total", "pstate"]
        meta["nvidia_smi"] = dict(zip(keys, [v.strip() for v in q.strip().splitlines()[0].split(",")]))
    except Exception as e:  # noqa: BLE001
        meta["nvidia_smi_error"] = repr(e)
    smi.start()

    b = Bench(comp["cubin"], args)
    p = b.props
    def pv(k):
        v = p.get(k) if isinstance(p, dict) else None
        return v.decode(errors="replace").rstrip("\0") if isinstance(v, bytes) else v
    meta["gpu_name"] = pv("name")
    for k in ("multiProcessorCount", "l2CacheSize", "totalGlobalMem", "clockRate", "memoryClockRate",
              "memoryBusWidth", "sharedMemPerMultiprocessor", "major", "minor"):
        meta[k] = pv(k)
    try:
        meta["cuda_driver_version"] = cp.cuda.runtime.driverGetVersion()
        meta["cuda_runtime_version"] = cp.cuda.runtime.runtimeGetVersion()
    except Exception as e:  # noqa: BLE001
        meta["cuda_version_error"] = repr(e)

    groups = [
        ("warmup", lambda: m_warmup(b)),
        ("clock", lambda: m_clock(b)),
        ("alu_latency", lambda: m_alu_latency(b, args.reps)),
        ("alu_throughput", lambda: m_alu_throughput(b, args.reps)),
        ("shared_memory", lambda: m_smem(b, args.reps)),
        ("cache_latency", lambda: m_cache_latency(b, args.reps)),
        ("clock_mid", lambda: m_clock(b)),
        ("dram_latency", lambda: m_dram_latency(b, args.dram_reps, args.tlb_gb)),
        ("bandwidth", lambda: m_bandwidth(b, args.reps, args.dram_gb)),
        ("clock_end", lambda: m_clock(b)),
    ]
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    timings = {}
    for name, fn in groups:
        if only and name not in only and not name.startswith(("clock", "warmup")):
            continue
        t = time.time()
        smi.sample(tag=f"before {name}")
        try:
            R[name] = fn()
        except Exception as e:  # noqa: BLE001
            R[name] = {"error": repr(e), "trace": traceback.format_exc()}
            R["errors"].append(f"{name}: {e!r}")
            try:
                b.free()
            except Exception:  # noqa: BLE001
                pass
        timings[name] = round(time.time() - t, 2)
        print(f"[{timings[name]:6.2f} s] {name}", flush=True)
    smi.stop()
    smi.sample(tag="end")

    # collect nested per-item errors
    def walk(d, path):
        if isinstance(d, dict):
            for k, v in d.items():
                if k == "error" and isinstance(v, str):
                    R["errors"].append(f"{'.'.join(path)}: {v}")
                else:
                    walk(v, path + [k])
    for name, _ in groups:
        if name in R and "error" not in R[name]:
            walk(R[name], [name])

    sm_clocks = [float(s["clocks.sm"]) for s in smi.samples if s.get("clocks.sm", "").replace(".", "").isdigit()]
    R["clock"] = R.get("clock", {})
    R["clock"]["nvidia_smi_samples"] = smi.samples
    R["clock"]["nvidia_smi_sm_mhz_median"] = med(sm_clocks)
    R["clock"]["nvidia_smi_sm_mhz_range"] = [min(sm_clocks), max(sm_clocks)] if sm_clocks else None
    if smi.error:
        R["clock"]["nvidia_smi_error"] = smi.error
        R["errors"].append(f"nvidia-smi: {smi.error}")
    R["config_mapping"] = config_mapping(R)
    meta["group_seconds"] = timings
    meta["total_seconds"] = round(time.time() - t_start, 1)

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(R, f, indent=1, default=lambda o: o.item() if hasattr(o, "item") else str(o))
    print_summary(R)
    print(f"\nwrote {args.out} in {meta['total_seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
