// Reconstructed from seed 001 (/work/shared/seeds/001_29eeb617de9034e5.txt), blog post
// "The art of doing more with less", section "减少 Bank Conflict" (reduce bank conflicts):
// a 32x32 shared-memory tiled matrix product with A stored column-major ("Ac").
//
//   simpleMatMatMul<BLOCK_SIZE>   tiles sAc/sB[BLOCK_SIZE][BLOCK_SIZE]      (as published)
//   naiveMatMatMul<BLOCK_SIZE>    tiles sAc/sB[BLOCK_SIZE][BLOCK_SIZE + 1]  (as published)
//   simpleMatMatMul_corrected<BLOCK_SIZE>, naiveMatMatMul_corrected<BLOCK_SIZE>
//                                 the same kernels with the one statement fixed so that they
//                                 compute C = A*B (see below and traces/kernels/NOTES.md).
//
// The published inner statement  res += sAc[i][threadIdx.y] * sB[i][threadIdx.x]  does NOT
// compute A*B: with the published tile stores (sAc[ty][tx] = A(r, t+tx), sB[tx][ty] = B(t+ty, c))
// it computes, for r = 32*by + ty and c = 32*bx + tx,
//     C(r, c) = sum_t sum_i A(32*by + i, t + ty) * B(t + tx, 32*bx + i)
// The literal kernels are kept unchanged under the published names; the *_corrected kernels
// read the tiles as they were stored: res += sAc[threadIdx.y][i] * sB[threadIdx.x][i].
//
// Launch: block (BLOCK_SIZE, BLOCK_SIZE), grid (ceil(p/BLOCK_SIZE), ceil(m/BLOCK_SIZE)).
// A is m x n column-major (Ac[k*m + r]), B is n x p row-major, C is m x p row-major.
//
// Guess: the page declares m, n, p as size_t.  The workload schema has no 64-bit scalar type, so
// they (and the loop counters) are `index_t` = unsigned int here; set index_t to size_t to get the
// published 64-bit index arithmetic back.  The arithmetic is otherwise identical.

typedef unsigned int index_t;  // seed: size_t

template <int BLOCK_SIZE>
__global__ void simpleMatMatMul(const float *Ac, const float *B, float *C,
                                const index_t m, const index_t n, const index_t p)
{
    const index_t r = blockIdx.y * blockDim.y + threadIdx.y,
                  c = blockIdx.x * blockDim.x + threadIdx.x;
    float res = 0;
    for (index_t t = 0; t < n; t += BLOCK_SIZE)
    {
        float __shared__ sAc[BLOCK_SIZE][BLOCK_SIZE], sB[BLOCK_SIZE][BLOCK_SIZE];
        __syncthreads();
        sAc[threadIdx.y][threadIdx.x] = r < m && t + threadIdx.x < n ? Ac[(t + threadIdx.x) * m + r] : 0;
        sB[threadIdx.x][threadIdx.y] = c < p && t + threadIdx.y < n ? B[(t + threadIdx.y) * p + c] : 0;
        __syncthreads();
        for (index_t i = 0; i < blockDim.x; ++i)
            res += sAc[i][threadIdx.y] * sB[i][threadIdx.x];  // as published (not A*B)
    }
    if (r < m && c < p)
        C[r * p + c] = res;
}

template <int BLOCK_SIZE>
__global__ void naiveMatMatMul(const float *Ac, const float *B, float *C,
                               const index_t m, const index_t n, const index_t p)
{
    const index_t r = blockIdx.y * blockDim.y + threadIdx.y,
                  c = blockIdx.x * blockDim.x + threadIdx.x;
    float res = 0;
    for (index_t t = 0; t < n; t += BLOCK_SIZE)
    {
        float __shared__ sAc[BLOCK_SIZE][BLOCK_SIZE + 1], sB[BLOCK_SIZE][BLOCK_SIZE + 1];
        __syncthreads();
        sAc[threadIdx.y][threadIdx.x] = r < m && t + threadIdx.x < n ? Ac[(t + threadIdx.x) * m + r] : 0;
        sB[threadIdx.x][threadIdx.y] = c < p && t + threadIdx.y < n ? B[(t + threadIdx.y) * p + c] : 0;
        __syncthreads();
        for (index_t i = 0; i < blockDim.x; ++i)
            res += sAc[i][threadIdx.y] * sB[i][threadIdx.x];  // as published (not A*B)
    }
    if (r < m && c < p)
        C[r * p + c] = res;
}

// ---- corrected: C = A*B.  Only the inner statement differs from the published kernels. ----

template <int BLOCK_SIZE>
__global__ void simpleMatMatMul_corrected(const float *Ac, const float *B, float *C,
                                          const index_t m, const index_t n, const index_t p)
{
    const index_t r = blockIdx.y * blockDim.y + threadIdx.y,
                  c = blockIdx.x * blockDim.x + threadIdx.x;
    float res = 0;
    for (index_t t = 0; t < n; t += BLOCK_SIZE)
    {
        float __shared__ sAc[BLOCK_SIZE][BLOCK_SIZE], sB[BLOCK_SIZE][BLOCK_SIZE];
        __syncthreads();
        sAc[threadIdx.y][threadIdx.x] = r < m && t + threadIdx.x < n ? Ac[(t + threadIdx.x) * m + r] : 0;
        sB[threadIdx.x][threadIdx.y] = c < p && t + threadIdx.y < n ? B[(t + threadIdx.y) * p + c] : 0;
        __syncthreads();
        for (index_t i = 0; i < blockDim.x; ++i)
            res += sAc[threadIdx.y][i] * sB[threadIdx.x][i];  // A(r, t+i) * B(t+i, c)
    }
    if (r < m && c < p)
        C[r * p + c] = res;
}

template <int BLOCK_SIZE>
__global__ void naiveMatMatMul_corrected(const float *Ac, const float *B, float *C,
                                         const index_t m, const index_t n, const index_t p)
{
    const index_t r = blockIdx.y * blockDim.y + threadIdx.y,
                  c = blockIdx.x * blockDim.x + threadIdx.x;
    float res = 0;
    for (index_t t = 0; t < n; t += BLOCK_SIZE)
    {
        float __shared__ sAc[BLOCK_SIZE][BLOCK_SIZE + 1], sB[BLOCK_SIZE][BLOCK_SIZE + 1];
        __syncthreads();
        sAc[threadIdx.y][threadIdx.x] = r < m && t + threadIdx.x < n ? Ac[(t + threadIdx.x) * m + r] : 0;
        sB[threadIdx.x][threadIdx.y] = c < p && t + threadIdx.y < n ? B[(t + threadIdx.y) * p + c] : 0;
        __syncthreads();
        for (index_t i = 0; i < blockDim.x; ++i)
            res += sAc[threadIdx.y][i] * sB[threadIdx.x][i];  // A(r, t+i) * B(t+i, c)
    }
    if (r < m && c < p)
        C[r * p + c] = res;
}

template __global__ void simpleMatMatMul<32>(const float *, const float *, float *, const index_t, const index_t, const index_t);
template __global__ void naiveMatMatMul<32>(const float *, const float *, float *, const index_t, const index_t, const index_t);
template __global__ void simpleMatMatMul_corrected<32>(const float *, const float *, float *, const index_t, const index_t, const index_t);
template __global__ void naiveMatMatMul_corrected<32>(const float *, const float *, float *, const index_t, const index_t, const index_t);
