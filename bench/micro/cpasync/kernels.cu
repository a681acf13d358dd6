// gpusim microbenchmark (issue 12): cp.async (LDGSTS) against the loads it replaces, on sm_90.
// gpusim times an LDGSTS as a global load whose data land in shared memory, and LDGDEPBAR's group as
// done when its last copy is (gpusim/timing/static.py COPY, COMMIT): these kernels measure whether the
// copy's way into shared memory, or the group's wait, costs more than the load's way into registers.
// Written as a user writes such kernels; specs beside them; measured with gpusim's own harness
// (bench/micro/measure_specs.sh) and simulated by bench/micro/compare_specs.py cpasync.
//
// Chases: one warp on one SM; `steps` dependent 16-byte reads per lane (a warp reads 512 bytes, four
// lines), each address taken from the word the previous step read (A is zeros). The steps cycle over
// 64 such chunks (32 KiB): the first 64 come from DRAM, the rest hit L2 (.cg) or L1 (.ca). The spec's
// size is `steps`, so the slope over sizes is the latency of one hit.
//   cpa_chase_cg   cp.async.cg 16 (LDGSTS.BYPASS.128), commit, wait_group 0, the word read from shared
//   cpa_chase_ca   the same with cp.async.ca (LDGSTS.128: allocates in L1)
//   ldg_chase_cg   __ldcg of an int4 (LDG.E.128 bypassing L1)
//   ldg_chase_ca   a plain int4 load (L1-cached)
// Tiles: 132 n CTAs of 256 threads (n per SM; the spec's size); each CTA copies a 16 KiB tile into
// shared memory `iters` times, cycling over two tiles of its own (L2 hits after the first two), four
// 16-byte pieces per thread, then waits and syncs:
//   cpa_tiles      cp.async.cg 16 x 4, commit, wait_group 0, __syncthreads
//   ldg_tiles      LDG.E.128 x 4 (__ldcg), STS.128 x 4, __syncthreads
#include <cuda_pipeline.h>

__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__global__ void cpa_chase_cg(const int4* __restrict__ A, int* __restrict__ y, int steps)
{
    __shared__ int4 buf[32];
    int lane = threadIdx.x & 31, off = 0;
    for (int s = 0; s < steps; ++s) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(smem_addr(&buf[lane])),
                     "l"(A + (s & 63) * 32 + lane + off));
        asm volatile("cp.async.commit_group;");
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        off = buf[lane].x;
    }
    y[threadIdx.x] = off;
}

__global__ void cpa_chase_ca(const int4* __restrict__ A, int* __restrict__ y, int steps)
{
    __shared__ int4 buf[32];
    int lane = threadIdx.x & 31, off = 0;
    for (int s = 0; s < steps; ++s) {
        asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" :: "r"(smem_addr(&buf[lane])),
                     "l"(A + (s & 63) * 32 + lane + off));
        asm volatile("cp.async.commit_group;");
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        off = buf[lane].x;
    }
    y[threadIdx.x] = off;
}

__global__ void ldg_chase_cg(const int4* __restrict__ A, int* __restrict__ y, int steps)
{
    int lane = threadIdx.x & 31, off = 0;
    for (int s = 0; s < steps; ++s) {
        int4 v = __ldcg(A + (s & 63) * 32 + lane + off);
        off = v.x | v.y | v.z | v.w;
    }
    y[threadIdx.x] = off;
}

__global__ void ldg_chase_ca(const int4* __restrict__ A, int* __restrict__ y, int steps)
{
    int lane = threadIdx.x & 31, off = 0;
    for (int s = 0; s < steps; ++s) {
        int4 v = A[(s & 63) * 32 + lane + off];
        off = v.x | v.y | v.z | v.w;
    }
    y[threadIdx.x] = off;
}

__global__ void cpa_tiles(const float4* __restrict__ A, float* __restrict__ y, int iters)
{
    __shared__ float4 tile[1024];
    const float4* mine = A + (long)blockIdx.x * 2 * 1024;
    for (int i = 0; i < iters; ++i) {
        const float4* src = mine + (i & 1) * 1024;
        #pragma unroll
        for (int k = 0; k < 4; ++k)
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(smem_addr(&tile[k * 256 + threadIdx.x])),
                         "l"(src + k * 256 + threadIdx.x));
        asm volatile("cp.async.commit_group;");
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        __syncthreads();
    }
    y[blockIdx.x * blockDim.x + threadIdx.x] = tile[threadIdx.x ^ 1].x;
}

__global__ void ldg_tiles(const float4* __restrict__ A, float* __restrict__ y, int iters)
{
    __shared__ float4 tile[1024];
    const float4* mine = A + (long)blockIdx.x * 2 * 1024;
    for (int i = 0; i < iters; ++i) {
        const float4* src = mine + (i & 1) * 1024;
        float4 v[4];
        #pragma unroll
        for (int k = 0; k < 4; ++k) v[k] = __ldcg(src + k * 256 + threadIdx.x);
        #pragma unroll
        for (int k = 0; k < 4; ++k) tile[k * 256 + threadIdx.x] = v[k];
        __syncthreads();
    }
    y[blockIdx.x * blockDim.x + threadIdx.x] = tile[threadIdx.x ^ 1].x;
}

// GEMM controls (C = A B, n x n, 16 x 16 tiles, one output per thread, as traces/external
// sgemm_cpasync16): does the staging by cp.async cost the tiled SGEMM time that LDG + STS does not?
//   tile16_ldg        LDG then STS of one float per tile per thread, single buffer, two barriers a tile
//   tile16_cpa_sync   cp.async.ca 4 bytes per tile per thread, commit, wait_group 0, single buffer
//   tile16_cpa_db     cp.async.ca 4 bytes, double-buffered: the next tile's copy in flight; its spec runs
//                     traces/external/cpasync.cu's sgemm_cpasync16 itself (the same kernel)
__global__ void tile16_ldg(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n)
{
    __shared__ float As[16][16], Bs[16][16];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    float acc = 0.0f;
    for (int t = 0; t < n / 16; ++t) {
        As[ty][tx] = A[(long)row * n + t * 16 + tx];
        Bs[ty][tx] = B[(long)(t * 16 + ty) * n + col];
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < 16; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[(long)row * n + col] = acc;
}

__global__ void tile16_cpa_sync(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n)
{
    __shared__ float As[16][16], Bs[16][16];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    float acc = 0.0f;
    for (int t = 0; t < n / 16; ++t) {
        __pipeline_memcpy_async(&As[ty][tx], &A[(long)row * n + t * 16 + tx], 4);
        __pipeline_memcpy_async(&Bs[ty][tx], &B[(long)(t * 16 + ty) * n + col], 4);
        __pipeline_commit();
        __pipeline_wait_prior(0);
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < 16; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[(long)row * n + col] = acc;
}

// MIO cost of a copy's shared-memory write: n CTAs of 256 threads per SM (grid 132 n) run `iters`
// iterations of 8 conflict-free LDS and one store to shared memory, every thread on its own words
// (A is zeros, so every value read is 0 whatever the order). With 8 CTAs per SM the loop is bound by
// the shared-memory pipe; the store's cost is the difference from mio_lds, which stores nothing.
// The reads are volatile, so each is an LDS whatever the compiler knows of the stores.
//   mio_lds     8 LDS, no store
//   mio_sts4    8 LDS + STS (4 bytes)
//   mio_cpa4    8 LDS + cp.async.ca of 4 bytes (an L1 hit after the first), commit and wait every 16
//   mio_sts16   8 LDS + STS.128
//   mio_cpa16   8 LDS + cp.async.cg of 16 bytes (L2 hits), commit and wait every 16
#define MIO_LOOP(STORE, SYNC)                                                                   \
    __shared__ __align__(16) float s[8 * 1024];                                                 \
    int t = threadIdx.x;                                                                        \
    for (int k = 0; k < 32; ++k) s[k * 256 + t] = 0.0f;                                         \
    __syncthreads();                                                                            \
    volatile float* vs = s;  /* every read an LDS: nothing kept in registers */                 \
    float acc = 0.0f;                                                                           \
    for (int i = 0; i < iters; ++i) {                                                           \
        _Pragma("unroll") for (int k = 0; k < 8; ++k) acc += vs[((i + k) & 7) * 256 + t];       \
        STORE;                                                                                  \
        if ((i & 15) == 15) { SYNC; }                                                           \
    }                                                                                           \
    y[blockIdx.x * blockDim.x + t] = acc;

__global__ void mio_lds(const float* __restrict__ A, float* __restrict__ y, int iters) { MIO_LOOP(, ) }

__global__ void mio_sts4(const float* __restrict__ A, float* __restrict__ y, int iters)
{
    MIO_LOOP(s[2048 + ((i + 3) & 7) * 256 + t] = acc, )
}

__global__ void mio_cpa4(const float* __restrict__ A, float* __restrict__ y, int iters)
{
    MIO_LOOP(asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(smem_addr(&s[2048 + ((i + 3) & 7) * 256 + t])),
                          "l"(A + t) : "memory"),
             asm volatile("cp.async.commit_group;\n\tcp.async.wait_group 0;" ::: "memory"))
}

__global__ void mio_sts16(const float* __restrict__ A, float* __restrict__ y, int iters)
{
    MIO_LOOP(reinterpret_cast<float4*>(s)[1024 + ((i + 3) & 3) * 256 + t] = make_float4(acc, acc, acc, acc), )
}

__global__ void mio_cpa16(const float* __restrict__ A, float* __restrict__ y, int iters)
{
    MIO_LOOP(asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::
                          "r"(smem_addr(reinterpret_cast<float4*>(s) + 1024 + ((i + 3) & 3) * 256 + t)),
                          "l"(A + 4 * t) : "memory"),
             asm volatile("cp.async.commit_group;\n\tcp.async.wait_group 0;" ::: "memory"))
}
