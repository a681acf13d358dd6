"""Kernel launch overhead on the local GPU: CUDA-event time and Nsight Compute's elapsed cycles of an
empty kernel (1 CTA of 32 threads) and of a 1024-CTA empty grid. What a kernel of no work costs,
the floor under every measured time. Usage: python3 bench/micro/launch_overhead.py [--ncu] > out.json
Needs cupy; prints one JSON object."""

import json
import shutil
import statistics
import subprocess
import sys

SRC = r'''
extern "C" __global__ void empty_kernel(int *p) { if (p != 0 && threadIdx.x == 1023) p[0] = 1; }
'''


def main():
    try:
        import cupy as cp
    except ImportError:
        print("launch_overhead.py: needs cupy and an NVIDIA GPU", file=sys.stderr)
        return 2

    mod = cp.RawModule(code=SRC, options=("-arch=sm_90",) if cp.cuda.Device().compute_capability == "90" else ())
    k = mod.get_function("empty_kernel")
    out = {"gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "cases": {}}
    for grid in (1, 1024):
        for _ in range(50):
            k((grid,), (32,), (0,))
        cp.cuda.Device().synchronize()
        times = []
        for _ in range(200):
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            k((grid,), (32,), (0,))
            b.record()
            b.synchronize()
            times.append(cp.cuda.get_elapsed_time(a, b))
        out["cases"][f"grid{grid}"] = {"median_ms": statistics.median(times), "min_ms": min(times)}
    if "--ncu" in sys.argv and shutil.which("ncu"):
        res = subprocess.run(["ncu", "--csv", "--page", "raw", "--clock-control", "none", "--metrics",
                              "gpc__cycles_elapsed.max,sm__cycles_elapsed.avg", "-k", "empty_kernel", "-c", "2",
                              sys.executable, __file__], capture_output=True, text=True)
        out["ncu_csv"] = res.stdout[-3000:]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    sys.exit(main())
