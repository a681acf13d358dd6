// GEMM-family and copy kernels written the way a newcomer writes them, kept outside the validation
// suite: gpusim is never tuned on them. They check the model on shapes the suite does not have
// (matrix-vector products, batched small GEMMs, 16x16 transposes, strided 2D copies, A * B^T).

// y = A x, one thread per row: the warp's lanes read 32 rows n floats apart (32 sectors per load).
__global__ void gemv_rowthread(const float* __restrict__ A, const float* __restrict__ x,
                               float* __restrict__ y, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    float acc = 0.0f;
    for (int j = 0; j < n; ++j) acc += A[(long)row * n + j] * x[j];
    y[row] = acc;
}

// y = A x, one warp per row: coalesced reads of the row, a shuffle reduction at the end.
__global__ void gemv_warprow(const float* __restrict__ A, const float* __restrict__ x,
                             float* __restrict__ y, int n)
{
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= n) return;
    float acc = 0.0f;
    for (int j = lane; j < n; j += 32) acc += A[(long)row * n + j] * x[j];
    for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
    if (lane == 0) y[row] = acc;
}

// out = in^T through a padded 16 x 16 shared tile, 16 x 16 threads.
__global__ void transpose_tile16(const float* __restrict__ in, float* __restrict__ out, int n)
{
    __shared__ float tile[16][17];
    int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[(long)y * n + x];
    __syncthreads();
    x = blockIdx.y * 16 + threadIdx.x;
    y = blockIdx.x * 16 + threadIdx.y;
    out[(long)y * n + x] = tile[threadIdx.x][threadIdx.y];
}

// z = a x + y, grid-stride loop.
__global__ void saxpy_gs(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ z,
                         float a, long count)
{
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < count; i += (long)gridDim.x * blockDim.x)
        z[i] = a * x[i] + y[i];
}

// C[b] = A[b] B[b] for a batch of 32 x 32 matrices, one CTA of 32 x 8 threads per matrix,
// both operands staged whole in shared memory, each thread four outputs of a column.
__global__ void batched_gemm32(const float* __restrict__ A, const float* __restrict__ B,
                               float* __restrict__ C)
{
    __shared__ float As[32][33], Bs[32][33];
    const long base = (long)blockIdx.x * 1024;
    int tx = threadIdx.x, ty = threadIdx.y;
    for (int r = ty; r < 32; r += 8) {
        As[r][tx] = A[base + r * 32 + tx];
        Bs[r][tx] = B[base + r * 32 + tx];
    }
    __syncthreads();
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    for (int k = 0; k < 32; ++k) {
        float b = Bs[k][tx];
        for (int i = 0; i < 4; ++i) acc[i] += As[ty + 8 * i][k] * b;
    }
    for (int i = 0; i < 4; ++i) C[base + (ty + 8 * i) * 32 + tx] = acc[i];
}

// C = A B in double precision, 16 x 16 shared tiles (the CUDA guide's shape).
__global__ void dgemm_tile16(const double* __restrict__ A, const double* __restrict__ B,
                             double* __restrict__ C, int n)
{
    __shared__ double As[16][16], Bs[16][16];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    double acc = 0.0;
    for (int k = 0; k < n; k += 16) {
        As[ty][tx] = A[(long)row * n + k + tx];
        Bs[ty][tx] = B[(long)(k + ty) * n + col];
        __syncthreads();
        for (int i = 0; i < 16; ++i) acc += As[ty][i] * Bs[i][tx];
        __syncthreads();
    }
    C[(long)row * n + col] = acc;
}

// C = A B^T, both row-major: each thread a dot product of a row of A with a row of B; the warp's
// lanes walk 32 rows of B n floats apart.
__global__ void sgemm_abt_naive(const float* __restrict__ A, const float* __restrict__ B,
                                float* __restrict__ C, int n)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    float acc = 0.0f;
    for (int k = 0; k < n; ++k) acc += A[(long)row * n + k] * B[(long)col * n + k];
    C[(long)row * n + col] = acc;
}

// The left half of every row of an n x n matrix into an n x n/2 one (a strided 2D copy).
__global__ void copy_left_half(const float* __restrict__ src, float* __restrict__ dst, int n)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < n / 2) dst[(long)y * (n / 2) + x] = src[(long)y * n + x];
}
