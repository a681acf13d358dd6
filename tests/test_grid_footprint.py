"""The grid's DRAM traffic from CTA footprints (gpusim/timing/mem/grid.py, gpusim/trace/footprint.py)."""

import numpy as np
import pytest

from gpusim.timing.mem.grid import LOAD, STORE, GridFootprint, waves


def _footprints(grid, ctas, a_rows=4, b_cols=4, k=64):
    """A GEMM-like grid: CTA (x, y) loads rows y*a_rows.. of A (k sectors each), columns x*b_cols.. of B
    (one sector per row of k rows), and stores its own tile. Keys as cta_footprints gives them:
    (cta, instruction, warp)."""
    out = {}
    for c in ctas:
        x, y = c % grid[0], c // grid[0]
        a = np.arange(y * a_rows * k, (y + 1) * a_rows * k, dtype=np.uint64)
        b = (1 << 20) + np.array([r * 1024 + x * b_cols + j for r in range(k) for j in range(b_cols)], dtype=np.uint64)
        out[(c, 0, 0)], out[(c, 1, 0)] = a, np.sort(b)
        out[(c, 2, 0)] = (1 << 30) + np.arange(c * 8, c * 8 + 8, dtype=np.uint64)
    return out


KINDS = np.array([LOAD, LOAD, STORE], np.int8)


def test_fit_moves_each_set_with_the_block_index():
    grid = (4, 4, 1)
    fp = GridFootprint.fit(_footprints(grid, [0, 1, 4, 9]), KINDS, grid)
    assert fp is not None
    whole = _footprints(grid, range(16))
    for c in (5, 15):  # CTAs never emulated
        loads, _ = fp.sectors(np.array([c]), LOAD)
        expect = np.union1d(whole[(c, 0, 0)], whole[(c, 1, 0)]).astype(np.int64)
        assert np.array_equal(loads, expect)
        stores, _ = fp.sectors(np.array([c]), STORE)
        assert np.array_equal(stores, whole[(c, 2, 0)].astype(np.int64))


def test_fit_refuses_sets_that_do_not_move_rigidly():
    grid = (4, 4, 1)
    fps = _footprints(grid, [0, 1, 4, 9])
    fps[(9, 0, 0)] = fps[(9, 0, 0)][:-1]  # one CTA touches one sector less
    assert GridFootprint.fit(fps, KINDS, grid) is None
    fps = _footprints(grid, [0, 1, 2])  # all in the first row: the y stride is unknown
    assert GridFootprint.fit(fps, KINDS, grid) is None


@pytest.mark.parametrize("capacity,expect_reads", [(10_000, "once"), (300, "per wave")])
def test_waves_read_again_what_the_l2_lost(capacity, expect_reads):
    grid = (4, 4, 1)
    fp = GridFootprint.fit(_footprints(grid, [0, 1, 4]), KINDS, grid)
    whole = _footprints(grid, range(16))
    compulsory = len(np.unique(np.concatenate([whole[(c, p, 0)] for c in range(16) for p in (0, 1)])))
    reads = waves(fp, 16, 4, capacity, None, None).reads
    if expect_reads == "once":
        assert reads == compulsory
    else:  # each wave of 4 CTAs (one row of A, all of B) reads its whole footprint again
        per_wave = [len(np.unique(np.concatenate([whole[(c, p, 0)] for c in range(w, w + 4) for p in (0, 1)])))
                    for w in range(0, 16, 4)]
        assert reads == sum(per_wave) > compulsory


def test_write_backs_follow_the_dirty_limit_and_leave_the_last_outputs():
    grid = (4, 4, 1)
    fp = GridFootprint.fit(_footprints(grid, [0, 1, 4]), KINDS, grid)
    # 16 CTAs store 8 sectors each, 4 CTAs (32 sectors) a wave: with room for 40 dirty sectors, an output
    # with more than 40 stored after it is written back: waves 0 and 1 entirely (96, 64 stored after
    # them), the first 24 of wave 2 (each has 32 - i of its own wave and 32 of wave 3 after it), none of wave 3
    assert waves(fp, 16, 4, 10_000, 40, None)[:2] == (waves(fp, 16, 4, 10_000, None, None)[0], 32 + 32 + 24)
    assert waves(fp, 16, 4, 10_000, None, None)[1] == 0  # nothing pushes them out: they stay in L2


def test_cta_footprints_of_an_emulated_kernel_fit_and_give_detailed_modes_reads():
    """dgemm_unroll gtx970 256: CTAs emulated for their addresses; the waves' DRAM reads equal
    detailed mode's (its inputs, 1 MB, fit the 1.75 MB L2: the compulsory traffic)."""
    from gpusim.config import load_gpu
    from gpusim.timing.driver import grid_footprint
    from gpusim.emu.run import emulate
    from gpusim.workloads import find_workload

    wl, cfg = find_workload("dgemm_unroll"), load_gpu("gtx970")
    emu, _ = emulate(wl, cfg.arch, 256, ctas=[0])
    fp = grid_footprint(emu, wl, cfg, 256)
    assert fp is not None
    reads, writes = waves(fp, 4, 13, 1_835_008 // 32, None, None)[:2]
    assert reads * 32 == 2 * 256 * 256 * 8 and writes == 0


def test_extra_ctas_are_the_steps_the_emulated_ones_do_not_span():
    from gpusim.timing.mem.grid import extra_ctas

    assert extra_ctas([0, 1, 13, 14], (8, 8, 1)) == []  # (1, 0) and (5, 1): both strides
    assert extra_ctas([0, 132], (64, 64, 1)) == [1]  # (4, 2) alone: one step along x tells both
    assert extra_ctas(list(range(0, 16 * 132, 132)), (64, 64, 1)) == [1]  # all on one line
    assert extra_ctas([5], (4, 4, 1)) == [0, 1]
    assert extra_ctas([0, 3], (1024, 1, 1)) == []


def test_large_grids_are_replayed_on_a_sample_of_sectors(monkeypatch):
    import gpusim.timing.mem.grid as grid_mod

    grid = (8, 8, 1)
    fp = GridFootprint.fit(_footprints(grid, [0, 1, 8], a_rows=8, b_cols=8, k=512), KINDS, grid)
    full = waves(fp, 64, 8, 6000, 200, None)
    monkeypatch.setattr(grid_mod, "MAX_ENTRIES", fp.entries(64, 8) // 10)  # p = 11
    sampled = waves(fp, 64, 8, 6000, 200, None)
    assert sampled[:3] != full[:3]
    assert sampled[0] == pytest.approx(full[0], rel=0.02) and sampled[1] == pytest.approx(full[1], rel=0.1)


def test_a_cta_emulated_beside_the_sampled_ones_is_footprint_only():
    """sgemm_maxas_128 h100 512: CTA 4 (one step along y), which the strides need, emulated in the
    sampled CTAs' run: the footprints have it, the trace and the output check do not, and the
    result is the one with CTA 4 emulated after, on its own."""
    from gpusim.config import load_gpu
    from gpusim.emu.run import emulate, verify
    from gpusim.timing import driver as D
    from gpusim.timing.mem.grid import access_kinds
    from gpusim.timing.sampling import KEEP_HEAD, KEEP_TAIL
    from gpusim.trace import DynamicTrace
    from gpusim.trace.footprint import cta_footprints, global_lanes
    from gpusim.workloads import find_workload

    wl, cfg, n = find_workload("sgemm_maxas_128"), load_gpu("h100"), 512
    ctas = D.sampled_ctas(wl, n, cfg)
    beside = D.beside_ctas(wl, n, cfg, ctas)
    assert ctas == [0, 1, 2, 3] and beside == [4]
    emu, inputs = emulate(wl, cfg.arch, n, ctas=ctas + beside)
    alone, alone_inputs = emulate(wl, cfg.arch, n, ctas=ctas)
    assert {c for c, _, _ in cta_footprints(global_lanes(emu, access_kinds(emu.program, cfg)))} == {0, 1, 2, 3, 4}
    trace = DynamicTrace.from_emulator(emu, keep_loop=(KEEP_HEAD, KEEP_TAIL), ctas=ctas)
    assert sorted(set(trace.warp_ids // emu.launch.warps_per_cta)) == ctas
    assert verify(wl, emu, inputs, n, ctas) == verify(wl, alone, alone_inputs, n)
    assert D.grid_footprint(emu, wl, cfg, n) is not None
    assert (D.time_emulated(emu, wl, cfg, n, "sampled", ctas=ctas).model_dump()
            == D.time_emulated(alone, wl, cfg, n, "sampled").model_dump())


def _isolated(step):
    """A grid whose CTA (x, y) loads rows of A (whole blocks) and one sector per row of B at column
    step * x, the other half of its 64-byte pair loaded by nobody."""
    out = {}
    for c in range(16):
        x, y = c % 4, c // 4
        out[(c, 0, 0)] = np.arange(y * 256, (y + 1) * 256, dtype=np.uint64)
        out[(c, 1, 0)] = (1 << 20) + np.array([r * 1024 + step * x for r in range(64)], dtype=np.uint64)
    return out


def test_loads_read_whole_fetch_blocks_where_their_sets_move_by_blocks():
    """memory.l2.dram_fetch_bytes: an L2 miss brings its aligned block (H100: 64 bytes, two sectors),
    so B's isolated sectors cost two each; a set moving by a step that is not a whole block keeps the
    sector count."""
    grid, kinds = (4, 4, 1), np.array([LOAD, LOAD], np.int8)
    fp = GridFootprint.fit(_isolated(2), kinds, grid)
    assert waves(fp, 16, 4, 10_000, None, None)[0] == 4 * 256 + 4 * 64
    assert waves(fp, 16, 4, 10_000, None, None, fetch=2)[0] == 4 * 256 + 2 * 4 * 64
    fp = GridFootprint.fit(_isolated(3), kinds, grid)
    assert waves(fp, 16, 4, 10_000, None, None, fetch=2)[0] == waves(fp, 16, 4, 10_000, None, None)[0]


def test_a_missed_block_whose_requests_ask_part_of_it_counts_the_rest_as_fills():
    """l2_block_fills in the grid replay: B's requests ask one sector of each 64-byte pair (its
    neighbour comes alongside: one fill per missed block), A's whole pairs (none). Without the asks
    nothing is counted; the reads do not change."""
    grid, kinds = (4, 4, 1), np.array([LOAD, LOAD], np.int8)
    fps = _isolated(2)
    asks = {(0, p, 0): (np.unique(fps[(0, p, 0)] // 2), np.full(len(np.unique(fps[(0, p, 0)] // 2)), 2 - p))
            for p in (0, 1)}
    fp = GridFootprint.fit(fps, kinds, grid, asks, fetch=2)
    plain = GridFootprint.fit(fps, kinds, grid)
    assert waves(fp, 16, 4, 10_000, None, None, fetch=2)[:3] == (4 * 256 + 2 * 4 * 64, 0, 4 * 64)
    assert waves(plain, 16, 4, 10_000, None, None, fetch=2)[:3] == (4 * 256 + 2 * 4 * 64, 0, 0)
    # a wave that finds B's blocks in L2 fills nothing: with room for one wave, each wave reads B again
    assert waves(fp, 16, 4, 300, None, None, fetch=2)[2] == 4 * 4 * 64


def test_block_asks_are_the_most_one_request_asks_of_each_block():
    """gpusim.trace.footprint.block_asks on an emulated kernel: every block a group touches is there,
    its asked count between 1 and the block's sectors; dgemm_unroll's loads ask whole pairs in some
    groups and single sectors in others."""
    from gpusim.config import load_gpu
    from gpusim.emu.run import emulate
    from gpusim.timing.mem.grid import access_kinds
    from gpusim.trace.footprint import block_asks, cta_footprints, global_lanes
    from gpusim.workloads import find_workload

    wl, cfg = find_workload("dgemm_unroll"), load_gpu("h100")
    emu, _ = emulate(wl, cfg.arch, 256, ctas=[0])
    kinds = access_kinds(emu.program, cfg)
    lanes = global_lanes(emu, kinds)
    asks, fps = block_asks(lanes, 2), cta_footprints(lanes)
    assert set(asks) == set(fps)
    for key, (blocks, asked) in asks.items():
        assert np.array_equal(blocks, np.unique(fps[key] // np.uint64(2)))
        assert ((asked >= 1) & (asked <= 2)).all()
    loads = [a for key, (_, a) in asks.items() if kinds[key[1]] == LOAD]
    assert any((a == 1).all() for a in loads) and any((a == 2).all() for a in loads)


def test_a_launch_after_itself_finds_only_what_the_last_waves_left():
    """`memory.l2.initial: warm` in sampled mode: the grid replayed after itself. A grid whose launch fits
    in L2 finds all its inputs (no DRAM reads); one whose waves each touch more than the L2 holds finds
    none of what the previous launch left (it reads as much as from a cold L2); in between, the first
    waves find what the previous launch's last waves left."""
    grid = (4, 4, 1)
    fp = GridFootprint.fit(_footprints(grid, [0, 1, 4]), KINDS, grid)
    fits = waves(fp, 16, 4, 10_000, None, None, after_itself=True)
    assert fits.reads == 0 and fits.lookups == waves(fp, 16, 4, 10_000, None, None).lookups > 0
    cold = waves(fp, 16, 4, 300, None, None)
    assert waves(fp, 16, 4, 300, None, None, after_itself=True).reads == cold.reads == cold.lookups
    # a wave touches 1,280 sectors (a row of A, all of B) and 32 stored; 1,500 hold the last wave's, so
    # B is found again, each row of A (read by one wave) is not
    some = waves(fp, 16, 4, 1_500, None, None, after_itself=True)
    assert some.reads == 4 * 256 < waves(fp, 16, 4, 1_500, None, None).reads == 4 * 256 + 1024
