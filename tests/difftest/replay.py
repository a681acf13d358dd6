"""Replay a difftest kernel in the emulator: same inputs and launch as the GPU run, the output O."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gpusim.emu.emulator import Emulator, Launch
from gpusim.emu.memory import GlobalMemory
from gpusim.isa.parser import parse_listing

GOLDEN = Path(__file__).parent / "golden"
LISTING = GOLDEN / "difftest_sm_90.sass"
LISTING2 = GOLDEN / "difftest2_sm_90.sass"
BLOCK = 128


def run(listing: Path, kernel: str, a, b, c, o: np.ndarray, ints, record: bool = False):
    """(O after the kernel, the emulator): k(A, B, C, O, *ints) on len(a) / BLOCK blocks of BLOCK
    threads, O starting as `o`."""
    program = parse_listing(listing, kernel)
    memory = GlobalMemory({"A": a, "B": b, "C": c, "O": np.array(o, np.uint64)})
    params = bytearray(program.params[-1][0] + program.params[-1][1] - program.param_base)
    values = [np.uint64(memory.address_of(x)).tobytes() for x in "ABCO"] + [np.int32(v).tobytes() for v in ints]
    assert len(values) == len(program.params), (kernel, len(program.params))
    for (offset, size), raw in zip(program.params, values):
        assert size == len(raw)
        params[offset - program.param_base:offset - program.param_base + size] = raw
    emu = Emulator(program, Launch((len(a) // BLOCK, 1, 1), (BLOCK, 1, 1)), bytes(params), memory,
                   record=record).run()
    return emu.memory.read_buffer("O").view(np.uint64).copy(), emu


def replay(kernel: str, a: np.ndarray, b: np.ndarray, c: np.ndarray, k: int = 8, record: bool = False):
    """First family: O (uint64, N x k) of `kernel(A, B, C, O, n)`, O starting at zero; with
    record=True also the emulator."""
    n = len(a)
    out, emu = run(LISTING, kernel, a, b, c, np.zeros(n * k, np.uint64), [n], record)
    out = out.reshape(n, k)
    return (out, emu) if record else out


def replay2(kernel: str, golden: dict, record: bool = False):
    """Second family: the whole O (uint64, N * K + TAIL) of `kernel(A, B, C, O, n, p0, p1, p2)` from
    the golden file's inputs, initial O and parameters; with record=True also the emulator."""
    ints = [len(golden["A"]), *[int(p) for p in golden["params"]]]
    out, emu = run(LISTING2, kernel, golden["A"], golden["B"], golden["C"], golden["O0"], ints, record)
    return (out, emu) if record else out
