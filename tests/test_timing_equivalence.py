"""The timing model's results are pinned: speed work on the SM loop must not change any number.

`tests/data/timing_golden.json` holds summaries of small runs (cycles exactly, warp instructions,
stall totals, pipe utilisation, memory and shared counters; hashes of the per-PC stalls and of
the timeline) covering each path of the SM model: Maxwell control codes with dual issue and FP64 pipe
throttles, Hopper, Kepler's register scoreboard and dual issue, control codes ignored, gto on Hopper (whose default is lrr), the
two_level policies, the timeline window and sampled mode (with a fast-forward). Traces are built here (full traces,
straight from the emulator), so the pins cover the timing model only.

The golden file was written by the timing model before its speed-up. A change that is meant to
change timing results regenerates it: `python tests/test_timing_equivalence.py --regenerate`.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "data" / "timing_golden.json"

# id: (workload, gpu, size, mode, overrides, simulate() keywords)
CASES = {
    "maxwell-dgemm": ("dgemm_unroll", "gtx970", 128, "detailed", {}, {}),
    "maxwell-naive": ("naiveMatMatMul", "gtx970", 64, "detailed", {}, {}),
    "hopper-sgemm-timeline": ("sgemm_maxas_64", "h100", 128, "detailed", {}, {"window": (0, 5000, None)}),
    "hopper-coalesced": ("coalescedMultiply", "h100", 64, "detailed", {}, {}),
    "hopper-scoreboard": ("sgemm_maxas_64", "h100", 128, "detailed", {}, {"honour_control_codes": False}),
    "hopper-gto": ("sgemm_maxas_64", "h100", 128, "detailed", {"sm.scheduler.policy": "gto"}, {}),
    "maxwell-two-level": ("dgemm_unroll", "gtx970", 128, "detailed",
                          {"sm.scheduler.policy": "two_level", "watchdog_cycles": 20000}, {}),
    "kepler-sgemm": ("sgemm_maxas_64", "k40", 64, "detailed", {}, {}),
    "kepler-simple": ("simpleMultiply", "k40", 64, "detailed", {}, {}),
    "hopper-sampled": ("sgemm_maxas_64", "h100", 512, "sampled", {}, {}),
    "maxwell-sampled-fast-forward": ("dgemm_unroll", "gtx970", 256, "sampled", {}, {}),
    # the memory path (gpusim/timing/mem): stores through L2 with write-back, a warm L2, MIO queues
    "hopper-copy-stores": ("copy_float4", "h100", 64, "detailed", {}, {}),
    "hopper-warm-l2": ("coalescedMultiply", "h100", 64, "detailed", {"memory.l2.initial": "warm"}, {}),
    "hopper-smem-conflicts": ("sgemm_smem", "h100", 64, "detailed", {}, {}),
}


def summarise(workload, gpu, size, mode, overrides, kw) -> dict:
    from gpusim.config import apply_overrides, load_gpu
    from gpusim.emu.run import emulate
    from gpusim.errors import GpusimError
    from gpusim.timing.driver import input_bytes, sampled_ctas
    from gpusim.timing.gpu import simulate
    from gpusim.trace import DynamicTrace
    from gpusim.workloads import find_workload

    cfg = load_gpu(gpu)
    if overrides:
        cfg = apply_overrides(cfg, overrides)
    wl = find_workload(workload)
    emu, _ = emulate(wl, cfg.arch, size, ctas=sampled_ctas(wl, size, cfg) if mode == "sampled" else None)
    trace = DynamicTrace.from_emulator(emu, workload=wl.name, size=size)
    try:
        r = simulate(emu.program, trace, cfg, workload=wl.name, size=size, mode=mode,
                     footprint_bytes=input_bytes(wl, size), **kw)
    except GpusimError as e:  # a model error (e.g. the watchdog) is pinned by its message
        return {"error": str(e)}
    out = {"cycles": repr(r.cycles), "warp_instructions": r.warp_instructions, "ipc": repr(r.ipc),
           "stalls": r.stalls, "pipe_utilisation": r.pipe_utilisation, "memory": r.memory, "shared": r.shared,
           "stalls_per_pc": _digest([[p.address, p.executed, sorted(p.stalls.items())] for p in r.stalls_per_pc])}
    if r.timeline is not None:
        out["timeline"] = _digest(r.timeline)
    if r.sampling is not None:
        out["sampling"] = {k: r.sampling[k] for k in ("extrapolated_loop_cycles", "extrapolated_cta_cycles",
                                                      "fast_forwards", "error_estimate")}
    return json.loads(json.dumps(out))  # as stored: tuples become lists


def _digest(items: list) -> list:
    """Count and SHA-256 of a long list (per-PC stalls, timeline events): any changed number shows."""
    return [len(items), hashlib.sha256(json.dumps(items).encode()).hexdigest()]


@pytest.fixture(scope="module")
def golden() -> dict:
    return json.loads(GOLDEN.read_text())


@pytest.mark.parametrize("case", list(CASES))
def test_timing_results_unchanged(case, golden):
    assert summarise(*CASES[case]) == golden[case]


if __name__ == "__main__":
    if "--regenerate" not in sys.argv:
        sys.exit("usage: python tests/test_timing_equivalence.py --regenerate")
    GOLDEN.write_text(json.dumps({c: summarise(*args) for c, args in CASES.items()}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
