"""The timing model runs every workload of the suite on every card of its architecture, and its
shared-memory counts agree with the emulator's exact counts and with the H100's counters."""

import csv

import pytest

from gpusim import REPO_ROOT
from gpusim.config import list_gpus, load_gpu
from gpusim.timing.driver import run_workload
from gpusim.workloads import list_workloads

WORKLOADS = list_workloads()
CARDS = {c: load_gpu(c).arch for c in list_gpus()}
ONE_PER_ARCH = {"sm_35": "k40", "sm_52": "gtx970", "sm_90": "h100"}


@pytest.mark.parametrize("wl", WORKLOADS, ids=[w.name for w in WORKLOADS])
def test_every_workload_runs_on_each_architecture(wl):
    for arch, card in ONE_PER_ARCH.items():
        if arch not in wl.archs:  # the issue-12 suite is sm_90 only
            continue
        r = run_workload(wl.name, card, min(wl.sizes), mode="sampled")
        assert r.cycles > 0 and r.warp_instructions > 0 and r.arch == arch


@pytest.mark.parametrize("card", sorted(CARDS), ids=sorted(CARDS))
def test_every_card_runs(card):
    r = run_workload("sgemm_maxas_64", card, 64)
    assert r.cycles > 0 and r.card == card
    total = sum(r.stalls.values())
    # one `selected` cycle per issue slot: a dual-issued pair (Kepler, Maxwell) shares one
    assert total > 0 and r.warp_instructions / 2 <= r.stalls["selected"] <= r.warp_instructions
    if load_gpu(card).sm.scheduler.dual_issue == "none":
        assert r.stalls["selected"] == r.warp_instructions


def _measured():
    rows = {}
    with open(REPO_ROOT / "validation/h100/shared_bank_conflicts.csv") as f:
        for row in csv.DictReader(f):
            rows[(row["workload"], int(row["size"]))] = row
    return rows


@pytest.mark.parametrize("name,n", [("coalescedMultiply", 64), ("simpleMatMatMul_corrected", 64),
                                    ("sgemm_maxas_64", 128), ("naiveMatMatMul", 64)])
def test_shared_counts_cross_check(name, n):
    """Simulated wavefronts (counted by the SM model as it issues) = the emulator-derived exact count;
    bank conflicts = Nsight Compute's on the H100 where the kernel's pattern makes them."""
    r = run_workload(name, "h100", n)
    assert r.shared["simulated_wavefronts"] == r.shared["wavefronts"]
    row = _measured()[(name, n)]
    measured = int(float(row["ld_conflicts_meas"])) + int(float(row["st_conflicts_meas"]))
    assert r.shared["bank_conflicts"] == measured
