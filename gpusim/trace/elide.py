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


def elide_records(program, log, counts: np.ndarray, local: np.ndarray, gwarp_of_local: np.ndarray,
                  head: int, tail: int):
    """Which records of an emulator log to keep: (keep mask over the log's records in step order,
    Elision), or (None, None) when there is no main loop or nothing to leave out.

    An iteration ends with its back-edge record; record r of a warp belongs to iteration k = the
    number of back edges the warp executed before r (k = 0 includes the prologue, k = n the
    epilogue). Iterations head .. n - tail - 1 are left out. Counting is done per back-edge step
    (a few per iteration), not per record: C[j, w] = back edges of warp w in the first j back-edge
    steps, and a record of step s reads C at the number of back-edge steps before s."""
    step_pcs = np.asarray(log.pcs, dtype=np.int64)
    pc_counts = np.bincount(step_pcs, weights=counts, minlength=len(program)).astype(np.int64)
    branch = main_loop_branch(program, pc_counts)
    if branch is None:
        return None, None
    back_steps = np.flatnonzero(step_pcs == branch)
    n_local = len(gwarp_of_local)
    if (len(back_steps) + 1) * n_local > 50_000_000:  # too many warps and steps to count this way
        return None, None
    member = np.zeros((len(back_steps) + 1, n_local), dtype=np.int32)
    member[np.repeat(np.arange(1, len(back_steps) + 1), counts[back_steps]),
           np.concatenate([log.warps[s] for s in back_steps]).astype(np.int64)] = 1
    before = np.cumsum(member, axis=0)
    n = before[-1]  # back edges per (local) warp
    step_j = np.searchsorted(back_steps, np.arange(len(step_pcs)), side="left")
    k = before[np.repeat(step_j, counts), local]
    drop = (k >= head) & (k < (n - tail)[local])
    if not drop.any():
        return None, None
    el = Elision(branch=branch, head=head, tail=tail)
    at = np.bincount(local, weights=k < head, minlength=n_local).astype(np.int64)
    left_out = np.bincount(local[drop], minlength=n_local)
    for w in np.flatnonzero(left_out):
        el.warps[int(gwarp_of_local[w])] = (int(at[w]), int(n[w] - tail - head), int(left_out[w]))
    el.pc_counts = np.bincount(np.repeat(step_pcs, counts)[drop], minlength=len(program))
    return ~drop, el


def distinct_sectors(addresses: np.ndarray, shift: int = 5) -> np.ndarray:
    """Distinct sectors (address >> shift, ascending) of byte addresses, one row per access (0 marks
    a lane that did not execute)."""
    s = addresses.reshape(len(addresses), -1) >> np.uint64(shift)
    first = np.ones(s.shape, dtype=bool)  # a lane's sector differs from its left neighbour's (fewer to sort)
    first[:, 1:] = s[:, 1:] != s[:, :-1]
    s = np.sort(s[first & (addresses.reshape(s.shape) != 0)])
    return s[np.r_[True, s[1:] != s[:-1]]] if len(s) else s  # (np.unique hashes uint64: far slower)
