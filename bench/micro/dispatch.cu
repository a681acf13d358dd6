// gpusim H100 microbenchmark: does a warp held back by a full LSU queue (lg_throttle) cost the other warps
// of its sub-partition issue slots? Nsight charges dispatch_stall on the LDGs of LSU-bound kernels (about
// half as many samples as their lg_throttle: validation/h100/micro/ncu_source_h100.json); a dispatch that
// fails would waste the scheduler's cycle. One CTA per SM of 32 warps (8 per sub-partition: warp w runs on
// sub-partition w % 4). On each sub-partition `ldg_warps` warps (slots w / 4 < ldg_warps) load in a loop,
// 16 independent LDG.32 per iteration at p + lane * stride + k * 4096 (L1 hits after the first pass;
// stride 4: 1 line per load, 128: 32 lines), and `fma_warps` warps run 8 independent FFMA chains
// x = fma(x, A, B) (A, B the same for all: .reuse serves them); the rest exit. With `poll` the loaders go
// on until every FFMA warp of the CTA is done (a shared counter, read once per 16 loads), else they run
// `ldg_iters` iterations. Each warp stamps
// clock64 around its loop. If a throttled load costs issue slots, the FFMA warps' rate falls as
// loaders are added.
// `loaders_last`: the FFMA warps take the first slots and the loaders the next ones (younger warps).
// A loader slot's timed loop: clock64 into t0, rounds while COND (i counts them), each counted in `loads`
// and doing BODY for k = 0..15 (unrolled), then clock64 into t1.
#define LOADER_ROUNDS(COND, ...)                                                                         \
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t0)::"memory");                                        \
    _Pragma("unroll 1") for (int i = 0; COND; ++i) {                                                     \
        ++loads;                                                                                         \
        _Pragma("unroll") for (int k = 0; k < 16; ++k) { __VA_ARGS__; }                                  \
    }                                                                                                    \
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t1)::"memory")

extern "C" __global__ void dispatch_steal(const char* buf, float* sink, long long* out, int ldg_iters,
                                          int fma_iters, int ldg_warps, int fma_warps, int stride, int poll,
                                          int loaders_last) {
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int p = w >> 2;  // the warp's place on its sub-partition; slot: its role (< ldg_warps: loader)
    const int slot = !loaders_last ? p : p < fma_warps ? p + ldg_warps : p < fma_warps + ldg_warps ? p - fma_warps : p;
    __shared__ int done;
    if (threadIdx.x == 0) done = 0;
    __syncthreads();
    long long t0, t1;
    int loads = 0;
    if (slot < ldg_warps && stride == 0) {  // stride 0: an integer warp instead of a loader (8 independent
        // LOP3/IADD chains, the INT pipe), 16 x 8 ops per iteration counted as 16 "loads"
        unsigned y0 = lane, y1 = lane + 1, y2 = lane + 2, y3 = lane + 3, y4 = lane + 4, y5 = lane + 5, y6 = lane + 6,
                 y7 = lane + 7;
        const unsigned K = (unsigned)(sink[128 + lane] + 3.0f);
        LOADER_ROUNDS(i < ldg_iters,
                      y0 = (y0 ^ K) + k; y1 = (y1 ^ K) + k; y2 = (y2 ^ K) + k; y3 = (y3 ^ K) + k;
                      y4 = (y4 ^ K) + k; y5 = (y5 ^ K) + k; y6 = (y6 ^ K) + k; y7 = (y7 ^ K) + k);
        if ((y0 ^ y1 ^ y2 ^ y3 ^ y4 ^ y5 ^ y6 ^ y7) == 0x12345678u) sink[threadIdx.x] = 1.0f;
    } else if (slot < ldg_warps && stride < 0) {  // stride < 0: a shared-memory warp instead of a loader: 16
        // independent conflict-free LDS per iteration (lane's own word of 16 rows), results XORed
        __shared__ unsigned tile[16 * 32];
        tile[(w & 15) * 32 + lane] = lane;
        unsigned acc = 0;
        LOADER_ROUNDS(i < ldg_iters,
                      unsigned a;
                      asm volatile("ld.shared.u32 %0, [%1];" : "=r"(a) : "r"((unsigned)__cvta_generic_to_shared(tile + k * 32 + lane)) : "memory");
                      acc ^= a);
        if (acc == 0x12345678u) sink[threadIdx.x] = (float)acc;
    } else if (slot < ldg_warps) {
        const char* p = buf + lane * stride;
        unsigned acc = 0;
        LOADER_ROUNDS(poll ? *(volatile int*)&done < 4 * fma_warps : i < ldg_iters,
                      unsigned a;
                      asm volatile("ld.global.ca.u32 %0, [%1];" : "=r"(a) : "l"(p + k * 4096) : "memory");
                      acc ^= a);
        if (acc == 0x12345678u) sink[threadIdx.x] = (float)acc;
    } else if (slot < ldg_warps + fma_warps) {
        const float A = sink[64 + lane] + 1.0f, B = sink[96 + lane] + 0.5f;
        float x0 = lane, x1 = lane + 1, x2 = lane + 2, x3 = lane + 3, x4 = lane + 4, x5 = lane + 5, x6 = lane + 6,
              x7 = lane + 7;
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(t0)::"memory");
#pragma unroll 1
        for (int i = 0; i < fma_iters; ++i) {
#pragma unroll
            for (int k = 0; k < 8; ++k) {
                x0 = __fmaf_rn(x0, A, B); x1 = __fmaf_rn(x1, A, B); x2 = __fmaf_rn(x2, A, B); x3 = __fmaf_rn(x3, A, B);
                x4 = __fmaf_rn(x4, A, B); x5 = __fmaf_rn(x5, A, B); x6 = __fmaf_rn(x6, A, B); x7 = __fmaf_rn(x7, A, B);
            }
        }
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(t1)::"memory");
        if (lane == 0) atomicAdd(&done, 1);
        const float s = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
        if (s == 1.2345f) sink[threadIdx.x] = s;
    } else {
        return;
    }
    if (lane == 0) {
        out[3 * (blockIdx.x * 32 + w)] = t0;
        out[3 * (blockIdx.x * 32 + w) + 1] = t1;
        out[3 * (blockIdx.x * 32 + w) + 2] = loads;
    }
}
