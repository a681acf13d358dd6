"""bench/micro/dram_mix.py: the DRAM streams that `memory.dram.turnaround` and `write_backpressure` rest on.
Running them needs gpusim runs of a few seconds each (the bench); here only what ties the configs to them."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from gpusim.config import load_gpu
from gpusim.workloads.spec import load_workload

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("dram_mix", ROOT / "bench" / "micro" / "dram_mix.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_stream_specs_run_micro_cu_kernels_as_measured():
    """Each spec launches micro.cu's kernel with run_micro.py's geometry (8 CTAs of 256 threads per SM of 132)
    and names the measured record it is compared with."""
    bench = _bench()
    for kernel, (record, _) in bench.KERNELS.items():
        wl = load_workload(bench.SPECS / f"{kernel}.yaml")
        assert wl.kernel == kernel and wl.source_path == (ROOT / "bench" / "micro" / "micro.cu").resolve()
        assert bench.SIZE_MIB in wl.sizes
        assert f"bandwidth.{record}" in wl.notes or f"{record}" in wl.description


@pytest.mark.parametrize("card", ["h100", "h200"])
def test_configs_hold_the_fitted_turnaround_and_the_measured_read_rate(card):
    """The config's turnaround is the one bench/results/dram_mix.txt records as fitted for the card, with
    the back-pressure on, and its DRAM rate is the measured read stream's (fails when one is changed
    without the other)."""
    bench = _bench()
    cfg = load_gpu(card).memory.dram
    fitted = re.search(rf"^{card}, fitted: memory.dram.turnaround = ([0-9.]+)",
                       (ROOT / "bench" / "results" / "dram_mix.txt").read_text(), re.M)
    assert fitted and cfg.turnaround == pytest.approx(float(fitted.group(1)))
    assert cfg.write_backpressure
    assert cfg.bandwidth_gb_s == pytest.approx(bench.measured(card)["bw_read"], abs=0.5)


def test_older_cards_keep_one_rate_for_both_directions():
    for card in ("gtx970", "k40"):
        cfg = load_gpu(card).memory.dram
        assert cfg.turnaround == 0.0 and not cfg.write_backpressure


def test_the_mix_check_takes_no_other_card_and_no_fit():
    """--mix compares with the H100's mix_rw records only: another card or --fit stops with one line, exit 2,
    before any simulation."""
    import subprocess
    import sys

    for extra in (["--card", "h200"], ["--fit"]):
        r = subprocess.run([sys.executable, str(ROOT / "bench" / "micro" / "dram_mix.py"), "--mix", *extra],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and "--mix is a check on the H100" in r.stderr
        assert r.stdout == ""
