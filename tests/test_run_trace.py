"""`gpusim run --trace FILE` times a saved trace (gpusim .npz or Accel-Sim directory) exactly as the
run that emulated it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpusim.emu.run import emulate
from gpusim.errors import GpusimError
from gpusim.timing.driver import run_trace, run_workload
from gpusim.trace import DynamicTrace
from gpusim.trace.accelsim import export_accelsim
from gpusim.workloads import find_workload

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("traces")
    wl = find_workload("sgemm_maxas_64")
    emu, _ = emulate(wl, "sm_90", 64)
    dyn = DynamicTrace.from_emulator(emu, workload=wl.name, size=64)
    npz = dyn.save(tmp / "t.npz")
    accel = export_accelsim(dyn, emu.program, tmp / "accel")
    return npz, Path(accel)


def test_npz_and_accelsim_time_like_the_run(saved):
    npz, accel = saved
    direct = run_workload("sgemm_maxas_64", "h100", 64)
    for path in (npz, accel if accel.is_dir() else accel.parent):
        r = run_trace(path, "h100")
        assert r.cycles == direct.cycles and r.warp_instructions == direct.warp_instructions
        assert r.provenance["trace"]["path"] == str(path)


def test_trace_of_another_arch_is_one_line(saved):
    with pytest.raises(GpusimError, match="the trace is of sm_90 code but card .*GTX 970 is sm_52"):
        run_trace(saved[0], "gtx970")


def test_cli_run_trace(saved, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-m", "gpusim", "run", "--trace", str(saved[0]), "--gpu", "h100", "--json",
                          str(tmp_path / "r.json")], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads((tmp_path / "r.json").read_text())["workload"] == "sgemm_maxas_64"
    bad = subprocess.run([sys.executable, "-m", "gpusim", "run", "--gpu", "h100"], capture_output=True, text=True,
                         env=env)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--trace" in bad.stderr


@pytest.mark.parametrize("arch", ["sm_52", "sm_90"])
def test_vectorised_accelsim_reader_matches_the_line_reader(tmp_path, arch):
    from gpusim.trace.accelsim import read_kernel_trace, to_dynamic_trace
    from gpusim.trace.accelsim_fast import read_dynamic_trace

    wl = find_workload("dgemm_unroll")
    emu, _ = emulate(wl, arch, 256, ctas=[0, 3])
    dyn = DynamicTrace.from_emulator(emu, workload=wl.name, size=256)
    kernel = Path(export_accelsim(dyn, emu.program, tmp_path / "a")) / "kernel-1.traceg"
    if not kernel.exists():
        kernel = tmp_path / "a" / "kernel-1.traceg"
    fast = read_dynamic_trace(kernel, emu.program)
    assert fast is not None and fast == to_dynamic_trace(read_kernel_trace(kernel), emu.program)
    assert fast.addresses.any()


def test_malformed_accelsim_line_falls_back_to_the_line_reader_message(saved, tmp_path):
    import shutil

    from gpusim.errors import TraceFormatError

    accel = saved[1] if saved[1].is_dir() else saved[1].parent
    bad = tmp_path / "bad"
    shutil.copytree(accel, bad)
    kernel = bad / "kernel-1.traceg"
    lines = kernel.read_text().splitlines(keepends=True)
    k = next(i for i, ln in enumerate(lines) if ln[:1] in "0123456789abcdef" and " LDG" in ln)
    lines[k] = lines[k].replace(" LDG", " LDX", 1)
    kernel.write_text("".join(lines))
    with pytest.raises(TraceFormatError, match=rf"kernel-1.traceg:{k + 1}: "):
        run_trace(bad, "h100")
