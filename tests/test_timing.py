"""Timing core on tiny programs with answers worked out on paper (one mechanism per test)."""

import pytest

from gpusim.config import apply_overrides, load_gpu
from gpusim.timing.gpu import simulate
from timing_kit import program, trace


def run(prog, cfg, warps=1, wpc=None, control=None, **kw):
    return simulate(prog, trace(prog, warps, wpc, **kw), cfg, honour_control_codes=control)


def one_sm(card, **over):
    """One SM and no fixed kernel overhead, so cycles are the mechanism's alone."""
    return apply_overrides(load_gpu(card), {"sm_count": 1, "kernel_overhead_cycles": 0, "launch_overhead_us": 0,
                                            **over})


def test_dependent_ffma_chain_takes_n_times_latency():
    n = 40
    for card, arch in (("h100", "sm_90"), ("gtx970", "sm_52")):
        cfg = one_sm(card)
        lat = cfg.sm.units["fp32"].latency_cycles
        # scoreboard mode: the hardware waits for R0 each time
        prog = program(arch, ["FFMA R0, R1, R2, R0"] * n + ["EXIT"])
        r = run(prog, cfg, control=False)
        assert n * lat <= r.cycles <= n * lat + 2, (card, r.cycles)
        # control-code mode: the compiler's stall count (= latency) separates them
        prog = program(arch, [("FFMA R0, R1, R2, R0", {"stall": lat})] * n + ["EXIT"])
        r = run(prog, cfg, control=True)
        assert n * lat <= r.cycles <= n * lat + 2, (card, r.cycles)
        assert r.stalls["wait"] >= (n - 1) * (lat - 1)


def test_independent_ffma_are_issue_bound():
    n = 64
    cfg = one_sm("h100")
    lat = cfg.sm.units["fp32"].latency_cycles
    prog = program("sm_90", [f"FFMA R{10 + i % 32}, R1, R2, RZ" for i in range(n)] + ["EXIT"])  # 2 register reads
    r = run(prog, cfg, control=False)
    assert n <= r.cycles <= n + lat + 1
    assert r.stalls["selected"] == n + 1


def test_hopper_schedulers_interleave_warps_as_measured():
    """Two warps per sub-partition of issue-bound FFMAs finish together on the H100
    (validation/h100/micro/regbank_order_h100.json: within 0.25% of the span); the config's policy
    does that, where greedy-then-oldest finishes one warp of each pair at half the span."""
    n = 64
    prog = program("sm_90", [f"FFMA R{10 + i % 32}, R1, R2, RZ" for i in range(n)] + ["EXIT"])

    def ends(cfg):
        r = simulate(prog, trace(prog, 8, 8), cfg, honour_control_codes=False, window=(0, 10 * n, None))
        last = {}
        for _sm, _sp, w, start, cycles, _reason, _pc in r.timeline:
            last[w] = max(last.get(w, 0), start + cycles)
        return (max(last.values()) - min(last.values())) / r.cycles

    cfg = one_sm("h100")
    assert cfg.sm.scheduler.policy == "lrr"
    assert ends(cfg) < 0.05
    assert ends(apply_overrides(cfg, {"sm.scheduler.policy": "gto"})) > 0.4  # (the test can tell)


def test_three_register_ffma_are_read_port_bound_on_hopper():
    """sm_90 reads 2 registers per cycle (register_file.read_ports, measured: regbank_h100.json): FFMAs
    reading 3 registers issue every 1.5 cycles, the extra cycles charged as dispatch stalls; the same
    FFMAs in a dependent chain still take the FFMA latency each (the reads overlap the wait)."""
    n = 64
    cfg = one_sm("h100")
    lat = cfg.sm.units["fp32"].latency_cycles
    prog = program("sm_90", [f"FFMA R{10 + i % 32}, R1, R2, R3" for i in range(n)] + ["EXIT"])
    r = run(prog, cfg, control=False)
    assert 1.5 * n <= r.cycles <= 1.5 * n + lat + 2
    assert r.stalls["dispatch_stall"] >= n // 2 - 1
    chain = program("sm_90", ["FFMA R0, R1, R2, R0"] * n + ["EXIT"])
    assert n * lat <= run(chain, cfg, control=False).cycles <= n * lat + 2


def test_kepler_dual_issue_halves_an_independent_ffma_lds_mix():
    n = 64
    lines = []
    for i in range(n // 2):
        lines += [f"FFMA R{40 + i % 16}, R1, R2, R3", f"LDS R{60 + i}, [R4]"]  # no write-after-write waits
    prog = program("sm_35", lines + ["EXIT"], registers=128)
    single = run(prog, one_sm("k40", **{"sm.scheduler.dual_issue": "none"}))
    dual = run(prog, one_sm("k40"))
    assert single.warp_instructions == dual.warp_instructions == n + 1
    # issue cycles (the warp's `selected` cycles) halve; the total keeps the last LDS's latency
    assert single.stalls["selected"] == n + 1
    assert dual.stalls["selected"] <= n // 2 + 2  # 32 pairs and EXIT
    assert single.cycles - dual.cycles >= n // 2 - 8


def test_register_bank_conflict_costs_a_cycle_and_reuse_removes_it():
    n = 32
    cfg = one_sm("gtx970")
    base = run(program("sm_52", [f"FFMA R{20 + i % 8}, R4, R5, R6" for i in range(n)] + ["EXIT"]), cfg, control=False)
    conflict = run(program("sm_52", [f"FFMA R{20 + i % 8}, R4, R8, R6" for i in range(n)] + ["EXIT"]), cfg,
                   control=False)  # R4 and R8 are both bank 0 (reg mod 4)
    assert conflict.registers["bank_conflict_cycles"] == n
    assert conflict.cycles - base.cycles == pytest.approx(n, abs=2)
    reused = run(program("sm_52", [f"FFMA R{20 + i % 8}, R4.reuse, R8, R6" for i in range(n)] + ["EXIT"]), cfg,
                 control=False)  # R4 comes from the reuse cache after the first instruction
    assert reused.registers["bank_conflict_cycles"] == 1
    assert reused.cycles - base.cycles == pytest.approx(1, abs=2)


def test_shared_conflict_32_way_and_padding():
    cfg = one_sm("h100")
    prog = program("sm_90", ["LDS R10, [R4]"] * 16 + ["EXIT"], shared_bytes=32 * 33 * 4)
    column = [32 * 4 * lane for lane in range(32)]  # a column of float[32][32]: every lane in bank 0
    padded = [33 * 4 * lane for lane in range(32)]  # float[32][33]: 32 different banks
    conflicted = run(prog, cfg, warps=4, smem_addresses=column)
    clean = run(prog, cfg, warps=4, smem_addresses=padded)
    assert conflicted.shared["wavefronts"] == 4 * 16 * 32 and clean.shared["wavefronts"] == 4 * 16
    assert conflicted.shared["bank_conflicts"] == 4 * 16 * 31 and clean.shared["bank_conflicts"] == 0
    assert conflicted.cycles > 10 * clean.cycles


@pytest.mark.parametrize("card,ratio", [("gtx970", 32), ("k40", 3)])
def test_dfma_throughput_relative_to_ffma(card, ratio):
    cfg = one_sm(card)
    arch = cfg.arch
    n, warps = 64, 32
    ffma = program(arch, [f"FFMA R{20 + 2 * (i % 8)}, R4, R5, R6" for i in range(n)] + ["EXIT"])
    dfma = program(arch, [f"DFMA R{20 + 2 * (i % 8)}, R4, R6, R8" for i in range(n)] + ["EXIT"])
    f = run(ffma, cfg, warps=warps, wpc=1, control=False)
    d = run(dfma, cfg, warps=warps, wpc=1, control=False)
    measured = d.cycles / f.cycles
    assert ratio * 0.8 <= measured <= ratio * 1.25, measured


def test_barrier_holds_warps_until_the_cta_arrives():
    cfg = one_sm("h100")
    lat = cfg.sm.units["fp32"].latency_cycles
    # warp 0 runs a 10-FFMA chain before BAR, warp 1 goes straight to BAR: it must wait for warp 0
    prog = program("sm_90", ["FFMA R0, R1, R2, R0"] * 10 + ["BAR.SYNC.DEFER_BLOCKING 0x0", "FFMA R3, R1, R2, R3",
                                                           "EXIT"])
    streams = [list(range(13)), [10, 11, 12]]
    r = simulate(prog, trace(prog, 2, 2, streams=streams), cfg, honour_control_codes=False)
    assert r.cycles >= 9 * lat + 1 + lat  # warp 0 reaches BAR after 9 dependent FFMAs, then one more FFMA
    assert r.stalls["barrier"] >= 9 * lat - 2  # warp 1 waited at the barrier meanwhile


def test_event_time_adds_the_launch_overhead_and_keeps_the_floor():
    """configs/gpus/h100.yaml (validation/h100/micro/launch_floor_h100.json): a 40 us kernel shows
    40 + 1.6 us between its events, a 2 us kernel the 10.1 us floor; a card without a floor adds only."""
    from gpusim.timing.results import event_time_s

    h100 = load_gpu("h100")
    assert event_time_s(40e-6 * 1980e6, 1980.0, h100) == pytest.approx(41.6e-6)
    assert event_time_s(2e-6 * 1980e6, 1980.0, h100) == pytest.approx(10.1e-6)
    # launches queued behind a blocking kernel (launch_floor2_h100.json): Nsight's duration + 1.44-1.73 us
    assert event_time_s(2e-6 * 1980e6, 1980.0, h100, queued=True) == pytest.approx(3.6e-6)
    gtx970 = load_gpu("gtx970")
    assert gtx970.event_floor_us is None
    assert event_time_s(1000.0, gtx970.clock_mhz, gtx970) == pytest.approx(
        1000.0 / (gtx970.clock_mhz * 1e6) + gtx970.launch_overhead_us * 1e-6)


def test_sticky_set_starves_a_third_warp_and_keeps_two_together():
    """two_level_sticky with 2 places (a what-if; lrr is the H100's policy): beside two always-ready FFMA
    warps of a sub-partition a third warp issues nothing until they end, as the H100 shows
    (validation/h100/micro/dispatch5_h100.json), while the two finish together (regbank_order_h100.json);
    round robin lets the third share."""
    n = 64
    ffma = program("sm_90", [f"FFMA R{10 + i % 32}, R1, R2, RZ" for i in range(n)] + ["EXIT"])

    def ends(policy, warps):
        cfg = apply_overrides(one_sm("h100"), {"sm.scheduler.policy": policy,
                                               "sm.scheduler.two_level_active_warps": 2})
        r = simulate(ffma, trace(ffma, warps, warps), cfg, honour_control_codes=False, window=(0, 10 * n, None))
        last = {}
        for _sm, sp, w, start, cycles, _reason, _pc in r.timeline:
            if sp == 0:
                last[w] = max(last.get(w, 0), start + cycles)
        return sorted(last.values())

    two = ends("two_level_sticky", 8)  # two warps per sub-partition: together
    assert two[1] - two[0] < 0.05 * two[1]
    three = ends("two_level_sticky", 12)  # three: two together, then the third alone
    assert three[1] - three[0] < 0.05 * three[1] and three[2] > 1.4 * three[1]
    shared = ends("lrr", 12)
    assert shared[2] - shared[0] < 0.05 * shared[2]


def test_sticky_set_is_the_same_in_both_engines():
    """The compiled engine's two_level_sticky (compiled/sm.py `sticky_set`) replays the object model's."""
    from gpusim.timing.gpu import GPU
    from gpusim.timing.driver import run_workload

    over = {"sm.scheduler.policy": "two_level_sticky", "sm.scheduler.two_level_active_warps": 2}
    a = run_workload("sgemm_smem", "h100", 64, overrides=over)
    GPU.engine = "objects"
    try:
        b = run_workload("sgemm_smem", "h100", 64, overrides=over)
    finally:
        GPU.engine = "compiled"
    assert a.cycles == b.cycles and a.stalls == b.stalls
    assert a.cycles != run_workload("sgemm_smem", "h100", 64).cycles  # (the policy acts here)


def test_the_chip_retires_one_cta_per_cta_retire_cycles():
    """cta_retire_cycles (H100: 1.19, validation/h100/micro/cta_rate_h100.json): the chip retires CTAs
    one at a time, whichever SM ran them, and a CTA's slot is free only once it is retired.
    copy_float4 n=256 has 1,024 short CTAs (one float4 per thread); retiring one per 100 cycles, the
    kernel takes 1,024 x 100 cycles (its overhead aside), in detailed and in sampled mode, where
    without it it takes a small part of that."""
    from gpusim.timing.driver import run_workload

    for mode in ("detailed", "sampled"):
        runs = {c: run_workload("copy_float4", "h100", 256, mode=mode, overrides={"cta_retire_cycles": c})
                for c in (0.0, 100.0)}
        assert runs[0.0].ctas == 1024
        assert runs[0.0].cycles < 0.3 * 1024 * 100
        assert runs[100.0].cycles == pytest.approx(1024 * 100 + 4400, rel=0.05)


def test_a_warp_drains_its_stores_after_exit():
    """Nsight's drain: a warp after EXIT waits for its memory instructions to complete before its
    resources are freed. copy_float4 n=32 ends every warp with an STG.128 and EXIT; with L2 taking
    written data at 1/100 of the H100's rate the stores leave their LSU queues late, so the warps drain
    for much of the kernel (charged at the EXIT), and the kernel lasts until the stores have left. At
    the H100's rate they drain for a small part of it."""
    from gpusim.timing.driver import run_workload

    slow = run_workload("copy_float4", "h100", 32, overrides={"memory.l2.write_bandwidth_bytes_per_cycle": 30.69})
    fast = run_workload("copy_float4", "h100", 32)
    for r, lo, hi in ((slow, 0.3, 1.0), (fast, 0.0, 0.25)):
        share = r.stalls["drain"] / sum(r.stalls.values())
        assert lo < share < hi
        exits = [p for p in r.stalls_per_pc if p.text.lstrip("@!P0123456789 ").startswith("EXIT")]
        assert sum(p.stalls.get("drain", 0) for p in exits) == pytest.approx(r.stalls["drain"])
    overhead = 4400  # (h100 kernel_overhead_cycles)
    assert slow.cycles - overhead > 2 * (fast.cycles - overhead)


def test_a_cta_that_takes_a_freed_slot_starts_cta_launch_cycles_later():
    """sm.cta_launch_cycles (H100: 325, validation/h100/micro/cta_turnaround_h100.json): on one SM holding
    one CTA at a time, dgemm_unroll n=256's 4 CTAs run one after another, so the 3 refills add about
    3 x 325 cycles; the first CTA's launch is in kernel_overhead_cycles, and no warp is charged a stall
    before it exists."""
    from gpusim.timing.driver import run_workload

    # (DRAM reads' latency spread off: it draws per block and cycle, so runs that start CTAs at other
    # cycles draw other latencies, `memory.dram.read_spread_cycles`)
    runs = {c: run_workload("dgemm_unroll", "h100", 256, overrides={"sm_count": 1, "sm.cta_launch_cycles": c,
                                                                     "memory.dram.read_spread_cycles": 0.0})
            for c in (0, 325)}
    assert runs[0].occupancy["ctas_per_sm"] == 1 and runs[0].ctas == 4
    assert runs[325].cycles - runs[0].cycles == pytest.approx(3 * 325, rel=0.02)
    assert sum(runs[325].stalls.values()) == pytest.approx(sum(runs[0].stalls.values()), rel=1e-3)


def test_scoreboard_with_more_pending_releases_than_kept(tmp_path, monkeypatch):
    """A prologue of 40 loads on one read barrier (bench/micro/regbank.cu fimad_ffma, tests/data/sb_overflow.yaml)
    leaves more releases pending on that scoreboard than the compiled engine keeps (32): it used to stop with
    'a scoreboard has too many pending releases'. It now drops the earliest release, which no wait mask or
    DEPBAR below the capacity looks at: both engines give the same cycles and stalls."""
    from pathlib import Path

    from gpusim.timing.driver import run_workload
    from gpusim.timing.gpu import GPU
    from gpusim.toolchain.workspace import CACHE_ENV

    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    spec = str(Path(__file__).parent / "data" / "sb_overflow.yaml")
    got = {}
    for engine in ("compiled", "objects"):
        monkeypatch.setattr(GPU, "engine", engine)
        r = run_workload(spec, "h100", 4, mode="detailed")
        assert r.check is not None
        got[engine] = (r.cycles, r.stalls)
    assert got["compiled"] == got["objects"]
