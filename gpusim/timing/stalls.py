"""Warp stall reasons, named as Nsight Compute names them, and their accounting.

Every warp-cycle of a resident warp is charged to exactly one reason: `selected` when it issues,
otherwise the reason that kept it from issuing (Nsight Compute "Warp State Statistics"). Charges
are made lazily when a warp's state changes, so the cost follows instructions, not cycles.

What Nsight Compute means by each reason (its Kernel Profiling Guide, "Warp Stall Reasons"), and
where gpusim charges it:

- selected: the warp issued an instruction this cycle. gpusim: the issue cycle.
- not_selected: eligible, but the scheduler picked another warp. gpusim: ready, not picked.
- wait: a fixed-latency dependency: the compiler's stall count in the control word.
- short_scoreboard: waiting for a scoreboard of an MIO operation: shared memory (and the register
  read of a shared store before its data register may be written), SFU/XU, conversions.
- long_scoreboard: waiting for a scoreboard of an L1TEX operation: global/local memory; also a
  global store's data register, held until the LSU has read it (mem/lsu.py; Nsight shows a
  store-only kernel in long_scoreboard, validation/h100/micro/memory_h100.json write_once).
- math_pipe_throttle: the math pipe the instruction needs is busy (FP64, XU, ...).
- mio_throttle: the MIO instruction queue is full: shared-memory instructions waiting to enter
  their sub-partition's queue or the MIO pipe (sts_32 rows: 14 and 719 warps per issue); on the H100
  also global accesses waiting for places that shared accesses hold in the queue both kinds share
  (`sm.shared_access_queue`; Nsight puts coalescedMultiply_padded's first LDG there,
  validation/h100/micro/ncu_source_aat_h100.json), and S2Rs of per-thread registers (SR_TID, SR_LANEID,
  SR_VIRTID) waiting for the SM's MIO queues to drain (`sm.thread_sreg_waits_for_mio`; Nsight puts a new
  warp's first S2R SR_TID.X there, validation/h100/micro/ncu_source_tpose_h200.json).
- lg_throttle: the local/global (LSU) instruction queue is full, or the LSU pipe is busy (ldg_ca32
  rows: 8 and 438 warps per issue with L1 hits; Nsight charges the pipe's back-pressure here, not
  to math_pipe_throttle).
- barrier: waiting at BAR.SYNC for the rest of the CTA.
- dispatch_stall: the instruction was picked but the dispatcher held it back: pipeline interlocks,
  among them register-file bank conflicts of the operand reads. Sampled per instruction on the H100
  (validation/h100/micro/source/, Nsight SourceCounters of sgemm_vec4 and sgemm_maxas_128 at
  n=1024) dispatch stalls are 0.33 and 0.32 per issued instruction, 68% and 82% of them on FFMAs,
  whose three register sources are where gpusim's bank conflicts arise; Nsight has no separate
  register-bank-conflict reason on sm_90. gpusim charges a bank conflict's extra read cycles here.
- branch_resolving: waiting for a branch target to be computed.
- no_instruction: instruction fetch / i-cache miss. gpusim: not modelled (always 0).
- register_bank_conflict: kept for older results; gpusim charges bank conflicts as dispatch_stall
  (always 0 since).
- drain: after EXIT, waiting for the warp's memory instructions to complete so that its resources
  can be freed (stores, mostly). gpusim: a warp that exits with global stores still in its LSU
  queue (L2 has not taken their data yet) holds its place until the last has left, and its CTA does
  not end before (`SM._exit`); those cycles are charged here, at the EXIT.
Reasons Nsight has and gpusim does not charge: imc_miss (constant cache misses), membar, misc,
sleeping, tex_throttle.
"""

from __future__ import annotations

REASONS = (
    "selected",            # issued this cycle
    "not_selected",        # eligible, but the scheduler picked another warp
    "wait",                # fixed-latency dependency: the compiler's stall count
    "short_scoreboard",    # waiting on a shared-memory / SFU / MIO result or register read
    "long_scoreboard",     # waiting on a global/local memory result or register read
    "math_pipe_throttle",  # the functional unit's pipe is busy
    "mio_throttle",        # the MIO (shared memory) queue is full
    "lg_throttle",         # the local/global memory queue is full, or the LSU pipe busy
    "barrier",             # waiting at BAR.SYNC for the rest of the CTA
    "dispatch_stall",      # the dispatcher held it back (register-bank conflict reads)
    "branch_resolving",    # waiting for a branch target
    "no_instruction",      # instruction fetch (not modelled: always zero)
    "register_bank_conflict",  # not charged since bank conflicts are dispatch_stall (Nsight's reason)
    "drain",               # exited, its stores still on their way to L2
)
INDEX = {name: i for i, name in enumerate(REASONS)}
(SELECTED, NOT_SELECTED, WAIT, SHORT_SB, LONG_SB, MATH, MIO, LG, BARRIER, DISPATCH, BRANCH, NO_INSTR,
 REG_BANK, DRAIN) = range(len(REASONS))


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
