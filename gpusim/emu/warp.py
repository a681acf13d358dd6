"""Warp-level operations: shuffles (SHFL), votes and ballots (VOTE, VOTEU), MATCH, REDUX, and the bit
scans that go with them (FLO, BREV and their uniform forms).

A warp's lanes exchange values here, so every handler works on the batch as (warps, 32). The lanes
that take part are the executing ones (`ex.active`: the warp's path and the guard): the SASS forms
carry no member mask, the compiler has made the path equal to it (a partial mask goes through
BRA.DIV and WARPSYNC.COLLECTIVE, control.py, which brings member lanes of other paths onto it). Semantics: PTX ISA, shfl.sync, vote.sync, match.sync,
redux.sync, bfind, brev; checked bit for bit against the H100 [difftest2 golden: d2_shfl, d2_vote].
"""

from __future__ import annotations

import numpy as np

from gpusim.emu.ops import M32, op
from gpusim.emu.state import U32

LANES = np.arange(32, dtype=np.int64)


def ballot(lanes: np.ndarray) -> np.ndarray:
    """Lane booleans (warps, 32) as one uint32 per warp, lane i at bit i."""
    return np.packbits(lanes, axis=-1, bitorder="little").view(U32).reshape(lanes.shape[:-1])


def _per_lane(per_warp: np.ndarray) -> np.ndarray:
    return np.repeat(per_warp, 32)


@op("SHFL")
def shfl(ex):
    """SHFL.{IDX,UP,DOWN,BFLY} Pd, d, a, b, c: d = a of source lane j [PTX shfl.sync]. b[4:0] is the
    lane or offset; c packs the clamp (c[4:0]) and the segment mask (c[12:8], 32 - width for a
    width-limited shuffle): with minLane = lane & segmask and maxLane = minLane | (clamp & ~segmask),
    IDX j = minLane | (b & ~segmask), UP j = lane - b, DOWN j = lane + b, BFLY j = lane ^ b; a j
    past maxLane (below it for UP) reads the lane's own a and clears Pd. The source lane's a is read
    whether or not it executes (its value is undefined in PTX; the kernels read only active lanes)."""
    mode = next(m for m in ex.ins.modifiers if m in ("IDX", "UP", "DOWN", "BFLY"))
    a = ex.u32(0)
    b = (ex.u32(1) & np.uint32(31)).astype(np.int64)
    c = ex.u32(2).astype(np.int64)
    lane = np.tile(LANES, len(a) // 32)
    clamp, seg = c & 31, (c >> 8) & 31
    min_lane = lane & seg
    max_lane = min_lane | (clamp & ~seg)
    if mode == "UP":
        j = lane - b
        ok = j >= max_lane
    else:
        j = {"DOWN": lambda: lane + b, "BFLY": lambda: lane ^ b, "IDX": lambda: min_lane | (b & ~seg)}[mode]()
        ok = j <= max_lane
    j = np.where(ok, j, lane)
    ex.write(1, a[j + (np.arange(len(a)) & ~31)])
    ex.write_pred(0, ok)


@op("VOTE", "VOTEU")
def vote(ex):
    """VOTE.{ALL,ANY,EQ} [d,] Pd, p (VOTEU: d a uniform register): over the executing lanes, d = the
    ballot of p, Pd = p on all of them (ALL), on some (ANY), or on all or none (EQ) [PTX vote.sync].
    `VOTE.ANY R3, PT, PT` is __activemask()."""
    mode = next(m for m in ex.ins.modifiers if m in ("ALL", "ANY", "EQ"))
    act = ex.active.reshape(-1, 32)
    p = ex.pred(len(ex.ins.srcs) - 1).reshape(-1, 32) & act
    some = p.any(axis=1)
    every = ~(act & ~p).any(axis=1)
    result = {"ALL": every, "ANY": some, "EQ": every | ~some}[mode]
    for j, d in enumerate(ex.ins.dsts):
        if d.kind in ("reg", "ureg"):
            ex.write(j, _per_lane(ballot(p)))
        else:
            ex.write_pred(j, _per_lane(result))


@op("MATCH")
def match(ex):
    """MATCH.ANY d, a: d = the executing lanes whose a equals this lane's; MATCH.ALL Pd, d, a: when
    every executing lane has the same a, d = those lanes and Pd = true, else d = 0 and Pd = false
    (.U64: a is a register pair) [PTX match.sync]."""
    v = (ex.u64(0) if "U64" in ex.ins.modifiers else ex.u32(0)).reshape(-1, 32)
    act = ex.active.reshape(-1, 32)
    same = (v[:, :, None] == v[:, None, :]) & act[:, None, :]  # [w, i, k]: lane k executes and has i's value
    if "ALL" in ex.ins.modifiers:
        every = ((same == act[:, None, :]).all(axis=2) | ~act).all(axis=1)
        ex.write(1, _per_lane(np.where(every, ballot(act), U32(0))))
        ex.write_pred(0, _per_lane(every))
    else:
        ex.write(0, ballot(same).ravel())


_IDENTITY = {"MIN": (0xFFFFFFFF, 0x7FFFFFFF), "MAX": (0, -0x80000000), "AND": (0xFFFFFFFF,) * 2,
             "OR": (0, 0), "XOR": (0, 0), "SUM": (0, 0)}


@op("REDUX")
def redux(ex):
    """REDUX[.SUM,.MIN,.MAX,.OR,.XOR][.S32] Ud, a: the reduction of a over the executing lanes of the
    warp into a uniform register; no operation modifier is AND; MIN/MAX compare unsigned unless .S32,
    SUM wraps modulo 2^32 [PTX redux.sync]."""
    kind = next((m for m in ex.ins.modifiers if m in _IDENTITY), "AND")
    signed = "S32" in ex.ins.modifiers
    act = ex.active.reshape(-1, 32)
    v = ex.u32(0).reshape(-1, 32)
    v = v.view(np.int32).astype(np.int64) if signed else v.astype(np.int64)
    v = np.where(act, v, _IDENTITY[kind][signed])
    r = {"SUM": lambda: v.sum(axis=1), "MIN": lambda: v.min(axis=1), "MAX": lambda: v.max(axis=1),
         "AND": lambda: np.bitwise_and.reduce(v, axis=1), "OR": lambda: np.bitwise_or.reduce(v, axis=1),
         "XOR": lambda: np.bitwise_xor.reduce(v, axis=1)}[kind]()
    ex.write(0, _per_lane((r.astype(np.uint64) & M32).astype(U32)))


@op("FLO", "UFLO")
def flo(ex):
    """FLO[.U32,.S32][.SH] d, a: the bit position of a's most significant 1 (.S32, the default: of
    the most significant bit that differs from the sign), 0xFFFFFFFF when there is none; .SH gives
    31 minus the position, the left shift that brings that bit to bit 31 [PTX bfind]. nvcc writes
    __ffs(m) - 1 as `UBREV UR5, UR4; FLO.U32.SH R0, UR5` and 31 - __clz(m) as `FLO.U32 R7, UR4`."""
    v = ex.u32(0)
    if "U32" not in ex.ins.modifiers:
        v = np.where(v >> np.uint32(31), ~v, v)
    none = v == 0
    pos = np.frexp(v.astype(np.float64))[1] - 1  # floor(log2 v), exact for 32-bit integers
    if "SH" in ex.ins.modifiers:
        pos = 31 - pos
    ex.write(0, np.where(none, U32(0xFFFFFFFF), pos.astype(np.int64).astype(U32)))


@op("BREV", "UBREV")
def brev(ex):
    """BREV d, a: a's bits in reverse order (bit 0 to bit 31) [PTX brev]."""
    v = ex.u32(0)
    for shift, mask in ((1, 0x55555555), (2, 0x33333333), (4, 0x0F0F0F0F), (8, 0x00FF00FF), (16, 0x0000FFFF)):
        s, m = U32(shift), U32(mask)
        v = ((v >> s) & m) | ((v & m) << s)
    ex.write(0, v)
