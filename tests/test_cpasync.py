"""cp.async (LDGSTS, LDGDEPBAR, DEPBAR.LE SB0) on sm_90: the emulator's copies against numpy, and the
timing model's groups, L1 bypass and shared-pipe cost (gpusim/emu/ops.py `ldgsts`, timing/static.py).

The kernels are real nvcc 13.0 output committed beside their sources in tests/data/cpasync/:
cpasync_forms (every form of cp.async ptxas makes: 4/8/16 bytes, .ca/.cg, src-size, predicated,
ignore-src) and cpasync_gemm (a double-buffered GEMM with .ca and .cg copies)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from gpusim.config import apply_overrides, load_gpu
from gpusim.emu.emulator import Emulator
from gpusim.emu.run import build_launch, check
from gpusim.isa.parser import parse_listing
from gpusim.timing.driver import input_bytes
from gpusim.timing.gpu import GPU
from gpusim.timing.mem.l1 import L1
from gpusim.timing.mem.l2 import MemorySystem
from gpusim.timing.static import COMMIT, COPY, static_info
from gpusim.trace import DynamicTrace
from gpusim.workloads import load_workload

DATA = Path(__file__).parent / "data" / "cpasync"


def emulate(name: str, n: int, seed: int = 0):
    wl = load_workload(DATA / f"{name}.yaml")
    program = parse_listing(DATA / f"{name}_sm_90.sass")
    launch, params, memory, inputs = build_launch(wl, program, n, seed)
    return wl, Emulator(program, launch, params, memory).run(), inputs


def test_listing_has_every_form_under_test():
    text = (DATA / "cpasync_forms_sm_90.sass").read_text()
    for form in ("LDGSTS.E [", "LDGSTS.E.64 [", "LDGSTS.E.128 [", "LDGSTS.E.BYPASS.128 [",
                 "LDGSTS.E.BYPASS.128.ZFILL [", "LDGDEPBAR", "DEPBAR.LE SB0, 0x1", "DEPBAR.LE SB0, 0x0"):
        assert form in text, form
    assert re.search(r"@!P\d LDGSTS", text)  # predicated copy
    assert re.search(r"LDGSTS\.E\.BYPASS\.128 \[R\d+\], desc\[UR\d+\]\[R\d+\.64[^\]]*\], !P\d", text)  # ignore-src


def test_every_form_copies_what_numpy_says():
    """4, 8 and 16 bytes, L1-allocating or not; src-size 0-12 of 16 (the rest zero); a predicated-off
    copy leaves shared memory alone; ignore-src writes zeros. All 2,944 words bit-exact."""
    wl, emu, inputs = emulate("cpasync_forms", 128)
    got = emu.memory.read_buffer("out").view(np.float32)
    want = np.asarray(wl.reference_outputs(inputs, 128)["out"], dtype=np.float32)
    bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
    assert not len(bad), f"out[{bad[0]}] = {got[bad[0]]}, numpy {want[bad[0]]} ({len(bad)} wrong)"
    assert (want[1408:1920].reshape(128, 4) == 0).sum() == 32 * (4 + 3 + 2 + 1)  # src-size 0..12: 4..1 zeros


def test_gemm_with_copies_is_right():
    wl, emu, inputs = emulate("cpasync_gemm", 64)
    assert all(c["passed"] for c in check(wl, emu, inputs, 64).values())


def test_listings_regenerate_identically():
    from gpusim.errors import ToolchainError
    from gpusim.toolchain.compile import _version, regenerate_text, toolchain

    try:
        tools = toolchain("sm_90")
    except ToolchainError:
        pytest.skip("sm_90 toolchain not installed (pip install -e '.[cuda]' and nvcc 13); cannot regenerate")
    for name in ("cpasync_forms", "cpasync_gemm"):
        committed = (DATA / f"{name}_sm_90.sass").read_text()
        for tool in ("nvcc", "nvdisasm"):
            made_with = re.search(rf"{tool} (release [\d.]+, V[\d.]+)", committed).group(1)
            if _version(tools[tool]) != made_with:
                pytest.skip(f"committed listings were made with {tool} {made_with}, found {_version(tools[tool])}")
        assert regenerate_text(load_workload(DATA / f"{name}.yaml"), "sm_90") == committed, name


def test_static_facts_of_the_copies():
    program = parse_listing(DATA / "cpasync_forms_sm_90.sass")
    cfg = load_gpu("h100")
    facts = {(i.opcode, i.modifiers): s for i, s in zip(program.instructions, static_info(program, cfg))}
    assert facts[("LDGDEPBAR", ())].copy_role == COMMIT
    ca, cg = facts[("LDGSTS", ("E", "128"))], facts[("LDGSTS", ("E", "BYPASS", "128"))]
    assert ca.copy_role == cg.copy_role == COPY
    assert not ca.bypass and cg.bypass  # .cg does not allocate in L1
    assert ca.copy_mio == cfg.sm.shared_memory.l1_copy_wavefronts > 0 and cg.copy_mio == 0
    assert ca.l1_cached and not cg.l1_cached  # (the H100 caches global loads in L1)


def test_gpu_scope_loads_bypass_l1():
    """LDG.E.STRONG.GPU (__ldcg) and .STRONG.SYS (volatile) loads must see other SMs' stores: they do
    not allocate in L1 (H200: a chase of them takes 333 cycles a step, of plain loads 63)."""
    from types import SimpleNamespace

    from gpusim.timing.static import _bypasses_l1

    def ins(opcode, *modifiers):  # (the rule reads the opcode and modifiers nvdisasm printed)
        return SimpleNamespace(opcode=opcode, modifiers=modifiers)

    assert _bypasses_l1(ins("LDG", "E", "STRONG", "GPU")) and _bypasses_l1(ins("LDG", "E", "STRONG", "SYS"))
    assert not _bypasses_l1(ins("LDG", "E")) and not _bypasses_l1(ins("LDG", "E", "128", "CONSTANT"))
    assert not _bypasses_l1(ins("LDG", "E", "STRONG", "SM"))  # CTA-scope: L1 is coherent for it
    cfg = load_gpu("h100")
    l1 = L1(cfg, MemorySystem(cfg, cfg.clock_mhz))
    first = l1.load(0.0, 0.0, [7], cached=False)  # (a bypassing load: StaticInfo.l1_cached False)
    again = l1.load(first + 10, first + 10, [7], cached=False)
    assert again - (first + 10) > 100 and l1.cache.hits == 0  # an L2 trip again, no L1 hit
    hit = l1.load(again + 10, again + 10, [9]), l1.load(again + 2000, again + 2000, [9])
    assert hit[1] - (again + 2000) < 100  # a plain load's second touch hits L1


def _trace(name: str, n: int):
    wl, emu, inputs = emulate(name, n)
    return wl, emu, DynamicTrace.from_emulator(emu, workload=wl.name, size=n)


@pytest.mark.parametrize("kw", [{}, {"honour_control_codes": False}], ids=["control-codes", "scoreboard"])
def test_engines_agree_on_copies(kw):
    """The compiled engine replays the object model on copies, groups and waits to the last bit."""
    wl, emu, trace = _trace("cpasync_gemm", 128)
    cfg = load_gpu("h100")
    out = {}
    for engine in ("compiled", "objects"):
        GPU.engine = engine
        try:
            out[engine] = GPU(emu.program, trace, cfg, footprint_bytes=input_bytes(wl, 128), **kw).run(wl.name, 128).model_dump()
        finally:
            GPU.engine = "compiled"
    differ = sorted(k for k in out["objects"] if out["compiled"][k] != out["objects"][k])
    assert not differ, f"the engines disagree on {differ}"


def _cycles(trace, emu, wl, n, overrides=None, **kw):
    cfg = load_gpu("h100")
    if overrides:
        cfg = apply_overrides(cfg, overrides)
    return GPU(emu.program, trace, cfg, footprint_bytes=input_bytes(wl, n), **kw).run(wl.name, n).cycles


def test_a_group_is_waited_for_in_both_modes():
    """DEPBAR.LE SB0 waits for the copies of the groups it counts, with control codes and with the
    register scoreboard (where nothing else names the copies' shared-memory words): a GEMM whose every
    tile step waits for the copy of the next tile is not faster without control codes."""
    wl, emu, trace = _trace("cpasync_gemm", 64)
    control = _cycles(trace, emu, wl, 64)
    scoreboard = _cycles(trace, emu, wl, 64, honour_control_codes=False)
    assert scoreboard > 0.95 * control, (control, scoreboard)  # (0.89 when scoreboard mode ignored DEPBAR)


def test_l1_allocating_copies_take_the_shared_pipe():
    """l1_copy_wavefronts: the .ca copies of A cost shared-pipe time; more of it, more cycles."""
    wl, emu, trace = _trace("cpasync_gemm", 128)
    none = _cycles(trace, emu, wl, 128, {"sm.shared_memory.l1_copy_wavefronts": 0.0})
    some = _cycles(trace, emu, wl, 128)
    many = _cycles(trace, emu, wl, 128, {"sm.shared_memory.l1_copy_wavefronts": 8.0})
    assert none < some < many, (none, some, many)


def test_sampled_mode_engines_agree_and_follow_detailed_mode(monkeypatch):
    """Sampled mode on copies: both engines to the bit, with main-loop iterations left out of the trace
    and made up from the kept ones (8 kept at each end), and within 5% of detailed mode's cycles."""
    import gpusim.timing.sampling as sampling
    from gpusim.timing.driver import sampled_ctas, time_emulated

    n = 512
    wl = load_workload(DATA / "cpasync_gemm.yaml")
    program = parse_listing(DATA / "cpasync_gemm_sm_90.sass")
    cfg = load_gpu("h100")
    launch, params, memory, _ = build_launch(wl, program, n)
    emu = Emulator(program, launch, params, memory, ctas=sampled_ctas(wl, n, cfg)).run()
    emu.params = params
    monkeypatch.setattr(sampling, "KEEP_HEAD", 8)
    monkeypatch.setattr(sampling, "KEEP_TAIL", 8)
    out = {}
    for engine in ("compiled", "objects"):
        GPU.engine = engine
        try:
            out[engine] = time_emulated(emu, wl, cfg, n, "sampled").model_dump()
        finally:
            GPU.engine = "compiled"
    differ = sorted(k for k in out["objects"] if out["compiled"][k] != out["objects"][k])
    assert not differ, f"the engines disagree on {differ}"
    assert out["compiled"]["sampling"]["synthesized_iterations"] > 0  # iterations were made up
    full = Emulator(program, *build_launch(wl, program, n)[:3]).run()
    detailed = GPU(full.program, DynamicTrace.from_emulator(full, workload=wl.name, size=n), cfg,
                   footprint_bytes=input_bytes(wl, n)).run(wl.name, n).cycles
    assert abs(out["compiled"]["cycles"] / detailed - 1) < 0.05, (out["compiled"]["cycles"], detailed)
