"""Warp stall reasons, named as Nsight Compute names them, and their accounting.

Every warp-cycle of a resident warp is charged to exactly one reason: `selected` when it issues,
otherwise the reason that kept it from issuing (Nsight Compute "Warp State Statistics"). Charges
are made lazily when a warp's state changes, so the cost follows instructions, not cycles.
"""

from __future__ import annotations

REASONS = (
    "selected",            # issued this cycle
    "not_selected",        # eligible, but the scheduler picked another warp
    "wait",                # fixed-latency dependency: the compiler's stall count
    "short_scoreboard",    # waiting on a shared-memory / SFU / MIO result
    "long_scoreboard",     # waiting on a global/local memory result
    "math_pipe_throttle",  # the functional unit's pipe is busy
    "mio_throttle",        # the MIO (shared memory) queue is full
    "lg_throttle",         # the local/global memory queue is full
    "barrier",             # waiting at BAR.SYNC for the rest of the CTA
    "dispatch_stall",      # the dispatch port is busy (register-bank conflict reads)
    "branch_resolving",    # waiting for a branch target
    "no_instruction",      # instruction fetch (not modelled: always zero)
    "register_bank_conflict",  # extra operand-read cycles from register-bank conflicts (gpusim)
)
INDEX = {name: i for i, name in enumerate(REASONS)}
(SELECTED, NOT_SELECTED, WAIT, SHORT_SB, LONG_SB, MATH, MIO, LG, BARRIER, DISPATCH, BRANCH, NO_INSTR,
 REG_BANK) = range(len(REASONS))


class StallTable:
    """Warp-cycles per reason per static instruction (the instruction the warp is waiting to issue)."""

    def __init__(self, n_pcs: int):
        self.rows = [[0.0] * n_pcs for _ in REASONS]

    def charge(self, reason: int, pc: int, cycles: float) -> None:
        if cycles > 0:
            self.rows[reason][pc] += cycles

    def add(self, other: "StallTable") -> None:
        for mine, theirs in zip(self.rows, other.rows):
            if any(theirs):  # (most reasons are never charged on most SMs)
                for i, v in enumerate(theirs):
                    if v:
                        mine[i] += v

    def totals(self) -> dict[str, float]:
        return {name: sum(row) for name, row in zip(REASONS, self.rows)}

    def per_pc(self) -> dict[int, dict[str, float]]:
        out: dict[int, dict[str, float]] = {}
        for name, row in zip(REASONS, self.rows):
            for pc, v in enumerate(row):
                if v:
                    out.setdefault(pc, {})[name] = v
        return out
