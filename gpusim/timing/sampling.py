"""Sampled mode: steady-state extrapolation of GEMM main loops on the simulated SM.

GEMM warps spend most of their time in one loop whose iterations look alike. The sampler watches
the SM in windows of cycles; while every resident warp is inside the loop (past its first iteration
and short of its last `margin`), it measures the loop progress rate (iterations per cycle per warp).
Once `converge` consecutive windows agree within `tolerance`, it fast-forwards: the clock moves on
by the cycles that bring the fastest CTA to `margin` iterations short of its loop exit, and every
CTA moves on by the iterations it completes in those cycles at its own rate over the converged
windows (CTAs on crowded sub-partitions, or younger ones under GTO, are slower: moving all at the
SM's mean rate made them finish together, 10-12% early on 5-CTA SGEMM SMs). Moves are by whole
iterations, so a warp stays at the same point of an iteration. Stall cycles are the last window's,
scaled. Then detailed simulation goes on and the sampler watches again. It never fires before
convergence, and never across a loop exit, so prologues, epilogues and CTA tails are simulated in
detail. The spread of the window rates gives the error estimate.

The trace need not hold the iterations in between: built with `keep_loop=(KEEP_HEAD, KEEP_TAIL)` it
holds each warp's first and last iterations only (`gpusim.trace.elide`). The sampler counts
iterations over the warp's whole loop; a fast-forward that lands a warp among the left-out
iterations, or a warp that reaches them by simulation, gets them made up one at a time
(`synthesize`): a copy of the kept iteration of the same parity (double-buffered loops alternate
two shared-memory layouts), whose global addresses are moved on by the stride per iteration seen
between kept iterations. Where that rule does not hold (iterations of different lengths, or
addresses that do not move by one stride per lane), `TraceTooShort` is raised and the driver
builds the full trace.
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


PERIOD = 2  # iterations after which a GEMM loop's shared-memory layout repeats (double buffering)


def loop_branch(program, pcs: list[int]) -> int | None:
    """The most executed backward branch in a warp's stream (the main loop's back edge)."""
    return main_loop_branch(program, np.bincount(np.asarray(pcs, dtype=np.int64), minlength=len(program)))


class LoopState:
    """One warp's main loop as the sampler sees it: `backs`, the recorded positions of its back
    edges; `consumed`, iterations fast-forwarded over that the stream does not hold (all before the
    warp's position); and, while the trace still leaves some out, the recorded position `cut` where
    they would sit, the loop iterations [`g_lo`, `g_hi`) they are, and their length in instructions."""

    __slots__ = ("backs", "consumed", "consumed_instructions", "cut", "g_lo", "g_hi", "length", "head", "strides")

    def __init__(self, backs, gap=None):
        self.backs, self.consumed, self.consumed_instructions, self.cut = backs, 0, 0, -1
        self.g_lo = self.g_hi = self.length = self.head = 0
        self.strides = {}  # parity -> [(offset in the iteration, template row, byte stride)]
        if gap is not None:
            at, iters, skipped = gap
            self.cut, self.g_lo = at, bisect_left(backs, at)
            self.g_hi, self.head = self.g_lo + iters, self.g_lo
            self.length = skipped // iters
            head_lengths = set(np.diff(backs[:self.g_lo]).tolist())  # iterations 1 .. head - 1
            if skipped % iters or head_lengths - {self.length}:
                raise TraceTooShort("main-loop iterations differ in length: the left-out ones cannot be made up")

    def total(self) -> int:
        """Back edges of the whole stream (iterations of the loop)."""
        return len(self.backs) + self.consumed + (self.g_hi - self.g_lo if self.cut >= 0 else 0)


class Sampler:
    def __init__(self, program, tolerance: float = 0.03, converge: int = 3, margin: int = 2,
                 min_window: float = 400.0, max_window: float = 200_000.0, elision=None, gpu=None,
                 window_iterations: float = 8.0):
        self.program, self.tolerance, self.converge, self.margin = program, tolerance, converge, margin
        self.window_iterations = window_iterations
        self.window = min_window
        self.min_window, self.max_window = min_window, max_window
        self.next_check = min_window
        self.rates: list[float] = []
        self.marks: list = []  # snapshots at the ends of the windows of `rates` (and the one before)
        self.snapshot = None
        self.extrapolated_cycles = 0.0
        self.extrapolated_instructions = 0
        self.fast_forwards = 0
        self.synthesized = 0  # left-out iterations made up
        self.spreads: list[tuple[float, float]] = []  # per fast-forward: (cycles, spread of its windows' rates)
        self.loops: dict[int, LoopState] = {}  # warp gid -> its loop
        self.branch: int | None = None if elision is None else elision.branch
        self.gaps: dict[int, tuple[int, int, int]] = {} if elision is None else dict(elision.warps)
        self.gpu = gpu  # for making up left-out iterations (trace rows, sectors)

    # ---- per-warp loop bookkeeping ---------------------------------------------------------------
    def attach(self, w) -> None:
        """A warp is launched: note where its left-out iterations begin (the SM calls `synthesize`
        when the warp gets there)."""
        w.gap_at = self.loop(w).cut

    def loop(self, w) -> LoopState:
        st = self.loops.get(w.gid)
        if st is None:
            if self.branch is None:
                self.branch = loop_branch(self.program, w.pcs)
            backs = [] if self.branch is None else [i for i, pc in enumerate(w.pcs) if pc == self.branch]
            st = self.loops[w.gid] = LoopState(backs, self.gaps.get(w.gid))
        return st

    def iterations(self, w) -> int:
        """Loop iterations the warp has completed (back edges passed)."""
        st = self.loop(w)
        return bisect_left(st.backs, w.pos) + st.consumed

    def progress(self, w) -> float:
        """Completed iterations plus the fraction of the current one (by instructions), so that a
        window shorter than an iteration still measures the rate without whole-number steps."""
        st = self.loop(w)
        b, v = st.backs, w.pos
        i = bisect_left(b, v)
        if 1 <= i < len(b):
            return i - 1 + (v - b[i - 1]) / (b[i] - b[i - 1]) + st.consumed
        return float(i + st.consumed)

    # ---- what the check reads and moves (the compiled engine's sampler reads and moves arrays) ------
    def positions(self, sm) -> tuple[list, dict, dict, dict]:
        """The SM's resident warps (each with `gid` and `cta`), in launch order; per warp id its
        completed iterations, its progress and its loop's iterations in all."""
        warps = [w for w in sm.warps if not w.done]
        return (warps, {w.gid: self.iterations(w) for w in warps}, {w.gid: self.progress(w) for w in warps},
                {w.gid: self.loop(w).total() for w in warps})

    def move_all(self, sm, moves) -> int:
        """`_move` each (warp, iterations done, iterations to move), then `rewarm_l1` with what it has
        loaded of the iteration it lands in; the instructions passed over."""
        skipped = 0
        for w, i, n in moves:
            k, offset = self._move(w, i, n)
            skipped += k
            self.rewarm_l1(sm, w, offset)
        return skipped

    def rewarm_l1(self, sm, w, offset: int) -> None:
        """A warp moved to the same point of a later iteration has, in hardware, loaded that
        iteration's data up to there, and warps of its CTA still short of those loads find it in L1
        (each sector of B in dgemm_unroll_128b_prefsmem is read by 4 warps of an iteration: 1 miss,
        3 hits). Its L1 still holds the sectors of the iteration it left, so the lagging warps
        missed instead: the GTX 970's sampled runs counted 5% more L1 misses than detailed mode's,
        whose hit rate is 3/4 on every SM. So the sectors of the L1-cached global loads it passed
        in the landing iteration (the `offset` - 1 records before its position) are put in its
        SM's L1 as if loaded, uncounted (a sector already there becomes the newest)."""
        cache = sm.l1.cache
        for pos in range(w.pos - offset + 1, w.pos):
            static = sm.static[w.pcs[pos]]
            row = w.mem_rows[pos]
            if static.l1_cached and row >= 0:
                for s in self.gpu.sectors(row):
                    cache.touch(s)

    # ---- the check, called by the SM between steps ----------------------------------------------
    def check(self, sm, now: float) -> None:
        self.next_check = now + self.window
        warps, its, prog, totals = self.positions(sm)
        in_loop = warps and all(1 <= its[w.gid] < totals[w.gid] - self.margin for w in warps)
        snap = self.snapshot
        self.snapshot = (now, prog, _copy_rows(sm.stalls.rows), self.dirty_state(sm)[0])
        if not in_loop or snap is None or set(snap[1]) != set(its) or now <= snap[0]:
            self.rates, self.marks = [], [self.snapshot]
            return
        t0, prog0, rows0 = snap[:3]
        progress = sum(prog[g] - prog0[g] for g in prog)
        if progress <= 0:
            self.rates, self.marks = [], [self.snapshot]
            return
        rate = progress / (now - t0) / len(warps)  # iterations per cycle per warp
        self.rates.append(rate)
        self.marks.append(self.snapshot)
        # about `window_iterations` iterations per window: `converge` windows are what is extrapolated.
        # 8 (was 4): at n=2048, where detailed mode is out of reach, fast-forwarding with 4-iteration
        # windows moved cycles by up to 0.95% against the same sampled run without fast-forwards
        # (mean 0.28%, 8 kernels), with 8 by up to 0.54% (mean 0.26%), with 16 by 0.50% (0.14%) at
        # more simulated iterations (bench/sampled_window.py, bench/results/sampled_window.txt)
        # The window grows at most 2x per check: a first window at the loop's start, where the warps
        # wait for their first tiles from DRAM, measures a rate 13x too low (dgemm_unroll_128b h100
        # 1024), and a window sized from it alone (the 200k-cycle cap) outlasted the whole CTA, so
        # the loop was never fast-forwarded
        self.window = min(self.max_window, 2 * self.window, max(self.min_window, self.window_iterations / rate))
        spread, span = self._spread()
        if spread > self.tolerance or not self._dirty_settled(sm, span):
            return
        self._fast_forward(sm, warps, its, totals, now, now - t0, rows0, spread, span)

    def dirty_state(self, sm) -> tuple[int, int]:
        """(dirty sectors, dirty room) of the L2 the SM's stores write to (`MemorySystem.dirty`)."""
        memory = sm.l1.memory
        return len(memory.dirty), memory.dirty_capacity

    def _dirty_settled(self, sm, span: int) -> bool:
        """Whether the converged windows are the loop's steady state as far as L2's dirty data go: the
        dirty room was full from their start (stores push write-backs to DRAM at their own rate), or
        the loop did not add dirty sectors over them (a GEMM's loop stores nothing). A loop that stores while
        the room fills runs at a rate that will not last: once full, every store writes a sector back,
        and DRAM's reads slow down. A grid-stride SAXPY on the H200 card, 64 MiB per buffer, converged
        before and came out 9% faster than detailed mode, with the stores' lg_throttle as its first
        stall where detailed mode and Nsight have long_scoreboard."""
        dirty, room = self.dirty_state(sm)
        then = self.marks[-span - 1][3]
        return then >= room or dirty <= then

    def _spread(self) -> tuple[float, int]:
        """(relative spread of the last `converge` window rates, the windows the extrapolated rate is
        then measured over). Rates of a double-buffered loop can alternate: 2.62,
        2.44, 2.59, 2.47, ... iterations per 10^4 cycles (dgemm_unroll_db h100 1024, 8-iteration
        windows) never came within 3% of each other until 70% of the loop was simulated. So once
        3 x `converge` windows have not agreed, the rates compared are the means of two consecutive
        windows (those agree within 0.5% there), measured over `converge` + 1 windows."""
        recent = self.rates[-self.converge:]
        if len(recent) < self.converge:
            return float("inf"), self.converge
        single = (max(recent) - min(recent)) / float(np.mean(recent))
        if single <= self.tolerance or len(self.rates) < 3 * self.converge:
            return single, self.converge
        recent = self.rates[-self.converge - 1:]
        pairs = [(a + b) / 2 for a, b in zip(recent, recent[1:])]
        return (max(pairs) - min(pairs)) / float(np.mean(pairs)), self.converge + 1

    def _cta_rates(self, warps, now: float, span: int) -> dict:
        """Iterations per cycle of each resident CTA over the converged windows: the mean of its
        warps' progress (a CTA's warps meet at its barriers, so they move together)."""
        t_then, prog_then = self.marks[-span - 1][:2]
        prog_now = self.marks[-1][1]
        per_cta: dict = {}
        for w in warps:
            per_cta.setdefault(w.cta, []).append((prog_now[w.gid] - prog_then[w.gid]) / (now - t_then))
        return {cta: float(np.mean(r)) for cta, r in per_cta.items()}

    def _fast_forward(self, sm, warps, its, totals, now: float, window: float, rows0, spread: float,
                      windows: int) -> None:
        """Move the clock on by `span` cycles, the time the first CTA needs to get `margin`
        iterations short of its loop exit, and every CTA by the whole iterations it completes in
        that time at its own rate."""
        rates = self._cta_rates(warps, now, windows)
        room: dict = {}
        for w in warps:
            r = totals[w.gid] - self.margin - its[w.gid] - 1
            room[w.cta] = min(room.get(w.cta, r), r)
        if min(rates.values()) < 0 or max(rates.values()) <= 0:
            return
        span = min(room[c] / r for c, r in rates.items() if r > 0)  # cycles
        moves = {c: min(room[c], round(r * span)) for c, r in rates.items()}
        if max(moves.values()) < 1:
            return
        skipped = self.move_all(sm, [(w, its[w.gid], moves[w.cta]) for w in warps if moves[w.cta] > 0])
        # stall cycles: the last window's, scaled to the skipped cycles
        _scale_rows(sm.stalls.rows, rows0, span / window)
        sm.issued += skipped
        self.extrapolated_cycles += span
        self.extrapolated_instructions += skipped
        self.fast_forwards += 1
        self.spreads.append((span, spread))
        self.rates, self.marks = [], []
        self.snapshot = None

    def _move(self, w, i: int, n: int) -> tuple[int, int]:
        """Move warp `w` (`i` iterations done, inside iteration i + 1) on by `n` whole iterations, to
        the same point of iteration i + n + 1; returns the instructions passed over. Left-out
        iterations it passes over are counted in `consumed`; one it lands in is made up. Also
        returns its point in that iteration (1 = the first instruction after the back edge)."""
        st = self.loop(w)
        b = st.backs
        r = bisect_left(b, w.pos)  # recorded back edges before the warp
        offset = w.pos - b[r - 1]  # its point in the iteration (1 = the first instruction after the back edge)
        target = i + n  # iterations done after the move
        before = w.pos + st.consumed_instructions  # the warp's position in its whole stream
        if st.cut < 0 or target < st.g_lo:  # all recorded up to there
            new = b[r + n - 1] + offset
        elif target >= st.g_hi:  # over all the left-out iterations, into the kept tail
            self._consume(st, st.g_hi - st.g_lo)
            st.cut = w.gap_at = -1
            new = b[target - st.consumed - 1] + offset
        else:  # into the left-out iterations: pass over those before it, make it up
            self._consume(st, target - st.g_lo)
            at = st.cut
            self.synthesize(w)
            new = at - 1 + offset
        w.pos = new
        return new + st.consumed_instructions - before, offset

    @staticmethod
    def _consume(st: LoopState, k: int) -> None:
        """Pass over the next `k` left-out iterations (they stay out of the warp's stream)."""
        st.consumed += k
        st.consumed_instructions += k * st.length
        st.g_lo += k

    def synthesize(self, w) -> None:
        """Make up the warp's first left-out iteration (`g_lo`) at `cut`: a copy of its kept head
        iteration of the same parity, with global addresses moved on by the stride per iteration
        seen between that one and the kept iteration `PERIOD` before it."""
        st = self.loop(w)
        t = st.head - PERIOD + (st.g_lo - st.head) % PERIOD  # the template iteration (iterations done before it)
        if t - PERIOD < 1 or self.gpu is None:
            raise TraceTooShort("too few main-loop iterations kept to make up the left-out ones")
        b = st.backs
        lo, hi = b[t - 1] + 1, b[t] + 1  # its records
        parity = t % PERIOD
        if parity not in st.strides:
            st.strides[parity] = self._strides(w, lo, hi, b[t - PERIOD - 1] + 1, b[t - PERIOD] + 1)
        m = (st.g_lo - t) // PERIOD  # periods to move on by
        rows = w.mem_rows[lo:hi]
        for off, row, stride in st.strides[parity]:
            rows[off] = self.gpu.moved_row(row, m * stride)
        at = st.cut
        w.pcs[at:at] = w.pcs[lo:hi]
        w.mem_rows[at:at] = rows
        w.regc[at:at] = w.regc[lo:hi]
        w.wavef[at:at] = w.wavef[lo:hi]
        w.glines[at:at] = w.glines[lo:hi]
        k = st.g_lo - st.consumed  # index of the new back edge among the recorded ones
        n = hi - lo
        st.backs = b[:k] + [at + n - 1] + [x + n for x in b[k:]]
        st.g_lo += 1
        st.cut = at + n if st.g_lo < st.g_hi else -1
        w.gap_at = st.cut
        self.synthesized += 1

    def _strides(self, w, lo, hi, lo0, hi0) -> list:
        """(offset, row, byte stride per `PERIOD` iterations) of the global accesses of iteration records
        [lo, hi), from the same accesses `PERIOD` iterations earlier ([lo0, hi0))."""
        if w.pcs[lo:hi] != w.pcs[lo0:hi0]:
            raise TraceTooShort("main-loop iterations differ: the left-out ones cannot be made up")
        out = []
        for off in range(hi - lo):
            row, row0 = w.mem_rows[lo + off], w.mem_rows[lo0 + off]
            if row >= 0 and self.gpu.is_global(w.pcs[lo + off]):
                stride = self.gpu.row_stride(row0, row) if row0 >= 0 else None
                if stride is None:
                    raise TraceTooShort("main-loop addresses do not move by one stride per iteration: the "
                                        "left-out iterations cannot be made up")
                out.append((off, row, stride))
        return out

    def error_estimate(self, total_cycles: float) -> float:
        """Relative error bound of the extrapolated part: each fast-forward's cycles times the spread
        (max - min over mean) of the window rates it extrapolated from, over the total."""
        if total_cycles <= 0:
            return 0.0
        return float(sum(span * spread for span, spread in self.spreads) / total_cycles)


def _copy_rows(rows):
    """A copy of an SM's stall rows (lists, or the compiled engine's array)."""
    return rows.copy() if isinstance(rows, np.ndarray) else [row[:] for row in rows]


def _scale_rows(rows, rows0, scale: float) -> None:
    """Each stall count that changed since `rows0` gets its change times `scale` added (the same
    float operations on lists and on the compiled engine's array)."""
    if isinstance(rows, np.ndarray):
        changed = rows != rows0
        rows[changed] += (rows[changed] - rows0[changed]) * scale
        return
    for row, row0 in zip(rows, rows0):
        for pc, (v, v0) in enumerate(zip(row, row0)):
            if v != v0:
                row[pc] += (v - v0) * scale
