// gpusim H100 microbenchmark: how long an SM's CTA slot stays empty between one CTA's end and the next
// CTA's first instruction (bench/micro/cta_turnaround.py runs it; results in
// validation/h100/micro/cta_turnaround_h100.json).
//
// cta_spin: every warp of a CTA spins `spin` cycles on clock64 and records, lane 0, its SM, its first
// clock read and its last (out[(cta * warps + warp) * 3 + 0..2]). Dynamic shared memory (unused) limits how
// many CTAs an SM holds at once. From the records, per SM: each CTA's start (its first warp's first read)
// and end (its last warp's last read), on the SM's own clock; the grid runs many waves, so the gap between a
// CTA's end and the start of the next CTA the SM begins after it is the turnaround.
// cta_regs: the same with `regs` live registers of work per thread (an FFMA chain over a register array,
// so a CTA's warps hold many registers), to see whether a large register footprint costs the launch more.

#include "sm_clock.cuh"

extern "C" __global__ void cta_spin(long long* out, int spin) {
    const long long t0 = clk();
    long long t = t0;
    while (t - t0 < spin) t = clk();
    if ((threadIdx.x & 31) == 0) {
        const long long w = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
        out[w * 3 + 0] = smid();
        out[w * 3 + 1] = t0;
        out[w * 3 + 2] = t;
    }
}

extern "C" __global__ void __launch_bounds__(256) cta_regs(long long* out, float* sink, int spin, float x) {
    const long long t0 = clk();
    float r[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) r[i] = x + i;
    long long t = t0;
    while (t - t0 < spin) {
#pragma unroll
        for (int i = 0; i < 64; ++i) r[i] = fmaf(r[i], x, 1.0f);
        t = clk();
    }
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 64; ++i) s += r[i];
    if (s == 12345.0f) sink[threadIdx.x] = s;
    if ((threadIdx.x & 31) == 0) {
        const long long w = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
        out[w * 3 + 0] = smid();
        out[w * 3 + 1] = t0;
        out[w * 3 + 2] = t;
    }
}
