// gpusim H100 microbenchmark: a DRAM load's latency while the other SMs stream from DRAM at a chosen rate
// (bench/micro/dram_load.py runs it; results in validation/h100/micro/dram_load_h100.json).
//
// chase_beside: CTA 0's lane 0 walks `n` nodes of a random path of lines 64 KiB apart in a 1 GiB buffer
// (each load a DRAM miss), timing the walk on its clock; it then sets `done`. Every other CTA streams
// float4s of a second 1 GiB buffer (ld.global.cg, grid-stride, wrapping), four loads at a time, each
// thread waiting `gap` cycles after each four, until `done`; with `stream` 0 they return at once. `out`: cycles per chase
// load, the chase's cycles, and the bytes the streamers read meanwhile.
#include "sm_clock.cuh"

// CTA 0's part: lane 0 walks the path, timing the walk, then sets `done` for the streamers
__device__ __forceinline__ void chase(const unsigned long long* __restrict__ path, int n, long long* out,
                                      volatile int* done) {
    if (threadIdx.x == 0) {
        unsigned long long p = 0;
        const long long t0 = clk();
        for (int i = 0; i < n; ++i) p = __ldcg(path + p);
        const long long t1 = clk();
        out[0] = (t1 - t0) / n;
        out[1] = t1 - t0;
        out[3] = (long long)p;  // (keeps the chase)
        __threadfence();
        *done = 1;
    }
}

extern "C" __global__ void chase_beside(const unsigned long long* __restrict__ path, int n, long long* out,
                                        const float4* __restrict__ buf, long long nbuf, int gap, int stream,
                                        volatile int* done, unsigned long long* bytes) {
    if (blockIdx.x == 0) {
        chase(path, n, out, done);
        return;
    }
    if (!stream) return;
    const long long stride = (long long)(gridDim.x - 1) * blockDim.x;
    long long i = (long long)(blockIdx.x - 1) * blockDim.x + threadIdx.x;
    unsigned long long loads = 0;
    float acc = 0.f;
    while (!*done) {  // (the flag is read once per 32 loads: its line is one L2 line for all threads)
        for (int k = 0; k < 32; k += 4) {
            float4 x[4];
#pragma unroll
            for (int j = 0; j < 4; ++j) {  // four independent loads in flight per thread
                x[j] = __ldcg(buf + i);
                i += stride;
                if (i >= nbuf) i -= nbuf;
            }
#pragma unroll
            for (int j = 0; j < 4; ++j) acc += (x[j].x + x[j].y) + (x[j].z + x[j].w);
            loads += 4;
            if (gap) {
                const long long t0 = clk();
                while (clk() - t0 < gap) { }
            }
        }
    }
    if (acc == 1.2345f) out[2] = 1;
    atomicAdd(bytes, loads * 16ull);
}

// chase_beside_copy: chase_beside with streamers that copy instead (float4s from the first half of `buf` to
// the second, four at a time, `gap` cycles after each four): what a DRAM load waits beside mixed reads and
// writes. `bytes` counts the bytes read and written.
extern "C" __global__ void chase_beside_copy(const unsigned long long* __restrict__ path, int n, long long* out,
                                             float4* buf, long long nbuf, int gap, int stream,
                                             volatile int* done, unsigned long long* bytes) {
    if (blockIdx.x == 0) {
        chase(path, n, out, done);
        return;
    }
    if (!stream) return;
    const long long half = nbuf / 2;
    const long long stride = (long long)(gridDim.x - 1) * blockDim.x;
    long long i = (long long)(blockIdx.x - 1) * blockDim.x + threadIdx.x;
    unsigned long long moved = 0;
    while (!*done) {
        for (int k = 0; k < 32; k += 4) {
            float4 x[4];
            long long at[4];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                at[j] = i;
                x[j] = __ldcg(buf + i);
                i += stride;
                if (i >= half) i -= half;
            }
#pragma unroll
            for (int j = 0; j < 4; ++j) buf[half + at[j]] = x[j];
            moved += 4;
            if (gap) {
                const long long t0 = clk();
                while (clk() - t0 < gap) { }
            }
        }
    }
    atomicAdd(bytes, moved * 32ull);
}
