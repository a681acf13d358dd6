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
    """ENDCOLLECTIVE: the end of a WARPSYNC.COLLECTIVE block (see there); the lanes fall through to
    the WARPSYNC's label, the next instruction."""
    return None


@control_op("WARPSYNC")
def warpsync(ex):
    """WARPSYNC m / WARPSYNC.ALL: the lanes of m wait for each other (__syncwarp). WARPSYNC.COLLECTIVE
    m, label starts the block up to ENDCOLLECTIVE (one warp-synchronous operation) that a diverged warp
    runs for the member mask m (the slow path behind BRA.DIV); the lanes go on at the label.
    Lanes of a .sync operation wait for each other, possibly at different instructions [PTX ISA,
    sm_70+: shfl.sync, vote.sync, bar.warp.sync]: while lanes of m are on another path, the path
    parks here and the warp runs its other paths (taken off its stack) until the lanes of m all wait
    at a WARPSYNC with member mask m; the block then runs once over all of them, each lane with its
    own operands, and every path goes on after its own block (the parked ones as pending paths, where
    the path that completed the set was on the stack). The blocks must be the same instructions."""
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
    for k in np.flatnonzero(executing & (away != 0)):
        _rendezvous(emu, ex.ins, int(ex.wids[k]), int(members[k]), int(away[k]))
    return True


def _block(emu, ins) -> tuple[list, int]:
    """The instructions of a WARPSYNC's block (up to ENDCOLLECTIVE; none for a plain WARPSYNC) and
    the PC the lanes go on at: the ENDCOLLECTIVE, which falls through to the WARPSYNC's label."""
    if "COLLECTIVE" not in ins.modifiers:
        return [], ins.index + 1
    label = next(s for s in ins.srcs if s.kind == "label")
    body, i = [], ins.index + 1
    while emu.program.instructions[i].opcode != "ENDCOLLECTIVE":
        body.append(emu.program.instructions[i])
        i += 1
    if emu.program.by_address.get(label.value) != i + 1:
        raise NotImplementedError(f"WARPSYNC.COLLECTIVE whose label {label.text} does not follow its ENDCOLLECTIVE")
    return body, i


def _rendezvous(emu, ins, w: int, members: int, away: int) -> None:
    """Warp w's path reached WARPSYNC `ins` with lanes `away` of `members` on other paths (see warpsync)."""
    from gpusim.emu.emulator import Batch

    parked = emu.parked[w]
    waiting = [p for p in parked if p["members"] == members]
    arrived = 0
    for p in waiting:
        arrived |= pack_lanes_1(p["mask"])
    stack = emu.stacks[w]
    if away & ~arrived:  # lanes still to come: park this path, run the one holding them
        i = next((i for i in range(len(stack) - 1, -1, -1)
                  if stack[i][0] == "div" and pack_lanes_1(stack[i][2] & ~emu.exited[w]) & away & ~arrived),
                 None)
        if i is None:
            raise NotImplementedError(
                f"warp {w}: lanes {away & ~arrived:#010x} of the member mask {members:#010x} are on no pending "
                "path (they wait elsewhere and never reach the warp-synchronous operation: a deadlock)")
        parked.append({"pc": ins.index, "mask": emu.mask[w].copy(), "members": members,
                       "seg": stack[i + 1:], "depth": i})
        entry = stack[i]
        del stack[i:]
        emu.mask[w] = entry[2] & ~emu.exited[w]
        emu.pc[w] = entry[1]
        stack.extend(entry[3] if len(entry) > 3 else [])
        return
    body, go_on = _block(emu, ins)
    for p in waiting:
        other, _ = _block(emu, emu.program.instructions[p["pc"]])
        if [i.text for i in other] != [i.text for i in body]:
            raise NotImplementedError(
                f"warp {w}: the lanes of member mask {members:#010x} wait at blocks of different instructions "
                f"({'; '.join(i.text for i in body)} | {'; '.join(i.text for i in other)})")
    path = emu.mask[w].copy()
    merged = path.copy()
    for p in waiting:
        merged |= p["mask"]
    emu.mask[w] = merged & ~emu.exited[w]
    wid = np.array([w])
    for b in body:
        if emu._step(b.index, Batch(emu, wid)):
            raise NotImplementedError(f"control flow inside a WARPSYNC.COLLECTIVE block: {b.text}")
    emu.mask[w] = path
    emu.pc[w] = go_on
    for p in sorted(waiting, key=lambda p: -p["depth"]):
        if p["depth"] > len(stack):
            raise NotImplementedError(f"warp {w}: a path left its convergence point while lanes waited "
                                      "at a warp-synchronous operation")
        stack.insert(p["depth"], ("div", _block(emu, emu.program.instructions[p["pc"]])[1], p["mask"], p["seg"]))
        parked.remove(p)


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
        kind, pc, merged = pop_entry(emu, w) if emu.stacks[w] else ("sync", ins.index + 1, mask)
        merged = merged & ~emu.exited[w]
        emu.mask[w] = merged
        emu.pc[w] = pc
        if not merged.any():
            emu.resume_pending(w)


def pop_entry(emu, w: int) -> tuple:
    """Pop warp w's top stack entry as (kind, pc, mask). A pending path that parked at a WARPSYNC
    carries the entries it had pushed itself: they go back on the stack. Popping below the place of
    a path still parked at a WARPSYNC would leave its lanes behind (error)."""
    stack = emu.stacks[w]
    parked = emu.parked[w]
    if parked and len(stack) <= min(p["depth"] for p in parked):
        p = parked[0]
        raise NotImplementedError(
            f"warp {w}: lanes {pack_lanes_1(p['mask']):#010x} wait at a warp-synchronous operation "
            f"(member mask {p['members']:#010x}) that the warp's other lanes leave without reaching")
    entry = stack.pop()
    stack.extend(entry[3] if len(entry) > 3 else [])
    return entry[:3]


def pack_lanes_1(lanes: np.ndarray) -> int:
    """One warp's 32 lane booleans as a bit mask, lane i at bit i."""
    return int(np.packbits(lanes, bitorder="little").view(np.uint32)[0])


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
            kind, pc, mask = pop_entry(emu, w)
            emu.mask[w] = mask & ~emu.exited[w]
            emu.pc[w] = pc
    return True
