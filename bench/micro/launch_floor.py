"""How a kernel's CUDA-event time relates to its duration on the GPU, timed the way the validation
harness times (gpusim/measure/backend.py `time_launches`: each launch bracketed by its own pair of
events, all enqueued back to back behind warm-up launches, read after one synchronize).

Kernels: an empty one, and `spin`, whose threads wait until clock64() has advanced by N cycles
(N = 0 .. 160k; 1 CTA and 132 CTAs of 32 threads). For each case: the median and min event time
over `reps` launches and, with --ncu, Nsight Compute's gpu__time_duration of the same launch.
What it measures: the floor under a short kernel's event time (launches cannot come faster) and
the gap a long kernel's event time adds to its duration. Each case is timed both ways the harness
can (gpusim.measure.backend.CupyDevice.time_launches): host-paced (`median_ms`, ...) and queued
behind a blocking kernel (`queued_median_ms`, ...), where the host's pace should not show. Usage:
    python3 bench/micro/launch_floor.py [--ncu] > out.json        (needs cupy and a GPU)
"""

import json
import shutil
import statistics
import subprocess
import sys

SRC = r'''
extern "C" __global__ void empty_kernel(int *p) { if (p != 0 && threadIdx.x == 1023) p[0] = 1; }
extern "C" __global__ void spin(long long cycles, int *p) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
    if (p != 0 && threadIdx.x == 1023) p[0] = 1;
}
'''
SPINS = (0, 1000, 2000, 4000, 8000, 12000, 16000, 24000, 32000, 64000, 160000)
GRIDS = (1, 132)


def cases():
    yield "empty_g1", "empty_kernel", 1, None
    for g in GRIDS:
        for n in SPINS:
            yield f"spin{n}_g{g}", "spin", g, n


def main():
    try:
        import cupy as cp
    except ImportError:
        print("launch_floor.py: needs cupy and an NVIDIA GPU", file=sys.stderr)
        return 2
    import numpy as np

    from gpusim.measure.backend import CupyDevice

    device = CupyDevice()
    mod = cp.RawModule(code=SRC, options=("-arch=sm_90",))
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    reps = 200
    out = {"gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "reps": reps,
           "method": "events around each launch, enqueued back to back after 20 warm-up launches "
                     "(gpusim.measure.backend.time_launches); queued_*: the same, in batches behind a blocking "
                     "kernel (time_launches(queued=True))", "cases": {}}
    for name, fn, grid, n in cases():
        if only is not None and name != only:
            continue
        k = mod.get_function(fn)
        args = (cp.intp(0),) if n is None else (np.int64(n), cp.intp(0))
        if only is not None:  # under ncu: one launch of this case
            k((grid,), (32,), args)
            cp.cuda.Device().synchronize()
            return 0
        row = out["cases"][name] = {"grid": grid, "spin_cycles": n}
        for prefix, queued in (("", False), ("queued_", True)):
            times, _ = device.time_launches((k, k), (grid,), (32,), 0, args, 20, reps, queued=queued)
            row.update({prefix + "median_ms": statistics.median(times), prefix + "min_ms": min(times),
                        prefix + "p90_ms": sorted(times)[int(0.9 * reps)]})
    if "--ncu" in sys.argv and shutil.which("ncu"):
        for name, *_ in cases():
            res = subprocess.run(["ncu", "--csv", "--page", "raw", "--clock-control", "none", "--metrics",
                                  "gpu__time_duration.sum,gpc__cycles_elapsed.max,smsp__cycles_elapsed.avg.per_second",
                                  "-c", "1", sys.executable, __file__, "--only", name],
                                 capture_output=True, text=True)
            out["cases"][name]["ncu_csv"] = res.stdout[-1500:]
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
