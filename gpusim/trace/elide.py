"""Main-loop elision: keep only the loop iterations that sampled mode simulates.

Sampled mode simulates a GEMM's main loop until its iteration rate converges, then fast-forwards
each CTA towards the loop exit. Most iterations in between are never replayed, so building their
trace records (and their bank-conflict and coalescing columns) is wasted work: for a 4096^3 SGEMM
that is over 90% of the trace. `elide_records` decides, per warp, which records to keep: the
prologue and the first `head` iterations, then the last `tail` iterations and the epilogue. An
`Elision` describes what was left out, so that the sampler can move across the gap and the
results can count the instructions that were left out.

A warp that lands among, or simulates into, the left-out iterations gets them made up from the kept
ones (`gpusim.timing.sampling.Sampler.synthesize`); where that rule does not hold (iterations of
different lengths, addresses without a fixed stride, too short a head), the sampler raises
`TraceTooShort` and the caller builds the full trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpusim.errors import GpusimError

GLOBAL_LOAD_OPCODES = ("LDG", "LD", "LDL", "TLD", "TEX", "LDGSTS")  # reads through L1/texture (timing.static's GLOAD;
# LDGSTS, cp.async, copies what it reads into shared memory)


class TraceTooShort(GpusimError):
    """The timing model reached main-loop iterations the trace left out."""


def backward_branches(program) -> list[int]:
    """Instruction indices of the branches to an instruction at or before their own (loop back edges,
    and the branch to itself that follows EXIT)."""
    return [i for i, ins in enumerate(program.instructions)
            if ins.opcode == "BRA" and ins.srcs and ins.srcs[-1].kind == "label"
            and ins.srcs[-1].value <= ins.address]


def main_loop_branch(program, pc_counts: np.ndarray) -> int | None:
    """The most executed backward branch (the main loop's back edge), if it ran at least 4 times.
    `pc_counts`: executions per instruction index (at least len(program) entries)."""
    back = backward_branches(program)
    if not back:
        return None
    best = max(back, key=lambda i: pc_counts[i])
    return best if pc_counts[best] >= 4 else None


@dataclass
class Elision:
    """What a trace left out. Per warp (global id): (position in its recorded stream where the kept
    tail begins, iterations left out, instructions left out)."""

    branch: int  # instruction index of the loop's back edge
    head: int
    tail: int
    warps: dict = field(default_factory=dict)
    pc_counts: np.ndarray | None = None  # warp instructions left out, per instruction index
    load_sectors32: np.ndarray | None = None  # distinct 32-byte sectors read by global loads, all records


def elide_segments(program, step_pcs: np.ndarray, seg_warp: np.ndarray, seg_step: np.ndarray, seg_len: np.ndarray,
                   seg_pos: np.ndarray, pc_counts: np.ndarray, n_warps: int, head: int, tail: int):
    """Which records of a trace to leave out: (Elision, per warp in trace order the first record left
    out and the one past the last, both trace positions; equal where none is), or None when there
    is no main loop or nothing to leave out. The trace is given by segments, in trace order (each
    warp's records together, in execution order): segment i is `seg_len[i]` records of global warp
    `seg_warp[i]` at trace positions `seg_pos[i]` on, one per emulator step from step `seg_step[i]`
    on (`step_pcs`: the log's instruction index per step); `pc_counts`: records per instruction
    index; `n_warps`: warps emulated.

    An iteration ends with its back-edge record; record r of a warp belongs to iteration k = the
    number of back edges the warp executed before r (k = 0 includes the prologue, k = n the
    epilogue). Iterations head .. n - tail - 1 are left out: the records after the warp's head-th
    back edge up to and including its (n - tail)-th, one range per warp. (Back edges are counted
    per step and per segment, so that no array as long as the whole trace is made.)"""
    branch = main_loop_branch(program, pc_counts)
    if branch is None:
        return None
    is_back = step_pcs == branch
    # the earlier rule counted back edges in a (back-edge steps x warps) table and gave up past this
    # size; kept so that which traces are elided (and so sampled results) do not change
    if (int(np.count_nonzero(is_back)) + 1) * n_warps > 50_000_000:
        return None
    back_steps = np.flatnonzero(is_back)
    before = np.r_[0, np.cumsum(is_back)]  # back-edge steps before each step
    seg_edges = before[seg_step + seg_len] - before[seg_step]
    cum = np.r_[0, np.cumsum(seg_edges)]  # back edges in the trace before each segment
    first_seg = np.flatnonzero(np.r_[True, seg_warp[1:] != seg_warp[:-1]]) if len(seg_warp) else seg_warp
    end_seg = np.r_[first_seg[1:], len(seg_warp)]
    edges = cum[end_seg] - cum[first_seg]  # back edges per warp
    warp_pos = seg_pos[first_seg]
    warp_end = seg_pos[end_seg - 1] + seg_len[end_seg - 1]
    cut = np.flatnonzero(edges - tail > head)  # warps with iterations to leave out
    if not len(cut):
        return None

    def position(g):
        """Trace position of back edge number g (counted over the trace)."""
        s = np.searchsorted(cum, g, side="right") - 1
        return seg_pos[s] + back_steps[before[seg_step[s]] + g - cum[s]] - seg_step[s]

    g0 = cum[first_seg[cut]]
    lo = warp_pos[cut] if head == 0 else position(g0 + head - 1) + 1  # first record left out
    hi = position(g0 + edges[cut] - tail - 1) + 1  # past the last one
    el = Elision(branch=branch, head=head, tail=tail)
    for w, a, b, e, ws in zip(seg_warp[first_seg[cut]].tolist(), lo.tolist(), hi.tolist(), edges[cut].tolist(),
                              warp_pos[cut].tolist()):
        el.warps[int(w)] = (a - ws, e - tail - head, b - a)
    out_lo, out_hi = warp_end.copy(), warp_end.copy()
    out_lo[cut], out_hi[cut] = lo, hi
    # records left out per instruction: per step, the warps whose left-out range holds it
    seg_lo, seg_hi = np.repeat(out_lo, end_seg - first_seg), np.repeat(out_hi, end_seg - first_seg)
    a = np.maximum(seg_pos, seg_lo)
    b = np.minimum(seg_pos + seg_len, seg_hi)
    some = a < b
    per_step = np.zeros(len(step_pcs) + 1, dtype=np.int64)
    np.add.at(per_step, (seg_step + a - seg_pos)[some], 1)
    np.add.at(per_step, (seg_step + b - seg_pos)[some], -1)
    el.pc_counts = np.bincount(step_pcs, weights=np.cumsum(per_step)[:-1], minlength=len(program)).astype(np.int64)
    return el, out_lo, out_hi


def distinct_sectors(addresses: np.ndarray, shift: int = 5) -> np.ndarray:
    """Distinct sectors (address >> shift, ascending) of byte addresses, one row per access (0 marks
    a lane that did not execute)."""
    s = addresses.reshape(len(addresses), -1) >> np.uint64(shift)
    first = np.ones(s.shape, dtype=bool)  # a lane's sector differs from its left neighbour's (fewer to sort)
    first[:, 1:] = s[:, 1:] != s[:, :-1]
    s = np.sort(s[first & (addresses.reshape(s.shape) != 0)])
    return s[np.r_[True, s[1:] != s[:-1]]] if len(s) else s  # (np.unique hashes uint64: far slower)
