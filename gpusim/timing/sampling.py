"""Sampled mode: steady-state extrapolation of GEMM main loops on the simulated SM.

GEMM warps spend most of their time in one loop whose iterations look alike. The sampler watches
the SM in windows of cycles; while every resident warp is inside the loop (past its first iteration
and short of its last `margin`), it measures the loop progress rate (iterations per cycle per warp).
Once `converge` consecutive windows agree within `tolerance`, it fast-forwards every warp by the
same number of iterations (its stream position jumps by whole iterations, so it stays at the same
point of an iteration), adds the corresponding cycles, instructions and stall cycles (the last
window's, scaled), and goes back to detailed simulation to watch again. It never fires before
convergence, and never across a warp's loop exit, so prologues, epilogues and CTA tails are always
simulated in detail. The spread of the window rates gives the error estimate.
"""

from __future__ import annotations

from bisect import bisect_left

import numpy as np


def loop_branch(program, pcs: list[int]) -> int | None:
    """The most executed backward branch in a warp's stream (the main loop's back edge)."""
    back = {i for i, ins in enumerate(program.instructions)
            if ins.opcode == "BRA" and ins.srcs and ins.srcs[-1].kind == "label"
            and ins.srcs[-1].value <= ins.address}
    if not back:
        return None
    counts = np.bincount(np.asarray(pcs, dtype=np.int64), minlength=len(program))
    best = max(back, key=lambda i: counts[i])
    return best if counts[best] >= 4 else None


class Sampler:
    def __init__(self, program, tolerance: float = 0.03, converge: int = 3, margin: int = 2,
                 min_window: float = 400.0, max_window: float = 200_000.0):
        self.program, self.tolerance, self.converge, self.margin = program, tolerance, converge, margin
        self.window = min_window
        self.min_window, self.max_window = min_window, max_window
        self.next_check = min_window
        self.rates: list[float] = []
        self.snapshot = None
        self.extrapolated_cycles = 0.0
        self.extrapolated_instructions = 0
        self.fast_forwards = 0
        self.all_rates: list[float] = []  # every converged window (for the error estimate)
        self.boundaries: dict[int, list[int]] = {}  # warp gid -> stream positions of the back edge
        self.branch: int | None = None

    # ---- per-warp loop bookkeeping ---------------------------------------------------------------
    def bounds(self, w) -> list[int]:
        b = self.boundaries.get(w.gid)
        if b is None:
            if self.branch is None:
                self.branch = loop_branch(self.program, w.pcs)
            b = [] if self.branch is None else [i for i, pc in enumerate(w.pcs) if pc == self.branch]
            self.boundaries[w.gid] = b
        return b

    def iterations(self, w) -> int:
        """Loop iterations the warp has completed (back edges passed)."""
        return bisect_left(self.bounds(w), w.pos)

    def progress(self, w) -> float:
        """Completed iterations plus the fraction of the current one (by instructions), so that a
        window shorter than an iteration still measures the rate without whole-number steps."""
        b = self.bounds(w)
        i = bisect_left(b, w.pos)
        if 1 <= i < len(b):
            return i - 1 + (w.pos - b[i - 1]) / (b[i] - b[i - 1])
        return float(i)

    # ---- the check, called by the SM between steps ----------------------------------------------
    def check(self, sm, now: float) -> None:
        self.next_check = now + self.window
        warps = [w for w in sm.warps if not w.done]
        its = {w.gid: self.iterations(w) for w in warps}
        in_loop = warps and all(1 <= its[w.gid] < len(self.bounds(w)) - self.margin for w in warps)
        prog = {w.gid: self.progress(w) for w in warps}
        snap = self.snapshot
        self.snapshot = (now, prog, [row[:] for row in sm.stalls.rows], sm.issued)
        if not in_loop or snap is None or set(snap[1]) != set(its) or now <= snap[0]:
            self.rates = []
            return
        t0, its0, rows0, issued0 = snap
        progress = sum(prog[g] - its0[g] for g in prog)
        if progress <= 0:
            self.rates = []
            return
        rate = progress / (now - t0) / len(warps)  # iterations per cycle per warp
        self.rates.append(rate)
        # about four iterations per window: the mean of `converge` windows is what is extrapolated
        self.window = min(self.max_window, max(self.min_window, 4.0 / rate))
        recent = self.rates[-self.converge:]
        if len(recent) < self.converge or (max(recent) - min(recent)) > self.tolerance * float(np.mean(recent)):
            return
        room = min(len(self.bounds(w)) - self.margin - its[w.gid] - 1 for w in warps)
        if room < 1:
            return
        self._fast_forward(sm, warps, its, room, float(np.mean(recent)), now - t0, rows0, issued0)

    def _fast_forward(self, sm, warps, its, iters: int, rate: float, window: float, rows0, issued0) -> None:
        cycles = iters / rate
        skipped = 0
        for w in warps:
            b = self.bounds(w)
            i = its[w.gid]
            shift = b[i + iters - 1] - b[i - 1]
            w.pos += shift
            skipped += shift
        # stall cycles: the last window's, scaled to the skipped cycles
        scale = cycles / window
        for row, row0 in zip(sm.stalls.rows, rows0):
            for pc, (v, v0) in enumerate(zip(row, row0)):
                if v != v0:
                    row[pc] += (v - v0) * scale
        sm.issued += skipped
        self.extrapolated_cycles += cycles
        self.extrapolated_instructions += skipped
        self.fast_forwards += 1
        self.all_rates.extend(self.rates[-self.converge:])
        self.rates = []
        self.snapshot = None

    def error_estimate(self, total_cycles: float) -> float:
        """Relative error bound of the extrapolated part: spread of the converged window rates."""
        if not self.all_rates or total_cycles <= 0:
            return 0.0
        spread = (max(self.all_rates) - min(self.all_rates)) / np.mean(self.all_rates)
        return float(spread * self.extrapolated_cycles / total_cycles)
