#!/usr/bin/env python3
"""gpusim H100 microbenchmark: a DRAM load's latency against how busy DRAM is (dram_load.cu beside this
file says what runs). gpusim's DRAM is one bandwidth queue with a fixed latency
(`memory.dram.latency_cycles`): a load waits longer only once the queue is booked past its turn. This
measures what the H100's loads wait at 0-100% of DRAM's rate.

    python3 bench/micro/dram_load.py --out RESULTS.json     # on the GPU machine (cupy, nvcc), ~10 s
    python3 bench/micro/dram_load.py --dry-run              # compile only

Per case (`gap`: cycles each streaming thread waits after each four 16-byte loads; None: no streamers):
cycles per chase load (median of 3 launches) and the streamers' DRAM rate meanwhile (bytes they read /
the chase's time at the clock nvidia-smi reports). `copy_cases`: the same with streamers that copy
(`chase_beside_copy`: each float4 read is written back to the buffer's other half; the rate counts both).
"""
from __future__ import annotations

import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run_micro import micro_main  # noqa: E402

SRC = os.path.join(HERE, "dram_load.cu")
GIB = 1 << 30
HOP = 64 << 10  # path nodes 64 KiB apart: each load a new line (and DRAM row)
CHASE = 2048
GAPS = [None, 32000, 16000, 8000, 4000, 2000, 1000, 500, 0]  # None: no streamers


def measure(cubin: str, kernel: str = "chase_beside") -> list:
    import cupy as cp
    import numpy as np
    mod = cp.RawModule(path=cubin)
    f = mod.get_function(kernel)
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    clock_hz = cp.cuda.runtime.getDeviceProperties(0)["clockRate"] * 1e3
    nodes = GIB // HOP
    words = HOP // 8
    rng = np.random.default_rng(1)
    res = []
    for gap in GAPS:
        reps = []
        for rep in range(3):
            order = rng.permutation(nodes)  # a fresh path per launch: its lines are not in L2
            nxt = np.empty(nodes, dtype=np.uint64)
            nxt[order[:-1]] = order[1:] * words
            nxt[order[-1]] = order[0] * words
            path = cp.zeros(GIB // 8, dtype=cp.uint64)
            path[::words] = cp.asarray(nxt)  # (one cycle through every node: the chase starts at node 0)
            buf = cp.ones(GIB // 4, dtype=cp.float32)  # (written after the path: 1 GiB evicts its lines from L2)
            out = cp.zeros(4, dtype=cp.int64)
            done = cp.zeros(1, dtype=cp.int32)
            nbytes = cp.zeros(1, dtype=cp.uint64)
            cp.cuda.runtime.deviceSynchronize()
            f((1 + 8 * sms,), (256,), (path, np.int32(CHASE), out, buf, np.int64(GIB // 16), np.int32(gap or 0),
                                       np.int32(gap is not None), done, nbytes))
            cp.cuda.runtime.deviceSynchronize()
            o = cp.asnumpy(out)
            seconds = float(o[1]) / clock_hz
            reps.append({"cycles_per_load": int(o[0]), "chase_cycles": int(o[1]),
                         "stream_gb_s": round(float(cp.asnumpy(nbytes)[0]) / seconds / 1e9, 1) if gap is not None else 0.0})
        r = {"streamers": "copy" if kernel.endswith("copy") else "read", "gap_cycles": gap, "streaming": gap is not None,
             "cycles_per_load_median": statistics.median(x["cycles_per_load"] for x in reps),
             "stream_gb_s_median": statistics.median(x["stream_gb_s"] for x in reps), "reps": reps}
        print(json.dumps({k: v for k, v in r.items() if k != "reps"}), flush=True)
        res.append(r)
    return res


def main() -> int:
    return micro_main(__doc__, "dram_load.py", SRC, lambda cubin: {
        "hop_bytes": HOP, "chase_loads": CHASE, "streaming_ctas": "8 per SM of 256 threads (CTA 0 chases)",
        "cases": measure(cubin), "copy_cases": measure(cubin, "chase_beside_copy")}, len(GAPS))


if __name__ == "__main__":
    sys.exit(main())
