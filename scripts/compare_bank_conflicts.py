"""Predicted shared-memory wavefronts / bank conflicts and global sectors vs Nsight Compute on the H100.

For every (workload, size) measured in validation/h100/small/*.json (gpusim.measure.run --ncu output)
whose size the workload spec supports, emulate the sm_90 kernel, build the trace, run
`gpusim.timing.precompute.precompute` with the sm_90 rules and compare the totals with

    l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.sum   (wavefronts)
    l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}.sum (wavefronts - ideal)
    smsp__inst_executed_op_shared_{ld,st}.sum                    (warp instructions)
    l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}.sum          (32-byte sectors)

Writes validation/h100/shared_bank_conflicts.csv and prints the table. A row's note says
`exact`, or `residue` when the only difference is extra measured wavefronts that the counter also
reports as conflicts (measured - predicted wavefronts == measured - predicted conflicts > 0): the
hardware counter's data-bank arbitration residue, which varies from run to run (see
gpusim/timing/precompute.py, "Hopper evidence"). Anything else is a `MISMATCH` and makes the exit
status 1. Usage: python scripts/compare_bank_conflicts.py [workload ...]
"""

import csv
import glob
import json
import sys

import numpy as np

from gpusim import REPO_ROOT
from gpusim.emu.run import emulate
from gpusim.timing.precompute import (GLOBAL_LOAD, GLOBAL_STORE, SHARED_LOAD, SHARED_STORE, access_kind,
                                      precompute, rules_for_arch)
from gpusim.trace.format import DynamicTrace
from gpusim.workloads import find_workload

ARCH = "sm_90"
METRICS = {  # our column -> Nsight Compute metric
    "ld_inst": "smsp__inst_executed_op_shared_ld.sum",
    "ld_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "ld_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "st_inst": "smsp__inst_executed_op_shared_st.sum",
    "st_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "st_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "gld_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "gst_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
}
OUT = REPO_ROOT / "validation/h100/shared_bank_conflicts.csv"


def measured_runs(only):
    for path in sorted(glob.glob(str(REPO_ROOT / "validation/h100/small/*__n*.json"))):
        rec = json.load(open(path))
        ncu = rec.get("ncu")
        metrics = ncu.get("metrics", {}) if isinstance(ncu, dict) else {}
        if not metrics or (only and rec["workload"] not in only):
            continue
        yield rec["workload"], rec["size"], {k: _value(metrics, m) for k, m in METRICS.items()}


def _value(metrics, name):
    v = metrics.get(name, {}).get("value")
    return None if v is None else int(v)


def predicted(name: str, n: int) -> dict:
    wl = find_workload(name)
    emu, _ = emulate(wl, ARCH, n)
    trace = DynamicTrace.from_emulator(emu, workload=name, size=n)
    program, rec = emu.program, trace.records
    cols = precompute(program, trace, **rules_for_arch(ARCH))
    kinds = np.array([access_kind(i) or "" for i in program.instructions], dtype=object)[rec["pc_index"]]
    out = {}
    for prefix, kind in (("ld", SHARED_LOAD), ("st", SHARED_STORE)):
        sel = kinds == kind
        out[f"{prefix}_inst"] = int(sel.sum())
        out[f"{prefix}_wavefronts"] = int(cols["smem_wavefronts"][sel].sum())
        out[f"{prefix}_conflicts"] = int(cols["smem_conflicts"][sel].sum())
    out["gld_sectors"] = int(cols["gsectors"][kinds == GLOBAL_LOAD].sum())
    out["gst_sectors"] = int(cols["gsectors"][kinds == GLOBAL_STORE].sum())
    return out


def classify(pred: dict, meas: dict) -> str:
    diffs = {k: meas[k] - pred[k] for k in pred if meas.get(k) is not None}
    if not any(diffs.values()):
        return "exact"
    residue = all(diffs.get(k, 0) == 0 for k in ("ld_inst", "st_inst", "gld_sectors", "gst_sectors"))
    for p in ("ld", "st"):
        dw, dc = diffs.get(f"{p}_wavefronts", 0), diffs.get(f"{p}_conflicts", 0)
        residue &= dw == dc and dw >= 0
    return "residue" if residue else "MISMATCH"


def within(pred: int, meas: int, tol: float = 0.01) -> bool:
    return abs(pred - meas) <= tol * max(abs(meas), 1)


def main(argv) -> int:
    rows = []
    head = (f"{'workload':30s} {'n':>4s} {'LDS inst':>9s} {'LD wavefronts':>19s} {'LD conflicts':>19s} "
            f"{'ST wavefronts':>15s} {'ST conflicts':>15s} {'GLD sectors':>17s} {'GST sectors':>13s}  note")
    print(f"predicted/measured, {ARCH} emulation vs Nsight Compute on the H100\n{head}")
    for name, n, meas in measured_runs(set(argv)):
        wl = find_workload(name)
        if n not in wl.sizes or ARCH not in wl.archs:
            continue
        pred = predicted(name, n)
        note = classify(pred, meas)
        row = {"workload": name, "size": n, "note": note}
        for k in METRICS:
            row[f"{k}_pred"], row[f"{k}_meas"] = pred[k], meas[k]
        rows.append(row)

        def pm(k, w):
            return f"{pred[k]}/{meas[k] if meas[k] is not None else '-'}".rjust(w)
        print(f"{name:30s} {n:4d} {pm('ld_inst', 9)} {pm('ld_wavefronts', 19)} {pm('ld_conflicts', 19)} "
              f"{pm('st_wavefronts', 15)} {pm('st_conflicts', 15)} {pm('gld_sectors', 17)} {pm('gst_sectors', 13)}"
              f"  {note}", flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with open(OUT, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["workload", "size"] + [f"{k}_{s}" for k in METRICS for s in ("pred", "meas")]
                           + ["note"])
        w.writeheader()
        w.writerows(rows)
    summarise(rows)
    print(f"wrote {OUT.relative_to(REPO_ROOT)}")
    return 1 if any(r["note"] == "MISMATCH" for r in rows) else 0


def summarise(rows) -> None:
    notes = [r["note"] for r in rows]
    print(f"\n{len(rows)} runs: {notes.count('exact')} exact, {notes.count('residue')} counter residue only, "
          f"{notes.count('MISMATCH')} mismatches")
    conflicted = [(r, p) for r in rows for p in ("ld", "st") if r[f"{p}_conflicts_pred"] > 0]
    print(f"accesses whose pattern makes conflicts ({len(conflicted)} run x ld/st): "
          "wavefronts and conflicts within 1%:")
    for r, p in conflicted:
        ok_w = within(r[f"{p}_wavefronts_pred"], r[f"{p}_wavefronts_meas"])
        ok_c = within(r[f"{p}_conflicts_pred"], r[f"{p}_conflicts_meas"])
        if not (ok_w and ok_c):
            print(f"  NOT within 1%: {r['workload']} n={r['size']} {p}: wavefronts {r[f'{p}_wavefronts_pred']}/"
                  f"{r[f'{p}_wavefronts_meas']}, conflicts {r[f'{p}_conflicts_pred']}/{r[f'{p}_conflicts_meas']}")
    bad = sum(not (within(r[f"{p}_wavefronts_pred"], r[f"{p}_wavefronts_meas"])
                   and within(r[f"{p}_conflicts_pred"], r[f"{p}_conflicts_meas"])) for r, p in conflicted)
    print(f"  {len(conflicted) - bad} of {len(conflicted)} within 1%")
    res = [r for r in rows if r["note"] == "residue"]
    if res:
        tot = sum(r[f"{p}_conflicts_meas"] - r[f"{p}_conflicts_pred"] for r in res for p in ("ld", "st"))
        wf = sum(r[f"{p}_wavefronts_meas"] for r in res for p in ("ld", "st"))
        print(f"counter residue: {tot} extra conflict wavefronts over {len(res)} runs "
              f"({100 * tot / max(wf, 1):.2f}% of their measured shared wavefronts)")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
