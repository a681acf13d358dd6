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

GLOBAL_LOAD_OPCODES = ("LDG", "LD", "LDL", "TLD", "TEX")  # reads through L1/texture (timing.static's GLOAD)


class TraceTooShort(GpusimError):
    """The timing model reached main-loop iterations the trace left out."""


def main_loop_branch(program, pc_counts: np.ndarray) -> int | None:
    """The most executed backward branch (the main loop's back edge), if it ran at least 4 times.
    `pc_counts`: executions per instruction index (at least len(program) entries)."""
    back = [i for i, ins in enumerate(program.instructions)
            if ins.opcode == "BRA" and ins.srcs and ins.srcs[-1].kind == "label"
            and ins.srcs[-1].value <= ins.address]
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


def elide_records(program, warp: np.ndarray, pcs: np.ndarray, starts: np.ndarray, pc_counts: np.ndarray,
                  step_pcs: np.ndarray, n_warps: int, head: int, tail: int):
    """Which records of a trace to keep: (keep mask over the records, Elision), or (None, None) when
    there is no main loop or nothing to leave out. `warp`, `pcs`: global warp id and instruction
    index of each record in trace order (each warp's records together, in execution order, the
    warps starting at `starts`); `pc_counts`: records per instruction index; `step_pcs`: the
    emulator log's instruction index per step; `n_warps`: warps emulated.

    An iteration ends with its back-edge record; record r of a warp belongs to iteration k = the
    number of back edges the warp executed before r (k = 0 includes the prologue, k = n the
    epilogue). Iterations head .. n - tail - 1 are left out: the records after the warp's head-th
    back edge up to and including its (n - tail)-th, one range per warp."""
    branch = main_loop_branch(program, pc_counts)
    if branch is None:
        return None, None
    # the earlier rule counted back edges in a (back-edge steps x warps) table and gave up past this
    # size; kept so that which traces are elided (and so sampled results) do not change
    if (int(np.count_nonzero(step_pcs == branch)) + 1) * n_warps > 50_000_000:
        return None, None
    n = len(pcs)
    back = np.flatnonzero(pcs == branch)  # positions of the back edges, warp by warp
    first_edge = np.searchsorted(back, starts)  # index in `back` of each warp's first back edge
    edges = np.diff(np.r_[first_edge, len(back)])  # back edges per warp
    cut = np.flatnonzero(edges - tail > head)  # warps with iterations to leave out
    if not len(cut):
        return None, None
    lo = starts[cut] if head == 0 else back[first_edge[cut] + head - 1] + 1  # first record left out
    hi = back[first_edge[cut] + edges[cut] - tail - 1] + 1  # past the last one
    el = Elision(branch=branch, head=head, tail=tail)
    for w, a, b, e, ws in zip(warp[starts[cut]].tolist(), lo.tolist(), hi.tolist(), edges[cut].tolist(),
                              starts[cut].tolist()):
        el.warps[int(w)] = (a - ws, e - tail - head, b - a)
    bounds = np.c_[lo, hi].ravel()
    keep = np.repeat(np.tile([True, False], len(cut)).tolist() + [True], np.diff(np.r_[0, bounds, n]))
    el.pc_counts = np.bincount(pcs[~keep], minlength=len(program))
    return keep, el


def distinct_sectors(addresses: np.ndarray, shift: int = 5) -> np.ndarray:
    """Distinct sectors (address >> shift, ascending) of byte addresses, one row per access (0 marks
    a lane that did not execute)."""
    s = addresses.reshape(len(addresses), -1) >> np.uint64(shift)
    first = np.ones(s.shape, dtype=bool)  # a lane's sector differs from its left neighbour's (fewer to sort)
    first[:, 1:] = s[:, 1:] != s[:, :-1]
    s = np.sort(s[first & (addresses.reshape(s.shape) != 0)])
    return s[np.r_[True, s[1:] != s[:-1]]] if len(s) else s  # (np.unique hashes uint64: far slower)
