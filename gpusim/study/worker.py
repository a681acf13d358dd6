"""What runs on a worker (a local process or a Dask worker): get the trace, time one point.

Both functions take and return plain dicts (picklable, JSON-able) and never raise for a failure of
the point itself: the error comes back as ``{"status": "error", "error": "..."}`` so one bad point
does not sink the study.

Traces: emulation gives the same trace for every config point of a (workload, arch, size), so it is
done once. `prepare_trace` writes it with `DynamicTrace.save` to the study's cache folder (atomic
rename; the name is the trace key, which includes the listing's fingerprint); `run_point` loads it
from there, or, where that folder is not visible (a Dask worker on another machine), emulates it
itself. Either way the last few traces stay in the worker's memory.
"""

from __future__ import annotations

import os
import socket
import time
import traceback
from collections import OrderedDict
from pathlib import Path

_TRACES: "OrderedDict[str, tuple]" = OrderedDict()
_TRACES_KEPT = 4


def _emulate(workload: str, arch: str, size: int):
    from gpusim.emu.run import emulate
    from gpusim.trace import DynamicTrace
    from gpusim.workloads import find_workload

    wl = find_workload(workload)
    emu, _ = emulate(wl, arch, size)
    return emu.program, DynamicTrace.from_emulator(emu, workload=wl.name, size=size)


def _save_atomic(trace, path: Path) -> bool:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{time.time_ns()}.tmp")
        trace.save(tmp)
        os.replace(tmp, path)
        return True
    except OSError:
        return False


def get_trace(workload: str, arch: str, size: int, trace_key: str, trace_path: str | None):
    """(program, trace, how) for one (workload, arch, size): from memory, the disk cache, or emulation."""
    hit = _TRACES.get(trace_key)
    if hit is not None:
        _TRACES.move_to_end(trace_key)
        return hit[0], hit[1], "memory"
    from gpusim.errors import GpusimError
    from gpusim.toolchain.listings import load_program
    from gpusim.trace import DynamicTrace
    from gpusim.workloads import find_workload

    how = "emulated"
    program = trace = None
    if trace_path and Path(trace_path).is_file():
        try:
            program = load_program(find_workload(workload), arch)
            trace = DynamicTrace.load(trace_path, program)
            how = "disk"
        except GpusimError:
            program = trace = None  # stale or corrupt: emulate again
    if trace is None:
        program, trace = _emulate(workload, arch, size)
        if trace_path:
            _save_atomic(trace, Path(trace_path))
    _TRACES[trace_key] = (program, trace)
    while len(_TRACES) > _TRACES_KEPT:
        _TRACES.popitem(last=False)
    return program, trace, how


def prepare_trace(task: dict) -> dict:
    """Emulate one (workload, arch, size) and store its trace under task['trace_path']."""
    t0 = time.perf_counter()
    try:
        _, trace, how = get_trace(task["workload"], task["arch"], task["size"], task["trace_key"],
                                  task.get("trace_path"))
        return {"trace_key": task["trace_key"], "status": "ok", "how": how,
                "warp_instructions": trace.n_warp_instructions, "wall_s": time.perf_counter() - t0}
    except Exception as exc:  # noqa: BLE001 - reported, the points of this trace then fail with it
        return {"trace_key": task["trace_key"], "status": "error", "error": _describe(exc),
                "wall_s": time.perf_counter() - t0}


def _describe(exc: BaseException) -> str:
    from gpusim.errors import GpusimError

    if isinstance(exc, GpusimError):
        return str(exc).replace("\n", " ")
    tb = traceback.extract_tb(exc.__traceback__)
    at = f" (at {Path(tb[-1].filename).name}:{tb[-1].lineno})" if tb else ""
    return f"{type(exc).__name__}: {exc}{at}".replace("\n", " ")


def summarise(result) -> dict:
    """The parts of a SimResult a study keeps (no per-PC stalls, no timeline)."""
    return {"cycles": result.cycles, "time_s": result.time_s, "clock_mhz": result.clock_mhz, "ipc": result.ipc,
            "warp_instructions": result.warp_instructions, "sms_used": result.sms_used, "ctas": result.ctas,
            "waves": result.waves, "occupancy": result.occupancy, "stalls": result.stalls,
            "pipe_utilisation": result.pipe_utilisation, "shared": result.shared, "registers": result.registers,
            "memory": result.memory, "notes": result.notes}


def run_point(task: dict) -> dict:
    """Time one point. task: key, workload, arch, size, config_json, honour_control_codes, trace_key, trace_path."""
    t0 = time.perf_counter()
    record = {"key": task["key"], "host": socket.gethostname(), "pid": os.getpid()}
    try:
        from gpusim.config import GpuConfig
        from gpusim.timing.gpu import simulate

        cfg = GpuConfig.model_validate_json(task["config_json"])
        program, trace, how = get_trace(task["workload"], task["arch"], task["size"], task["trace_key"],
                                        task.get("trace_path"))
        t1 = time.perf_counter()
        result = simulate(program, trace, cfg, workload=task["workload"], size=task["size"],
                          honour_control_codes=task.get("honour_control_codes"))
        record.update(status="ok", error=None, result=summarise(result), trace=how,
                      sim_s=round(time.perf_counter() - t1, 3))
    except Exception as exc:  # noqa: BLE001 - a failed point is data, not a crash
        record.update(status="error", error=_describe(exc), result=None)
    record["wall_s"] = round(time.perf_counter() - t0, 3)
    record["finished_at"] = time.time()
    return record


def ignore_sigint() -> None:
    """Pool initializer: Ctrl-C is handled by the parent, which cancels and ends the workers (and a
    forked worker must not inherit the parent's SIGTERM handler: terminate() has to end it); detailed
    mode in one process (the pool already uses the cores) unless GPUSIM_WORKERS says otherwise."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.environ.setdefault("GPUSIM_WORKERS", "1")
