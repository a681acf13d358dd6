"""DynamicTrace: built from the emulator, saved and loaded, and rejected when the file is wrong."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gpusim.emu.emulator import Emulator
from gpusim.emu.run import build_launch
from gpusim.errors import TraceFormatError
from gpusim.isa.parser import parse_listing
from gpusim.trace import TRACE_FORMAT_VERSION, DynamicTrace, run_traced
from gpusim.trace.format import RECORD_DTYPE
from gpusim.workloads import load_workload

DATA = Path(__file__).parent / "data"
N = 40  # not a multiple of the 32x32 tile: partial warps' lanes are guarded off at the edges


@pytest.fixture(scope="module")
def workload():
    return load_workload(DATA / "demo.yaml")


@pytest.fixture(scope="module", params=["sm_52", "sm_90"])
def traced(request, workload):
    program = parse_listing(DATA / f"demo_{request.param}.sass")
    launch, params, memory, _ = build_launch(workload, program, N)
    emu, trace = run_traced(program, launch, params, memory, workload=workload, size=N)
    return program, emu, trace


def test_records_follow_the_emulator_log(traced):
    program, emu, trace = traced
    r = trace.records
    assert r.dtype == RECORD_DTYPE
    assert trace.n_warp_instructions == emu.warp_instructions == len(r)
    # sorted by (warp, seq), seq counts 0.. within each warp
    assert np.all(np.diff(r["warp"]) >= 0)
    for w in trace.warp_ids[:3]:
        s = trace.warp_stream(w)
        assert np.array_equal(s["seq"], np.arange(len(s)))
    # reference by a plain loop over the log, for two warps (one per CTA corner)
    wpc = emu.launch.warps_per_cta
    for local in (0, len(emu.warp_cta) - 1):
        gw = emu.ctas[emu.warp_cta[local]] * wpc + local % wpc
        pcs, masks, addrs = [], [], []
        for step, (pc, wids, m) in enumerate(zip(emu.log.pcs, emu.log.warps, emu.log.masks)):
            hit = np.flatnonzero(wids == local)
            if len(hit):
                pcs.append(pc)
                masks.append(int(m[hit[0]]))
                if step in emu.log.mem:
                    addrs.append(emu.log.mem[step][0][hit[0]])
        s = trace.warp_stream(gw)
        assert s["pc_index"].tolist() == pcs
        assert s["active_mask"].tolist() == masks
        rows = s["mem_row"][s["mem_row"] >= 0]
        assert np.array_equal(trace.addresses[rows], np.array(addrs, dtype=np.uint64))
    assert trace.header["kernel"] == program.kernel
    assert trace.header["fingerprint"] == program.fingerprint()
    assert trace.header["grid"] == [2, 2, 1] and trace.header["block"] == [32, 32, 1]
    assert trace.header["warps_per_cta"] == 32 and trace.header["ctas"] == [0, 1, 2, 3]
    assert trace.header["workload"] == "demo" and trace.header["size"] == N
    assert trace.header["version"] == TRACE_FORMAT_VERSION and trace.header["exec_mask_exact"]


def test_exec_mask_applies_the_guard(traced):
    program, emu, trace = traced
    r = trace.records
    assert np.all(r["exec_mask"] & ~r["active_mask"] == 0)  # exec within active
    guarded = np.array([i.guard is not None for i in program.instructions])[r["pc_index"]]
    differs = r["exec_mask"] != r["active_mask"]
    assert differs.any() and not (differs & ~guarded).any()
    # global loads of edge tiles: lanes outside the matrix are guarded off and carry no address
    mem = r[r["mem_row"] >= 0]
    lanes = (mem["exec_mask"][:, None] >> np.arange(32, dtype=np.uint32)) & 1
    assert np.all(trace.addresses[mem["mem_row"]][lanes == 0] == 0)
    is_global = np.array([i.unit == "lsu" for i in program.instructions])[mem["pc_index"]]
    assert np.all((trace.addresses[mem["mem_row"][is_global]] != 0) == (lanes[is_global] == 1))
    assert set(np.unique(trace.access_bytes)) <= {4, 8, 16}


def test_opcode_mix_sums_to_warp_instructions(traced):
    program, emu, trace = traced
    for by in ("opcode", "full", "unit"):
        mix = trace.opcode_mix(program, by=by)
        assert sum(mix.values()) == emu.warp_instructions
    assert trace.opcode_mix(program)["FFMA"] > 0


def test_save_load_round_trip(traced, tmp_path):
    program, _, trace = traced
    path = trace.save(tmp_path / "t.npz")
    back = DynamicTrace.load(path, program=program)
    assert back.header == trace.header
    for name in ("records", "addresses", "access_bytes"):
        a, b = getattr(back, name), getattr(trace, name)
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert back == trace
    assert np.array_equal(back.warp_stream(5), trace.warp_stream(5))


def _rewrite(src: Path, dst: Path, **changes) -> Path:
    with np.load(src) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(str(arrays["header"][()]))
    for k, v in changes.items():
        if v is None:
            arrays.pop(k)
        else:
            header[k] = v
    arrays["header"] = np.array(json.dumps(header))
    with open(dst, "wb") as f:
        np.savez_compressed(f, **arrays)
    return dst


def test_wrong_version_is_rejected(traced, tmp_path):
    _, _, trace = traced
    path = _rewrite(trace.save(tmp_path / "t.npz"), tmp_path / "old.npz", version=TRACE_FORMAT_VERSION + 1)
    with pytest.raises(TraceFormatError, match="version") as e:
        DynamicTrace.load(path)
    assert str(path) in str(e.value) and "\n" not in str(e.value)


def test_truncated_file_is_rejected(traced, tmp_path):
    _, _, trace = traced
    full = trace.save(tmp_path / "t.npz").read_bytes()
    path = tmp_path / "half.npz"
    path.write_bytes(full[: len(full) // 2])
    with pytest.raises(TraceFormatError) as e:
        DynamicTrace.load(path)
    assert str(path) in str(e.value) and "\n" not in str(e.value)


def test_missing_array_and_garbage_are_rejected(traced, tmp_path):
    _, _, trace = traced
    path = _rewrite(trace.save(tmp_path / "t.npz"), tmp_path / "noaddr.npz", addresses=None)
    with pytest.raises(TraceFormatError, match="addresses") as e:
        DynamicTrace.load(path)
    assert str(path) in str(e.value)
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip file at all")
    with pytest.raises(TraceFormatError, match="junk.npz"):
        DynamicTrace.load(junk)
    with pytest.raises(TraceFormatError, match="absent.npz"):
        DynamicTrace.load(tmp_path / "absent.npz")


def test_wrong_program_is_rejected(traced, tmp_path):
    program, _, trace = traced
    other = parse_listing(DATA / ("demo_sm_35.sass" if program.arch != "sm_35" else "demo_sm_52.sass"))
    path = trace.save(tmp_path / "t.npz")
    with pytest.raises(TraceFormatError, match="fingerprint") as e:
        DynamicTrace.load(path, program=other)
    assert str(path) in str(e.value)
    with pytest.raises(TraceFormatError):
        trace.opcode_mix(other)
