"""Ctrl-C / SIGTERM mid-run: the command exits within 2 s with one line and 130 / 143, leaves no
worker process behind and keeps every finished result in the cache (each file whole)."""

import glob
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _interrupt(args, cache: Path, sig, wait_for_cache: bool = True, env_extra=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT), **(env_extra or {}))
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # its own process group: the test can look for leftovers
    t0 = time.perf_counter()
    try:
        if wait_for_cache:  # interrupt once some results are finished (and more are running)
            while not glob.glob(f"{cache}/**/*.json", recursive=True) and time.perf_counter() - t0 < 60:
                assert proc.poll() is None, proc.communicate()
                time.sleep(0.1)
            assert glob.glob(f"{cache}/**/*.json", recursive=True), "no result finished within 60 s"
        else:
            time.sleep(3)
        assert proc.poll() is None, "finished before the signal: choose a longer job"
        t1 = time.perf_counter()
        os.kill(proc.pid, sig)
        _, err = proc.communicate(timeout=10)
        elapsed = time.perf_counter() - t1
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert elapsed < 2.0, elapsed
    assert proc.returncode == 128 + sig, (proc.returncode, err)
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert "interrupted; finished results are kept in the cache" in last
    deadline = time.perf_counter() + 2
    while True:  # no process of the group left (the workers are ended, not orphaned)
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        assert time.perf_counter() < deadline, "worker processes left behind"
        time.sleep(0.05)
    files = glob.glob(f"{cache}/**/*.json", recursive=True)
    for f in files:
        json.loads(Path(f).read_text())  # whole files only
    return files


def test_sigint_validate(tmp_path):
    cache = tmp_path / "cache"
    files = _interrupt([sys.executable, "-m", "gpusim", "validate", "--gpu", "h100", "--quick", "--workers", "2"],
                       cache, signal.SIGINT, env_extra={"GPUSIM_VALIDATE_CACHE": str(cache)})
    assert files


def test_sigterm_validate(tmp_path):
    cache = tmp_path / "cache"
    _interrupt([sys.executable, "-m", "gpusim", "validate", "--gpu", "h100", "--quick", "--workers", "2"],
               cache, signal.SIGTERM, env_extra={"GPUSIM_VALIDATE_CACHE": str(cache)})


def test_sigint_run_sim(tmp_path):
    files = _interrupt([sys.executable, "run_sim.py", str(tmp_path), "--cards", "gtx970"], tmp_path, signal.SIGINT)
    assert all("/cache/" in f for f in files)


def test_sigterm_gpusim_run(tmp_path):
    _interrupt([sys.executable, "-m", "gpusim", "run", "dgemm_unroll", "--gpu", "gtx970", "--size", "1024"],
               tmp_path, signal.SIGTERM, wait_for_cache=False)
