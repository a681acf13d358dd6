// gpusim H100 microbenchmark: where a short CTA's time goes in a one-shot copy (bench/micro/cta_life.py
// runs it; results in validation/h100/micro/cta_life_*.json).
//
// copy1_life / copy4_life: copy1 / copy4 of cta_rate.cu (b[i] = a[i], one float or float4 per thread, one
// element per thread, a grid as large as the buffer); read1_life: the same loads, nothing stored (the value
// is only compared); write1_life: the same stores of a value made from the index, nothing loaded.
// One CTA in 2^shift records its life: lane 0 of each warp writes its clock at start (t0) and just after
// its store has issued or its loaded value has been compared (t1: the load's latency plus a few issue
// cycles), warp 0 also its SM. The other CTAs run the plain copy's instructions and a skipped branch.
#include "sm_clock.cuh"

__device__ __forceinline__ long long clk_after_memory() {
    long long t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t) :: "memory");
    return t;
}

// the record of a recorded CTA's warp, and its SM
__device__ __forceinline__ void record(long long t0, long long t1, longlong2* warp, unsigned* sm, int shift) {
    if ((threadIdx.x & 31) == 0 && (blockIdx.x & ((1u << shift) - 1)) == 0) {
        const unsigned rec = blockIdx.x >> shift;
        warp[rec * (blockDim.x >> 5) + (threadIdx.x >> 5)] = make_longlong2(t0, t1);
        if (threadIdx.x == 0) sm[rec] = smid();
    }
}

template <typename T>
__device__ __forceinline__ void copy_life(const T* __restrict__ a, T* b, int n, longlong2* warp, unsigned* sm,
                                          int shift) {
    const long long t0 = clk_after_memory();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i];
    record(t0, clk_after_memory(), warp, sm, shift);
}

extern "C" __global__ void copy1_life(const float* __restrict__ a, float* b, int n, longlong2* warp, unsigned* sm,
                                      int shift) {
    copy_life(a, b, n, warp, sm, shift);
}

extern "C" __global__ void copy4_life(const float4* __restrict__ a, float4* b, int n, longlong2* warp,
                                      unsigned* sm, int shift) {
    copy_life(a, b, n, warp, sm, shift);
}

extern "C" __global__ void read1_life(const float* __restrict__ a, float* b, int n, longlong2* warp, unsigned* sm,
                                      int shift) {
    const long long t0 = clk_after_memory();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && a[i] == 1234.5f) b[i] = 0.0f;  // (never: a holds ones)
    record(t0, clk_after_memory(), warp, sm, shift);
}

extern "C" __global__ void write1_life(const float* __restrict__ a, float* b, int n, longlong2* warp, unsigned* sm,
                                       int shift) {
    const long long t0 = clk_after_memory();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = (float)i;
    record(t0, clk_after_memory(), warp, sm, shift);
}

// copy1s_life: copy1_life with a third clock read between the load's use and the store, so that the load's
// wait (t1 - t0) and the store's issue (t2 - t1) are told apart; records (t0, t1) in `warp`, (t2, 0) in `sm2`
// (one longlong2 per recorded warp after the first `nrec` x warps).
extern "C" __global__ void copy1s_life(const float* __restrict__ a, float* b, int n, longlong2* warp, unsigned* sm,
                                       int shift) {
    const long long t0 = clk_after_memory();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = 0.0f;
    if (i < n) v = a[i];
    if (v == 1234.5f) b[0] = 0.0f;  // (never: uses v before t1)
    const long long t1 = clk_after_memory();
    if (i < n) b[i] = v;
    const long long t2 = clk_after_memory();
    record(t0, t1, warp, sm, shift);
    if ((threadIdx.x & 31) == 0 && (blockIdx.x & ((1u << shift) - 1)) == 0) {
        const unsigned nrec = (gridDim.x + (1u << shift) - 1) >> shift;
        warp[(nrec + (blockIdx.x >> shift)) * (blockDim.x >> 5) + (threadIdx.x >> 5)] = make_longlong2(t2, 0);
    }
}

// The plain copy, to tell what the records cost.
extern "C" __global__ void copy1(const float* __restrict__ a, float* b, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i];
}
