"""Emulator watchdogs: a kernel that never ends stops in seconds with one line naming kernel, CTA,
warp, PC and what was exceeded. The kernels are real (tests/data/hang_kernels.cu, compiled with
nvcc 13 for sm_90; listings committed beside their specs)."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpusim.emu.emulator import Emulator
from gpusim.emu.run import build_launch
from gpusim.errors import EmulationError
from gpusim.isa.parser import parse_listing
from gpusim.workloads import load_workload

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parent.parent


def _emulator(name: str, **kw) -> Emulator:
    wl = load_workload(DATA / f"{name}.yaml")
    program = parse_listing(DATA / f"{name}_sm_90.sass")
    launch, params, memory, _ = build_launch(wl, program, wl.sizes[0])
    return Emulator(program, launch, params, memory, **kw)


def _stops(name: str, **kw) -> str:
    t0 = time.perf_counter()
    with pytest.raises(EmulationError) as info:
        _emulator(name, **kw).run()
    assert time.perf_counter() - t0 < 10
    text = str(info.value)
    assert "\n" not in text
    return text


def test_endless_loop_stops_on_the_instruction_budget():
    text = _stops("hang_loop")
    assert text.startswith("_Z12endless_loopPKiPi: warp ")
    assert "of CTA (0, 0, 0) at PC 0x" in text and "exceeded its budget of 100,000 instructions" in text


def test_partial_barrier_is_a_barrier_deadlock():
    text = _stops("hang_barrier")
    assert text.startswith("_Z15partial_barrierPKiPi: barrier deadlock: warps [0] of CTA (0, 0, 0) wait at PC ")
    assert "`BAR.SYNC.DEFER_BLOCKING 0x0`, which warps [1] never reach" in text
    assert "warp 1 of CTA (0, 0, 0) at PC 0x" in text


def test_budget_is_configurable():
    text = _stops("hang_loop", warp_budget=20_000)
    assert "budget of 20,000 instructions" in text


def test_budget_leaves_real_kernels_alone(data_dir, tmp_path):
    """The demo matmul runs to the end under its default budget, with room to spare."""
    import yaml

    spec = yaml.safe_load((data_dir / "demo.yaml").read_text())
    spec["source"] = str(data_dir / "demo_matmul.cu")
    (tmp_path / "demo.yaml").write_text(yaml.safe_dump(spec))
    wl = load_workload(tmp_path / "demo.yaml")
    program = parse_listing(data_dir / "demo_sm_90.sass")
    launch, params, memory, _ = build_launch(wl, program, 64)
    emu = Emulator(program, launch, params, memory).run()
    assert 0 < 10 * emu.warp_steps.max() < emu.warp_budget


def test_trace_memory_budget():
    text = _stops("hang_loop", trace_budget=2**20)
    assert "memory budget of 0.0 GiB" in text and "of CTA (0, 0, 0) at PC 0x" in text


def test_cli_hang_is_one_line_and_nonzero():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "gpusim", "emulate", str(DATA / "hang_barrier.yaml"), "--arch",
                          "sm_90", "--size", "64"], capture_output=True, text=True, env=env, timeout=60)
    assert time.perf_counter() - t0 < 30
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("gpusim: error: _Z15partial_barrierPKiPi: barrier deadlock:")
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
