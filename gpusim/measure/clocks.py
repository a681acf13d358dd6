"""GPU clocks during timing, and the environment a measurement was taken in.

Kernel time in ms only converts to cycles (what the simulator predicts) through the SM clock, which
boosts and throttles on its own; we never set it (no nvidia-smi -lgc/-ac/-pm/-r). Instead one
`nvidia-smi --query-gpu=... -lms 100` process samples clocks.sm, clocks.mem, temperature and power
for the whole session, each sample stamped with the host's monotonic clock, and each timing window
takes the samples that fall inside it.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time

QUERY = "clocks.sm,clocks.mem,temperature.gpu,power.draw"
FIELDS = ("sm_mhz", "mem_mhz", "temp_c", "power_w")


def _num(text: str) -> float | None:
    try:
        return float(text.strip())
    except ValueError:  # '[N/A]', '[Not Supported]'
        return None


def parse_sample(line: str) -> dict | None:
    parts = [p for p in line.strip().split(",")]
    if len(parts) != len(FIELDS):
        return None
    vals = [_num(p) for p in parts]
    return None if all(v is None for v in vals) else dict(zip(FIELDS, vals))


def summarize(samples: list[dict]) -> dict:
    """{field: {min, median, max}} over samples, plus the sample count."""
    out: dict = {"samples": len(samples)}
    for f in FIELDS:
        vals = [s[f] for s in samples if s.get(f) is not None]
        out[f] = ({"min": min(vals), "median": statistics.median(vals), "max": max(vals)} if vals else None)
    return out


class ClockSampler:
    """Background nvidia-smi sampler; `window(t0, t1)` summarizes the samples taken in [t0, t1]."""

    def __init__(self, gpu_index: str | None = None, period_ms: int = 100):
        self.samples: list[tuple[float, dict]] = []
        self.error: str | None = None
        self._proc = None
        smi = shutil.which("nvidia-smi")
        if not smi:
            self.error = "nvidia-smi not found"
            return
        gpu = gpu_index if gpu_index is not None else os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0] or "0"
        self.command = [smi, f"--query-gpu={QUERY}", "--format=csv,noheader,nounits", f"--loop-ms={period_ms}", "-i", gpu]
        try:
            self._proc = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError as exc:
            self.error = f"nvidia-smi: {exc}"
            return
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        for line in self._proc.stdout:
            s = parse_sample(line)
            if s:
                self.samples.append((time.monotonic(), s))

    def wait_first(self, timeout: float = 3.0) -> bool:
        end = time.monotonic() + timeout
        while not self.samples and time.monotonic() < end and self._proc and self._proc.poll() is None:
            time.sleep(0.02)
        return bool(self.samples)

    def window(self, t0: float, t1: float, slack: float = 0.05, wait: float = 2.0) -> dict:
        """Summary of the samples in [t0, t1]; a window shorter than the period takes the first sample after
        t0, waiting up to `wait` seconds for it (a loaded host can start nvidia-smi late)."""
        inside = [s for t, s in self.samples if t0 - slack <= t <= t1 + slack]
        note = "samples inside the timing window"
        if not inside:  # window shorter than the period: the first sample after it started
            end = time.monotonic() + wait
            while (not self.samples or self.samples[-1][0] < t0) and time.monotonic() < end \
                    and self._proc and self._proc.poll() is None:
                time.sleep(0.02)
            after = [s for t, s in self.samples if t >= t0]
            inside, note = after[:1], "no sample inside the window; first sample after it"
        out = summarize(inside)
        out["note"] = note if inside else (self.error or "no samples")
        return out

    def stop(self):
        if self._proc and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()


def gpu_info() -> dict:
    """GPU name, driver and maximum clocks from nvidia-smi (None where unavailable)."""
    keys = ("name", "driver_version", "clocks.max.sm", "clocks.max.mem")
    smi = shutil.which("nvidia-smi")
    info = dict.fromkeys(keys)
    if not smi:
        return info
    try:
        out = subprocess.run([smi, f"--query-gpu={','.join(keys)}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=30).stdout.strip().splitlines()
    except (OSError, subprocess.TimeoutExpired):
        return info
    if out:
        info.update(zip(keys, (p.strip() for p in out[0].split(","))))
    return info


def environment(nvcc_version: str | None, ncu_version: str | None, cupy_version: str | None) -> dict:
    return {"gpu": gpu_info(), "nvcc": nvcc_version, "ncu": ncu_version, "cupy": cupy_version,
            "python": sys.version.split()[0], "platform": platform.platform(), "hostname": socket.gethostname(),
            "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "argv": " ".join([sys.executable, "-m", "gpusim.measure.run", *sys.argv[1:]])}
