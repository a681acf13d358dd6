"""Per dynamic record costs that do not depend on timing, computed once and vectorised over the trace.

Columns (aligned with ``DynamicTrace.records``), see `precompute`:

``smem_wavefronts``, ``smem_conflicts``
    Shared-memory accesses (LDS/STS): passes through the banks, and the passes beyond the ideal.
``gsectors``, ``glines``
    Global accesses (LDG/STG/LD/ST): distinct 32-byte sectors and 128-byte lines touched.
``reg_conflict_cycles``, ``reuse_hits``, ``reg_conflict_cycles_no_reuse``
    Extra operand-read cycles from register-bank conflicts, source operands served by the reuse
    cache, and the extra cycles if the reuse cache had missed (for a timing loop that invalidates it).

Shared-memory rule (`shared_wavefronts`)
----------------------------------------
32 banks of 4 bytes on sm_5x..sm_9x; Kepler has 32 banks of 8 bytes (4-byte mode by default, in
which words i and i+32 of a 64-word-aligned segment share a bank row) [CPG11] ch.5 / App. K,
[GTC12] (microarch.md §5). A warp access is split into *phases* of at most 128 bytes of lane data
(one pass over 32 x 4-byte banks): 32 lanes for 32-bit accesses, half-warps for 64-bit and
quarter-warps for 128-bit accesses. Sources: the CUDA Programming Guide's cc 2.x shared-memory
section (half-warp / quarter-warp rule for 64/128-bit accesses; microarch.md marks it [R]) and
NVIDIA's answer for cc 7.x [FORUM77228]: the return path moves 128 B (one register of 32 lanes) per
cycle, so ``LDS.128`` needs 4 requests; the H100 counters below confirm it for sm_90.
Within a phase, lanes reading the same bank word share one broadcast; the phase needs as many
wavefronts as its most loaded bank has *distinct* words; wavefronts = sum over phases with an
executing lane (an access whose lanes are all guarded off costs 0). The ideal is
ceil(distinct words / banks) per phase (1 per non-empty phase when a phase holds <= 128 B), and
conflicts = wavefronts - ideal, which is what Nsight Compute's
``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}.sum`` counts.
Loads on sm_70+ (``pack_uniform_pairs``): when every executing lane pair (t, t^1), or every pair
(t, t^2), reads one address, the return path packs two lanes per slot and a phase holds twice the
lanes [FORUM77228] ("LDS.128 ... from 4 to 2"; all lanes on one address included).

Hopper evidence (``scripts/compare_bank_conflicts.py`` -> ``validation/h100/shared_bank_conflicts.csv``:
38 (workload, size) runs of 15 kernels, ncu 2025.3.1 on an H100 SXM; shared instruction counts,
global load/store sectors and 26 runs' shared counters equal exactly):

* 32-bit: stride-32 stores (simpleMatMatMul: 32 wavefronts, 31 conflicts each) and coalesced /
  broadcast loads equal; 64-bit half-warp phases: the sB[tx][i] ``LDS.64`` of
  simpleMatMatMul_corrected (words 32t+i, 32t+i+1) costs 32 wavefronts and 30 conflicts (983040 =
  30 x 32768 at n=128, equal).
* Pair packing for loads is needed: a broadcast ``LDS.64`` costs 1 wavefront, a broadcast
  ``LDS.128`` 2 (coalescedMultiply); dgemm_unroll's ``LDS.64`` with lanes 0-15 / 16-31 each on one
  address costs 1 but the one whose lanes 16-31 repeat lanes 0-15 costs 2 (measured mean 1.5);
  dgemm_unroll_128b's ``LDS.128``: 2 and 4 (mean 3); sgemm_maxas ``LDS.128`` with T==T^1 or
  T==T^2 lanes: 2. Without packing the loads of those kernels came out 33 % (dgemm, coalesced)
  to 94 % (sgemm) high; 256-byte phases without packing fit the 128-bit loads but gave 1.0 instead
  of 1.5 for the dgemm ``LDS.64`` and 4 instead of 8 wavefronts for sgemm's ``STS.128 [R36]``.
  Stores are not packed and keep 128-byte phases (that ``STS.128``: 8 wavefronts, 4 conflicts,
  equal).
* Residue: in 12 runs (the dgemm kernels and sgemm_maxas_128: 256-thread CTAs, one per SM) the
  counters show extra wavefronts that they also count as conflicts (measured - predicted wavefronts
  == measured - predicted conflicts, 1911 in all, 0.15 % of those runs' shared wavefronts, up to
  4.5 % of a run's store wavefronts; all but sgemm_maxas_128's stores conflict-free by pattern). It is
  not a property of the addresses: CTAs with identical shared address streams count differently
  (dgemm_unroll_128b n=256: 742 in all, 253 on one SM), and repeated ncu runs of the same launch
  differ (re-run on the H100: dgemm_unroll_128b n=128 stores 100 / 86 / 127 vs 57 committed, n=256
  721 / 700 / 570 vs 742; sgemm_maxas_128 n=256 stores 2286 / 2297 / 2292 vs 2236, predicted 2048;
  coalescedMultiply's 63488 repeat exactly). Others saw the same: accel-sim/accel-sim-framework
  PR #231 (V100: 2484 conflicts on a conflict-free benchmark), NVIDIA/Fuser issue #2263 ("bank
  conflicts due to L1 cache"), NVIDIA forum thread 217015 (88 on conflict-free loads). Our reading
  (not confirmed by NVIDIA text): the hardware counter also counts a shared wavefront delayed by
  other traffic in the unified L1 data banks (global loads and stores of other warps), a timing
  effect the timing model, not this module, has to produce.

Register-bank rule (`register_bank_conflicts`)
----------------------------------------------
bank = register % banks. Maxwell/Pascal: 4 banks of 32 bits [MAXAS-SG]: any two distinct source
registers in one bank cost one extra read cycle unless one comes from the reuse cache. A bank
``bank_width_bits`` wide delivers ``bank_width_bits // 32`` registers per cycle, so Volta..Hopper's
2 banks of 64 bits [JIA18] conflict only when three distinct sources fall into one bank (the rule
[JIA18] reports). A 64-bit operand R[2k:2k+1] reads two registers, in two adjacent banks (4 x 32-bit
banks: 2k%4 and (2k+1)%4), so it is counted register by register. extra cycles = max over banks of
ceil(distinct registers read from the bank / registers per bank per cycle) - 1.

Read-port rule (`register_read_cycles`, config ``register_file.read_ports``), sm_90's: the
sub-partition reads `read_ports` registers (32 lanes x 32 bits) per cycle, whatever their banks; an
instruction whose n distinct source registers miss the reuse cache holds dispatch n / read_ports
cycles, its extra cycles max(0, n / read_ports - 1). Fractions carry along the warp's stream (a
warp of 3-read FFMAs pays 0, 1, 0, 1, ...: 1.5 cycles each). Measured on the H100
(validation/h100/micro/regbank_h100.json, bench/micro/regbank.cu: one CTA per SM, 1-8 warps per
sub-partition, FMA loops whose registers ptxas picked): a DFMA reading three register pairs issues
every 3.0-3.15 cycles, two pairs (one from the reuse cache) 2.3, an FFMA reading three registers
1.6-1.9 cycles; scored against the loops' SASS, read_ports = 2 predicts the 11 loops within 4.4 %
on average at 2 warps per sub-partition (the [JIA18] bank rule: 2.05 cycles per DFMA and 1.05-1.17 per
FFMA, 25 % fast on average). Nsight charges the FFMA's extra cycles to dispatch_stall (3.8 warps per
issue on the 3-read loop) and the DFMA's to math_pipe_throttle (12.9). Register sources
are ``reg`` operands and the base register of ``mem`` operands; predicates, RZ, uniform registers,
constants and immediates are not read from the banked register file. Memory instructions read
their registers late through the MIO queue [MAXAS-CC] and get 0 here unless ``memory_ops`` (their
conflicts with later ALU instructions are timing interactions). Kepler's real register->bank map
is not reg % 4 [MAXAS-SG]; the sm_35 rules use reg % 4 as an approximation. The sm_90 rule (2 x
64-bit banks, ports model) is from [JIA18] for Volta and has not been checked on Hopper here.

Reuse cache [MAXAS-SG]: an operand flagged ``.reuse`` is kept in its slot (A, B, C, ... = its
position among the source operands, reuse bit s) for the next instruction that reads that slot. We
model it per warp stream: slot s of a record hits when the warp's most recent earlier record that
read a vector register in slot s (through the ALU operand path) flagged it ``.reuse`` with the same
register range. Memory, uniform and S2R instructions in between leave the slot alone: ptxas flags
operands whose next reader follows such instructions (about a quarter of the flags in our sm_52 /
sm_90 GEMM listings, e.g. ``DFMA R78, R54.reuse`` / ``LDS.64`` / ``DFMA R80, R54`` in dgemm_unroll).
On hardware the cache belongs to the scheduler, which interleaves warps; whether an instruction of
another warp evicts the entry is a timing question left to the timing loop
(``reg_conflict_cycles_no_reuse`` gives the cost without the hits). A record whose lanes are all
guarded off is issued and reads its operands here.

Global rule (`global_sectors`): sectors and lines are those Nsight Compute counts
(``l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}``; equal on all 38 H100 runs).
"""

from __future__ import annotations

import numpy as np

from gpusim.isa.program import RZ

SHARED_LOAD, SHARED_STORE, GLOBAL_LOAD, GLOBAL_STORE = "shared_ld", "shared_st", "global_ld", "global_st"
_ACCESS_KIND = {"LDS": SHARED_LOAD, "STS": SHARED_STORE, "LDG": GLOBAL_LOAD, "LD": GLOBAL_LOAD,
                "STG": GLOBAL_STORE, "ST": GLOBAL_STORE, "LDGSTS": GLOBAL_LOAD}
_CHUNK = 1 << 15  # rows per vectorised block (bounds temporary memory)
_BLOCK_RECORDS = 1 << 20  # records per block of whole warps (register columns)
# per-record columns hold small numbers: shared wavefronts and conflicts at most the bank words an
# access touches (32 lanes x 4 words with 4-byte banks; more with narrower banks in a what-if), so
# 16 bits; sectors and lines at most 32 (one per lane), register-read cycles and reuse hits at most
# the source registers / slots, so 8 bits
COLUMN_DTYPE = np.int16  # smem_wavefronts, smem_conflicts
SMALL_COLUMN_DTYPE = np.int8  # gsectors, glines, reg_conflict_cycles, reuse_hits, reg_conflict_cycles_no_reuse


def access_kind(ins) -> str | None:
    """shared_ld / shared_st / global_ld / global_st for a memory instruction, None otherwise."""
    return _ACCESS_KIND.get(ins.opcode)


def _lane_bits(exec_mask: np.ndarray) -> np.ndarray:
    """(N, 32) bool: lane t executes."""
    m = np.asarray(exec_mask, dtype=np.uint32)
    return ((m[:, None] >> np.arange(32, dtype=np.uint32)) & 1).astype(bool)


# ---- shared memory -------------------------------------------------------------------------------
def shared_wavefronts(addresses, access_bytes, exec_mask, banks: int = 32, bank_width_bytes: int = 4,
                      phase_bytes: int | None = None, bank_row_words: int = 1, pack_uniform_pairs: bool = False,
                      return_ideal: bool = False, _dedupe: bool = True, rows=None):
    """Wavefronts each shared-memory warp access needs (and, with return_ideal, the ideal count).

    addresses (N, 32) byte offsets, access_bytes (N,) bytes per lane, exec_mask (N,) uint32
    (`rows`: the accesses are rows `rows` of `addresses`, which is not copied out as a whole).
    A phase holds ``phase_bytes // access_bytes`` lanes (at most 32; phase_bytes defaults to
    banks * bank_width_bytes, one pass over all banks); each lane touches
    ``max(1, access_bytes // bank_width_bytes)`` consecutive bank words. A phase costs the maximum
    over banks of the number of distinct words requested from that bank; lanes outside
    ``exec_mask`` do not count, and a phase (an access) with no executing lane costs nothing.
    The ideal is ceil(distinct words of the phase / banks) per phase (1 for a non-empty phase of at
    most one pass of data), so ``wavefronts - ideal`` is the conflict count.

    pack_uniform_pairs (loads on sm_70+): when every executing lane pair (t, t^1), or every pair
    (t, t^2), reads the same address, a phase holds twice as many lanes [FORUM77228].
    """
    addresses = np.asarray(addresses, dtype=np.uint64)
    rows = np.arange(len(addresses)) if rows is None else np.asarray(rows)
    access_bytes = np.asarray(access_bytes).astype(np.int64)
    exec_mask = np.asarray(exec_mask, dtype=np.uint32)
    if _dedupe:
        # The rule is unchanged when all of an access's addresses move by a whole number of bank
        # rows (banks x width x row words): GEMM loops repeat a few patterns thousands of times, so
        # each distinct pattern is worked out once
        found = _patterns(addresses, rows, exec_mask, access_bytes, banks * bank_width_bytes * bank_row_words)
        if found is not None:
            first, inverse, patterns = found
            out = shared_wavefronts(patterns, access_bytes[first], exec_mask[first], banks, bank_width_bytes,
                                    phase_bytes, bank_row_words, pack_uniform_pairs, return_ideal=True,
                                    _dedupe=False)
            wavefronts, ideal = out[0][inverse], out[1][inverse]
            return (wavefronts, ideal) if return_ideal else wavefronts
    addresses = addresses[rows]
    lanes = _lane_bits(exec_mask)
    n = len(addresses)
    phase_bytes = phase_bytes or banks * bank_width_bytes
    lanes_per_phase = np.minimum(32, np.maximum(1, phase_bytes // np.maximum(access_bytes, 1)))
    if pack_uniform_pairs and n:
        lanes_per_phase = np.where(_uniform_pairs(addresses, lanes), np.minimum(32, 2 * lanes_per_phase),
                                   lanes_per_phase)
    wavefronts = np.zeros(n, dtype=np.int64)
    ideal = np.zeros(n, dtype=np.int64)
    groups = np.unique(np.stack([access_bytes, lanes_per_phase], axis=1), axis=0) if n else []
    for nbytes, lpp in groups:
        rows = np.flatnonzero((access_bytes == nbytes) & (lanes_per_phase == lpp))
        for lo in range(0, len(rows), _CHUNK):
            r = rows[lo:lo + _CHUNK]
            wavefronts[r], ideal[r] = _shared_block(addresses[r], lanes[r], int(nbytes), int(lpp), banks,
                                                    bank_width_bytes, bank_row_words)
    return (wavefronts, ideal) if return_ideal else wavefronts


def _patterns(addresses, rows, exec_mask, access_bytes, step: int):
    """The distinct access patterns among rows `rows` of `addresses` (with their exec_mask and
    access_bytes): (first row of each pattern, pattern of each row, the patterns as `_rebased`
    rows), or None when there are few rows or no repeats. Rows are grouped by a 64-bit hash, a
    checked one: equal hashes must be equal rows. Blocks of rows at a time (bounded temporaries)."""
    if len(rows) <= 64:
        return None
    step = np.uint64(step)
    mix = np.random.default_rng(0x5EED).integers(1, 2**63, size=34, dtype=np.uint64) | np.uint64(1)
    h = np.empty(len(rows), dtype=np.uint64)
    for lo in range(0, len(rows), _CHUNK):
        sl = slice(lo, lo + _CHUNK)
        rel = _rebased(addresses, rows[sl], exec_mask[sl], step)
        with np.errstate(over="ignore"):
            h[sl] = np.dot(rel, mix[:32]) + exec_mask[sl].astype(np.uint64) * mix[32] \
                + access_bytes[sl].astype(np.uint64) * mix[33]
    uniq, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    if len(uniq) == len(rows):
        return None
    inverse = inverse.reshape(-1)
    patterns = _rebased(addresses, rows[first], exec_mask[first], step)
    if not ((exec_mask[first][inverse] == exec_mask).all() and (access_bytes[first][inverse] == access_bytes).all()):
        return None
    for lo in range(0, len(rows), _CHUNK):
        sl = slice(lo, lo + _CHUNK)
        if not (patterns[inverse[sl]] == _rebased(addresses, rows[sl], exec_mask[sl], step)).all():
            return None
    return first, inverse, patterns


def _rebased(addresses, rows, exec_mask, step) -> np.ndarray:
    """addresses[rows] less each row's lowest executing address rounded down to `step` bytes (0 in
    lanes that do not execute): the access's pattern, unchanged by moves of whole bank rows."""
    a = addresses[rows]
    partial = np.flatnonzero(exec_mask != np.uint32(0xFFFFFFFF))  # few: most accesses run on all lanes
    base = a.min(axis=1)
    if len(partial):
        lanes = _lane_bits(exec_mask[partial])
        big = np.iinfo(np.uint64).max
        low = np.where(lanes, a[partial], big).min(axis=1)
        base[partial] = np.where(low == big, 0, low)
    a -= (base // step * step)[:, None]
    if len(partial):
        a[partial] = np.where(lanes, a[partial], 0)
    return a


def _uniform_pairs(addr: np.ndarray, lanes: np.ndarray) -> np.ndarray:
    """(N,) bool: all executing pairs (t, t^1) share an address, or all executing pairs (t, t^2) do."""
    t = np.arange(32)
    out = np.zeros(len(addr), dtype=bool)
    for step in (1, 2):
        p = t ^ step
        both = lanes & lanes[:, p]
        out |= (~both | (addr == addr[:, p])).all(axis=1)
    return out


def _shared_block(addr, lanes, nbytes, lanes_per_phase, banks, bank_width, bank_row_words=1):
    n = len(addr)
    phases = 32 // lanes_per_phase
    words_per_lane = max(1, nbytes // bank_width)
    word = addr // np.uint64(bank_width)  # (n, 32) first bank word of each lane
    # (n, 32, k): every bank word each lane touches; then (n * phases, lanes_per_phase * k)
    words = word[:, :, None] + np.arange(words_per_lane, dtype=np.uint64)
    valid = np.broadcast_to(lanes[:, :, None], words.shape)
    slots = lanes_per_phase * words_per_lane
    if bank_row_words > 1:  # words i and i + banks of one aligned (banks * row_words) segment share a row
        row = words // np.uint64(banks * bank_row_words)
        words = row * np.uint64(banks) + words % np.uint64(banks)
    words = words.reshape(n * phases, slots)
    valid = valid.reshape(n * phases, slots)
    sentinel = np.iinfo(np.uint64).max
    w = np.sort(np.where(valid, words, sentinel), axis=1)
    distinct = (w != sentinel) & np.concatenate([np.ones((len(w), 1), bool), w[:, 1:] != w[:, :-1]], axis=1)
    bank = (w % np.uint64(banks)).astype(np.int64)
    flat = (np.arange(len(w), dtype=np.int64)[:, None] * banks + bank)[distinct]
    per_bank = np.bincount(flat, minlength=len(w) * banks).reshape(len(w), banks)
    per_phase = per_bank.max(axis=1).reshape(n, phases)
    n_distinct = per_bank.sum(axis=1).reshape(n, phases)
    ideal = -(-n_distinct // banks)  # ceil(distinct words / banks): the fewest passes the data allows
    return per_phase.sum(axis=1), ideal.sum(axis=1)


# ---- global memory -------------------------------------------------------------------------------
def load_stage_units(lines, exec_mask, access_bytes, lane_bytes_per_cycle: int) -> np.ndarray:
    """Cycles a warp's global load holds the L1 stage: its distinct lines, but at least its lane data
    (executing lanes x access width) over the bytes the L1 returns per cycle. H100: a broadcast LDG.64
    (one sector) passes at 0.48-0.50 per cycle like a coalesced one (two lines), LDG.128 at 0.24-0.25
    (validation/h100/micro/memory9_h100.json `bcast`)."""
    lanes = _lane_bits(np.asarray(exec_mask, dtype=np.uint32)).sum(axis=1)
    data = -(-(lanes * np.asarray(access_bytes, dtype=np.int64)) // lane_bytes_per_cycle)
    return np.maximum(np.asarray(lines), data).astype(np.asarray(lines).dtype)


def load_bank_units(lines, addresses, access_bytes, exec_mask, tag_lines_per_cycle: float, rows=None,
                    banks: int = 32, bank_width_bytes: int = 4) -> np.ndarray:
    """Cycles a warp's global load holds the L1 stages where the data stage is charged by banks: the
    wavefronts its lanes' addresses need in the data array (`shared_wavefronts`' rule: 32 banks of 4
    bytes, 128 bytes a phase, distinct addresses in one bank conflicting), but at least its lines at the
    tag stage's rate. H100 (validation/h100/micro/memory22_h100.json `l1wf`): 32 lines at one offset,
    32 wavefronts and 32.4-33.6 cycles per request; at offsets 4 or 8 bytes apart, 1.7-2.8 wavefronts
    and 9.9-10.2 cycles (32 lines at ~3.2 a cycle); coalesced 1.04 (4 bytes) and 2.04 (8 bytes)."""
    wavefronts = shared_wavefronts(addresses, access_bytes, exec_mask, banks, bank_width_bytes, rows=rows)
    tags = np.ceil(np.asarray(lines, dtype=np.float64) / tag_lines_per_cycle).astype(np.int64)
    return np.maximum(wavefronts, tags).astype(np.asarray(lines).dtype)


def global_sectors(addresses, access_bytes, exec_mask, sector_bytes: int = 32, line_bytes: int = 128, rows=None):
    """(sectors, lines): distinct sectors and cache lines touched by the executing lanes of each access
    (`rows`: the accesses are rows `rows` of `addresses`).

    Every lane's access is naturally aligned (asserted), so it lies inside one sector. Both counts
    (and the alignment) are unchanged when all of an access's addresses move by a whole number of
    lines: each distinct pattern is worked out once.
    """
    addresses = np.asarray(addresses, dtype=np.uint64)
    rows = np.arange(len(addresses)) if rows is None else np.asarray(rows)
    access_bytes = np.asarray(access_bytes).astype(np.uint64)
    exec_mask = np.asarray(exec_mask, dtype=np.uint32)
    step = np.lcm.reduce([sector_bytes, line_bytes, 16])  # 16: the widest naturally aligned lane access
    found = _patterns(addresses, rows, exec_mask, access_bytes, int(step))
    if found is None:
        first, inverse, patterns = np.arange(len(rows)), None, addresses[rows]
    else:
        first, inverse, patterns = found
    lanes = _lane_bits(exec_mask[first])
    misaligned = lanes & ((patterns % access_bytes[first][:, None]) != 0)
    if misaligned.any():
        row = int(first[misaligned.any(axis=1)].min())  # the first misaligned row
        bad = _lane_bits(exec_mask[row:row + 1])[0] & ((addresses[rows[row]] % access_bytes[row]) != 0)
        raise AssertionError(f"misaligned global access in memory row {row}: "
                             f"{access_bytes[row]} bytes at {addresses[rows[row]][bad][:4]}")
    assert (access_bytes <= sector_bytes).all(), "a lane's access is wider than a sector"
    sectors = _distinct_per_row(patterns // np.uint64(sector_bytes), lanes)
    lines = _distinct_per_row(patterns // np.uint64(line_bytes), lanes)
    return (sectors, lines) if inverse is None else (sectors[inverse], lines[inverse])


def _distinct_per_row(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    sentinel = np.iinfo(np.uint64).max
    v = np.sort(np.where(valid, values, sentinel), axis=1)
    first = np.concatenate([np.ones((len(v), 1), bool), v[:, 1:] != v[:, :-1]], axis=1)
    return ((v != sentinel) & first).sum(axis=1).astype(np.int64)


# ---- register file -------------------------------------------------------------------------------
_TABLES: dict = {}  # (table, id(program)) -> (program, table): per-instruction tables of the programs in use


def _per_program(what: str, program, make):
    """`make()`, made once per program (a streamed run computes columns slice by slice); the
    tables are read-only to their users."""
    hit = _TABLES.get((what, id(program)))
    if hit is None or hit[0] is not program:
        if len(_TABLES) > 32:
            _TABLES.clear()
        hit = _TABLES[(what, id(program))] = (program, make())
    return hit[1]


def operand_table(program) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
    """Per static instruction and source slot: (first register, width, .reuse flag, registers read).

    Returns slot_reg (n_pc, S) int32 (-1: the slot reads no vector register), slot_width (n_pc, S),
    slot_reuse (n_pc, S) bool and, per instruction, a tuple per slot of the registers it reads.
    Slot s is the s-th source operand as the listing prints it (reuse bit s, [MAXWELL-NOTES]).
    """
    return _per_program("operands", program, lambda: _operand_table(program))


def _operand_table(program):
    n_slots = max([len(ins.srcs) for ins in program.instructions] + [1])
    n = len(program.instructions)
    slot_reg = np.full((n, n_slots), -1, dtype=np.int32)
    slot_width = np.zeros((n, n_slots), dtype=np.int32)
    slot_reuse = np.zeros((n, n_slots), dtype=bool)
    regs_read = []
    for i, ins in enumerate(program.instructions):
        per_slot = []
        for s, op in enumerate(ins.srcs):
            regs = register_reads(op)
            per_slot.append(regs)
            if regs:
                slot_reg[i, s], slot_width[i, s] = regs[0], op.width
                slot_reuse[i, s] = bool(op.reuse or (ins.control.reuse_bits >> s) & 1)
        regs_read.append(tuple(per_slot))
    return slot_reg, slot_width, slot_reuse, regs_read


def register_reads(op) -> tuple[int, ...]:
    """Vector registers an operand reads from the banked register file (none for RZ, UR, P, c[], imm)."""
    if op.kind == "reg" or (op.kind == "mem" and op.reg is not None):
        return () if op.reg == RZ else op.regs
    return ()


def bank_conflict_cycles(regs, banks: int = 4, bank_width_bits: int = 32) -> int:
    """Extra read cycles for one instruction reading `regs`: max over banks of ceil(distinct / ports) - 1."""
    distinct = sorted(set(int(r) for r in regs))
    if not distinct:
        return 0
    ports = max(1, bank_width_bits // 32)
    counts = np.bincount(np.asarray(distinct) % banks, minlength=banks)
    return int(-(-counts.max() // ports)) - 1


MEMORY_UNITS = ("lsu", "smem", "cmem")  # read their registers late, through the MIO path [MAXAS-CC]
NON_VECTOR_UNITS = ("uniform", "branch", "sync")


def collector_reads(program, memory_ops: bool = False) -> np.ndarray:
    """(n_pc,) bool: the instruction reads its vector sources through the ALU operand path.

    Memory instructions read their registers late through the MIO queue [MAXAS-CC] (their conflicts
    with later ALU instructions are timing interactions) and are left out unless memory_ops; uniform,
    branch and barrier instructions read no vector operands.
    """
    skip = NON_VECTOR_UNITS + (() if memory_ops else MEMORY_UNITS)
    return np.array([ins.unit not in skip for ins in program.instructions], dtype=bool)


def reuse_hit_slots(program, trace, table=None, memory_ops: bool = False) -> np.ndarray:
    """(N,) int bitmask per record: source slots served by the reuse cache (see the module docstring).

    Slot s of a record hits when the warp's most recent earlier record that read a vector register
    in slot s through the operand path flagged it ``.reuse`` and read the same register range.
    Records that do not read slot s leave that slot's cache entry alone: ptxas flags operands whose
    next reader in the slot comes after a memory, uniform or S2R instruction (e.g.
    ``DFMA R78, R54.reuse, ..`` / ``LDS.64`` / ``DFMA R80, R54, ..`` in dgemm_unroll on sm_90).
    Vectorised per slot over the records that read it: each against the one before it.
    """
    reuse = _Reuse(program, table or operand_table(program), memory_ops)
    pc = trace.records["pc_index"]
    hits = np.zeros(len(pc), dtype=np.int64)
    for a, b, starts in _warp_blocks(trace):
        hits[a:b] = reuse.hits(pc[a:b], starts)
    return hits


def _warp_blocks(trace):
    """(first, end, warp starts relative to first) of consecutive blocks of whole warps of about
    _BLOCK_RECORDS records: per-record work done a block at a time needs bounded temporary memory."""
    starts, n, size = np.asarray(trace.warp_starts, dtype=np.int64), len(trace.records), _BLOCK_RECORDS
    at = np.searchsorted(starts, np.arange(size, n, size))
    bounds = np.unique(np.r_[0, np.append(starts, n)[at], n])
    for a, b in zip(bounds[:-1], bounds[1:]):
        yield int(a), int(b), starts[(starts >= a) & (starts < b)] - a


class _Reuse:
    """The reuse-cache rule of `reuse_hit_slots` for one program, applied to blocks of whole warps."""

    def __init__(self, program, table, memory_ops: bool):
        slot_reg, slot_width, slot_reuse, _ = table
        reads = collector_reads(program, memory_ops)[:, None] & (slot_reg >= 0)  # (n_pc, S): reads slot s
        # per instruction and slot: what a reader needs to find cached (register and width), and what
        # it leaves cached (the same if flagged .reuse, else nothing: -1 matches no reader)
        self.wanted = slot_reg.astype(np.int32) * 1024 + slot_width.astype(np.int32)
        self.left = np.where(slot_reuse, self.wanted, -1)
        self.slots = [s for s in range(slot_reg.shape[1]) if (reads[:, s] & slot_reuse[:, s]).any()]  # others never hit
        self.dtype = np.uint8 if slot_reg.shape[1] <= 8 else np.int64
        bits = sum(reads[:, s].astype(np.int64) << i for i, s in enumerate(self.slots))
        self.bits = np.asarray(bits, dtype=np.uint8 if len(self.slots) <= 8 else np.int64)  # slots read, per pc

    def hits(self, pc: np.ndarray, warp_starts: np.ndarray, carry: np.ndarray | None = None) -> np.ndarray:
        """Slot bits hit, per record of `pc` (whole warps, starting at `warp_starts`). `carry`
        (warps x `slots`, updated in place) continues the warps' streams from earlier records (a
        stream timed in pieces): what each slot's last reader left cached (-1: nothing); a warp's
        first reader in `pc` checks against it instead of finding nothing."""
        hits = np.zeros(len(pc), dtype=self.dtype)
        if not len(pc) or not self.slots:
            return hits
        record_bits = self.bits[pc]
        for i, s in enumerate(self.slots):
            idx = np.flatnonzero(record_bits & record_bits.dtype.type(1 << i))  # readers of slot s, in (warp, seq) order
            if not len(idx):
                continue
            p = pc[idx]
            hit = self.left[:, s][p[:-1]] == self.wanted[:, s][p[1:]]  # reader j against reader j - 1 ...
            first = np.searchsorted(idx, warp_starts)  # ... of the same warp: a warp's first reader finds nothing
            hit[first[(first > 0) & (first < len(idx))] - 1] = False
            hits[idx[1:][hit]] |= hits.dtype.type(1 << s)
            if carry is not None:  # ... or what the warp's earlier records left
                ends = np.searchsorted(idx, np.append(warp_starts[1:], len(pc)))
                has = first < ends  # warps with a reader of slot s here
                f = first[has]
                hit0 = carry[has, i] == self.wanted[:, s][p[f]]
                hits[idx[f[hit0]]] |= hits.dtype.type(1 << s)
                carry[has, i] = self.left[:, s][p[ends[has] - 1]]
        return hits


def register_read_cycles(reads: np.ndarray, warp_starts: np.ndarray, ports: int,
                         carry: np.ndarray | None = None) -> np.ndarray:
    """Extra dispatch cycles per record under the read-port rule (module docstring): `reads`, the
    distinct registers each record reads past the reuse cache, in whole warps starting at
    `warp_starts`. Each record owes max(0, reads - ports) port-slots of 1 / ports cycle; a warp pays
    a whole cycle each time its owed slots pass a multiple of `ports`. `carry` (one per warp, updated
    in place; negative = 0) holds the slots owed but not yet paid when a stream comes in pieces."""
    owed = np.maximum(reads.astype(np.int64) - ports, 0)
    total = np.cumsum(owed)
    starts = np.asarray(warp_starts, dtype=np.int64)
    before = np.zeros(len(starts), dtype=np.int64)  # each warp's cumulative sum before its first record
    inside = starts < len(owed)
    before[inside] = total[starts[inside]] - owed[starts[inside]]
    lengths = np.diff(np.append(starts, len(owed)))
    offset = np.repeat(before, lengths)
    if carry is not None:
        offset = offset - np.repeat(np.maximum(carry, 0), lengths)
    mine = total - offset  # slots owed by the warp so far (with what it carried in)
    cycles = mine // ports - (mine - owed) // ports
    if carry is not None and len(starts):
        ends = np.append(starts[1:], len(owed)) - 1
        has = lengths > 0
        carry[has] = mine[ends[has]] % ports
    return cycles.astype(SMALL_COLUMN_DTYPE)


def register_bank_conflicts(program, trace, banks: int = 4, bank_width_bits: int = 32, reuse_cache: bool = True,
                            memory_ops: bool = False, return_hits: bool = False, carry: np.ndarray | None = None,
                            read_ports: int | None = None, no_reuse: bool = True):
    """Extra operand-read cycles per record from source-register bank conflicts (module docstring).

    With reuse_cache, operands served by the reuse cache do not read the banks. Vectorised over the
    records: the cost depends only on (static instruction, set of slots hit), so it is computed once
    per distinct pair and looked up. With return_hits, returns (cycles, reuse hits per record,
    cycles if no operand were served by the reuse cache, or None where not `no_reuse`). `carry`: see `_Reuse.hits` (one row per
    warp of `trace.warp_ids`; with `read_ports`, its last column carries the read-port debt,
    `register_read_cycles`). `read_ports`: the read-port rule instead of the bank rule.
    """
    table = operand_table(program)
    regs_read = table[3]
    pc = trace.records["pc_index"]
    reads = collector_reads(program, memory_ops)
    width = 1 << table[0].shape[1]

    def value(q: int, mask: int) -> int:
        """Instruction q's figure with the slots in `mask` served by the reuse cache: its extra cycles
        (bank rule) or its distinct registers read (read-port rule)."""
        if not reads[q]:
            return 0
        regs = [r for s, slot in enumerate(regs_read[q]) if not (mask >> s) & 1 for r in slot]
        return len(set(regs)) if read_ports is not None else bank_conflict_cycles(regs, banks, bank_width_bits)

    # per (instruction, slots hit): filled in as pairs turn up; no slot hit is known from the start
    value_of = np.repeat(np.array([value(q, 0) for q in range(len(regs_read))], dtype=np.int16), width)
    known = np.zeros(len(value_of), dtype=bool)
    known[::width] = True
    popcount = np.array([bin(m).count("1") for m in range(width)], dtype=SMALL_COLUMN_DTYPE)
    reuse = _Reuse(program, table, memory_ops) if reuse_cache else None
    cost = np.empty(len(pc), dtype=SMALL_COLUMN_DTYPE)
    without = np.empty(len(pc), dtype=SMALL_COLUMN_DTYPE) if no_reuse else None
    n_hits = np.zeros(len(pc), dtype=SMALL_COLUMN_DTYPE) if return_hits else None
    debt = None if carry is None or read_ports is None else carry[:, -1]  # (a view: updated in place)
    first_warp = 0
    for a, b, starts in _warp_blocks(trace):
        p = pc[a:b].astype(np.int64)
        block = slice(first_warp, first_warp + len(starts))
        first_warp += len(starts)
        block_carry = None if carry is None else carry[block] if read_ports is None else carry[block, :-1]
        hits = reuse.hits(p, starts, block_carry) if reuse is not None else None
        combo = p * width
        if hits is not None and hits.any():
            combo = combo + hits.astype(np.int64)
            present = np.flatnonzero(np.bincount(combo, minlength=len(known)).astype(bool) & ~known)
            for key in present:  # distinct by counting (np.unique would sort)
                value_of[key] = value(*divmod(int(key), width))
                known[key] = True
            if return_hits:
                n_hits[a:b] = popcount[hits]
        if read_ports is None:
            cost[a:b] = value_of[combo]
            if no_reuse:
                without[a:b] = value_of[p * width]
        else:
            cost[a:b] = register_read_cycles(value_of[combo], starts, read_ports, None if debt is None else debt[block])
            if no_reuse:
                without[a:b] = register_read_cycles(value_of[p * width], starts, read_ports)
    if return_hits:
        return cost, n_hits, without
    return cost


# ---- all columns ---------------------------------------------------------------------------------
# Only the sm_90 shared-memory rules were checked against hardware counters (module docstring).
SHARED_RULES = {
    # Kepler: 32 banks of 8 bytes (two 32-bit words per bank row in the default 4-byte mode)
    "sm_35": {"smem_banks": 32, "smem_bank_width_bytes": 4, "smem_bank_row_words": 2, "smem_phase_bytes": 256,
              "smem_pack_uniform_pairs": False},
    "sm_52": {"smem_banks": 32, "smem_bank_width_bytes": 4, "smem_bank_row_words": 1, "smem_phase_bytes": 128,
              "smem_pack_uniform_pairs": False},
    "sm_90": {"smem_banks": 32, "smem_bank_width_bytes": 4, "smem_bank_row_words": 1, "smem_phase_bytes": 128,
              "smem_pack_uniform_pairs": True},
}
REGISTER_RULES = {
    "sm_35": {"reg_banks": 4, "reg_bank_width_bits": 32},  # the real Kepler map is not reg % 4 (maxas)
    "sm_52": {"reg_banks": 4, "reg_bank_width_bits": 32},
    "sm_90": {"reg_banks": 2, "reg_bank_width_bits": 64},
}


def rules_for_arch(arch: str) -> dict:
    """Keyword arguments of `precompute` for an architecture (sm_35 / sm_52 / sm_90)."""
    return {**SHARED_RULES[arch], **REGISTER_RULES[arch]}


def precompute(program, trace, *, reg_banks: int = 4, reg_bank_width_bits: int = 32, reuse_cache: bool = True,
               reg_memory_ops: bool = False, reg_read_ports: int | None = None,
               smem_banks: int = 32, smem_bank_width_bytes: int = 4, smem_bank_row_words: int = 1,
               smem_phase_bytes: int | None = None, smem_pack_uniform_pairs: bool = False,
               sector_bytes: int = 32, line_bytes: int = 128, load_lane_bytes: int | None = None,
               tag_lines_per_cycle: float | None = None, reuse_carry: np.ndarray | None = None, no_reuse: bool = True) -> dict[str, np.ndarray]:
    """Per record columns (aligned with ``trace.records``; int16 `COLUMN_DTYPE`: smem_wavefronts,
    smem_conflicts; int8 `SMALL_COLUMN_DTYPE`: gsectors, glines, reg_conflict_cycles, reuse_hits,
    reg_conflict_cycles_no_reuse). Records that
    are not such accesses get 0. `rules_for_arch` gives the keyword arguments per architecture.

    smem_pack_uniform_pairs applies to shared loads only (it is a property of the return path);
    reg_memory_ops counts register-bank conflicts of memory instructions too. `reuse_carry`: the reuse
    cache's state left by the warps' earlier records when a stream comes in pieces (`_Reuse.hits`; one
    column more than the operand slots: the read-port debt). `reg_read_ports`: the read-port rule.
    `no_reuse`: False leaves reg_conflict_cycles_no_reuse out (detailed mode's stream reads none).
    `load_lane_bytes`: glines of a global load is at least its lane data over this (`load_stage_units`).
    `tag_lines_per_cycle`: glines of a global load is its data-stage bank wavefronts, at least its lines
    at this rate (`load_bank_units`; instead of `load_lane_bytes`, whose floor the wavefronts cover).
    """
    rec = trace.records
    n = len(rec)
    cols = {k: np.zeros(n, dtype=COLUMN_DTYPE if k.startswith("smem") else SMALL_COLUMN_DTYPE)
            for k in ("smem_wavefronts", "smem_conflicts", "gsectors", "glines")}
    kinds = (SHARED_LOAD, SHARED_STORE, GLOBAL_LOAD, GLOBAL_STORE)
    kind_of_pc = _per_program("kinds", program, lambda: np.array(
        [kinds.index(k) + 1 if (k := access_kind(ins)) else 0 for ins in program.instructions],
        dtype=np.int8))  # 0: not a shared or global access
    rows = rec["mem_row"]
    mem = np.flatnonzero(rows >= 0)
    kind = kind_of_pc[rec["pc_index"][mem]]
    for k in (SHARED_LOAD, SHARED_STORE):
        sel = mem[kind == kinds.index(k) + 1]
        if len(sel):
            r = rows[sel]
            w, ideal = shared_wavefronts(trace.addresses, trace.access_bytes[r], rec["exec_mask"][sel],
                                         smem_banks, smem_bank_width_bytes, phase_bytes=smem_phase_bytes,
                                         bank_row_words=smem_bank_row_words,
                                         pack_uniform_pairs=smem_pack_uniform_pairs and k == SHARED_LOAD,
                                         return_ideal=True, rows=r)
            cols["smem_wavefronts"][sel], cols["smem_conflicts"][sel] = w, w - ideal
    sel = mem[kind >= kinds.index(GLOBAL_LOAD) + 1]
    if len(sel):
        r = rows[sel]
        cols["gsectors"][sel], cols["glines"][sel] = global_sectors(trace.addresses, trace.access_bytes[r],
                                                                    rec["exec_mask"][sel], sector_bytes, line_bytes,
                                                                    rows=r)
        ld = mem[kind == kinds.index(GLOBAL_LOAD) + 1]  # glines[ld] holds the loads' distinct lines here
        if tag_lines_per_cycle and len(ld):
            cols["glines"][ld] = load_bank_units(cols["glines"][ld], trace.addresses, trace.access_bytes[rows[ld]],
                                                 rec["exec_mask"][ld], tag_lines_per_cycle, rows=rows[ld])
        elif load_lane_bytes:
            cols["glines"][ld] = load_stage_units(cols["glines"][ld], rec["exec_mask"][ld],
                                                  trace.access_bytes[rows[ld]], load_lane_bytes)
    copies = _per_program("copies", program, lambda: np.array([ins.opcode == "LDGSTS" for ins in program.instructions],
                                                              dtype=bool))
    if copies.any():  # cp.async: smem_wavefronts holds the passes of the banks the bytes it copies take
        sel = mem[copies[rec["pc_index"][mem]]]
        lanes = _lane_bits(rec["exec_mask"][sel]).sum(axis=1)
        cols["smem_wavefronts"][sel] = -(-lanes * trace.access_bytes[rows[sel]] // (smem_banks * smem_bank_width_bytes))
    conflicts, hits, without = register_bank_conflicts(program, trace, reg_banks, reg_bank_width_bits, reuse_cache,
                                                        reg_memory_ops, return_hits=True, carry=reuse_carry,
                                                        read_ports=reg_read_ports, no_reuse=no_reuse)
    cols["reg_conflict_cycles"], cols["reuse_hits"] = conflicts, hits
    if no_reuse:
        cols["reg_conflict_cycles_no_reuse"] = without
    return cols
