"""Control flow and synchronisation semantics (SIMT stack per warp).

Kepler/Maxwell: SSY pushes a reconvergence point, SYNC pops it; PBK/BRK do the same for breaks
(envytools, "branch stack"). Volta+: BSSY records the convergence barrier, BSYNC waits on it;
a divergent BRA runs one side and leaves the other pending on the warp's stack. EXIT retires lanes.
BAR.SYNC parks the warp until the CTA's live warps all arrive (released by the emulator loop).
"""

from __future__ import annotations

import numpy as np

from gpusim.emu.ops import op

# Opcodes whose handlers set the PC of every warp of the batch themselves (and return True): the
# emulator writes the batch's current PC before running one of them.
CONTROL_OPCODES: set[str] = set()


def control_op(*names):
    """Register a control-flow handler."""
    CONTROL_OPCODES.update(names)
    return op(*names)


def _taken(ex):
    """Per warp (n, 32): lanes for which the branch condition holds among the active ones."""
    return ex.active.reshape(-1, 32)


@control_op("BRA", "JMP")
def bra(ex):
    emu, pc = ex.emu, ex.ins.index
    target = emu.program.by_address[ex.ins.srcs[-1].value] if ex.ins.srcs[-1].kind == "label" else None
    if target is None:
        raise NotImplementedError(f"branch target {ex.ins.srcs[-1].text}")
    taken = _taken(ex)
    if "DIV" in ex.ins.modifiers:
        taken = taken & _diverged(ex)[:, None]
    cond = next((i for i, s in enumerate(ex.ins.srcs) if s.kind == "pred"), None)
    if cond is not None:  # `@!P1 BRA !P2, target`: taken where the guard and the predicate operand hold
        taken = taken & ex.pred(cond).reshape(-1, 32)
    mask = emu.mask[ex.wids]
    all_taken = (taken == mask).all(axis=1)
    none_taken = ~taken.any(axis=1)
    emu.pc[ex.wids[all_taken]] = target
    emu.pc[ex.wids[none_taken & ~all_taken]] = pc + 1
    for k in np.flatnonzero(~all_taken & ~none_taken):
        w = int(ex.wids[k])
        emu.stacks[w].append(("div", pc + 1, mask[k] & ~taken[k]))
        emu.mask[w] = taken[k]
        emu.pc[w] = target
    return True


def _diverged(ex) -> np.ndarray:
    """BRA.DIV m, target (Volta+): per warp, whether some lane of the member mask m (a uniform or
    vector register, read from the first executing lane) is not on the warp's current path. nvcc puts
    it before a warp-synchronous operation with mask m (`__shfl_sync(m, ...)`): a converged warp falls
    through to the plain SHFL, a diverged one branches to the WARPSYNC.COLLECTIVE path (the rule read
    off the listing's two paths; the branch itself is not documented)."""
    op = ex.ins.srcs[0]
    masks = ex.u32(0).reshape(-1, 32) if op.kind in ("reg", "ureg", "imm") else None
    if masks is None:
        raise NotImplementedError(f"BRA.DIV member mask {op.text}")
    path = ex.emu.mask[ex.wids]
    first = np.argmax(_taken(ex), axis=1)
    member = masks[np.arange(len(first)), first]
    on_path = np.packbits(path, axis=1, bitorder="little").view(np.uint32).ravel()
    return (member & ~on_path) != 0


@control_op("CALL")
def call(ex):
    """CALL.REL[.NOINC] `(target) (Volta+): jump to the subroutine. The caller has written the return
    address (the byte address after the CALL, relative to the kernel's start) to a register itself
    (`MOV R6, 0x1b0`), which the subroutine's RET reads; lanes the guard leaves out fall through."""
    label = ex.ins.srcs[-1] if ex.ins.srcs else None
    if label is None or label.kind != "label" or label.value not in ex.emu.program.by_address:
        raise NotImplementedError(f"call target {label.text if label else '(none)'}")
    return _jump(ex, ex.emu.program.by_address[label.value])


@control_op("RET")
def ret(ex):
    """RET.REL[.NODEC] Rn `(kernel) (Volta+): return to the byte address held in Rn (relative to the
    kernel's start). Without a register operand (Kepler's RET) the lanes leave, as EXIT."""
    reg = next((s for s in ex.ins.srcs if s.kind == "reg"), None)
    if reg is None:
        return exit_(ex)
    emu = ex.emu
    addrs = ex.st.R[ex.st.row(reg.reg)][ex.sel].reshape(-1, 32)
    taken = _taken(ex)
    targets = []
    for k in range(len(ex.wids)):
        lanes = np.unique(addrs[k][taken[k]])
        if len(lanes) > 1:
            raise NotImplementedError(f"RET to different addresses within warp {int(ex.wids[k])}: "
                                      f"{', '.join(hex(int(a)) for a in lanes[:4])}")
        addr = int(lanes[0]) if len(lanes) else None
        if addr is not None and addr not in emu.program.by_address:
            raise NotImplementedError(f"RET to address {addr:#x}, which holds no instruction")
        targets.append(emu.program.by_address[addr] if addr is not None else ex.ins.index + 1)
    return _jump(ex, np.array(targets))


def _jump(ex, target):
    """Taken lanes go to `target` (per warp or one index); the others wait on the warp's stack
    (as a divergent BRA); a warp none of whose lanes is taken falls through."""
    emu, pc = ex.emu, ex.ins.index
    target = np.broadcast_to(np.asarray(target, dtype=np.int64), (len(ex.wids),))
    taken = _taken(ex)
    mask = emu.mask[ex.wids]
    for k, w in enumerate(ex.wids):
        w = int(w)
        if not taken[k].any():
            emu.pc[w] = pc + 1
            continue
        if not (taken[k] == mask[k]).all():
            emu.stacks[w].append(("div", pc + 1, mask[k] & ~taken[k]))
            emu.mask[w] = taken[k]
        emu.pc[w] = int(target[k])
    return True


@control_op("EXIT")
def exit_(ex):
    emu = ex.emu
    taken = _taken(ex)
    emu.pc[ex.wids] = ex.ins.index + 1
    for k, w in enumerate(ex.wids):
        if taken[k].any():
            emu.retire_lanes(int(w), taken[k])
    return True


@control_op("BAR")
def bar(ex):
    if "SYNC" not in ex.ins.modifiers and "SYNCALL" not in ex.ins.modifiers and len(ex.ins.modifiers):
        if not any(m in ex.ins.modifiers for m in ("SYNC", "DEFER_BLOCKING")):
            raise NotImplementedError(f"BAR.{'.'.join(ex.ins.modifiers)}")
    emu = ex.emu
    emu.waiting[ex.wids] = True
    emu.pc[ex.wids] = ex.ins.index  # released (pc + 1) when the whole CTA has arrived
    return True


@control_op("SSY", "PBK", "BSSY")
def push_reconvergence(ex):
    """SSY/PBK (sm_3x/5x) push the reconvergence point, the label; BSSY Bn, label (Volta+) records the
    convergence barrier Bn of the lanes on the path, released at the BSYNC Bn just before the label
    (the lanes go on at the label). The entry's lane mask is kept per barrier register too, for
    BREAK."""
    emu = ex.emu
    label = next(s for s in ex.ins.srcs if s.kind == "label")
    target = emu.program.by_address[label.value]
    kind = "brk" if ex.ins.opcode == "PBK" else "sync"
    if ex.ins.opcode == "BSSY":
        barrier = next((s.reg for s in ex.ins.dsts + ex.ins.srcs if s.kind == "breg"), None)
    for k, w in enumerate(ex.wids):
        lanes = emu.mask[w].copy()
        emu.stacks[int(w)].append((kind, target, lanes))
        if ex.ins.opcode == "BSSY":
            emu.barriers[int(w)][barrier] = lanes
    emu.pc[ex.wids] = ex.ins.index + 1
    return True


@op("BREAK")
def break_(ex):
    """BREAK Bn (Volta+): the executing lanes leave convergence barrier Bn (a loop's `break`): the
    BSYNC Bn no longer waits for them and does not take them along (they go on elsewhere, normally to
    an outer BSYNC) [CUDA Binary Utilities: "Break out of the Specified Convergence Barrier"]."""
    barrier = next(s.reg for s in ex.ins.srcs if s.kind == "breg")
    taken = _taken(ex)
    for k, w in enumerate(ex.wids):
        lanes = ex.emu.barriers[int(w)].get(barrier)
        if lanes is not None:
            lanes &= ~taken[k]  # the stack entry holds the same array


@op("ENDCOLLECTIVE")
def end_collective(ex):
    """ENDCOLLECTIVE: the end of a WARPSYNC.COLLECTIVE block (see there); nothing to do."""
    return None


@control_op("WARPSYNC")
def warpsync(ex):
    """WARPSYNC m / WARPSYNC.ALL: the lanes of m wait for each other (__syncwarp). The emulator runs a
    warp's path as one, so a warp whose lanes of m are all on the path goes on; lanes of m waiting on
    another path would need the warp's paths to be interleaved, which is not emulated (error).
    WARPSYNC.COLLECTIVE m, label starts the block up to ENDCOLLECTIVE that a diverged warp runs for a
    member mask m (the slow path behind BRA.DIV): with m all on the path it runs the block as is."""
    emu = ex.emu
    emu.pc[ex.wids] = ex.ins.index + 1
    if "ALL" in ex.ins.modifiers:
        members = np.full(len(ex.wids), 0xFFFFFFFF, np.uint32)
    else:
        first = np.argmax(_taken(ex), axis=1)
        members = ex.u32(0).reshape(-1, 32)[np.arange(len(ex.wids)), first]
    live = np.packbits(~emu.exited[ex.wids], axis=1, bitorder="little").view(np.uint32).ravel()
    path = np.packbits(emu.mask[ex.wids], axis=1, bitorder="little").view(np.uint32).ravel()
    away = members & live & ~path
    executing = _taken(ex).any(axis=1)
    if (away[executing] != 0).any():
        k = int(np.flatnonzero(executing & (away != 0))[0])
        raise NotImplementedError(f"warp {int(ex.wids[k])}: lanes {int(away[k]):#010x} of the member mask "
                                  f"{int(members[k]):#010x} are on another path (a warp-synchronous operation "
                                  "over a diverged warp is not emulated)")
    return True


@control_op("SYNC", "BSYNC")
def sync(ex):
    """The active lanes reached their reconvergence point."""
    sync_lanes(ex.emu, ex.ins, ex.wids, _taken(ex))
    return True


def sync_lanes(emu, ins, wids, taken):
    """Lanes in `taken` (per warp) reached the reconvergence point. If they are the whole active
    path, the warp resumes a pending path or the merged mask; otherwise they park (they are in the
    SSY/BSSY entry's mask) and the other lanes go on."""
    for k, w in enumerate(wids):
        w = int(w)
        mask = emu.mask[w]
        if not taken[k].any():
            emu.pc[w] = ins.index + 1
            continue
        if not (taken[k] == mask).all():
            emu.mask[w] = mask & ~taken[k]
            emu.pc[w] = ins.index + 1
            continue
        stack = emu.stacks[w]
        kind, pc, merged = stack.pop() if stack else ("sync", ins.index + 1, mask)
        merged = merged & ~emu.exited[w]
        emu.mask[w] = merged
        emu.pc[w] = pc
        if not merged.any():
            emu.resume_pending(w)


@control_op("BRK")
def brk(ex):
    """Active lanes leave the loop: they wait at the PBK target until the others break too."""
    emu = ex.emu
    taken = _taken(ex)
    for k, w in enumerate(ex.wids):
        w = int(w)
        emu.pc[w] = ex.ins.index + 1
        if not taken[k].any():
            continue
        emu.mask[w] &= ~taken[k]
        if not emu.mask[w].any():
            stack = emu.stacks[w]
            while stack and stack[-1][0] == "div":
                stack.pop()
            kind, pc, mask = stack.pop()
            emu.mask[w] = mask & ~emu.exited[w]
            emu.pc[w] = pc
    return True
