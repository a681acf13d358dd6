"""Run a study's points on a local process pool or a Dask cluster, with a resumable result cache.

Cache layout (under the output folder):

* ``cache/<key>.json``: one finished point. ``key`` is the content hash of the trace identity
  (listing fingerprint, workload, arch, size, workload-spec hash, input seed), the point's validated
  config JSON, the control-code switch, the mode, and a fingerprint of the model's source code
  (gpusim/timing, emu, trace, isa, workloads and the opcode tables): a point is recomputed only if
  one of those changed. Failed points are not cached (a rerun retries them).
* ``cache/traces/<workload>_<arch>_n<size>_<tracekey>.npz``: the emulated trace of each
  (workload, arch, size), shared by all its config points (`DynamicTrace.save`).

Each finished point is written as soon as it comes back, so an interrupted study resumes where it
stopped.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from gpusim import PACKAGE_DIR
from gpusim.errors import GpusimError
from gpusim.study.spec import Point, Study, content_hash, load_study
from gpusim.study import worker

CACHE_VERSION = 1
INPUT_SEED = 0  # gpusim.emu.run.emulate's default seed: the inputs every study trace is emulated with
_CODE_DIRS = ("timing", "emu", "trace", "isa", "workloads")
DASK_CONNECT_TIMEOUT_S = 10.0


@dataclass
class StudyOutcome:
    study: Study
    out_dir: Path
    records: list[dict]
    """One per point (aligned with study.points): the worker's record (status ok / error)."""
    computed: list[str] = field(default_factory=list)
    """Keys computed in this run (the rest came from the cache)."""
    cached: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    executor: str = "local"
    code_fingerprint: str = ""
    files: dict[str, str] = field(default_factory=dict)
    table: object = None  # pandas DataFrame

    @property
    def failures(self) -> list[dict]:
        return [{"index": p.index, "workload": p.workload, "size": p.size, "card": p.card, "coords": p.coords,
                 "key": p.key, "error": r.get("error")}
                for p, r in zip(self.study.points, self.records) if r.get("status") != "ok"]

    @property
    def ok(self) -> bool:
        return not self.failures


def code_fingerprint() -> str:
    """Hash of the model's source (what decides a point's result besides trace and config)."""
    pkg = PACKAGE_DIR
    files = sorted(p for d in _CODE_DIRS for p in (pkg / d).rglob("*.py"))
    files += sorted((pkg / "arch").glob("*.yaml"))
    h = []
    for p in files:
        h.append([str(p.relative_to(pkg)), content_hash(p.read_bytes().decode("utf-8", "replace"))])
    return content_hash(h)[:16]


def assign_keys(study: Study, cache_dir: Path) -> tuple[dict[str, dict], str]:
    """Set point.key / point.trace_key; returns (trace_key -> trace task (workload, arch, size, path),
    the code fingerprint)."""
    from gpusim.toolchain.listings import load_program
    from gpusim.workloads import find_workload

    code = code_fingerprint()
    programs: dict[tuple[str, str], str] = {}
    specs: dict[str, str] = {}
    traces: dict[str, dict] = {}
    for p in study.points:
        if (p.workload, p.arch) not in programs:
            wl = find_workload(p.workload)
            programs[(p.workload, p.arch)] = load_program(wl, p.arch).fingerprint()
            specs[p.workload] = content_hash(Path(wl.spec_path).read_text())
        ident = {"program": programs[(p.workload, p.arch)], "workload": p.workload, "arch": p.arch, "size": p.size,
                 "spec": specs[p.workload], "seed": INPUT_SEED}
        p.trace_key = content_hash({"trace": ident, "code": code})[:24]
        p.key = content_hash({"v": CACHE_VERSION, "trace": ident, "config": json.loads(p.config_json),
                              "honour_control_codes": p.honour_control_codes, "mode": study.spec.mode,
                              "code": code})[:32]
        if p.trace_key not in traces:
            traces[p.trace_key] = {"workload": p.workload, "arch": p.arch, "size": p.size, "trace_key": p.trace_key,
                                   "trace_path": str((cache_dir / "traces" /
                                                      f"{p.workload}_{p.arch}_n{p.size}_{p.trace_key}.npz").resolve())}
    return traces, code


def _point_task(p: Point, traces: dict[str, dict], mode: str) -> dict:
    t = traces[p.trace_key]
    return {"key": p.key, "workload": p.workload, "arch": p.arch, "size": p.size, "config_json": p.config_json,
            "honour_control_codes": p.honour_control_codes, "mode": mode, "trace_key": p.trace_key,
            "trace_path": t["trace_path"]}


def _write_json_atomic(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(obj, indent=1, default=str))
    os.replace(tmp, path)


def read_cached(cache_dir: Path, key: str) -> dict | None:
    path = cache_dir / f"{key}.json"
    try:
        rec = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or rec.get("key") != key or rec.get("status") != "ok":
        return None
    return rec


# ---- executors ---------------------------------------------------------------------------------------
class _LocalPool:
    name = "local"

    def __init__(self, workers: int | None):
        self.workers = workers or os.cpu_count() or 1
        self.pool = cf.ProcessPoolExecutor(max_workers=self.workers, initializer=worker.ignore_sigint)
        self.closed = False
        # start the workers now (a fork pool starts them all on the first submit), before the progress
        # bar's refresh thread exists: forking a process with live threads can inherit a held lock
        self.pool.submit(int).result()

    def submit(self, fn, arg):
        return self.pool.submit(fn, arg)

    def wait_first(self, pending):
        done, rest = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
        return done, rest

    def abort(self, pending) -> None:
        # no future.cancel() here: the pool's manager thread then marks the pending ones broken itself
        # (cancelling them first trips InvalidStateError in Python 3.11's terminate_broken)
        procs = list((getattr(self.pool, "_processes", None) or {}).values())
        self.pool.shutdown(wait=False)
        self.closed = True
        for proc in procs:  # the worker processes this pool started
            if proc.is_alive():
                proc.terminate()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.pool.shutdown(wait=True)


def probe_scheduler(address: str, timeout: float) -> None:
    """Connect to `address`, do Dask's comm handshake and ask it who it is, all within `timeout`
    seconds: raises unless a Dask scheduler answers. (dask.distributed.Client's own timeout covers the
    TCP connect only: a port that accepts connections but never speaks Dask hangs it for minutes.)"""
    import asyncio

    from distributed.comm import connect

    async def identity():
        comm = await connect(address, timeout=timeout)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    try:
        reply = asyncio.run(asyncio.wait_for(identity(), timeout))
    except asyncio.TimeoutError:
        raise TimeoutError("no Dask handshake (is it a Dask scheduler?)") from None
    except MemoryError:  # the answer's first bytes, read as a Dask frame length, were something else
        raise ValueError("the answer is not Dask's protocol (is it a Dask scheduler?)") from None
    kind = reply.get("type") if isinstance(reply, dict) else None
    if kind != "Scheduler":
        raise ValueError(f"it answered as {kind or type(reply).__name__!r}, not as a Dask scheduler")


class _DaskPool:
    name = "dask"

    def __init__(self, address, timeout: float = DASK_CONNECT_TIMEOUT_S):
        try:
            from dask.distributed import Client
        except ImportError:
            raise GpusimError("--dask needs dask[distributed] (pip install 'dask[distributed]')") from None
        self.own = not isinstance(address, Client)
        self.closed = False
        self._ac = None
        if not self.own:
            self.client = address
        else:
            try:
                probe_scheduler(address, timeout)
                self.client = Client(address, timeout=timeout, set_as_default=False)
            except Exception as exc:  # noqa: BLE001 - OSError, TimeoutError, ValueError for a bad address
                reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise GpusimError(f"cannot reach the Dask scheduler at '{address}' within {timeout:g} s "
                                  f"({type(exc).__name__}: {reason})") from None
        self.workers = len(self.client.scheduler_info().get("workers", {}))
        self.address = getattr(self.client, "scheduler", None) and self.client.scheduler.address

    def submit(self, fn, arg):
        from dask.distributed import as_completed

        fut = self.client.submit(fn, arg, pure=False)
        if self._ac is None:
            self._ac = as_completed([fut], loop=self.client.loop)
        else:
            self._ac.add(fut)
        return fut

    def wait_first(self, pending):
        first = next(self._ac)  # blocks until one finishes
        done = {first, *self._ac.next_batch(block=False)}
        return done, set(pending) - done

    def abort(self, pending) -> None:
        try:
            self.client.cancel(list(pending))
        finally:
            self.close()

    def close(self) -> None:
        if self.own and not self.closed:
            self.client.close()
        self.closed = True


def _result_of(fut, fallback: dict) -> dict:
    try:
        return fut.result()
    except Exception as exc:  # noqa: BLE001 - a worker that died, a cancelled future
        return dict(fallback, status="error", error=f"worker failed: {type(exc).__name__}: {exc}".replace("\n", " "),
                    result=None)


# ---- the study ----------------------------------------------------------------------------------------
def default_out_dir(study: Study) -> Path:
    return Path("out") / "studies" / study.spec.name


def run_study(study: Study | str | Path, out_dir: str | Path | None = None, dask=None, workers: int | None = None,
              progress: bool = True, console=None, write: bool = True,
              dask_timeout: float = DASK_CONNECT_TIMEOUT_S) -> StudyOutcome:
    """Run (or resume) a study; write the table, plots and summary to `out_dir` unless write=False.

    dask: None (local process pool of `workers` processes, default all cores), a scheduler address
    ('tcp://host:8786') or a `dask.distributed.Client`; an address that does not answer within
    `dask_timeout` seconds is a GpusimError (one line), raised before anything runs.
    """
    t_start = time.perf_counter()
    if not isinstance(study, Study):
        study = load_study(study)
    out = Path(out_dir) if out_dir is not None else default_out_dir(study)
    cache_dir = out / "cache"
    traces, code = assign_keys(study, cache_dir)

    records: dict[str, dict] = {}
    for p in study.points:
        if p.key not in records:
            rec = read_cached(cache_dir, p.key)
            if rec is not None:
                records[p.key] = rec
    cached = sorted(records)
    todo: dict[str, Point] = {}
    for p in study.points:
        if p.key not in records and p.key not in todo:
            todo[p.key] = p
    by_trace: dict[str, list[Point]] = {}
    for p in todo.values():
        by_trace.setdefault(p.trace_key, []).append(p)
    computed: list[str] = []
    executor_name = "dask" if dask is not None else "local"

    # connect to Dask even when everything is cached: a wrong address is an error either way
    pool = _DaskPool(dask, dask_timeout) if dask is not None else None
    try:
        if todo:
            if pool is None:
                pool = _LocalPool(workers)
            executor_name = pool.name
            _execute(pool, study, todo, by_trace, traces, records, computed, cached, cache_dir, code,
                     _progress(console, enabled=progress))
    finally:
        if pool is not None:
            pool.close()

    outcome = StudyOutcome(study=study, out_dir=out, records=[records[p.key] for p in study.points],
                           computed=computed, cached=cached, executor=executor_name, code_fingerprint=code)
    outcome.wall_s = time.perf_counter() - t_start
    from gpusim.study.report import build_table, write_outputs

    outcome.table = build_table(study, outcome.records)
    if write:
        outcome.files = write_outputs(outcome)
    return outcome


def _execute(pool, study: Study, todo: dict, by_trace: dict, traces: dict, records: dict, computed: list,
             cached: list, cache_dir: Path, code: str, prog) -> None:
    """Submit the missing traces, then each trace's points as it arrives; store every point as it returns."""
    mode = study.spec.mode
    pending: dict = {}
    try:
        with prog:
            task_id = prog.add_task(f"{study.spec.name}: {len(todo)} points to compute "
                                    f"({len(cached)} cached, {pool.workers} workers)",
                                    total=len(set(p.key for p in study.points)), completed=len(cached))
            for tkey, pts in by_trace.items():
                t = traces[tkey]
                if Path(t["trace_path"]).is_file():
                    for p in pts:
                        pending[pool.submit(worker.run_point, _point_task(p, traces, mode))] = ("point", p)
                else:
                    pending[pool.submit(worker.prepare_trace, t)] = ("trace", tkey)
            while pending:
                done, _ = pool.wait_first(set(pending))
                for fut in done:
                    kind, what = pending.pop(fut)
                    if kind == "trace":
                        res = _result_of(fut, {"trace_key": what})
                        for p in by_trace[what]:
                            if res.get("status") == "ok":
                                pending[pool.submit(worker.run_point, _point_task(p, traces, mode))] = ("point", p)
                            else:
                                records[p.key] = {"key": p.key, "status": "error", "result": None,
                                                  "error": f"emulation failed: {res.get('error')}"}
                                prog.advance(task_id)
                        continue
                    p = what
                    rec = _result_of(fut, {"key": p.key})
                    rec["point"] = {"workload": p.workload, "size": p.size, "card": p.card, "overrides": p.overrides,
                                    "honour_control_codes": p.honour_control_codes}
                    rec["code_fingerprint"] = code
                    rec["provenance"] = _provenance(p, mode)
                    records[p.key] = rec
                    computed.append(p.key)
                    if rec.get("status") == "ok":
                        _write_json_atomic(cache_dir / f"{p.key}.json", rec)
                    prog.advance(task_id)
    except BaseException:
        pool.abort(list(pending))
        raise


def _provenance(p: Point, mode: str) -> dict:
    """What a point was computed from (the resolved config itself is the point's config_json)."""
    from gpusim.timing.provenance import code_version, config_hash

    return {"code": code_version(), "config_hash": config_hash(json.loads(p.config_json)), "overrides": p.overrides,
            "mode": mode, "honour_control_codes": p.honour_control_codes}


class _NoProgress:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False

    def add_task(self, *a, **k):
        return 0

    def advance(self, *a, **k):
        pass


def _progress(console, enabled: bool):
    if not enabled:
        return _NoProgress()
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
        TimeRemainingColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TimeRemainingColumn(), console=console or Console(stderr=True), transient=False)
