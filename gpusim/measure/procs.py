"""Run a child process in its own process group, so a timeout ends it and everything it started
(a Python child's nvidia-smi sampler, ncu's profiled application) and nothing else."""

from __future__ import annotations

import os
import signal
import subprocess


def run_group(cmd: list[str], timeout: float | None, capture_stdout: bool = True, **kw) -> tuple[int, str, str]:
    """(returncode, stdout, stderr); returncode 124 and a note in stderr if `timeout` seconds passed."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE if capture_stdout else None, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, **kw)
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out or "", err or ""
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the group this call created, by its id
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        return 124, out or "", (err or "") + f"\ntimed out after {timeout:.0f} s"
