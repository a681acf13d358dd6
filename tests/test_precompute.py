"""Timing-independent per-record costs (gpusim.timing.precompute), on hand-worked cases."""

import numpy as np
import pytest

from gpusim.isa.program import Control, Instruction, Operand, Program
from gpusim.timing.precompute import (bank_conflict_cycles, global_sectors, operand_table, precompute,
                                      register_bank_conflicts, register_read_cycles, rules_for_arch,
                                      shared_wavefronts)
from gpusim.trace.format import RECORD_DTYPE, DynamicTrace

ALL = 0xFFFFFFFF
LANES = np.arange(32, dtype=np.uint64)


def smem(addresses, nbytes=4, mask=ALL, **kw):
    """Wavefronts and conflicts of one warp access (addresses: 32 byte offsets)."""
    w, ideal = shared_wavefronts(np.asarray(addresses, dtype=np.uint64)[None], np.array([nbytes]),
                                 np.array([mask], dtype=np.uint32), return_ideal=True, **kw)
    return int(w[0]), int(w[0] - ideal[0])


# ---- shared memory ------------------------------------------------------------------------------
def test_consecutive_words_one_wavefront():
    assert smem(4 * LANES) == (1, 0)


def test_column_of_32x32_float_tile_is_32_way():
    assert smem(4 * 32 * LANES) == (32, 31)


def test_padded_stride_33_is_conflict_free():
    assert smem(4 * 33 * LANES) == (1, 0)


def test_broadcast_is_free():
    assert smem(np.full(32, 64)) == (1, 0)
    # two distinct words per bank only where the words differ: lanes 0-15 word 0, lanes 16-31 word 32
    assert smem(np.where(LANES < 16, 0, 128)) == (2, 1)


def test_wide_accesses_are_split_into_phases():
    assert smem(8 * LANES, 8) == (2, 0)  # two half-warp phases of 128 bytes
    assert smem(16 * LANES, 16) == (4, 0)  # four quarter-warp phases
    # 64-bit column access (stride 32 words): each half-warp hits 2 banks 16 times
    assert smem(4 * 32 * LANES, 8) == (32, 30)


def test_inactive_lanes_do_not_count():
    assert smem(4 * 32 * LANES, mask=0b11) == (2, 1)
    assert smem(4 * 32 * LANES, mask=0) == (0, 0)  # all lanes guarded off: no access
    assert smem(16 * LANES, 16, mask=0x000000FF) == (1, 0)  # only the first quarter-warp phase runs


def test_uniform_pair_packing_on_hopper_loads():
    """[FORUM77228]: loads whose lane pairs (t, t^1) or (t, t^2) share addresses return 2 lanes per slot."""
    bcast = np.zeros(32)
    assert smem(bcast, 16) == (4, 0) and smem(bcast, 16, pack_uniform_pairs=True) == (2, 0)
    assert smem(bcast, 8) == (2, 0) and smem(bcast, 8, pack_uniform_pairs=True) == (1, 0)
    pairs = 16 * (LANES // 2)  # T2k == T2k+1: 16 quads
    assert smem(pairs, 16, pack_uniform_pairs=True) == (2, 0)
    mirrored = 16 * (LANES % 16)  # lanes 16-31 repeat lanes 0-15: no pair shares an address
    assert smem(mirrored, 16, pack_uniform_pairs=True) == (4, 0)
    assert smem(8 * (LANES % 16), 8, pack_uniform_pairs=True) == (2, 0)
    assert smem(np.where(LANES < 16, 0, 8), 8, pack_uniform_pairs=True) == (1, 0)


def test_kepler_eight_byte_banks():
    # 4-byte mode: words i and i+32 of one 64-word segment share a bank row, so stride 2 is conflict-free
    assert smem(8 * LANES) == (2, 1)
    assert smem(8 * LANES, bank_row_words=2) == (1, 0)
    # 8-byte mode: a 64-bit consecutive warp access is one pass
    assert smem(8 * LANES, 8, bank_width_bytes=8) == (1, 0)


# ---- global memory ------------------------------------------------------------------------------
def gmem(addresses, nbytes=4, mask=ALL):
    s, l_ = global_sectors(np.asarray(addresses, dtype=np.uint64)[None], np.array([nbytes]),
                           np.array([mask], dtype=np.uint32))
    return int(s[0]), int(l_[0])


def test_global_sectors_and_lines():
    base = 0x7F0000000000
    assert gmem(base + 4 * LANES) == (4, 1)
    assert gmem(base + 128 * LANES) == (32, 32)
    assert gmem(base + 16 * LANES, 16) == (16, 4)
    assert gmem(base + 128 * LANES, mask=0xF) == (4, 4)
    assert gmem(base + 4 * LANES, mask=0) == (0, 0)
    with pytest.raises(AssertionError):
        gmem(base + 2 + 4 * LANES)


# ---- register banks and the reuse cache ---------------------------------------------------------
def reg(n, reuse=False, width=32):
    return Operand("reg", f"R{n}", reg=n, width=width, reuse=reuse)


def ins(i, opcode, dsts, srcs, unit="fp32"):
    return Instruction(index=i, address=16 * i, text=opcode, opcode=opcode, modifiers=(), dsts=tuple(dsts),
                       srcs=tuple(srcs), control=Control(), unit=unit)


def program(instructions):
    return Program(arch="sm_52", kernel="k", instructions=instructions, registers=32, shared_bytes=0,
                   param_base=0x140, param_bytes=0)


def trace(streams, mem=None):
    """streams: {warp: [pc, ...]}; mem: {(warp, position): (addresses, nbytes)}."""
    rows, addrs, nbytes = [], [], []
    for w in sorted(streams):
        for seq, pc in enumerate(streams[w]):
            m = -1
            if mem and (w, seq) in mem:
                m = len(addrs)
                addrs.append(mem[(w, seq)][0])
                nbytes.append(mem[(w, seq)][1])
            rows.append((w, seq, pc, ALL, ALL, m))
    rec = np.array(rows, dtype=RECORD_DTYPE)
    a = np.array(addrs, dtype=np.uint64).reshape(-1, 32)
    return DynamicTrace({"source": "test"}, rec, a, np.array(nbytes, dtype=np.uint8))


def test_bank_rule():
    assert bank_conflict_cycles([4, 8]) == 1  # two registers in bank 0
    assert bank_conflict_cycles([4, 4]) == 0  # one register read once
    assert bank_conflict_cycles([0, 4, 8]) == 2
    assert bank_conflict_cycles([2, 3, 4, 5, 6, 7]) == 1  # DFMA R0, R2, R4, R6 on 4 x 32-bit banks
    assert bank_conflict_cycles([2, 4, 6], banks=2, bank_width_bits=64) == 1  # Volta: all three in one bank
    assert bank_conflict_cycles([2, 4, 7], banks=2, bank_width_bits=64) == 0
    assert bank_conflict_cycles([]) == 0


def test_two_way_register_conflict_and_reuse():
    ffma = ins(1, "FFMA", [reg(0)], [reg(4), reg(8), reg(1)])  # R4, R8: bank 0
    prog = program([ins(0, "FFMA", [reg(2)], [reg(4, reuse=True), reg(9), reg(3)]), ffma])
    cycles, hits, _ = register_bank_conflicts(prog, trace({0: [1]}), return_hits=True)
    assert cycles.tolist() == [1] and hits.tolist() == [0]
    cycles, hits, no_reuse = register_bank_conflicts(prog, trace({0: [0, 1]}), return_hits=True)
    assert cycles.tolist() == [0, 0] and hits.tolist() == [0, 1] and no_reuse.tolist() == [0, 1]
    assert register_bank_conflicts(prog, trace({0: [0, 1]}), reuse_cache=False).tolist() == [0, 1]
    # the cache belongs to the warp: warp 1's first instruction does not see warp 0's flag
    assert register_bank_conflicts(prog, trace({0: [0], 1: [1]})).tolist() == [0, 1]


def test_read_ports_fractions_carry_along_each_warp():
    # 3-register FFMAs owe half a cycle each: a warp pays 0, 1, 0, 1; a 3-pair DFMA owes 2 cycles
    assert register_read_cycles(np.array([3, 3, 3, 3, 6, 1, 2]), np.array([0]), 2).tolist() == [0, 1, 0, 1, 2, 0, 0]
    # each warp owes on its own (warp 1 starts at record 3), and a carry continues a stream in pieces
    carry = np.array([-1, -1])
    assert register_read_cycles(np.array([3, 3, 3, 3, 3]), np.array([0, 3]), 2, carry).tolist() == [0, 1, 0, 0, 1]
    assert carry.tolist() == [1, 0]
    assert register_read_cycles(np.array([3, 3]), np.array([0, 1]), 2, carry).tolist() == [1, 0]
    assert carry.tolist() == [0, 1]


def test_read_port_rule_counts_registers_past_the_reuse_cache():
    d = lambda n, reuse=False: reg(n, reuse, width=64)  # noqa: E731
    prog = program([ins(0, "DFMA", [d(20)], [d(4, True), d(8), d(20)], unit="fp64"),  # 6 registers: 2 cycles more
                    ins(1, "DFMA", [d(22)], [d(4), d(10), d(22)], unit="fp64"),  # R4:5 from the cache: 4, 1 more
                    ins(2, "FFMA", [reg(1)], [reg(2), reg(4), reg(7)])])  # 3 registers (any banks): half a cycle
    cycles, hits, no_reuse = register_bank_conflicts(prog, trace({0: [0, 1, 2, 2]}), return_hits=True, read_ports=2)
    # (a DFMA holds its 16-lane pipe 2 cycles anyway: 4 registers cost nothing beyond it, 6 one cycle)
    assert cycles.tolist() == [2, 1, 0, 1] and hits.tolist() == [0, 1, 0, 0] and no_reuse.tolist() == [2, 2, 0, 1]
    # the bank rule (2 x 64-bit banks, Volta's) charges the three-pair DFMA one cycle and the FFMA none
    assert register_bank_conflicts(prog, trace({0: [0, 2]}), banks=2, bank_width_bits=64).tolist() == [1, 0]


def test_read_port_rule_reproduces_the_h100_fma_loops():
    """The sm_90 rule against its measurement (validation/h100/micro/regbank_h100.json): each timed
    FMA loop's SASS (registers, .reuse bits from the control word) through `register_read_cycles`,
    cycles per FMA against the measured rate at 2 warps per sub-partition. read_ports = 2 is within
    4.5 % on average (the bank rule it replaced: 2 x 64-bit banks, off by more than 20 %)."""
    import json
    import re
    from pathlib import Path

    data = json.loads((Path(__file__).parents[1] / "validation/h100/micro/regbank_h100.json").read_text())
    errors = {"ports": [], "banks": []}
    for name, loop in data["loops"].items():
        reads, banks, base, prev = [], [], [], None
        for x in loop["instructions"]:
            op, *args = re.split(r"[ ,]+", x["text"].strip())
            if op not in ("FFMA", "DFMA"):
                continue
            reuse = (int(x["hi"], 16) >> 41 >> 17) & 0xF
            srcs = [int(a[1:].split(".")[0]) if re.match(r"R\d", a) else None for a in args[1:4]]
            regs = set()
            for s, r in enumerate(srcs):
                if r is not None and not (prev and prev[0][s] == r and prev[1] >> s & 1):
                    regs |= {r, r + 1} if op == "DFMA" else {r}
            reads.append(len(regs))
            banks.append(bank_conflict_cycles(sorted(regs), 2, 64))
            base.append(2 if op == "DFMA" else 1)
            prev = (srcs, reuse)
        extra = register_read_cycles(np.array(reads), np.array([0]), 2)
        measured = 4 / data["rates"][name]["8"]["fma_per_sm_cycle"]  # cycles per FMA per sub-partition
        loop_overhead = 3  # IADD3 / ISETP / BRA per 64 FMAs
        for key, add in (("ports", extra), ("banks", np.array(banks))):
            cycles = (sum(max(b, 1 + int(e)) for b, e in zip(base, add)) + loop_overhead) / len(base)
            errors[key].append(abs(cycles - measured) / measured)
    assert len(errors["ports"]) == 11
    assert np.mean(errors["ports"]) < 0.05 and max(errors["ports"]) < 0.15
    assert np.mean(errors["banks"]) > 0.2


def test_reuse_needs_same_slot_and_register():
    prog = program([ins(0, "FFMA", [reg(2)], [reg(9), reg(4, reuse=True), reg(3)]),  # R4 in slot B
                    ins(1, "FFMA", [reg(0)], [reg(4), reg(8), reg(1)]),  # R4 in slot A: no hit
                    ins(2, "FFMA", [reg(2)], [reg(5, reuse=True), reg(10), reg(3)]),
                    ins(3, "FFMA", [reg(0)], [reg(4), reg(8), reg(1)])])  # R4 after R5 was cached in A
    assert register_bank_conflicts(prog, trace({0: [0, 1, 2, 3]})).tolist() == [0, 1, 0, 1]


def test_memory_instruction_between_keeps_the_cached_operand():
    lds = ins(1, "LDS", [reg(10)], [Operand("mem", "[R12]", reg=12)], unit="smem")
    prog = program([ins(0, "FFMA", [reg(2)], [reg(4, reuse=True), reg(9), reg(3)]), lds,
                    ins(2, "FFMA", [reg(0)], [reg(4), reg(8), reg(1)]),
                    ins(3, "FADD", [reg(0)], [reg(7), reg(1)]),  # slot A now holds R7
                    ins(4, "FFMA", [reg(0)], [reg(4), reg(8), reg(1)])])
    cycles, hits, _ = register_bank_conflicts(prog, trace({0: [0, 1, 2, 3, 4]}), return_hits=True)
    assert hits.tolist() == [0, 0, 1, 0, 0] and cycles.tolist() == [0, 0, 0, 0, 1]


def test_predicates_constants_and_rz_are_not_register_reads():
    srcs = [reg(4), Operand("const", "c[0x0][0x160]", bank=0, value=0x160), reg(255),
            Operand("pred", "P0", reg=0), Operand("ureg", "UR4", reg=4)]
    prog = program([ins(0, "SEL", [reg(0)], srcs)])
    assert operand_table(prog)[0][0].tolist() == [4, -1, -1, -1, -1]
    assert register_bank_conflicts(prog, trace({0: [0]})).tolist() == [0]


def test_listing_reuse_flags_fill_the_slot_table(data_dir):
    from gpusim.isa.parser import parse_listing

    p = parse_listing(data_dir / "demo_sm_52.sass")
    slot_reg, _, slot_reuse, _ = operand_table(p)
    i = next(i for i in p.instructions if i.text.startswith("XMAD R4, R19.reuse"))
    assert slot_reg[i.index, :3].tolist() == [19, -1, 17] and slot_reuse[i.index, :3].tolist() == [True, False, True]


# ---- all columns --------------------------------------------------------------------------------
def test_precompute_columns_align_with_records():
    gptr = Operand("mem", "[R2.64]", reg=2, width=64)
    prog = program([ins(0, "LDS", [reg(10)], [Operand("mem", "[R12]", reg=12)], unit="smem"),
                    ins(1, "STG", [], [gptr, reg(10)], unit="lsu"),
                    ins(2, "FFMA", [reg(0)], [reg(4), reg(8), reg(1)])])
    tr = trace({0: [0, 1, 2], 1: [2, 0]},
               mem={(0, 0): (4 * 32 * LANES, 4), (0, 1): (0x7F0000000000 + 4 * LANES, 4), (1, 1): (4 * LANES, 4)})
    cols = precompute(prog, tr)
    assert set(cols) >= {"smem_wavefronts", "smem_conflicts", "gsectors", "glines", "reg_conflict_cycles",
                         "reuse_hits"}
    assert all(len(v) == len(tr.records) for v in cols.values())
    assert cols["smem_wavefronts"].tolist() == [32, 0, 0, 0, 1]
    assert cols["smem_conflicts"].tolist() == [31, 0, 0, 0, 0]
    assert cols["gsectors"].tolist() == [0, 4, 0, 0, 0] and cols["glines"].tolist() == [0, 1, 0, 0, 0]
    assert cols["reg_conflict_cycles"].tolist() == [0, 0, 1, 1, 0]  # memory ops: left to the timing loop
    hopper = precompute(prog, tr, **rules_for_arch("sm_90"))
    assert hopper["reg_conflict_cycles"].tolist() == [0, 0, 0, 0, 0]  # two 64-bit banks: R4, R8, R1 -> 2 + 1


def test_shared_wavefronts_work_out_each_pattern_once_with_the_same_result():
    """Accesses that differ by whole bank rows share a result (computed once); random patterns,
    masks, widths and row layouts give exactly what the row-by-row rule gives."""
    from gpusim.timing.precompute import shared_wavefronts

    rng = np.random.default_rng(3)
    for nbytes, row_words in ((4, 1), (8, 1), (16, 1), (8, 2)):
        pats = rng.integers(0, 64, size=(20, 32)).astype(np.uint64) * np.uint64(nbytes)
        rows = pats[rng.integers(0, 20, size=400)] + np.uint64(128 * row_words) * rng.integers(0, 50, size=(400, 1)).astype(np.uint64)
        masks = rng.choice(np.array([0xFFFFFFFF, 0x0000FFFF, 0x80000001, 0], dtype=np.uint32), size=400)
        width = np.full(400, nbytes)
        for pack in (False, True):
            fast = shared_wavefronts(rows, width, masks, bank_row_words=row_words, pack_uniform_pairs=pack, return_ideal=True)
            slow = shared_wavefronts(rows, width, masks, bank_row_words=row_words, pack_uniform_pairs=pack, return_ideal=True,
                                     _dedupe=False)
            assert np.array_equal(fast[0], slow[0]) and np.array_equal(fast[1], slow[1])


@pytest.mark.parametrize("block", [1 << 20, 97])  # one block of warps, or one per warp (or two)
def test_vectorised_register_columns_match_a_loop_over_the_records(data_dir, monkeypatch, block):
    """reuse_hit_slots / register_bank_conflicts (vectorised) against the rule applied record by
    record, on random instruction streams of a real listing (its .reuse flags, memory and uniform
    instructions in between) for several warps."""
    from gpusim.isa.parser import parse_listing
    import gpusim.timing.precompute as precompute_module
    from gpusim.timing.precompute import collector_reads, reuse_hit_slots

    monkeypatch.setattr(precompute_module, "_BLOCK_RECORDS", block)

    for listing, banks, width in (("demo_sm_52.sass", 4, 32), ("demo_sm_90.sass", 2, 64)):
        prog = parse_listing(data_dir / listing)
        slot_reg, slot_width, slot_reuse, regs_read = operand_table(prog)
        alu = collector_reads(prog)
        rng = np.random.default_rng(11)
        n_pc = len(prog.instructions)
        streams = {}
        for w in (0, 1, 3, 4):  # runs of consecutive instructions from random starts (warp 2 absent)
            pcs = []
            while len(pcs) < 300:
                start = int(rng.integers(0, n_pc))
                pcs.extend(range(start, min(n_pc, start + int(rng.integers(1, 40)))))
            streams[w] = pcs
        tr = trace(streams)
        want_hits, want_cost, want_no_reuse = [], [], []
        for w, pcs in streams.items():
            cached = {}  # slot -> (register, width) left by the last reader of the slot
            for p in pcs:
                hit = 0
                for s in range(slot_reg.shape[1]):
                    if alu[p] and slot_reg[p, s] >= 0:
                        if cached.get(s) == (slot_reg[p, s], slot_width[p, s]):
                            hit |= 1 << s
                        cached[s] = (slot_reg[p, s], slot_width[p, s]) if slot_reuse[p, s] else None
                want_hits.append(hit)
                regs = [r for s, rr in enumerate(regs_read[p]) for r in rr]
                kept = [r for s, rr in enumerate(regs_read[p]) if not (hit >> s) & 1 for r in rr]
                want_cost.append(bank_conflict_cycles(kept, banks, width) if alu[p] else 0)
                want_no_reuse.append(bank_conflict_cycles(regs, banks, width) if alu[p] else 0)
        assert reuse_hit_slots(prog, tr).tolist() == want_hits
        assert sum(h != 0 for h in want_hits) > 20  # the streams do exercise the reuse cache
        cost, hits, no_reuse = register_bank_conflicts(prog, tr, banks, width, return_hits=True)
        assert cost.tolist() == want_cost and no_reuse.tolist() == want_no_reuse
        assert hits.tolist() == [bin(h).count("1") for h in want_hits]
