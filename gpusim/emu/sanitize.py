"""Undefined behaviour made loud: a lane that reads a general register it has never written.

Rule modelled (as compute-sanitizer's initcheck does for memory): every executing lane's source
registers must have been written by that lane before, by an instruction that executed for it (a
predicated-off lane writes nothing). RZ is no register. Per register row one boolean per lane records
"written"; a row that every lane still running has written is marked once and costs nothing after
that, so the check is a list lookup per source register on the common path, and a vectorised test
over the batch's executing lanes only while a row is partly written.

Which registers an instruction reads and writes comes from its operands (`Operand.regs`: register
ranges of 64/128-bit operands, address registers of memory operands), plus what the handlers read
beyond them: Volta+ IMAD.HI's addend is the pair c:c+1 (ops._imad_hi_pair).
"""

from __future__ import annotations

import numpy as np

from gpusim.errors import EmulationError
from gpusim.isa.program import RZ


def _reads(ins, arch_family: int) -> tuple[int, ...]:
    regs: list[int] = []
    for s in ins.srcs:
        if s.kind in ("reg", "mem"):
            regs += s.regs
        elif s.kind == "const" and s.reg is not None and s.reg != RZ:
            regs.append(s.reg)
    if ins.opcode == "IMAD" and "HI" in ins.modifiers and arch_family >= 70:
        c = [s for s in ins.srcs if s.kind not in ("pred", "upred")][2:3]
        if c and c[0].kind == "reg" and c[0].reg != RZ:
            regs.append(c[0].reg + 1)
    if ins.opcode == "FFMA32I" and ins.dsts and ins.dsts[0].kind == "reg":  # the addend is the destination
        regs += ins.dsts[0].regs
    return tuple(sorted(set(r for r in regs if r != RZ)))


def _writes(ins) -> tuple[int, ...]:
    return tuple(sorted({r for d in ins.dsts if d.kind == "reg" for r in d.regs if r != RZ}))


class RegisterSanitizer:
    """Tracks, per register row and lane, whether the lane has written it; raises EmulationError
    naming kernel, PC, warp, lane and register when an executing lane reads one it has not."""

    def __init__(self, emu):
        self.emu = emu
        st = emu.state
        n_rows = st.R.shape[0]
        self.written = np.zeros(st.R.shape, dtype=bool)
        self.done_rows = [False] * n_rows  # every lane still running has written the row
        self.done_rows[st.row(RZ)] = True
        fam = emu.arch_family
        rows = [[st.row(r) for r in _reads(ins, fam) if r < st.n_regs] for ins in emu.program.instructions]
        self.reads = rows
        self.writes = [[st.row(r) for r in _writes(ins) if r < st.n_regs] for ins in emu.program.instructions]
        self.uniform = emu.uniform
        # per instruction: whether `before` and `after` have nothing left to do for it (every row it
        # reads or writes is written by every lane still running, or it is uniform); rows never
        # become unwritten, so once true it stays true
        self.clean = [False] * len(self.reads)

    def before(self, pc: int, sel, active: np.ndarray, wids) -> None:
        """Check the registers instruction `pc` reads for the executing lanes `active` of `sel`."""
        if self.uniform[pc]:
            return
        for r in self.reads[pc]:
            if self.done_rows[r]:
                continue
            bad = active & ~self.written[r, sel]
            if bad.any():
                self._report(pc, r, sel, bad, wids)

    def after(self, pc: int, sel, active: np.ndarray) -> None:
        """Record the registers instruction `pc` wrote for lanes `active`."""
        rows = self.writes[pc]
        if self.uniform[pc]:
            self.clean[pc] = True
            return
        exited = None
        for r in rows:
            if self.done_rows[r]:
                continue
            if isinstance(sel, slice):
                np.logical_or(self.written[r, sel], active, out=self.written[r, sel])
            else:
                self.written[r, sel] |= active
            if exited is None:
                exited = self.emu.exited.reshape(-1)
            self.done_rows[r] = bool((self.written[r] | exited).all())
        done = self.done_rows
        self.clean[pc] = all(done[r] for r in self.reads[pc]) and all(done[r] for r in rows)

    def _report(self, pc: int, row: int, sel, bad: np.ndarray, wids) -> None:
        emu = self.emu
        ins = emu.program.instructions[pc]
        k = int(np.argmax(bad))
        w, lane = int(wids[k // 32]), k % 32
        cta = emu.ctas[emu.warp_cta[w]]
        tid = int(emu.lane_tid[w * 32 + lane])
        bx, by, _ = emu.launch.block
        raise EmulationError(
            f"read of register R{row}, never written by this lane: kernel {emu.program.kernel}, PC {ins.address:#06x} "
            f"`{ins.text}`, CTA {emu.launch.cta_coords(cta)}, thread ({tid % bx}, {(tid // bx) % by}, "
            f"{tid // (bx * by)}), warp {w}, lane {lane}", "undefined behaviour")
