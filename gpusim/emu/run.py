"""Emulate a workload: build memory and parameters from its spec, run the Program, check against numpy."""

from __future__ import annotations

import numpy as np

from gpusim.emu.emulator import Emulator, Launch
from gpusim.emu.memory import GlobalMemory
from gpusim.errors import SpecError
from gpusim.toolchain.listings import load_program
from gpusim.workloads.spec import DTYPES


def build_launch(workload, program, n: int, seed: int = 0):
    """(Launch, parameter bytes, GlobalMemory, logical inputs) for problem size n."""
    grid, block, dyn_shared = workload.geometry(n)
    inputs = workload.make_inputs(n, seed)
    buffers = {a.name: np.asarray(inputs[a.name]).ravel(order=a.order) for a in workload.args if a.kind == "buffer"}
    memory = GlobalMemory(buffers)
    if len(program.params) != len(workload.args):
        raise SpecError(f"spec lists {len(workload.args)} arguments but kernel {program.kernel} takes "
                        f"{len(program.params)}", f"{workload.spec_path}: args")
    params = bytearray(program.param_bytes or (program.params[-1][0] + program.params[-1][1] - program.param_base))
    for (offset, size), arg in zip(program.params, workload.args):
        if arg.kind == "buffer":
            raw = np.uint64(memory.address_of(arg.name)).tobytes()
        else:
            raw = np.asarray(inputs[arg.name], dtype=DTYPES[arg.dtype]).tobytes()
        if len(raw) != size:
            raise SpecError(f"argument '{arg.name}' is {len(raw)} bytes but the kernel's parameter is {size}",
                            f"{workload.spec_path}: args.{arg.name}")
        start = offset - program.param_base
        params[start:start + size] = raw
    return Launch(grid, block, dyn_shared), bytes(params), memory, inputs


def emulate(workload, arch: str, n: int, ctas: list[int] | None = None, record: bool = True, seed: int = 0):
    program = load_program(workload, arch)
    launch, params, memory, inputs = build_launch(workload, program, n, seed)
    emu = Emulator(program, launch, params, memory, ctas=ctas, record=record).run()
    return emu, inputs


def check(workload, emu, inputs, n: int) -> dict:
    """Relative Frobenius error of each output against the float64 numpy reference."""
    refs = workload.reference_outputs(inputs, n)
    report = {}
    for arg in workload.args:
        if arg.name not in refs:
            continue
        shape = workload.buffer_shape(arg, n)
        out = emu.memory.read_buffer(arg.name).view(DTYPES[arg.dtype]).reshape(shape, order=arg.order)
        ref = refs[arg.name]
        err = float(np.linalg.norm(out.astype(np.float64) - ref) / max(np.linalg.norm(ref), 1e-300))
        if not np.isfinite(err):
            err = float("inf")
        report[arg.name] = {"rel_error": err, "tolerance": workload.default_tolerance(),
                            "passed": err < workload.default_tolerance()}
    return report
