"""The device interface the harness uses, and its cupy implementation.

Everything GPU-specific sits behind `Device` (upload/write/download flat numpy buffers, load a cubin
kernel, launch, time launches), so the rest of gpusim.measure is tested offline with a numpy fake.

Timing (`time_launches`): each launch is bracketed by its own pair of CUDA events, all enqueued
back to back behind the warm-up launches so the GPU never waits on the host between launches; the
per-launch elapsed times are read after one final synchronize. The buffers are the same on every
launch, so L2 is warm for sizes that fit in it (50 MB on H100).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np


class Device(Protocol):
    name: str

    def upload(self, host: np.ndarray) -> Any: ...
    def write(self, buf: Any, host: np.ndarray) -> None: ...
    def download(self, buf: Any) -> np.ndarray: ...
    def load_kernel(self, cubin: str, mangled: str, shared_bytes: int) -> Any: ...
    def launch(self, kernel: Any, grid: tuple, block: tuple, shared: int, args: tuple) -> None: ...
    def synchronize(self) -> None: ...
    def time_launches(self, kernel: Any, grid: tuple, block: tuple, shared: int, args: tuple,
                      warmup: int, reps: int) -> tuple[list[float], float]: ...
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
        if shared_bytes > 48 * 1024:  # opt in to large dynamic shared memory
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

    def time_launches(self, kernel, grid, block, shared, args, warmup, reps):
        """(per-launch ms list, ms from first start to last end): `warmup` untimed launches, then `reps` timed."""
        Event, kernel = self.cp.cuda.Event, kernel[0]
        grid, block, shared = tuple(grid), tuple(block), int(shared)
        self.synchronize()
        for _ in range(warmup):
            kernel(grid, block, args, shared_mem=shared)
        starts = [Event() for _ in range(reps)]
        ends = [Event() for _ in range(reps)]
        for s, e in zip(starts, ends):
            s.record()
            kernel(grid, block, args, shared_mem=shared)
            e.record()
        ends[-1].synchronize()
        elapsed = self.cp.cuda.get_elapsed_time
        return [float(elapsed(s, e)) for s, e in zip(starts, ends)], float(elapsed(starts[0], ends[-1]))

    def release(self) -> None:
        """Return pooled device memory (before the next size, and before an ncu child runs)."""
        self.synchronize()
        self.cp.get_default_memory_pool().free_all_blocks()
        self.cp.get_default_pinned_memory_pool().free_all_blocks()
