"""From a workload name to a timing result: emulate (the trace), load the config, simulate."""

from __future__ import annotations

from gpusim.errors import SpecError


def run_workload(workload: str, gpu: str, size: int, mode: str = "detailed", overrides: dict | None = None,
                 honour_control_codes: bool | None = None, window=None, check: bool = True):
    """Emulate, check the outputs against the numpy reference (unless `check` is False: a wrong
    result raises WrongResultError before anything is timed), simulate."""
    from gpusim.config import apply_overrides, load_gpu
    from gpusim.emu.run import emulate, verify
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
    emu, inputs = emulate(wl, cfg.arch, size, ctas=ctas)
    report = verify(wl, emu, inputs, size) if check else None
    result = time_emulated(emu, wl, cfg, size, mode, honour_control_codes, window)
    result.checked, result.check = check, report
    return result


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


# sampled mode simulates up to this many SMs side by side (sharing L2 and DRAM) while their traced
# threads x K stay within MULTI_SM_BUDGET: SMs that run in step contend for L2 fills and DRAM
# differently from one SM with its share of bandwidth (-4.9% on dgemm_unroll_db_128b h100 512 with
# one SM, +0.15% with four). The budget bounds the extra emulation: it is a speed limit, not fitted.
# (n stands in for the K loop's length; kernels with a fixed K, like the AA^T ones, are over-counted.)
MAX_SAMPLED_SMS = 4
MULTI_SM_BUDGET = 1 << 20


def sampled_ctas(wl, size: int, cfg) -> list[int]:
    """The CTAs sampled mode simulates. The dispatcher fills SMs round robin, then each SM takes the
    next CTA as one finishes; with symmetric SMs, SM j runs CTAs j, j + S, j + 2S, ... (S = SM
    count). Per SM, all of them if they are at most three waves (3 x `ctas_per_sm`: an SM's last,
    partial wave runs with fewer CTAs, which the steady CTA throughput does not know), else the
    first two waves; for SMs 0 .. G - 1, G as many as the budget above allows."""
    from gpusim.timing.occupancy import occupancy
    from gpusim.toolchain.listings import load_program

    program = load_program(wl, cfg.arch)
    grid, block, dyn = wl.geometry(size)
    threads = block[0] * block[1] * block[2]
    occ = occupancy(cfg, threads, program.registers, program.shared_bytes - program.reserved_shared_bytes + dyn)
    total = grid[0] * grid[1] * grid[2]
    k = max(1, occ.ctas_per_sm)
    per_sm = len(range(0, total, cfg.sm_count))
    traced = per_sm if per_sm <= 3 * k else 2 * k
    sms = max(1, min(MAX_SAMPLED_SMS, cfg.sm_count, total, MULTI_SM_BUDGET // (traced * threads * size)))
    return sorted(c for j in range(sms) for c in range(j, total, cfg.sm_count)[:traced])
