"""From a workload name to a timing result: emulate (the trace), load the config, simulate."""

from __future__ import annotations

from gpusim.errors import SpecError


def run_workload(workload: str, gpu: str, size: int, mode: str = "detailed", overrides: dict | None = None,
                 honour_control_codes: bool | None = None, window=None):
    from gpusim.config import apply_overrides, load_gpu
    from gpusim.emu.run import emulate
    from gpusim.timing.gpu import simulate
    from gpusim.trace import DynamicTrace
    from gpusim.workloads import find_workload

    if mode not in ("detailed", "sampled"):
        raise SpecError(f"--mode must be detailed or sampled, not '{mode}'")
    if mode == "sampled":
        raise SpecError("--mode sampled is not implemented yet")
    cfg = load_gpu(gpu)
    if overrides:
        cfg = apply_overrides(cfg, overrides)
    wl = find_workload(workload)
    if size not in wl.sizes:
        raise SpecError(f"size {size} is not among the sizes workload {wl.name} supports: {wl.sizes}")
    emu, _ = emulate(wl, cfg.arch, size)
    trace = DynamicTrace.from_emulator(emu, workload=wl.name, size=size)
    return simulate(emu.program, trace, cfg, workload=wl.name, size=size,
                    honour_control_codes=honour_control_codes, window=window)
