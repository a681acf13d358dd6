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

The trace need not hold the iterations that are fast-forwarded over: built with
`keep_loop=(KEEP_HEAD, KEEP_TAIL)` it holds each warp's first and last iterations only
(`gpusim.trace.elide`). The sampler then counts positions in the warp's whole stream ("virtual"
positions: recorded ones shifted by the left-out instructions past the gap) and a fast-forward
must carry a warp across its gap in one jump; a warp that reaches its gap by normal simulation
means the loop did not converge in time, and `check_gaps_crossed` raises `TraceTooShort` (the
driver then builds the full trace).
"""

from __future__ import annotations

from bisect import bisect_left

import numpy as np

from gpusim.trace.elide import TraceTooShort, main_loop_branch

# iterations kept at each end of the main loop when the trace is built for sampled mode: convergence
# needs about 4 windows of about 4 iterations after the first; the tail covers `margin` plus the
# spread between the warps' positions when they fast-forward together
KEEP_HEAD = 48
KEEP_TAIL = 48


def loop_branch(program, pcs: list[int]) -> int | None:
    """The most executed backward branch in a warp's stream (the main loop's back edge)."""
    return main_loop_branch(program, np.bincount(np.asarray(pcs, dtype=np.int64), minlength=len(program)))


class Sampler:
    def __init__(self, program, tolerance: float = 0.03, converge: int = 3, margin: int = 2,
                 min_window: float = 400.0, max_window: float = 200_000.0, elision=None):
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
        self.branch: int | None = None if elision is None else elision.branch
        # warp gid -> (recorded position where its kept tail begins, iterations and instructions left out)
        self.gaps: dict[int, tuple[int, int, int]] = {} if elision is None else dict(elision.warps)
        self.crossed: set[int] = set()  # warps fast-forwarded across their gap

    # ---- per-warp loop bookkeeping ---------------------------------------------------------------
    def bounds(self, w) -> list[int]:
        """Virtual stream positions of the warp's back edges (left-out ones evenly spaced in the gap)."""
        b = self.boundaries.get(w.gid)
        if b is None:
            if self.branch is None:
                self.branch = loop_branch(self.program, w.pcs)
            b = [] if self.branch is None else [i for i, pc in enumerate(w.pcs) if pc == self.branch]
            gap = self.gaps.get(w.gid)
            if gap is not None:
                at, iters, skipped = gap
                head = [p for p in b if p < at]
                step = skipped / iters
                b = head + [head[-1] + round((j + 1) * step) for j in range(iters)] + \
                    [p + skipped for p in b if p >= at]
            self.boundaries[w.gid] = b
        return b

    def vpos(self, w) -> int:
        """The warp's position in its whole stream (its recorded position, shifted past a gap)."""
        gap = self.gaps.get(w.gid)
        return w.pos + gap[2] if gap is not None and w.pos >= gap[0] else w.pos

    def iterations(self, w) -> int:
        """Loop iterations the warp has completed (back edges passed)."""
        return bisect_left(self.bounds(w), self.vpos(w))

    def progress(self, w) -> float:
        """Completed iterations plus the fraction of the current one (by instructions), so that a
        window shorter than an iteration still measures the rate without whole-number steps."""
        b = self.bounds(w)
        v = self.vpos(w)
        i = bisect_left(b, v)
        if 1 <= i < len(b):
            return i - 1 + (v - b[i - 1]) / (b[i] - b[i - 1])
        return float(i)

    def check_gaps_crossed(self, simulated_gids) -> None:
        """Every simulated warp with a gap must have been fast-forwarded across it."""
        missed = sorted(g for g in simulated_gids if g in self.gaps and g not in self.crossed)
        if missed:
            raise TraceTooShort(f"warps {missed[:4]} reached main-loop iterations the trace left out (the loop "
                                f"did not converge within the iterations kept at its start)")

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
        moves = []  # (warp, new recorded position, virtual shift, crosses its gap)
        for w in warps:
            b = self.bounds(w)
            i = its[w.gid]
            shift = b[i + iters - 1] - b[i - 1]
            v = self.vpos(w)
            gap = self.gaps.get(w.gid)
            if gap is None or v >= gap[0] + gap[2] or v + shift < gap[0]:  # no gap, past it, or short of it
                moves.append((w, w.pos + shift, shift, False))
            elif v + shift >= gap[0] + gap[2]:
                moves.append((w, v + shift - gap[2], shift, True))
            else:  # it would land among left-out iterations: keep simulating
                return
        skipped = 0
        for w, pos, shift, crosses in moves:
            w.pos = pos
            skipped += shift
            if crosses:
                self.crossed.add(w.gid)
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
