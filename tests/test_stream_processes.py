"""Detailed mode's records made in a second process (gpusim/timing/compiled/producer.py): the same
results as one process, to the last bit; the child's errors raised in the parent as the same one
line; a child that dies is an error within seconds, not a hang."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from gpusim.config import apply_overrides, load_gpu
from gpusim.errors import EmulationError, GpusimError
from gpusim.timing import driver as D
from gpusim.timing.compiled import producer as P
from gpusim.timing.compiled import stream as S
from gpusim.workloads import find_workload, load_workload

DATA = Path(__file__).parent / "data"


def _run(monkeypatch, processes: int, name: str, gpu: str, size: int, overrides: dict, slice_records: int):
    monkeypatch.setenv("GPUSIM_WORKERS", str(processes))
    monkeypatch.setattr(D, "SLICE_RECORDS", slice_records)
    cfg = apply_overrides(load_gpu(gpu), overrides) if overrides else load_gpu(gpu)
    wl = find_workload(name)
    emu, _, result = D.time_streamed(wl, cfg, size)
    outputs = {a.name: np.array(emu.memory.read_buffer(a.name)) for a in wl.args if a.kind == "buffer" and a.output}
    return result.model_dump_json(), outputs


@pytest.mark.parametrize("case", [("sgemm_maxas_64", "h100", 128, {}, 700),
                                  ("dgemm_unroll_db_128b_prefsmem", "gtx970", 128, {"sm_count": 3}, 2000)],
                         ids=["hopper-sgemm", "maxwell-dgemm-groups"])
def test_two_processes_give_one_process_result(case, monkeypatch):
    """Small slices, so that the engine stops many times and the parent asks ahead at each stop."""
    made = []
    real = P.Worker.ask
    monkeypatch.setattr(P.Worker, "ask", lambda self, plan: (made.append(len(plan)), real(self, plan))[1])
    one = _run(monkeypatch, 1, *case)
    assert not made
    two = _run(monkeypatch, 2, *case)
    assert sum(made) > 5  # (the second process made the slices)
    assert two[0] == one[0]
    assert two[1].keys() == one[1].keys() and all(np.array_equal(two[1][k], one[1][k]) for k in one[1])


def test_an_emulation_error_in_the_child_is_the_same_one_line():
    wl = load_workload(DATA / "hang_loop.yaml")
    texts = []
    for n in ("1", "2"):
        os.environ["GPUSIM_WORKERS"] = n
        try:
            with pytest.raises(EmulationError) as info:
                D.time_streamed(wl, load_gpu("h100"), wl.sizes[0])
        finally:
            del os.environ["GPUSIM_WORKERS"]
        texts.append(str(info.value))
    assert texts[0] == texts[1] and "exceeded its budget" in texts[0] and "\n" not in texts[0]


def test_a_child_that_dies_is_an_error_not_a_hang(monkeypatch):
    monkeypatch.setenv("GPUSIM_WORKERS", "2")
    monkeypatch.setattr(P, "POLL_S", 0.1)
    real, calls = S.EmulatorStream.slice, []

    def dies(self, g, ctas=None):  # (in the child: its fourth slice ends it)
        calls.append(g)
        return os._exit(3) if len(calls) == 4 else real(self, g, ctas)

    monkeypatch.setattr(S.EmulatorStream, "slice", dies)
    monkeypatch.setattr(D, "SLICE_RECORDS", 700)
    cfg = apply_overrides(load_gpu("gtx970"), {"sm_count": 3})
    t0 = time.perf_counter()
    with pytest.raises(GpusimError, match=r"emulation process \(pid \d+\) ended without its records \(exit code 3"):
        D.time_streamed(find_workload("dgemm_unroll_db_128b_prefsmem"), cfg, 128)
    assert time.perf_counter() - t0 < 30


@pytest.mark.parametrize("value, expect", [("1", 1), ("2", 2), (None, 2 if (os.cpu_count() or 1) >= 2 else 1)])
def test_processes_setting(value, expect, monkeypatch):
    if value is None:
        monkeypatch.delenv("GPUSIM_WORKERS", raising=False)
    else:
        monkeypatch.setenv("GPUSIM_WORKERS", value)
    assert P.processes() == expect


def test_a_bad_processes_setting_is_one_line(monkeypatch):
    monkeypatch.setenv("GPUSIM_WORKERS", "3")
    with pytest.raises(GpusimError, match="GPUSIM_WORKERS must be 1 or 2, not '3'"):
        P.processes()


def _children(pid: int) -> list[int]:
    kids = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            kids += [int(c) for c in f.read().split()]
    return kids


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="Linux /proc")
def test_the_child_ends_when_the_parent_is_killed():
    """A parent killed outright (SIGKILL: no cleanup runs) takes its emulating child with it."""
    import signal
    import subprocess
    import sys

    code = ("import os; os.environ['GPUSIM_WORKERS'] = '2'\n"
            "from gpusim.config import load_gpu\nfrom gpusim.timing import driver as D\n"
            "from gpusim.workloads import find_workload\n"
            "D.time_streamed(find_workload('sgemm_maxas_64'), load_gpu('h100'), 1024)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        t0, kids = time.perf_counter(), []
        while not kids and time.perf_counter() - t0 < 60 and proc.poll() is None:
            time.sleep(0.05)
            kids = _children(proc.pid)
        assert kids, "no emulating child appeared"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 10 and any(map(_running, kids)):
        time.sleep(0.05)
    assert not any(map(_running, kids))


def _running(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
