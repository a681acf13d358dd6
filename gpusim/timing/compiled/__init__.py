"""The compiled timing engine: detailed mode's SM issue loop and memory path as numba functions
over arrays (struct of arrays), for speed at real sizes.

It is the object model of gpusim/timing/sm.py and gpusim/timing/mem/ (whose docstrings state the
hardware rules and their sources) written a second time, function for function, so that both give
the same results to the last bit: tests/test_compiled_engine.py replays cases covering every path
on both, tests/test_sampled_engines.py sampled mode's. The object model stays the reference, and
runs what the compiled one does not: timelines (`gpusim viz`).

    lru.py     the sector LRUs (L1, L2, the dirty list) of mem/l2.py's OrderedDicts
    memory.py  mem/: the sub-partitions' MIO/LSU queues, L1, L2, DRAM
    sm.py      sm.py: scheduling, issue, dual issue, scoreboards, barriers, CTA residency
    loops.py   sampling.py's loop bookkeeping: moves, left-out loop iterations made up
    engine.py  the state arrays, simpy's event order across SMs, results for GPU._result
    stream.py  (Python) the records made as the run needs them: emulation slices, the record arena
    producer.py (Python) those slices made in a second process, on another core
    sampled.py (Python) sampled mode: the object model's sampler looking at the engine's SMs

numba compiles these on first use and caches the machine code beside the sources (__pycache__).
"""

import hashlib
import shutil
from pathlib import Path

import numba
from numba.core import config as _numba_config

# numba's cache knows only the file of the function it caches: `engine.simulate`, cached, would keep
# running the old machine code of sm.py and memory.py after they change (a silently stale model).
# So the cache lives in a folder named after a digest of every source the compiled code is built
# from (module constants are frozen into it too: static.py's kinds, stalls.py's reasons, sm.py's
# quantum) and numba's version. Set before the modules below are imported: numba picks the folder
# when a function is decorated.
_TIMING = Path(__file__).resolve().parent.parent
_PYTHON = ("stream.py", "sampled.py", "producer.py")  # (plain Python: nothing of theirs is compiled)
_SOURCES = sorted(p for p in (_TIMING / "compiled").glob("*.py") if p.name not in _PYTHON)
_SOURCES += [_TIMING / "static.py", _TIMING / "stalls.py", _TIMING / "sm.py", _TIMING / "sampling.py",
             _TIMING / "mem" / "lsu.py"]  # (its data-stage functions are compiled: compiled/memory.py)


def _digest() -> str:
    h = hashlib.sha256(numba.__version__.encode())
    for p in _SOURCES:
        h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()[:16]


def _cache_dir() -> Path:
    """Beside the sources where that is writable, else in the user's cache; older digests' folders
    there are removed (best effort)."""
    name = f"numba-{_digest()}"
    for base in (_TIMING / "compiled" / "__pycache__", Path.home() / ".cache" / "gpusim"):
        try:
            (base / name).mkdir(parents=True, exist_ok=True)
            probe = base / name / ".writable"
            probe.touch()
        except OSError:
            continue
        for old in base.glob("numba-*"):
            if old.name != name:
                shutil.rmtree(old, ignore_errors=True)
        return base / name
    return _TIMING / "compiled" / "__pycache__" / name


CACHE_DIR = _cache_dir()
_numba_config.CACHE_DIR = str(CACHE_DIR)
