"""Clean interruption: Ctrl-C (SIGINT) or SIGTERM stops a command within a second or two.

The rule (the one `gpusim study` has followed from the start): the main process turns the signal
into an exception, ends its worker processes at once instead of waiting for them, keeps what is
already in the cache (every cache file is written whole, then renamed), prints one line and exits
130 (SIGINT) or 143 (SIGTERM). Workers ignore SIGINT (Ctrl-C in a terminal reaches the whole
process group; only the parent acts on it) and die on the SIGTERM their parent sends them.
"""

from __future__ import annotations

import concurrent.futures as cf
import signal

MESSAGE = "interrupted; finished results are kept in the cache, run the same command to resume"


class Interrupted(BaseException):
    """Ctrl-C or SIGTERM, raised in the main thread once `handle_signals` is installed. Not a
    KeyboardInterrupt, which the CLI framework would turn into a silent exit; like it, it is not an
    `Exception`, so per-case `except Exception` handlers let it through."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(int(signum))
        self.signum = int(signum)

    def __str__(self) -> str:
        return signal.Signals(self.signum).name


def leave(prefix: str, exc: BaseException, message: str = MESSAGE) -> None:
    """Print the one line and end the process now (130 / 143). Not `sys.exit`: the interpreter's
    shutdown would join the worker pool's threads, whose pipes the ended workers have closed, and
    under load that printed a thread's traceback after the line (tests/test_interrupt.py)."""
    import os
    import sys

    sys.stderr.write(f"{prefix}: {message}\n")
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(exit_code(exc))


def exit_code(exc: BaseException) -> int:
    """128 + the signal number, as a shell reports it: 130 for Ctrl-C, 143 for SIGTERM."""
    return 128 + int(getattr(exc, "signum", signal.SIGINT))


def _raise_interrupted(signum, frame):
    f = frame
    while f is not None:
        if "llvmlite" in f.f_code.co_filename:
            # inside numba's compiler, which llvmlite calls back into Python from C: an exception
            # raised here cannot unwind through it and the process crashes (a fresh checkout compiles
            # the engine in its first run); leave at once with the same line and code instead
            leave("gpusim", Interrupted(signum))
        f = f.f_back
    raise Interrupted(signum)


def handle_signals() -> None:
    """Make SIGINT and SIGTERM raise `Interrupted` in this process's main thread (no-op elsewhere)."""
    try:
        signal.signal(signal.SIGINT, _raise_interrupted)
        signal.signal(signal.SIGTERM, _raise_interrupted)
    except ValueError:  # not the main thread
        pass


def worker_init() -> None:
    """Initializer of worker processes: ignore Ctrl-C, die on SIGTERM (a forked worker inherits the
    parent's handlers otherwise), run detailed mode in one process (the pool already uses the cores)
    unless GPUSIM_WORKERS says otherwise."""
    import os

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.environ.setdefault("GPUSIM_WORKERS", "1")


def end_workers(pool: cf.ProcessPoolExecutor) -> None:
    """Stop `pool` without waiting for its running tasks: terminate its worker processes and reap them.
    (No future.cancel() first: the pool's manager thread marks the pending ones broken itself.)"""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False)
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    for proc in procs:
        proc.join(timeout=1.0)
        if proc.is_alive():
            proc.kill()


class WorkerPool:
    """`with WorkerPool(n) as pool:` a ProcessPoolExecutor whose workers are ended, not waited for, when
    the block is left by an exception (Ctrl-C, SIGTERM, an error). The workers start at once, before
    any progress-bar thread exists (forking a process with live threads can inherit a held lock)."""

    def __init__(self, workers: int | None = None):
        self.pool = cf.ProcessPoolExecutor(max_workers=workers, initializer=worker_init)
        try:
            self.pool.submit(int).result()
        except BaseException:
            end_workers(self.pool)
            raise

    def __enter__(self) -> cf.ProcessPoolExecutor:
        return self.pool

    def __exit__(self, kind, exc, tb) -> bool:
        if kind is None:
            self.pool.shutdown(wait=True)
        else:
            end_workers(self.pool)
        return False
