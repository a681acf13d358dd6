"""Detailed mode streamed (gpusim/timing/compiled/stream.py): the records made slice by slice of
emulation as the engine consumes them must give the results of the whole trace, to the last bit.
Slices here are tiny (a few hundred records), so that the engine stops for records many times, in
every phase of a run: first launches, mid-loop, barriers, the refill of retired CTAs' slots, and
groups of CTAs emulated one after another."""

from __future__ import annotations

import numpy as np
import pytest

from gpusim.config import apply_overrides, load_gpu
from gpusim.emu.run import emulate
from gpusim.timing import driver as D
from gpusim.timing.gpu import GPU
from gpusim.timing.precompute import register_bank_conflicts
from gpusim.trace import DynamicTrace
from gpusim.workloads import find_workload

# id: (workload, gpu, size, overrides, slice records)
CASES = {
    "hopper-sgemm": ("sgemm_maxas_64", "h100", 128, {}, 700),
    "hopper-copy-stores-waves": ("copy_float4", "h100", 256, {"sm_count": 4}, 500),
    "hopper-smem-barriers": ("sgemm_smem", "h100", 64, {}, 300),
    "hopper-scoreboard": ("sgemm_maxas_64", "h100", 64, {"sm.scheduler.honour_control_codes": False}, 400),
    "maxwell-dgemm-groups": ("dgemm_unroll_db_128b_prefsmem", "gtx970", 128, {"sm_count": 3}, 2000),
    "kepler-sgemm": ("sgemm_maxas_64", "k40", 64, {"sm_count": 2}, 300),
}


@pytest.mark.parametrize("free", [0, 1 << 30, -1], ids=["only-needed-ctas", "whole-groups", "backlog"])
@pytest.mark.parametrize("case", list(CASES))
def test_streamed_run_equals_the_whole_trace(case, free, monkeypatch):
    """`free`: the arena's room below which a slice emulates its whole group (0: a short group's
    running CTAs, the others frozen; -1: also past the backlog limit from the start, so only CTAs
    with few records left are fed)."""
    from gpusim.timing.compiled import stream as S

    monkeypatch.setattr(S, "FREE_RECORDS", max(free, 0))
    if free < 0:
        monkeypatch.setattr(S, "BACKLOG_RECORDS", 0)
        monkeypatch.setattr(S, "BACKLOG_KEEP", 3 * 16)
    name, gpu, size, overrides, slice_records = CASES[case]
    cfg = load_gpu(gpu)
    if overrides:
        cfg = apply_overrides(cfg, overrides)
    wl = find_workload(name)
    monkeypatch.setattr(D, "SLICE_RECORDS", slice_records)
    emu_s, _, streamed = D.time_streamed(wl, cfg, size)
    emu, _ = emulate(wl, cfg.arch, size)
    whole = D.time_emulated(emu, wl, cfg, size)
    assert streamed.model_dump() == whole.model_dump()
    # the streamed emulation ran the whole grid on one memory: its outputs are the whole run's
    for a in wl.args:
        if a.kind == "buffer" and a.output:
            assert np.array_equal(emu_s.memory.read_buffer(a.name), emu.memory.read_buffer(a.name))


def test_run_workload_streams_cold_detailed_runs_only():
    cfg = load_gpu("h100")
    assert D.streams(cfg, "detailed", None)
    assert not D.streams(cfg, "sampled", None)
    assert not D.streams(cfg, "detailed", (0, 100, None))  # a timeline: the object model
    assert not D.streams(apply_overrides(cfg, {"memory.l2.initial": "warm"}), "detailed", None)


@pytest.mark.parametrize("ports", [None, 2])
def test_reuse_cache_carried_across_pieces_of_a_stream(ports):
    """Register-bank conflicts (the bank rule, or sm_90's read-port rule with its debt) and reuse hits
    of a trace cut into pieces (each warp's stream split at several points) equal the whole trace's
    when the reuse cache's state is carried across."""
    wl = find_workload("sgemm_maxas_64")
    emu, _ = emulate(wl, "sm_90", 64)
    trace = DynamicTrace.from_emulator(emu)
    program = emu.program
    whole = register_bank_conflicts(program, trace, 2, 64, return_hits=True, read_ports=ports)
    assert whole[1].any()  # the case has reuse hits to carry
    rec = trace.records
    seq = rec["seq"]
    carry = np.full((int(rec["warp"].max()) + 1, 8), -1, dtype=np.int32)
    got = [np.zeros(len(rec), dtype=np.int64) for _ in range(2)]
    c = int(seq[np.flatnonzero(whole[1])[0]])  # a record that hits: the cut makes it its piece's first
    for lo, hi in ((0, c), (c, c + 1), (c + 1, 500), (500, 1 << 30)):  # cuts mid-loop, one record, the rest
        sel = np.flatnonzero((seq >= lo) & (seq < hi))
        if not len(sel):
            continue
        piece = DynamicTrace(trace.header, rec[sel], trace.addresses, trace.access_bytes)
        rows = carry[piece.warp_ids]
        cost, hits, _ = register_bank_conflicts(program, piece, 2, 64, return_hits=True, carry=rows, read_ports=ports)
        carry[piece.warp_ids] = rows
        got[0][sel], got[1][sel] = cost, hits
    assert np.array_equal(got[0], whole[0]) and np.array_equal(got[1], whole[1])
    # without the carry the pieces' first readers would miss: the test can tell
    piece = DynamicTrace(trace.header, rec[seq >= c], trace.addresses, trace.access_bytes)
    cost_nocarry, hits_nocarry, _ = register_bank_conflicts(program, piece, 2, 64, return_hits=True, read_ports=ports)
    assert not np.array_equal(hits_nocarry, whole[1][seq >= c])
    if ports:  # (and the debt: cut where a warp owes half a cycle, its next record would pay nothing)
        assert whole[0].any()


def test_engine_stops_for_records_and_goes_on(monkeypatch):
    """The engine stopped for records more than once (the arena really streamed)."""
    from gpusim.timing.compiled import stream as S

    calls = []
    real = S.Arena.add

    def counting(self, segments, st=None, queue_from=None):
        calls.append(len(self.records["pcs"]))
        return real(self, segments, st, queue_from)

    monkeypatch.setattr(S.Arena, "add", counting)
    monkeypatch.setattr(D, "SLICE_RECORDS", 400)
    D.time_streamed(find_workload("sgemm_maxas_64"), load_gpu("h100"), 64)
    assert len(calls) > 5
    assert GPU.engine == "compiled"
