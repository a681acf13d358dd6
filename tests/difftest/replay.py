"""Replay a difftest kernel in the emulator: same inputs as the GPU run, outputs O (uint64, N x K)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gpusim.emu.emulator import Emulator, Launch
from gpusim.emu.memory import GlobalMemory
from gpusim.isa.parser import parse_listing

GOLDEN = Path(__file__).parent / "golden"
LISTING = GOLDEN / "difftest_sm_90.sass"
BLOCK = 128


def replay(kernel: str, a: np.ndarray, b: np.ndarray, c: np.ndarray, k: int = 8, record: bool = False):
    """O (uint64, N x k) of `kernel` run in the emulator; with record=True also the emulator."""
    program = parse_listing(LISTING, kernel)
    n = len(a)
    memory = GlobalMemory({"A": a, "B": b, "C": c, "O": np.zeros(n * k, np.uint64)})
    params = bytearray(program.params[-1][0] + program.params[-1][1] - program.param_base)
    values = [np.uint64(memory.address_of(x)).tobytes() for x in "ABCO"] + [np.int32(n).tobytes()]
    for (offset, size), raw in zip(program.params, values):
        assert size == len(raw)
        params[offset - program.param_base:offset - program.param_base + size] = raw
    emu = Emulator(program, Launch((n // BLOCK, 1, 1), (BLOCK, 1, 1)), bytes(params), memory, record=record).run()
    out = emu.memory.read_buffer("O").view(np.uint64).reshape(n, k)
    return (out, emu) if record else out
