"""Detailed mode's records made on a second core: the `EmulatorStream` (emulation, trace building,
columns) runs in a forked child process while the compiled engine runs in the parent.

The parent decides everything (`stream.run_streamed`): which slices (a group, its CTAs) are made, in
which order, and at which of the engine's stops their records join the arena; the child makes them
in the order asked and sends each `Segment` back. So what the engine sees at every stop is the same
whatever the speeds of the two processes, and the results are one process's, to the last bit
(tests/test_stream.py). The overlap comes from asking ahead: at each stop the parent asks for the
slices the next stop will likely need, and takes them there.

The launch's device memory is a shared mapping (`GlobalMemory(shared=True)`): the child's emulators
write it, the parent's output check reads it once the child has finished. The child is forked (not
spawned): it starts in milliseconds with the parent's program, launch and per-instruction facts; the
parent runs no threads then (gpusim asks OpenBLAS for one; numba's code here is not parallel).
Segments travel pickled through a queue, whose feeder thread sends them while the child goes on
emulating (sgemm_maxas_64 h100 1024: 60 segments, 516 MB pickled; dumps 0.21 s, loads 0.60 s, most
of it the parent's, which waits for the child anyway: shared memory would save the child about
0.2 s of its 5.5). An error in the child comes back and is raised again in the parent (the same exception:
the same one line); a child that dies is noticed within a second (`POLL_S`), never waited for.
"""

from __future__ import annotations

import os
import pickle
import queue
import signal
import time
from collections import deque

from gpusim.errors import GpusimError

POLL_S = 1.0  # how often a parent waiting for a segment looks whether the child is still alive


def processes() -> int:
    """How many processes a streamed run uses: $GPUSIM_WORKERS (1 or 2); by default 2 where the
    machine has two cores or more and the 'fork' start method (Linux, macOS), else 1. (Worker pools,
    `gpusim validate` and `gpusim study`, set 1 in their workers unless the user chose.)"""
    import multiprocessing as mp

    setting = os.environ.get("GPUSIM_WORKERS", "").strip()
    if setting:
        if setting not in ("1", "2"):
            raise GpusimError(f"GPUSIM_WORKERS must be 1 or 2, not '{setting}'", "environment")
        n = int(setting)
    else:
        n = 2 if (os.cpu_count() or 1) >= 2 else 1
    if n == 2 and ("fork" not in mp.get_all_start_methods() or mp.current_process().daemon):
        return 1  # (a daemonic process may not have children)
    return n


def start(stream):
    """The maker of `stream`'s slices: `Worker` (a child process) or `InProcess`, per `stream.processes`."""
    return Worker(stream) if stream.processes == 2 else InProcess(stream)


class InProcess:
    """Slices made in this process, each when taken."""

    ahead = False  # (asking ahead would gain nothing here)

    def __init__(self, stream):
        self.stream, self.asked = stream, deque()

    def ask(self, plan: list) -> None:
        self.asked.extend(plan)

    def take(self):
        g, ctas = self.asked.popleft()
        return self.stream.slice(g, ctas)

    def close(self, ok: bool = True) -> None:
        pass


class Worker:
    """Slices made by a forked child, in the order asked (`ask`: a list of (group, CTAs or None));
    `take` gives the next one. `close` ends the child: after a whole run (`ok`), with the stream's
    totals, warp-instruction count and stage seconds copied back; else at once."""

    ahead = True

    def __init__(self, stream):
        import multiprocessing as mp

        ctx = mp.get_context("fork")
        self.stream = stream
        self.requests, self.results = ctx.SimpleQueue(), ctx.Queue()
        self.proc = ctx.Process(target=_serve, args=(stream, self.requests, self.results, os.getpid()), daemon=True,
                                name="gpusim-emulation")
        self.proc.start()

    def ask(self, plan: list) -> None:
        self.requests.put(list(plan))

    def take(self):
        t = time.perf_counter()
        msg = self._next()
        self.stream.seconds["wait"] += time.perf_counter() - t
        if isinstance(msg, BaseException):
            self.close(ok=False)
            raise msg
        return msg

    def _next(self):
        while True:
            try:
                return self.results.get(timeout=POLL_S)
            except queue.Empty:
                if not self.proc.is_alive():
                    code = self.proc.exitcode
                    how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
                    raise GpusimError(f"the emulation process (pid {self.proc.pid}) ended without its records "
                                      f"({how}; out of memory?); GPUSIM_WORKERS=1 runs in one process",
                                      "detailed mode") from None

    def close(self, ok: bool = True) -> None:
        if not self.proc.is_alive() and self.proc.exitcode is not None:
            return
        if ok:
            self.requests.put(None)
            totals, warp_instructions, seconds = self.take()
            s = self.stream
            s.totals, s.warp_instructions = totals, warp_instructions
            for k in ("emulate", "trace", "columns"):
                s.seconds[k] += seconds[k]
            self.proc.join()
        else:
            self.proc.terminate()
            self.proc.join(5)
            if self.proc.is_alive():
                self.proc.kill()
                self.proc.join()
        self.results.close()


def _die_with(parent: int) -> None:
    """End this process when `parent` ends, however it ends (Linux's PR_SET_PDEATHSIG; elsewhere a
    parent killed outright leaves the child waiting for requests)."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # (it ended before that took effect)
        os._exit(1)


def _serve(stream, requests, results, parent: int) -> None:
    """The child: slices as asked, until None; then what the parent's stream lacks. An exception goes
    back in their place (as it is where it pickles, else as a RuntimeError with its traceback)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # (Ctrl-C reaches the process group: the parent acts)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with(parent)
    try:
        while (plan := requests.get()) is not None:
            for g, ctas in plan:
                results.put(stream.slice(g, ctas))
        results.put((stream.totals, stream.warp_instructions, stream.seconds))
    except BaseException as e:  # noqa: BLE001 (anything: the parent raises it)
        results.put(_portable(e))
    results.close()
    results.join_thread()


def _portable(e: BaseException) -> BaseException:
    try:
        back = pickle.loads(pickle.dumps(e))
        if str(back) == str(e):
            return back
    except Exception:  # noqa: BLE001
        pass
    import traceback

    return RuntimeError(f"in the emulation process: {''.join(traceback.format_exception(e))}")
