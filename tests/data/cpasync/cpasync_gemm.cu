// C = A B (n x n, row-major) with cp.async double buffering, for the timing engines' tests: 32 x 32
// tiles of C per CTA of 32 x 8 threads, 4 outputs (a column's) per thread. A's tile comes in 4-byte
// cp.async.ca copies (L1-allocating, 4 a thread), B's in 16-byte cp.async.cg copies (one a thread).
__device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__global__ void cpasync_gemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n)
{
    __shared__ __align__(16) float As[2][32][32], Bs[2][32][32];
    int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 32 + tx;
    int row0 = blockIdx.y * 32, col0 = blockIdx.x * 32;
    int br = tid / 8, bc = (tid % 8) * 4;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    int tiles = n / 32;
    for (int t = 0; t <= tiles; ++t) {
        if (t < tiles) {  // copy tile t into buffer t & 1
            int buf = t & 1;
            for (int i = 0; i < 4; ++i)
                asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(smem(&As[buf][ty * 4 + i][tx])),
                             "l"(A + (long)(row0 + ty * 4 + i) * n + t * 32 + tx));
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(smem(&Bs[buf][br][bc])),
                         "l"(B + (long)(t * 32 + br) * n + col0 + bc));
        }
        asm volatile("cp.async.commit_group;");
        if (t == 0) continue;
        asm volatile("cp.async.wait_group 1;" ::: "memory");  // tile t - 1 is in
        __syncthreads();
        int cur = (t - 1) & 1;
        for (int k = 0; k < 32; ++k)
            for (int i = 0; i < 4; ++i) acc[i] += As[cur][ty * 4 + i][k] * Bs[cur][k][tx];
        __syncthreads();
    }
    for (int i = 0; i < 4; ++i) C[(long)(row0 + ty * 4 + i) * n + col0 + tx] = acc[i];
}
