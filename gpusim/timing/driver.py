"""From a workload name to a timing result: emulate (the trace), load the config, simulate."""

from __future__ import annotations

from gpusim.errors import SpecError


def run_workload(workload: str, gpu: str, size: int, mode: str = "detailed", overrides: dict | None = None,
                 honour_control_codes: bool | None = None, window=None):
    from gpusim.config import apply_overrides, load_gpu
    from gpusim.emu.run import emulate
    from gpusim.workloads import find_workload

    if mode not in ("detailed", "sampled"):
        raise SpecError(f"--mode must be detailed or sampled, not '{mode}'")
    cfg = load_gpu(gpu)
    if overrides:
        cfg = apply_overrides(cfg, overrides)
    wl = find_workload(workload)
    if size not in wl.sizes:
        raise SpecError(f"size {size} is not among the sizes workload {wl.name} supports: {wl.sizes}")
    ctas = sampled_ctas(wl, size, cfg) if mode == "sampled" else None
    emu, _ = emulate(wl, cfg.arch, size, ctas=ctas)
    return time_emulated(emu, wl, cfg, size, mode, honour_control_codes, window)


def time_emulated(emu, wl, cfg, size: int, mode: str = "detailed", honour_control_codes: bool | None = None,
                  window=None):
    """Build the trace of an emulator run and time it."""
    from gpusim.timing.gpu import simulate
    from gpusim.timing.sampling import KEEP_HEAD, KEEP_TAIL
    from gpusim.trace.elide import TraceTooShort
    from gpusim.trace import DynamicTrace

    # sampled mode fast-forwards over most main-loop iterations: the trace leaves most of them out
    # (the sampler makes up any it simulates from the kept ones); where that cannot be done (the
    # loop's iterations differ in length or their addresses do not advance by a fixed stride),
    # the full trace is built and timed
    keep = (KEEP_HEAD, KEEP_TAIL) if mode == "sampled" else None
    while True:
        trace = DynamicTrace.from_emulator(emu, workload=wl.name, size=size, keep_loop=keep)
        try:
            return simulate(emu.program, trace, cfg, workload=wl.name, size=size,
                            honour_control_codes=honour_control_codes, window=window, mode=mode,
                            footprint_bytes=input_bytes(wl, size))
        except TraceTooShort:
            if trace.elision is None:
                raise
            keep = None


def input_bytes(wl, size: int) -> int:
    """Bytes of the buffers the kernel reads (all but write-only outputs)."""
    from gpusim.workloads.spec import ELEMENT_BYTES

    total = 0
    for a in wl.args:
        if a.kind == "buffer" and not (a.output and a.init.kind == "poison"):
            n = 1
            for d in wl.buffer_shape(a, size):
                n *= d
            total += n * ELEMENT_BYTES[a.dtype]
    return total


def sampled_ctas(wl, size: int, cfg) -> list[int]:
    """The CTAs of SM 0's first wave: the dispatcher fills SMs round robin, then each SM takes the
    next CTA as one finishes; with symmetric SMs SM 0 runs CTAs 0, S, 2S, ... (S = SM count), and
    sampled mode simulates the first 2 x `ctas_per_sm` of them (two waves)."""
    from gpusim.timing.occupancy import occupancy
    from gpusim.toolchain.listings import load_program

    program = load_program(wl, cfg.arch)
    grid, block, dyn = wl.geometry(size)
    occ = occupancy(cfg, block[0] * block[1] * block[2], program.registers,
                    program.shared_bytes - program.reserved_shared_bytes + dyn)
    return list(range(0, grid[0] * grid[1] * grid[2], cfg.sm_count))[:2 * max(1, occ.ctas_per_sm)]
