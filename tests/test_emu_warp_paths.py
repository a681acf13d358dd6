"""What the H100 golden runs (tests/test_difftest2.py) cannot show: the emulator's rules where a warp is
diverged at a warp-synchronous operation, where atomics meet on an address, and where local memory
is accessed outside the frame. The kernels are the committed difftest2 listing's; the state is set
by hand to a case the golden inputs never reach."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / "difftest"))
from replay import LISTING2  # noqa: E402

from gpusim.emu import atomics  # noqa: E402
from gpusim.emu.emulator import Batch, Emulator, Launch  # noqa: E402
from gpusim.emu.memory import LOCAL_TOP, GlobalMemory, LocalMemory, MemoryFault  # noqa: E402
from gpusim.errors import EmulationError  # noqa: E402
from gpusim.isa.parser import parse_listing  # noqa: E402


def _shfl_warp():
    """d2_shfl on one warp, with half its lanes (16..31) waiting on another path, and the index of
    an instruction by its text."""
    program = parse_listing(LISTING2, "d2_shfl")
    memory = GlobalMemory({"X": np.zeros(64, np.uint64)})
    emu = Emulator(program, Launch((1, 1, 1), (32, 1, 1)), bytes(0x40), memory)
    emu.mask[0, 16:] = False  # on the warp's stack in a real run
    emu.sanitizer.written[:] = True  # registers set by hand below, not by the kernel

    def at(text):
        return next(i.index for i in program.instructions if i.text.startswith(text))

    return emu, at


def test_bra_div_branches_when_lanes_of_the_mask_are_off_the_path():
    emu, at = _shfl_warp()
    pc = at("BRA.DIV UR4")
    target = emu.program.by_address[emu.program.instructions[pc].srcs[-1].value]
    emu.state.UR[4, 0] = 0x0000FFFF  # the mask is the path: the plain SHFL
    emu._step(pc, Batch(emu, np.array([0])))
    assert emu.pc[0] == pc + 1
    emu.state.UR[4, 0] = 0x0001FFFF  # lane 16 of the mask waits elsewhere: the collective path
    emu._step(pc, Batch(emu, np.array([0])))
    assert emu.pc[0] == target


def test_collective_with_lanes_on_no_pending_path_is_loud():
    emu, at = _shfl_warp()
    pc = at("WARPSYNC.COLLECTIVE R8")
    emu.state.R[8, :32] = 0x0000FFFF  # the lanes on the path: the block runs as is
    emu._step(pc, Batch(emu, np.array([0])))
    assert emu.pc[0] == pc + 1
    emu.state.R[8, :32] = 0xFFFFFFFF  # lanes 16..31 are on no path of the warp's stack: they never arrive
    with pytest.raises(EmulationError, match="lanes 0xffff0000 of the member mask 0xffffffff are on no pending path"):
        emu._step(pc, Batch(emu, np.array([0])))


def test_collective_waits_for_the_members_on_another_path():
    """Lanes 0..15 reach the collective SHFL first: they park, the warp runs its pending path (lanes
    16..31), and when those reach a collective with the same member mask the shuffle runs once over
    all 32 lanes, each with its own source; both paths then go on after their block."""
    emu, at = _shfl_warp()
    pc = at("WARPSYNC.COLLECTIVE R8")
    label = emu.program.by_address[emu.program.instructions[pc].srcs[-1].value]
    emu.stacks[0].append(("sync", label + 5, np.ones(32, bool)))  # the convergence point of both paths
    emu.stacks[0].append(("div", pc, ~emu.mask[0].copy()))  # lanes 16..31 wait at the same WARPSYNC
    lanes = np.arange(32, dtype=np.uint32)
    emu.state.R[8, :32] = 0xFFFFFFFF
    emu.state.R[9, :32] = 100 + lanes  # each lane's source
    emu.state.R[10, :32] = 31 - lanes  # lane i reads lane 31 - i: across the two paths
    emu.state.R[11, :32] = 0x1F
    emu.state.R[4, :32] = 0
    emu._step(pc, Batch(emu, np.array([0])))  # lanes 0..15 park; the warp switches to lanes 16..31
    assert emu.pc[0] == pc and emu.mask[0].tolist() == [False] * 16 + [True] * 16
    assert (emu.state.R[4, :32] == 0).all()  # nothing ran yet
    emu._step(pc, Batch(emu, np.array([0])))  # the set is complete: the shuffle runs over 32 lanes
    assert emu.state.R[4, :32].tolist() == (100 + 31 - lanes).tolist()
    assert emu.pc[0] == label - 1 and emu.mask[0].tolist() == [False] * 16 + [True] * 16  # at ENDCOLLECTIVE
    assert emu.stacks[0][-1][:2] == ("div", label - 1)  # the parked path goes on after its block next
    assert emu.stacks[0][-1][2].tolist() == [True] * 16 + [False] * 16


def test_atomics_meeting_on_an_address_apply_in_lane_order():
    """CAS of lanes 0..3 on one word: lane 0 finds 5 and stores 7; lane 1 compares with 5, fails and
    sees 7; lane 2 compares with 7 and stores 9; lane 3 sees 9. A lane alone on its word (4) at once."""
    memory = np.array([5, 100], np.uint32)
    idx = np.array([0, 0, 0, 0, 1])
    cmp = np.array([5, 5, 7, 1, 100], np.uint32)
    new = np.array([7, 8, 9, 10, 200], np.uint32)
    old = atomics._serial(memory, idx, lambda o, c, n: np.where(o == c, n, o), cmp, new)
    assert old.tolist() == [5, 7, 7, 9, 100] and memory.tolist() == [9, 200]


def test_local_memory_outside_the_frame_faults():
    local = LocalMemory(64, 32)  # 64 lanes, 32-byte frames below the initial stack pointer
    lanes, top = np.array([3, 4]), LOCAL_TOP
    local.store(lanes, np.array([top - 32, top - 4]), np.array([[11, 12]], np.uint32), 4)
    assert local.load(lanes, np.array([top - 32, top - 4]), 4).tolist() == [[11, 12]]
    assert local.load(np.array([5]), np.array([top - 32]), 4).tolist() == [[0]]  # another lane's frame
    local.store(lanes, np.array([top - 31, top - 2]), np.array([[0xAB, 0xCDEF]], np.uint32), 1)
    assert local.load(lanes, np.array([top - 32, top - 4]), 4).tolist() == [[0xAB0B, 0xEF000C]]  # the low byte, at its place
    with pytest.raises(MemoryFault, match="out-of-bounds local access of 4 bytes"):
        local.load(lanes, np.array([top - 32, top]), 4)
    with pytest.raises(MemoryFault, match="out-of-bounds local access"):
        local.load(lanes, np.array([top - 36, top - 4]), 4)
