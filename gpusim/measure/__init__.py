"""Hardware measurements of workload kernels on a real GPU (the ground truth the simulator is validated against).

`python3 -m gpusim.measure.run --out DIR` compiles each workload's kernel exactly as
gpusim.toolchain.compile does (same nvcc flags, so the timed SASS is the simulated SASS), launches it
with cupy on the spec's inputs, checks it against the numpy reference, times it with CUDA events while
sampling the SM clock, and optionally profiles one launch with Nsight Compute. Nothing here imports
simpy or needs the simulator; cupy is imported only by `backend.CupyDevice`, so everything else runs
(and is tested) without a GPU.

Modules: build (cubin cache, kernel symbol), marshal (spec arguments <-> flat device buffers, check,
flop count, size selection), backend (the device interface and its cupy implementation), clocks
(nvidia-smi sampler, environment), ncu (metric list, command, CSV parsing, retries), record (JSON and
summary CSV), run (the command line).
"""
