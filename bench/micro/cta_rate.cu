// gpusim H100 microbenchmark: how fast an SM (or the chip) gets through CTAs when there are many of them
// (bench/micro/cta_rate.py runs it; results in validation/h100/micro/cta_rate_h100.json).
//
// empty_k   does nothing: a grid of many such CTAs times the CTA launch path alone.
// empty_sm  thread 0 counts its CTA on its SM (cnt[smid] += 1): where the CTAs of a grid ran.
// spin_k    every warp spins `spin` cycles on clock64: CTAs with work, to see whether the launch rate of
//           empty CTAs still limits CTAs that last a while.
// hog       one CTA of 1024 threads that fills an SM (all of its shared memory, dynamically, and 64
//           registers per thread) and spins `spin` cycles, recording its SM: a grid of k hogs keeps k SMs
//           busy, so a kernel on another stream beside it gets the other SMs only.
// copy1     b[i] = a[i], one float per thread; copy4 the same with one float4 per thread: copies whose
//           CTAs are short, at several CTA sizes.

#include "sm_clock.cuh"

extern "C" __global__ void empty_k() {}

extern "C" __global__ void empty_sm(unsigned* cnt) {
    if (threadIdx.x == 0) atomicAdd(cnt + smid(), 1u);
}

extern "C" __global__ void spin_k(int spin, float* sink) {
    const long long t0 = clk();
    long long t = t0;
    while (t - t0 < spin) t = clk();
    if (t == 12345) sink[0] = 1.0f;
}

extern "C" __global__ void __launch_bounds__(1024, 1) hog(int spin, float x, float* sink, unsigned* sm_of) {
    extern __shared__ float tile[];
    float r[56];
#pragma unroll
    for (int i = 0; i < 56; ++i) r[i] = x + i;
    const long long t0 = clk();
    long long t = t0;
    while (t - t0 < spin) {
#pragma unroll
        for (int i = 0; i < 56; ++i) r[i] = fmaf(r[i], x, 1.0f);
        t = clk();
    }
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 56; ++i) s += r[i];
    tile[threadIdx.x] = s;
    __syncthreads();
    if (tile[1023 - threadIdx.x] == 12345.0f) sink[threadIdx.x] = s;
    if (threadIdx.x == 0) sm_of[blockIdx.x] = smid();
}

extern "C" __global__ void copy1(const float* __restrict__ a, float* b, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i];
}

extern "C" __global__ void copy4(const float4* __restrict__ a, float4* b, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i];
}

// stamp     thread 0 of each CTA records its SM, its first clock64 and %globaltimer, then every warp spins
//           `spin` cycles: in which order the dispatcher hands a grid's first wave to the SMs (round robin
//           over the SMs, or each SM filled first) and how far apart an SM's CTAs start.
extern "C" __global__ void stamp(long long* out, int spin) {
    const long long t0 = clk();
    long long g;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g));
    if (threadIdx.x == 0) {
        out[blockIdx.x * 3 + 0] = smid();
        out[blockIdx.x * 3 + 1] = t0;
        out[blockIdx.x * 3 + 2] = g;
    }
    long long t = t0;
    while (t - t0 < spin) t = clk();
}

// copy1_gs / copy2_gs / copy4_gs: copy1 / copy4 as grid-stride loops over 8 CTAs per SM of 256 threads
// (4 elements in flight per thread), one float, float2 or float4 per thread and step: the same warp
// requests (128, 256, 512 bytes) from few CTAs, to tell a rate of CTAs from a rate of requests.
template <typename T>
__device__ __forceinline__ void copy_gs(const T* __restrict__ a, T* b, long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
#pragma unroll 4
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) b[i] = a[i];
}

extern "C" __global__ void copy1_gs(const float* __restrict__ a, float* b, long long n) { copy_gs(a, b, n); }
extern "C" __global__ void copy2_gs(const float2* __restrict__ a, float2* b, long long n) { copy_gs(a, b, n); }
extern "C" __global__ void copy4_gs(const float4* __restrict__ a, float4* b, long long n) { copy_gs(a, b, n); }
