"""Architectural state of the emulated warps, and `Exec`: one instruction applied to a batch of warps.

Registers are stored register-major, `R[reg, lane]` with lane = warp * 32 + thread, so one register of
a whole batch of warps is one contiguous numpy row and an instruction runs as a few vector operations
over all lanes of all warps that sit at the same PC. 64/128-bit operands are register ranges
(R2:R3 holds a double as low word, high word).

Every write to a register row goes through `Exec.write` (or calls `WarpState.forget` first): the state
keeps values derived from whole rows (float64 copies of FFMA multiplicands, summaries of shared-memory
address registers), and a write must drop them.
"""

from __future__ import annotations

import numpy as np

from gpusim.isa.program import PT, RZ, URZ, Instruction, Operand

U32 = np.uint32
MASK32 = 0xFFFFFFFF


class WarpState:
    """Registers, predicates, carry flags and uniform registers of `n_warps` warps."""

    def __init__(self, n_warps: int, n_regs: int):
        lanes = n_warps * 32
        self.n_warps = n_warps
        self.R = np.zeros((max(n_regs, 1) + 1, lanes), dtype=U32)  # last row stays zero (RZ reads)
        self.n_regs = max(n_regs, 1)
        self.P = np.zeros((8, lanes), dtype=bool)
        self.P[PT] = True
        self.CC = np.zeros(lanes, dtype=bool)  # carry flag (sm_3x/sm_5x .CC / .X)
        self.UR = np.zeros((64, n_warps), dtype=U32)
        self.UP = np.zeros((8, n_warps), dtype=bool)
        self.UP[PT] = True
        self._f64: dict[int, np.ndarray] = {}  # register row -> float64 copy (see `float64_row`)
        self._derived: dict[int, dict] = {}  # register row -> other values computed from it (see `derived`)
        self._scratch: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def row(self, reg: int) -> int:
        if reg == RZ:
            return self.n_regs
        if reg >= self.n_regs:
            raise IndexError(f"register R{reg} beyond the kernel's {self.n_regs} registers")
        return reg

    def derived(self, row: int, key, make):
        """make(R[row]): a value computed from a whole register row (all lanes), kept under `key`
        until the row is written. Array values are shared: callers must not modify them."""
        per_row = self._derived.get(row)
        if per_row is None:
            per_row = self._derived[row] = {}
        value = per_row.get(key)
        if value is None:
            value = per_row[key] = make(self.R[row])
        return value

    def float64_row(self, row: int) -> np.ndarray:
        """Register row `row` (all lanes) read as float32 and widened to float64; kept until the row
        is written (a dictionary of its own: FFMA asks for two per instruction). Shared: read only."""
        v = self._f64.get(row)
        if v is None:
            v = self._f64[row] = self.R[row].view(np.float32).astype(np.float64)
            v.setflags(write=False)
        return v

    def cached_float64_row(self, row: int) -> np.ndarray | None:
        """The float64 copy of row `row` if one is kept, else None."""
        return self._f64.get(row)

    def forget(self, row: int) -> None:
        """Register row `row` is about to be written: drop what was derived from it."""
        if self._f64:
            self._f64.pop(row, None)
        if self._derived:
            self._derived.pop(row, None)

    def forget_rows(self, rows: frozenset) -> None:
        """`forget` each of `rows` (those with something derived from them)."""
        if self._f64:
            for r in self._f64.keys() & rows:
                del self._f64[r]
        if self._derived:
            for r in self._derived.keys() & rows:
                del self._derived[r]

    def scratch_bits(self, n: int) -> np.ndarray:
        """A uint64 work array of n elements, reused (contents undefined)."""
        bufs = self._scratch.get(("bits", n))
        if bufs is None:
            bufs = self._scratch[("bits", n)] = np.empty(n, np.uint64)
        return bufs

    def scratch(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Two float64 work arrays of n elements, reused between instructions (contents undefined)."""
        bufs = self._scratch.get(n)
        if bufs is None:
            bufs = self._scratch[n] = (np.empty(n), np.empty(n))
        return bufs


def f32(x):
    return np.asarray(x, dtype=U32).view(np.float32)


def pack64(lo, hi):
    return np.asarray(lo, dtype=np.uint64) | (np.asarray(hi, dtype=np.uint64) << np.uint64(32))


def unpack64(v):
    v = np.asarray(v, dtype=np.uint64)
    return (v & np.uint64(MASK32)).astype(U32), (v >> np.uint64(32)).astype(U32)


def _decimal_imm(op) -> bool:
    """An integer immediate printed in decimal: in an FP operand it is the number, not its bits."""
    return op.kind == "imm" and "0x" not in op.text.lower()


class Exec:
    """Operand access for one instruction over one batch.

    `sel` selects the batch's lanes in the lane-major arrays (a slice when the warps are contiguous),
    `wids` the warp ids, `active` the lanes that execute (warp mask and guard predicate). In uniform
    mode (U* instructions) values are per warp instead of per lane. `full` says whether every one of
    the n lanes executes (None: not known yet, worked out from `active` on first use).
    """

    def __init__(self, emu, ins: Instruction, wids: np.ndarray, sel, active: np.ndarray, uniform: bool,
                 full: bool | None = None):
        self.emu, self.ins, self.wids, self.sel, self.active = emu, ins, wids, sel, active
        self.st: WarpState = emu.state
        self.uniform = uniform
        self.n = len(wids) if uniform else len(wids) * 32
        self._full = full

    @property
    def full(self) -> bool:
        """Every lane of the batch executes: writes may overwrite whole rows."""
        if self._full is None:
            self._full = bool(self.active.all())
        return self._full

    # ---- reading -------------------------------------------------------------------------------
    def _raw(self, op: Operand, word: int = 0):
        st = self.st
        if op.kind == "reg":
            if op.reg == RZ:
                return np.zeros(self.n, U32)
            row = st.R[st.row(op.reg + word)]
            vals = row[self.sel]
            return vals if not self.uniform else vals[::32]
        if op.kind == "ureg":
            if op.reg == URZ:
                return np.zeros(self.n, U32)
            vals = st.UR[op.reg + word, self.wids]
            return vals if self.uniform else np.repeat(vals, 32)
        if op.kind == "const":
            return self.emu.const_word(op, word, self)
        if op.kind == "imm":
            return np.full(self.n, (op.value >> (32 * word)) & MASK32 if word else op.value & MASK32, U32)
        if op.kind == "fimm":
            return np.full(self.n, np.float32(op.value).view(U32), U32)
        if op.kind == "sreg":
            return self.emu.special_register(op.suffix[0], self)
        raise NotImplementedError(f"operand kind {op.kind} as a value")

    def u32(self, i: int) -> np.ndarray:
        op = self.ins.srcs[i]
        v = self._raw(op)
        if op.invert:
            v = ~v
        if op.negate:
            v = (np.uint32(0) - v).astype(U32)
        return v

    def s32(self, i: int) -> np.ndarray:
        return self.u32(i).view(np.int32)

    def f32(self, i: int) -> np.ndarray:
        op = self.ins.srcs[i]
        if op.kind == "fimm" or _decimal_imm(op):  # nvdisasm prints the FP immediate 1.0 as `1`
            v = np.full(self.n, np.float32(op.value), np.float32)
        else:
            v = f32(self._raw(op))
        if op.absolute:
            v = np.abs(v)
        if op.negate:
            v = -v
        return v

    def _raw64(self, op: Operand) -> np.ndarray:
        if op.kind == "imm":
            return np.full(self.n, op.value & 0xFFFFFFFFFFFFFFFF, np.uint64)
        return pack64(self._raw(op, 0), self._raw(op, 1))

    def u64(self, i: int) -> np.ndarray:
        """A 64-bit integer operand (register pair low, high); `~` and `-` apply to all 64 bits
        (`UIMAD.WIDE UR4, UR10, 0x8, -UR4` subtracts the pair UR4:UR5 [difftest2 golden, d2_stride])."""
        op = self.ins.srcs[i]
        v = self._raw64(op)
        if op.kind != "imm":
            if op.invert:
                v = ~v
            if op.negate:
                v = np.uint64(0) - v
        return v

    def f64(self, i: int) -> np.ndarray:
        op = self.ins.srcs[i]
        if op.kind == "fimm" or _decimal_imm(op):  # `DFMA R10, -R8, R4, 1`: the value 1.0
            v = np.full(self.n, float(op.value), np.float64)
        elif op.kind == "imm":  # a 64-bit float's high word written as a hex integer
            v = (np.full(self.n, op.value & MASK32, np.uint64) << np.uint64(32)).view(np.float64)
        else:
            v = self._raw64(op).view(np.float64)
        if op.absolute:
            v = np.abs(v)
        if op.negate:
            v = -v
        return v

    def pred(self, i: int) -> np.ndarray:
        op = self.ins.srcs[i]
        if op.kind == "upred":
            v = self.st.UP[op.reg, self.wids]
            v = v if self.uniform else np.repeat(v, 32)
        else:
            v = self.st.P[op.reg][self.sel]
            v = v[::32] if self.uniform else v
        return ~v if op.invert else v

    def is_pred(self, i: int) -> bool:
        return i < len(self.ins.srcs) and self.ins.srcs[i].kind in ("pred", "upred")

    # ---- writing -------------------------------------------------------------------------------
    def write(self, j: int, value, word: int = 0) -> None:
        """Write 32-bit `value` (u32/f32/s32 array or scalar) to destination j (+word)."""
        op = self.ins.dsts[j]
        v = np.broadcast_to(np.asarray(value).view(U32) if np.asarray(value).dtype.itemsize == 4
                            else np.asarray(value, dtype=U32), (self.n,))
        if op.kind == "reg":
            if op.reg == RZ:
                return
            r = self.st.row(op.reg + word)
            if self.uniform:
                raise NotImplementedError("uniform instruction writing a vector register")
            self.st.forget(r)
            self._store(self.st.R[r], v)
        elif op.kind == "ureg":
            if op.reg == URZ:
                return
            if self.uniform:  # a warp whose guard is false writes nothing
                self.st.UR[op.reg + word, self.wids[self.active]] = v[self.active]
            else:  # R2UR and friends: take the first active lane of each warp (a warp without one writes nothing)
                some = self.active.reshape(-1, 32).any(axis=1)
                self.st.UR[op.reg + word, self.wids[some]] = self._first_active(v)[some]
        else:
            raise NotImplementedError(f"destination kind {op.kind}")

    def write64(self, j: int, value) -> None:
        lo, hi = unpack64(np.asarray(value).view(np.uint64) if np.asarray(value).dtype == np.float64
                          else np.asarray(value, dtype=np.uint64))
        self.write(j, lo, 0)
        self.write(j, hi, 1)

    def write_pred(self, j: int, value) -> None:
        op = self.ins.dsts[j]
        if op.kind not in ("pred", "upred"):
            raise NotImplementedError(f"predicate write to {op.kind}")
        if op.reg == PT:
            return
        v = np.broadcast_to(np.asarray(value, dtype=bool), (self.n,))
        if op.kind == "upred" or self.uniform:
            if self.uniform:
                self.st.UP[op.reg, self.wids[self.active]] = v[self.active]
            else:
                some = self.active.reshape(-1, 32).any(axis=1)
                self.st.UP[op.reg, self.wids[some]] = self._first_active(v)[some]
        else:
            self._store(self.st.P[op.reg], v)

    def write_cc(self, value) -> None:
        self._store(self.st.CC, np.broadcast_to(np.asarray(value, dtype=bool), (self.n,)))

    def cc(self) -> np.ndarray:
        return self.st.CC[self.sel]

    def _store(self, row: np.ndarray, v: np.ndarray) -> None:
        """row[lane] = v[lane] for the executing lanes of the batch."""
        if isinstance(self.sel, slice):
            if self.full:
                row[self.sel] = v
            else:
                np.copyto(row[self.sel], v, where=self.active)
        else:
            idx = self.sel[self.active]
            row[idx] = v[self.active]

    def _first_active(self, v: np.ndarray) -> np.ndarray:
        act = self.active.reshape(-1, 32)
        first = np.argmax(act, axis=1)
        return v.reshape(-1, 32)[np.arange(act.shape[0]), first]
