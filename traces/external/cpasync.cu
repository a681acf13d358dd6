// External-check kernels that stage their tiles with cp.async (sm_80+), written the way a newcomer
// writes them from the CUDA guide: kept outside the validation suite, gpusim is never tuned on them.

#include <cuda_pipeline.h>

// C = A B (n x n, row-major), 16 x 16 tiles double-buffered in shared memory; each thread copies one
// float of each tile with __pipeline_memcpy_async (cp.async.ca, 4 bytes) and computes one output.
__global__ void sgemm_cpasync16(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n)
{
    __shared__ float As[2][16][16], Bs[2][16][16];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    int tiles = n / 16;
    float acc = 0.0f;
    __pipeline_memcpy_async(&As[0][ty][tx], &A[(long)row * n + tx], 4);
    __pipeline_memcpy_async(&Bs[0][ty][tx], &B[(long)ty * n + col], 4);
    __pipeline_commit();
    for (int t = 0; t < tiles; ++t) {
        int cur = t & 1;
        if (t + 1 < tiles) {
            __pipeline_memcpy_async(&As[cur ^ 1][ty][tx], &A[(long)row * n + (t + 1) * 16 + tx], 4);
            __pipeline_memcpy_async(&Bs[cur ^ 1][ty][tx], &B[(long)((t + 1) * 16 + ty) * n + col], 4);
        }
        __pipeline_commit();
        __pipeline_wait_prior(1);
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < 16; ++k) acc += As[cur][ty][k] * Bs[cur][k][tx];
        __syncthreads();
    }
    C[(long)row * n + col] = acc;
}

__device__ __forceinline__ void copy16(void* smem, const void* gmem)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"((unsigned)__cvta_generic_to_shared(smem)), "l"(gmem));
}

// C = A B (n x n, row-major), 64 x 64 tiles of C per CTA of 16 x 16 threads, 4 x 4 outputs per thread,
// K in steps of 16; both tiles double-buffered with 16-byte cp.async.cg (one piece of each per thread).
__global__ void sgemm_cpasync64(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n)
{
    __shared__ __align__(16) float As[2][64][16];
    __shared__ __align__(16) float Bs[2][16][64];
    int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    int row0 = blockIdx.y * 64, col0 = blockIdx.x * 64;
    int ar = tid / 4, ac = (tid % 4) * 4;    // this thread's piece of the A tile (64 x 16)
    int br = tid / 16, bc = (tid % 16) * 4;  // and of the B tile (16 x 64)
    const float* a_src = A + (long)(row0 + ar) * n + ac;
    const float* b_src = B + (long)br * n + col0 + bc;
    float acc[4][4] = {};
    int tiles = n / 16;
    copy16(&As[0][ar][ac], a_src);
    copy16(&Bs[0][br][bc], b_src);
    asm volatile("cp.async.commit_group;");
    for (int t = 0; t < tiles; ++t) {
        int cur = t & 1;
        if (t + 1 < tiles) {
            copy16(&As[cur ^ 1][ar][ac], a_src + (t + 1) * 16);
            copy16(&Bs[cur ^ 1][br][bc], b_src + (long)(t + 1) * 16 * n);
        }
        asm volatile("cp.async.commit_group;");
        asm volatile("cp.async.wait_group 1;" ::: "memory");
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < 16; ++k) {
            float a[4];
            #pragma unroll
            for (int i = 0; i < 4; ++i) a[i] = As[cur][ty * 4 + i][k];
            float4 b = *reinterpret_cast<const float4*>(&Bs[cur][k][tx * 4]);
            #pragma unroll
            for (int i = 0; i < 4; ++i) {
                acc[i][0] += a[i] * b.x; acc[i][1] += a[i] * b.y;
                acc[i][2] += a[i] * b.z; acc[i][3] += a[i] * b.w;
            }
        }
        __syncthreads();
    }
    #pragma unroll
    for (int i = 0; i < 4; ++i)
        *reinterpret_cast<float4*>(&C[(long)(row0 + ty * 4 + i) * n + col0 + tx * 4]) =
            make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
}
