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
    wl.check_size(size)
    ctas = sampled_ctas(wl, size, cfg) if mode == "sampled" else None
    if streams(cfg, mode, window):
        emu, inputs, result = time_streamed(wl, cfg, size, honour_control_codes)
        report = verify(wl, emu, inputs, size) if check else None  # (a wrong result: no timing is returned)
    else:
        emulated = None if ctas is None else ctas + beside_ctas(wl, size, cfg, ctas)
        emu, inputs = emulate(wl, cfg.arch, size, ctas=emulated)
        report = verify(wl, emu, inputs, size, ctas) if check else None
        result = time_emulated(emu, wl, cfg, size, mode, honour_control_codes, window, ctas)
    result.checked, result.check = check, report
    if not wl.is_suite:  # a user's spec: say how its kernel was built and which listing ran
        from gpusim.toolchain.listings import workload_listing

        result.build = {**wl.build_info(), "spec": str(wl.spec_path), "listing": str(workload_listing(wl, cfg.arch))}
    from gpusim.timing.provenance import build

    result.provenance = build(cfg, overrides, mode, honour_control_codes, emu.program, wl, ctas)
    return result


def run_trace(path, gpu: str, overrides: dict | None = None, honour_control_codes: bool | None = None,
              window=None, workload: str | None = None):
    """Time a saved trace: a gpusim `.npz` (`gpusim trace`) or an Accel-Sim trace (its directory,
    `kernelslist.g` or one `kernel-N.traceg[.xz]`; the first kernel). The program comes from the
    committed listing of `workload`, else of the workload the trace names (npz) or whose listing has
    the trace's kernel for its architecture (Accel-Sim)."""
    from pathlib import Path

    from gpusim.config import apply_overrides, load_gpu
    from gpusim.errors import GpusimError, TraceFormatError
    from gpusim.timing.gpu import simulate
    from gpusim.timing.provenance import build
    from gpusim.toolchain.listings import load_program
    from gpusim.trace import DynamicTrace
    from gpusim.workloads import find_workload, list_workloads

    path = Path(path)
    cfg = load_gpu(gpu)
    if overrides:
        cfg = apply_overrides(cfg, overrides)
    if path.is_dir() or path.name.startswith("kernel"):  # Accel-Sim
        from gpusim.trace.accelsim_fast import first_kernel, load_kernel, peek_header

        kernel_file = first_kernel(path)
        header = peek_header(kernel_file)
        arch = f"sm_{header.get('binary_version', '')}"
        if workload is not None:
            wl = find_workload(workload)
        else:
            wl = next((w for w in list_workloads() if arch in w.archs and _kernel_of(w, arch) == header["kernel_name"]),
                      None)
            if wl is None:
                raise GpusimError(f"no committed listing has kernel {header['kernel_name']} for {arch}; "
                                  "name the trace's workload (gpusim run WORKLOAD --trace ...)", str(path))
        program = load_program(wl, arch)
        trace = load_kernel(kernel_file, program, workload=wl.name)
        size = None
    else:
        trace = DynamicTrace.load(path)
        arch = trace.header["arch"]
        name = workload or trace.header.get("workload")
        if not name:
            raise TraceFormatError("the trace names no workload; name it (gpusim run WORKLOAD --trace ...)", str(path))
        wl = find_workload(name)
        program = load_program(wl, arch)
        trace.check_program(program, str(path))
        size = trace.header.get("size")
    if cfg.arch != arch:
        raise GpusimError(f"the trace is of {arch} code but card {cfg.name} is {cfg.arch}", str(path))
    result = simulate(program, trace, cfg, workload=wl.name, size=size, honour_control_codes=honour_control_codes,
                      window=window, footprint_bytes=input_bytes(wl, size) if size else None,
                      buffers=buffer_bytes(wl, size) if size else None)
    result.provenance = build(cfg, overrides, "detailed", honour_control_codes, program, wl, None)
    result.provenance["trace"] = {"path": str(path), "source": trace.header.get("source"),
                                  "ctas": len(trace.header.get("ctas", []))}
    return result


def _kernel_of(wl, arch: str) -> str | None:
    from gpusim.errors import GpusimError
    from gpusim.toolchain.listings import load_program

    try:
        return load_program(wl, arch).kernel
    except GpusimError:
        return None


def time_emulated(emu, wl, cfg, size: int, mode: str = "detailed", honour_control_codes: bool | None = None,
                  window=None, ctas: list[int] | None = None):
    """Build the trace of an emulator run and time it: of its CTAs `ctas` (default: all; sampled
    mode emulates a few more beside them for their addresses, `beside_ctas`)."""
    from gpusim.timing.gpu import simulate
    from gpusim.timing.sampling import KEEP_HEAD, KEEP_TAIL
    from gpusim.trace.elide import TraceTooShort
    from gpusim.trace import DynamicTrace

    # sampled mode fast-forwards over most main-loop iterations: the trace leaves most of them out
    # (the sampler makes up any it simulates from the kept ones); where that cannot be done (the
    # loop's iterations differ in length or their addresses do not advance by a fixed stride),
    # the full trace is built and timed
    keep = (KEEP_HEAD, KEEP_TAIL) if mode == "sampled" else None
    # (the grid's waves give the DRAM traffic, and from a warm L2 what the previous launch left)
    grid = grid_footprint(emu, wl, cfg, size) if mode == "sampled" else None
    while True:
        trace = DynamicTrace.from_emulator(emu, workload=wl.name, size=size, keep_loop=keep, ctas=ctas)
        try:
            return simulate(emu.program, trace, cfg, workload=wl.name, size=size,
                            honour_control_codes=honour_control_codes, window=window, mode=mode,
                            footprint_bytes=input_bytes(wl, size), grid=grid, buffers=buffer_bytes(wl, size))
        except TraceTooShort:
            if trace.elision is None:
                raise
            keep = None


def grid_footprint(emu, wl, cfg, size: int):
    """Sampled mode's footprints of the whole grid (`gpusim.timing.mem.grid`), from the emulated CTAs
    (those timed and those emulated beside them, `beside_ctas`) and, where their block indices do not
    tell a stride along every grid dimension, CTA 0 and the CTAs one step along the dimensions they
    miss (emulated here, on their own, for their addresses only); None where the footprints do not
    move rigidly with the block index."""
    from gpusim.emu.run import more_ctas
    from gpusim.timing.mem.grid import GridFootprint, access_kinds, extra_ctas
    from gpusim.timing.mem.l2 import fetch_sectors
    from gpusim.trace.footprint import block_asks, cta_footprints, global_lanes

    grid = emu.launch.grid
    kinds = access_kinds(emu.program, cfg)
    lanes = global_lanes(emu, kinds)
    footprints = cta_footprints(lanes)
    extra = extra_ctas(emu.ctas, grid)
    if extra:
        others = global_lanes(more_ctas(emu, extra), kinds)
        footprints.update(cta_footprints(others))
        if 0 not in emu.ctas:
            lanes = others  # (CTA 0's)
    fetch = fetch_sectors(cfg.memory)
    # CTA 0's requests: which blocks their misses fill alongside
    asks = block_asks(lanes, fetch) if fetch > 1 else None
    return GridFootprint.fit(footprints, kinds, grid, asks, fetch)


def beside_ctas(wl, size: int, cfg, ctas: list[int]) -> list[int]:
    """The CTAs sampled mode emulates beside `ctas`, in the same run, for their addresses alone:
    those `grid_footprint` needs besides them (CTA 0 and the CTAs one step along the grid dimensions
    the others do not span, `extra_ctas`). The emulator steps all warps at one PC together: a CTA more costs little there,
    a run of its own every step again (0.4-0.6 s of the H100 GEMMs at 4096). Nothing for a kernel with
    global atomics, whose CTAs beside the timed ones could change what theirs return: those are
    emulated after, on their own."""
    from gpusim.timing.mem.grid import extra_ctas
    from gpusim.toolchain.listings import load_program

    if any(ins.opcode in ATOMIC_OPCODES for ins in load_program(wl, cfg.arch).instructions):
        return []
    return extra_ctas(ctas, wl.geometry(size)[0])


ATOMIC_OPCODES = ("ATOM", "ATOMG", "RED", "REDG")  # global atomics and reductions


def streams(cfg, mode: str, window) -> bool:
    """Whether a run streams its trace (`compiled/stream.py`): detailed mode on the compiled engine
    (no timeline), from a cold L2 (a warm one is filled from the whole trace's sectors, `GPU._warm`)."""
    from gpusim.timing.gpu import GPU

    return mode == "detailed" and GPU.engine == "compiled" and window is None and cfg.memory.l2.initial != "warm"


# streamed detailed mode: records made per slice of emulation, about this many at a time, or fewer
# where the emulator's log of them reaches SLICE_LOG_BYTES (memory-bound kernels: 256 bytes of
# addresses per access; the emulator stops a batch there too). Smaller slices cost more stops and
# more copying of the records kept: 16 MB instead of 48 took simpleMultiply h100 16384's probe
# (bench/memory.py) from 1.92 to 1.82 GB, its arena 2.8 -> 5.7 s at 2048 (of 35-41 s)
SLICE_RECORDS = 1 << 21
SLICE_LOG_BYTES = 16 << 20


def time_streamed(wl, cfg, size: int, honour_control_codes: bool | None = None):
    """Detailed mode with the trace made as the timing run consumes it, group by group of CTAs and
    slice by slice of emulation: memory holds what the resident warps have still to run. A group is
    as many CTAs as SMs (the dispatcher's first wave gives CTA c to SM c mod SMs as its slot c div SMs:
    a group's CTAs hold the same slot and, under GTO, progress at about one rate, so that emulating
    them together leaves few records waiting; CTAs of one wave in one group left the younger slots'
    records piling up: 57 M at sgemm_maxas_64 h100 2048, 12 M this way). (what `verify` reads of the
    emulation, the inputs, the result)."""
    import numpy as np

    from gpusim.emu.run import build_launch
    from gpusim.timing.compiled.producer import processes
    from gpusim.timing.compiled.stream import EmulatorStream
    from gpusim.timing.gpu import GPU
    from gpusim.timing.occupancy import occupancy
    from gpusim.toolchain.listings import load_program
    from gpusim.trace.format import RECORD_DTYPE, DynamicTrace, make_header

    program = load_program(wl, cfg.arch)
    n_proc = processes()  # (two: the memory is shared with the emulating process)
    launch, params, memory, inputs = build_launch(wl, program, size, shared=n_proc == 2)
    ctas = list(range(launch.n_ctas))
    header = make_header(program, launch.grid, launch.block, launch.dynamic_shared_bytes, launch.warps_per_cta, ctas,
                         workload=wl.name, size=size, source="emulator", exec_mask_exact=True, active_mask_exact=True)
    empty = DynamicTrace(header, np.zeros(0, dtype=RECORD_DTYPE), np.zeros((0, 32), dtype=np.uint64),
                         np.zeros(0, dtype=np.uint8))
    gpu = GPU(program, empty, cfg, honour_control_codes, None, "detailed", input_bytes(wl, size))
    occ = occupancy(cfg, launch.threads_per_cta, program.registers,
                    program.shared_bytes - program.reserved_shared_bytes + launch.dynamic_shared_bytes)
    group = cfg.sm_count  # CTAs launched as the same slot of every SM: they run at about one rate
    warps = min(cfg.sm_count * occ.ctas_per_sm, len(ctas)) * launch.warps_per_cta  # resident at once
    gpu.records_stream = EmulatorStream(gpu, program, launch, params, memory, ctas, group, max(64, SLICE_RECORDS // warps),
                                        SLICE_LOG_BYTES, n_proc)
    result = gpu.run(wl.name, size)
    return gpu.records_stream.checked_run(), inputs, result


def _buffers(wl, size: int):
    """(argument, bytes) of each of the kernel's buffers."""
    from gpusim.workloads.spec import ELEMENT_BYTES

    for a in wl.args:
        if a.kind == "buffer":
            n = 1
            for d in wl.buffer_shape(a, size):
                n *= d
            yield a, n * ELEMENT_BYTES[a.dtype]


def buffer_bytes(wl, size: int) -> tuple[int, int]:
    """(bytes of all the kernel's buffers, bytes of those it may write: all but `const` ones)."""
    sizes = list(_buffers(wl, size))
    return sum(n for _, n in sizes), sum(n for a, n in sizes if not a.const)


def input_bytes(wl, size: int) -> int:
    """Bytes of the buffers the kernel reads (all but write-only outputs)."""
    return sum(n for a, n in _buffers(wl, size) if not (a.output and a.init.kind == "poison"))


# sampled mode simulates up to this many SMs side by side (sharing L2 and DRAM) while their traced
# threads x K stay within MULTI_SM_BUDGET: SMs that run in step contend for L2 fills and DRAM
# differently from one SM with its share of bandwidth (-4.9% on dgemm_unroll_db_128b h100 512 with
# one SM, +0.15% with four). The budget bounds the extra emulation: it is a speed limit, not fitted.
# (n stands in for the K loop's length; kernels with a fixed K, like the AA^T ones, are over-counted.)
MAX_SAMPLED_SMS = 4
MULTI_SM_BUDGET = 1 << 20


# waves per SM sampled mode simulates of a kernel without loops (a copy, a transpose, an elementwise
# kernel): its CTAs are short and cheap to emulate, and the first wave, which starts at once on an idle
# DRAM, says little about the steady state the further CTAs are extrapolated from (`GPU._cycles_per_cta`
# leaves it out when later CTAs ran with the SM full). A speed limit, not fitted.
STRAIGHT_WAVES = 8


def straight_line(program) -> bool:
    """Whether the kernel has no loop: no branch back to an earlier instruction (the branch to itself
    that follows EXIT is not one)."""
    from gpusim.trace.elide import backward_branches

    return all(program.instructions[i].srcs[-1].value == program.instructions[i].address
               for i in backward_branches(program))


def sampled_ctas(wl, size: int, cfg) -> list[int]:
    """The CTAs sampled mode simulates. The dispatcher fills SMs round robin, then each SM takes the
    next CTA as one finishes; with symmetric SMs, SM j runs CTAs j, j + S, j + 2S, ... (S = SM
    count). Per SM, all of them if they are at most three waves (3 x `ctas_per_sm`: an SM's last,
    partial wave runs with fewer CTAs, which the steady CTA throughput does not know), else the
    first two waves, or `STRAIGHT_WAVES` of a kernel without loops; for SMs 0 .. G - 1, G as many as
    the budget above allows."""
    from gpusim.timing.occupancy import occupancy
    from gpusim.toolchain.listings import load_program

    program = load_program(wl, cfg.arch)
    grid, block, dyn = wl.geometry(size)
    threads = block[0] * block[1] * block[2]
    occ = occupancy(cfg, threads, program.registers, program.shared_bytes - program.reserved_shared_bytes + dyn)
    total = grid[0] * grid[1] * grid[2]
    k = max(1, occ.ctas_per_sm)
    per_sm = len(range(0, total, cfg.sm_count))
    straight = straight_line(program)
    traced = per_sm if per_sm <= 3 * k else min(per_sm, (STRAIGHT_WAVES if straight else 2) * k)
    work = traced * threads * (1 if straight else size)  # (a kernel without loops: no K to stand in for)
    sms = max(1, min(MAX_SAMPLED_SMS, cfg.sm_count, total, MULTI_SM_BUDGET // work))
    return sorted(c for j in range(sms) for c in range(j, total, cfg.sm_count)[:traced])
