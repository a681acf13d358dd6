"""Streamed detailed mode's memory (issue 16): what it gives back and how it keeps its records must
not change a result. The arena compacts in place and grows (tests/test_stream.py runs both many
times); here the per-warp entries of finished CTAs go back to the system as the run passes them,
and the engine's 32-bit sector distances keep every sector."""

from __future__ import annotations

import mmap

import numpy as np
import pytest

from gpusim.config import apply_overrides, load_gpu
from gpusim.emu.run import emulate
from gpusim.timing import driver as D
from gpusim.workloads import find_workload


def test_released_warp_entries_change_nothing(monkeypatch):
    from gpusim.timing.compiled import stream as S

    monkeypatch.setattr(S, "RELEASE_WARPS", 1)
    monkeypatch.setattr(D, "SLICE_RECORDS", 500)
    released = []
    real = S.Arena.release

    def release(self, below):
        real(self, below)
        page = mmap.PAGESIZE
        first = (-(-self.end.ctypes.data // page) * page - self.end.ctypes.data) // 4  # (the first whole page's entry)
        whole = (self.end.ctypes.data + 4 * self.released) // page * page
        last = (whole - self.end.ctypes.data) // 4
        released.append((self.released, self.end[first:last].copy()))

    monkeypatch.setattr(S.Arena, "release", release)
    cfg = apply_overrides(load_gpu("h100"), {"sm_count": 4})
    wl = find_workload("copy_float4")
    _, _, streamed = D.time_streamed(wl, cfg, 256)  # 64 CTAs of 8 warps on 4 SMs: many waves
    emu, _ = emulate(wl, cfg.arch, 256)
    assert streamed.model_dump() == D.time_emulated(emu, wl, cfg, 256).model_dump()
    gone = max(released, key=lambda r: r[0])
    assert gone[0] > 4096 and len(gone[1]) >= 1024 and not gone[1].any()  # (whole pages given back read as zeros)


def test_sector_deltas_keep_every_sector():
    """The engine's rows of sectors (a 64-bit first sector per row, 32-bit distances): the same
    sectors back; a row that spans 2^31 sectors is an error, not a wrapped distance."""
    from gpusim.errors import GpusimError
    from gpusim.timing.gpu import sector_deltas

    base = 0x7F00_0000_0000 >> 5
    starts = np.array([0, 3, 3, 5])
    sectors = np.array([base, base + 4, base + 900_000, 0x7FFE0, 0x7FFE1])  # (a row of local memory's sectors)
    first, deltas = sector_deltas(starts, sectors)
    assert deltas.dtype == np.int32 and np.array_equal(np.repeat(first, np.diff(starts)) + deltas, sectors)
    with pytest.raises(GpusimError, match="spans"):
        sector_deltas(np.array([0, 2]), np.array([0x7FFE0, (1 << 48) >> 5]))  # a shared-window and a local address
