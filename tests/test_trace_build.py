"""The vectorised trace builder (`DynamicTrace.from_emulator`, `elide_records`) against a plain
loop over the emulator log, record by record, on real runs and on a log whose batches interleave."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpusim.emu.emulator import TraceLog
from gpusim.emu.run import build_launch
from gpusim.isa.parser import parse_listing
from gpusim.trace import DynamicTrace, run_traced
from gpusim.trace.elide import main_loop_branch
from gpusim.trace.format import RECORD_DTYPE
from gpusim.workloads import load_workload

DATA = Path(__file__).parent / "data"


def reference(emu, keep_loop=None, ctas=None):
    """(records, addresses, access_bytes, elision warps, elision pc_counts) by a loop over the log
    (of the warps of `ctas` alone, None: all)."""
    log, wpc, program = emu.log, emu.launch.warps_per_cta, emu.program
    streams: dict[int, list] = {}
    for step, pc in enumerate(log.pcs):
        mem = log.mem.get(step)
        for j, local in enumerate(log.warps[step]):
            if ctas is not None and int(emu.ctas[emu.warp_cta[local]]) not in ctas:
                continue
            gw = int(emu.ctas[emu.warp_cta[local]]) * wpc + int(local) % wpc
            active = int(log.masks[step][j])
            executed = int(log.exec_masks[step][j]) & active
            row = None
            if mem is not None:
                lanes = [(executed >> t) & 1 for t in range(32)]
                row = ([int(a) if on else 0 for a, on in zip(mem[0][j], lanes)], int(mem[1]))
            streams.setdefault(gw, []).append((pc, active, executed, row))
    left_warps, left_pcs = {}, np.zeros(len(program), dtype=np.int64)
    if keep_loop is not None:
        head, tail = keep_loop
        counts = np.bincount([r[0] for s in streams.values() for r in s], minlength=len(program))
        branch = main_loop_branch(program, counts)
        for gw, stream in streams.items():
            k, iteration = 0, []
            for pc, *_ in stream:
                iteration.append(k)
                k += pc == branch
            kept = [r for r, it in zip(stream, iteration) if not head <= it < k - tail]
            if len(kept) < len(stream):
                at = sum(it < head for it in iteration)
                left_warps[gw] = (at, k - tail - head, len(stream) - len(kept))
                for r, it in zip(stream, iteration):
                    if head <= it < k - tail:
                        left_pcs[r[0]] += 1
            streams[gw] = kept
    records, addresses, nbytes = [], [], []
    for gw in sorted(streams):
        for seq, (pc, active, executed, row) in enumerate(streams[gw]):
            records.append((gw, seq, pc, active, executed, -1 if row is None else len(addresses)))
            if row is not None:
                addresses.append(row[0])
                nbytes.append(row[1])
    return (np.array(records, dtype=RECORD_DTYPE), np.array(addresses, dtype=np.uint64).reshape(-1, 32),
            np.array(nbytes, dtype=np.uint8), left_warps, left_pcs)


def assert_same(trace, ref):
    records, addresses, nbytes, left_warps, left_pcs = ref
    assert np.array_equal(trace.records, records)
    assert np.array_equal(trace.addresses, addresses)
    assert np.array_equal(trace.access_bytes, nbytes)
    assert trace.addresses.dtype == np.uint64 and trace.access_bytes.dtype == np.uint8
    assert np.array_equal(trace.warp_ids, np.unique(records["warp"]))
    if left_warps:
        assert trace.elision.warps == left_warps
        assert np.array_equal(trace.elision.pc_counts, left_pcs)
    else:
        assert trace.elision is None


@pytest.fixture(scope="module", params=["sm_52", "sm_90"])
def demo_emu(request):
    workload = load_workload(DATA / "demo.yaml")
    program = parse_listing(DATA / f"demo_{request.param}.sass")
    launch, params, memory, _ = build_launch(workload, program, 40)  # partial tiles: guarded-off lanes
    emu, _ = run_traced(program, launch, params, memory)
    return emu


def test_trace_matches_a_loop_over_the_log(demo_emu):
    assert_same(DynamicTrace.from_emulator(demo_emu), reference(demo_emu))


@pytest.mark.parametrize("name, arch, n", [("sgemm_maxas_64", "sm_90", 128), ("dgemm_unroll", "sm_52", 128)])
def test_elided_trace_matches_a_loop_over_the_log(name, arch, n):
    from gpusim.emu.run import emulate
    from gpusim.workloads import find_workload

    emu, _ = emulate(find_workload(name), arch, n)
    trace = DynamicTrace.from_emulator(emu, keep_loop=(2, 1))
    assert trace.elision is not None
    assert_same(trace, reference(emu, keep_loop=(2, 1)))
    assert_same(DynamicTrace.from_emulator(emu), reference(emu))


def test_interleaved_batches_and_unordered_ctas(demo_emu):
    """Batches of changing warp sets, one batch's straight-line run split by another, guarded steps
    and CTAs emulated out of order: the layout by runs must still put every record in place."""
    emu = demo_emu
    rng = np.random.default_rng(7)
    n_local = len(emu.warp_cta)
    log = TraceLog()
    n_pc = len(emu.program)
    for _ in range(60):  # runs
        wids = np.flatnonzero(rng.random(n_local) < 0.4)
        if not len(wids):
            continue
        mask = rng.integers(1, 2**32, size=len(wids), dtype=np.uint64).astype(np.uint32)
        for _ in range(int(rng.integers(1, 6))):
            log.pcs.append(int(rng.integers(0, n_pc)))
            log.warps.append(wids)
            log.masks.append(mask)
            if rng.random() < 0.3:
                log.exec_masks.append(mask & rng.integers(0, 2**32, size=len(wids), dtype=np.uint64).astype(np.uint32))
            else:
                log.exec_masks.append(mask)
            if rng.random() < 0.3:
                dtype = np.uint32 if rng.random() < 0.5 else np.uint64
                log.mem[len(log.pcs) - 1] = (rng.integers(1, 2**31, size=(len(wids), 32)).astype(dtype),
                                             int(rng.choice([4, 8, 16])))
    emu.log, saved = log, emu.log
    ctas = emu.ctas
    emu.ctas = list(reversed(ctas))
    try:
        assert_same(DynamicTrace.from_emulator(emu), reference(emu))
        some = emu.ctas[1::2]  # (the others' warps left out, some steps' all of them)
        assert_same(DynamicTrace.from_emulator(emu, ctas=some), reference(emu, ctas=some))
    finally:
        emu.log, emu.ctas = saved, ctas


@pytest.mark.parametrize("name, arch, n", [("sgemm_maxas_64", "sm_90", 128), ("sgemm_maxas_64", "sm_52", 128)])
def test_trace_of_some_ctas_leaves_the_others_warps_out(name, arch, n):
    """CTAs emulated beside the traced ones (sampled mode's, for their addresses): the trace is a
    loop's over the log that skips their warps, elided or not, and their loads add no sectors."""
    from gpusim.emu.run import emulate
    from gpusim.workloads import find_workload

    emu, _ = emulate(find_workload(name), arch, n)
    some = emu.ctas[:2]  # (block row 0: the others load rows of A these do not)
    for keep in (None, (2, 1)):
        trace = DynamicTrace.from_emulator(emu, keep_loop=keep, ctas=some)
        assert_same(trace, reference(emu, keep_loop=keep, ctas=some))
        assert trace.header["ctas"] == some
    alone, _ = emulate(find_workload(name), arch, n, ctas=some)
    assert np.array_equal(trace.elision.load_sectors32,
                          DynamicTrace.from_emulator(alone, keep_loop=(2, 1)).elision.load_sectors32)
