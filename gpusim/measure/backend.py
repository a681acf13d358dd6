"""The device interface the harness uses, and its cupy implementation.

Everything GPU-specific sits behind `Device` (upload/write/download flat numpy buffers, load a cubin
kernel, launch, time launches), so the rest of gpusim.measure is tested offline with a numpy fake.

Timing (`time_launches`): each launch is bracketed by its own pair of CUDA events, all enqueued
back to back behind the warm-up launches so the GPU never waits on the host between launches; the
per-launch elapsed times are read after one final synchronize. The buffers are the same on every
launch, so L2 is warm for sizes that fit in it (50 MB on H100).

Launches cannot be enqueued faster than the host makes them (cupy from Python: one launch and two
event records every 8-11 us on the H100 host, validation/h100/micro/launch_floor_h100.json), so a
kernel shorter than that is timed by the host: its event time is the host's pace, which moved from
10 us to 6 us between our runs. `queued` timing takes the host out: each batch of timed launches is
enqueued behind a kernel that holds the GPU (one thread spinning on clock64()) for longer than the
host needs to enqueue the batch, so the GPU finds them all waiting, as NVBench's blocking kernel does.
"""

from __future__ import annotations

import functools
from typing import Any, Protocol

import numpy as np


# the kernel `CupyDevice.prime` launches before an ncu child's first profiled launch
PRIME_KERNEL = "gpusim_prime"


class Device(Protocol):
    name: str

    def upload(self, host: np.ndarray) -> Any: ...
    def write(self, buf: Any, host: np.ndarray) -> None: ...
    def download(self, buf: Any) -> np.ndarray: ...
    def load_kernel(self, cubin: str, mangled: str, shared_bytes: int) -> Any: ...
    def launch(self, kernel: Any, grid: tuple, block: tuple, shared: int, args: tuple) -> None: ...
    def synchronize(self) -> None: ...
    def prime(self) -> None: ...
    def time_launches(self, kernel: Any, grid: tuple, block: tuple, shared: int, args: tuple,
                      warmup: int, reps: int, queued: bool = False) -> tuple[list[float], float]: ...
    def release(self) -> None: ...


class CupyDevice:
    """`Device` on the current CUDA device through cupy (imported here only)."""

    def __init__(self, device_id: int = 0):
        import cupy

        self.cp = cupy
        self.dev = cupy.cuda.Device(device_id)
        self.dev.use()
        props = cupy.cuda.runtime.getDeviceProperties(device_id)
        name = props.get("name", b"?")
        self.name = name.decode() if isinstance(name, bytes) else str(name)
        self.pci_bus_id = getattr(self.dev, "pci_bus_id", None)
        self.version = cupy.__version__
        self._modules: dict[str, Any] = {}

    def upload(self, host: np.ndarray):
        return self.cp.asarray(host)  # a host-to-device copy: launches no kernel (keeps ncu's -c 1 honest)

    def write(self, buf, host: np.ndarray) -> None:
        buf.set(np.ascontiguousarray(host, dtype=buf.dtype))

    def download(self, buf) -> np.ndarray:
        return self.cp.asnumpy(buf)

    def load_kernel(self, cubin: str, mangled: str, shared_bytes: int):
        """The kernel as a cupy RawKernel (attributes) plus its raw Function (cheapest to launch)."""
        if cubin not in self._modules:
            self._modules[cubin] = self.cp.RawModule(path=cubin)
        raw = self._modules[cubin].get_function(mangled)
        if shared_bytes > 0:  # opt in to the dynamic shared memory asked for: beside the kernel's static
            # shared memory a total over 48 KiB needs it (49,152 dynamic + 4,096 static bytes failed to launch)
            raw.max_dynamic_shared_size_bytes = int(shared_bytes)
        return getattr(raw, "kernel", raw), raw

    @staticmethod
    def kernel_attributes(kernel) -> dict:
        """Registers, static shared/local bytes... as the driver reports them (None where unknown)."""
        keys = ("num_regs", "shared_size_bytes", "local_size_bytes", "const_size_bytes",
                "max_threads_per_block", "binary_version", "ptx_version")
        out = {}
        for k in keys:
            try:
                out[k] = int(getattr(kernel[1], k))
            except Exception:  # attribute absent in this cupy version
                out[k] = None
        return out

    def launch(self, kernel, grid, block, shared, args) -> None:
        kernel[0](tuple(grid), tuple(block), args, shared_mem=int(shared))

    def synchronize(self) -> None:
        self.cp.cuda.Device().synchronize()

    QUEUE_BATCH = 64  # timed launches enqueued behind one blocking kernel
    BLOCK_CYCLES = 8_000_000  # its spin: 4 ms at 1980 MHz, against ~0.7 ms to enqueue a batch

    def time_launches(self, kernel, grid, block, shared, args, warmup, reps, queued=False):
        """(per-launch ms list, ms from first start to last end, summed over batches when `queued`):
        `warmup` untimed launches, then `reps` timed; `queued`: in batches behind a blocking kernel
        (see the module's docstring)."""
        Event, kernel = self.cp.cuda.Event, kernel[0]
        grid, block, shared = tuple(grid), tuple(block), int(shared)
        self.synchronize()
        for _ in range(warmup):
            kernel(grid, block, args, shared_mem=shared)
        starts = [Event() for _ in range(reps)]
        ends = [Event() for _ in range(reps)]
        batch = self.QUEUE_BATCH if queued else reps
        elapsed, span = self.cp.cuda.get_elapsed_time, 0.0
        for first in range(0, reps, batch):
            last = min(reps, first + batch) - 1
            if queued:
                self._blocker((1,), (1,), (np.int64(self.BLOCK_CYCLES),))
            for s, e in zip(starts[first:last + 1], ends[first:last + 1]):
                s.record()
                kernel(grid, block, args, shared_mem=shared)
                e.record()
            ends[last].synchronize()
            span += float(elapsed(starts[first], ends[last]))
        return [float(elapsed(s, e)) for s, e in zip(starts, ends)], span

    def prime(self) -> None:
        """Launch `PRIME_KERNEL` (one thread, no work) and wait for it. Nsight Compute's first profiled
        launch in a process starts with about 2.2 MiB of dirty data in L2 that its cache flush left (a
        read-only kernel of 64 MiB writes 2.2 MiB back to DRAM as the first profiled kernel, 0.05 after),
        which a kernel near L2's capacity writes back as its own (copy of 16 MiB: 0.98 MiB first,
        0.06-0.25 after; validation/h100/micro/dram_first_h100.json, dram_fresh_h100.json). ncu profiles
        this launch too (`ncu.command`) and its row is dropped."""
        if "prime" not in self._modules:
            src = f'extern "C" __global__ void {PRIME_KERNEL}() {{ }}'
            self._modules["prime"] = self.cp.RawModule(code=src).get_function(PRIME_KERNEL)
        self._modules["prime"]((1,), (1,), ())
        self.synchronize()

    @functools.cached_property
    def _blocker(self):
        """The blocking kernel: one thread spinning on clock64() for its argument's cycles."""
        src = 'extern "C" __global__ void gpusim_blocker(long long cycles) {' \
              ' long long t0 = clock64(); while (clock64() - t0 < cycles) { } }'
        return self.cp.RawModule(code=src).get_function("gpusim_blocker")

    def release(self) -> None:
        """Return pooled device memory (before the next size, and before an ncu child runs)."""
        self.synchronize()
        self.cp.get_default_memory_pool().free_all_blocks()
        self.cp.get_default_pinned_memory_pool().free_all_blocks()
