// suite12.cu -- gpusim's own validation suite (issue 12, item 5), written from scratch for this repo.
//
// Every GEMM here computes C = A * B for square n x n matrices; the kernels differ only in how they
// get there, so that their bottlenecks differ (LSU, L1/L2 sectors, shared-memory bank conflicts,
// LDS/STS throughput, FFMA/DFMA issue, DRAM). Layouts: the "row-major" family stores A, B, C
// row-major (element (i, j) at i*n + j); the two column-major kernels store all three column-major
// (element (i, j) at j*n + i). The transposes and the copy work on an m x m float matrix, m = 4n.
// No bounds checks inside the GEMMs: n must be a multiple of the block tile (see each spec).
// Only 32-bit index arithmetic (n <= 8192 keeps every index below 2^31).

// ---------------------------------------------------------------------------------------------------
// Naive SGEMM, row-major, threadIdx.x walks the rows of C: the A load (A[row*n + k]) and the C store
// are strided by n floats across a warp (32 sectors per request); B[k*n + col] is a warp broadcast.
__global__ void sgemm_naive_rowmajor(const float* A, const float* B, float* C, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int col = blockIdx.y * blockDim.y + threadIdx.y;
    float acc = 0.0f;
    for (int k = 0; k < n; ++k)
        acc += A[row * n + k] * B[k * n + col];
    C[row * n + col] = acc;
}

// Naive SGEMM, column-major (A(i,k) at k*n + i). X_IS_ROW = 0: threadIdx.x walks the columns of C, so
// B(k,col) = B[col*n + k] and the C store are strided by n across a warp, A is a broadcast.
// X_IS_ROW = 1: threadIdx.x walks the rows: A and C coalesced, B a broadcast.
template <int X_IS_ROW>
__global__ void sgemm_naive_colmajor(const float* A, const float* B, float* C, int n)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int row = X_IS_ROW ? x : y;
    int col = X_IS_ROW ? y : x;
    float acc = 0.0f;
    for (int k = 0; k < n; ++k)
        acc += A[k * n + row] * B[col * n + k];
    C[col * n + row] = acc;
}
template __global__ void sgemm_naive_colmajor<0>(const float*, const float*, float*, int);
template __global__ void sgemm_naive_colmajor<1>(const float*, const float*, float*, int);

// Naive GEMM, row-major, threadIdx.x walks the columns of C: B and C coalesced, A a broadcast.
template <typename T>
__global__ void gemm_naive_coalesced(const T* A, const T* B, T* C, int n)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    T acc = 0;
    for (int k = 0; k < n; ++k)
        acc += A[row * n + k] * B[k * n + col];
    C[row * n + col] = acc;
}
template __global__ void gemm_naive_coalesced<float>(const float*, const float*, float*, int);
template __global__ void gemm_naive_coalesced<double>(const double*, const double*, double*, int);

// ---------------------------------------------------------------------------------------------------
// Shared-memory tiled SGEMM, 32 x 32 tile, block (32, 32), one output per thread. The A tile is stored
// transposed (As[k][row]) so the inner loop reads As[k][ty] as a broadcast. Without padding that
// store is a 32-way bank conflict (stride 32 words across the warp); PAD = 1 makes it stride 33.
template <int PAD>
__global__ void sgemm_smem(const float* A, const float* B, float* C, int n)
{
    __shared__ float As[32][32 + PAD];
    __shared__ float Bs[32][32];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * 32 + ty;
    int col = blockIdx.x * 32 + tx;
    float acc = 0.0f;
    for (int t = 0; t < n; t += 32) {
        As[tx][ty] = A[row * n + t + tx];
        Bs[ty][tx] = B[(t + ty) * n + col];
        __syncthreads();
        for (int k = 0; k < 32; ++k)
            acc += As[k][ty] * Bs[k][tx];
        __syncthreads();
    }
    C[row * n + col] = acc;
}
template __global__ void sgemm_smem<0>(const float*, const float*, float*, int);
template __global__ void sgemm_smem<1>(const float*, const float*, float*, int);

// ---------------------------------------------------------------------------------------------------
// 1D register tiling: 64 x 64 tile, k-slab 8, 512 threads; thread (tr = tid / 64, tc = tid % 64)
// computes the 8 outputs rows tr*8 .. tr*8+7 of column tc (one column of outputs per thread).
// As[k][m] is transposed with rows of 68 floats: the store (k = tid % 8, m = tid / 8) hits bank
// (4k + m) mod 32, all distinct; rows stay 16-byte aligned so As[k][tr*8 ..] can be read 128 bits wide.
__global__ void __launch_bounds__(512) sgemm_regtile1d(const float* A, const float* B, float* C, int n)
{
    __shared__ float As[8][64 + 4];
    __shared__ float Bs[8][64];
    int tid = threadIdx.x;
    int tr = tid / 64, tc = tid % 64;
    int row0 = blockIdx.y * 64, col0 = blockIdx.x * 64;
    int am = tid / 8, ak = tid % 8;    // this thread's element of the A slab
    int bk = tid / 64, bn = tid % 64;  // ... and of the B slab
    const float* Ap = A + (row0 + am) * n + ak;
    const float* Bp = B + bk * n + col0 + bn;
    float acc[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[i] = 0.0f;
    for (int t = 0; t < n; t += 8) {
        As[ak][am] = Ap[t];
        Bs[bk][bn] = Bp[t * n];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            float b = Bs[k][tc];
#pragma unroll
            for (int i = 0; i < 8; ++i)
                acc[i] += As[k][tr * 8 + i] * b;
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 8; ++i)
        C[(row0 + tr * 8 + i) * n + col0 + tc] = acc[i];
}

// ---------------------------------------------------------------------------------------------------
// 2D register tiling: 128 x 128 tile, k-slab 8, 256 threads, 8 x 8 outputs per thread
// (rows tr*8 .., cols tc*8 .., tr = tid / 16, tc = tid % 16). Scalar global loads and stores.
__global__ void __launch_bounds__(256) sgemm_regtile2d(const float* A, const float* B, float* C, int n)
{
    __shared__ float As[8][128 + 4];
    __shared__ float Bs[8][128];
    int tid = threadIdx.x;
    int tr = tid / 16, tc = tid % 16;
    int row0 = blockIdx.y * 128, col0 = blockIdx.x * 128;
    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;
    for (int t = 0; t < n; t += 8) {
#pragma unroll
        for (int l = 0; l < 4; ++l) {
            int am = tid / 8 + 32 * l, ak = tid % 8;
            As[ak][am] = A[(row0 + am) * n + t + ak];
            int bk = tid / 128 + 2 * l, bn = tid % 128;
            Bs[bk][bn] = B[(t + bk) * n + col0 + bn];
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            float a[8], b[8];
#pragma unroll
            for (int i = 0; i < 8; ++i) a[i] = As[k][tr * 8 + i];
#pragma unroll
            for (int j = 0; j < 8; ++j) b[j] = Bs[k][tc * 8 + j];
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
            C[(row0 + tr * 8 + i) * n + col0 + tc * 8 + j] = acc[i][j];
}

// ---------------------------------------------------------------------------------------------------
// float4-vectorised 2D register tiling: as sgemm_regtile2d, but every global access is 128 bits
// (LDG.128 for both slabs, STG.128 for C), the B slab is stored with STS.128, and the fragments are
// read with explicit float4 loads (LDS.128). The A slab is transposed into As with 4 scalar STS.
// DBUF = 1: two shared buffers (ping-pong); the next slab is loaded into registers before the
// current one is multiplied, stored into the other buffer afterwards, one __syncthreads per slab.
template <int DBUF>
__global__ void __launch_bounds__(256) sgemm_vec4(const float* A, const float* B, float* C, int n)
{
    __shared__ __align__(16) float As[1 + DBUF][8][128 + 4];
    __shared__ __align__(16) float Bs[1 + DBUF][8][128];
    int tid = threadIdx.x;
    int tr = tid / 16, tc = tid % 16;
    int row0 = blockIdx.y * 128, col0 = blockIdx.x * 128;
    int am = tid / 2, ak = (tid % 2) * 4;   // A slab: one float4 (4 k values of one row) per thread
    int bk = tid / 32, bn = (tid % 32) * 4; // B slab: one float4 (4 columns of one k) per thread
    const float4* Ap = reinterpret_cast<const float4*>(A + (row0 + am) * n + ak);
    const float4* Bp = reinterpret_cast<const float4*>(B + bk * n + col0 + bn);
    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

    float4 ra = Ap[0];
    float4 rb = Bp[0];
    int buf = 0;
    if (DBUF) {
        As[0][ak + 0][am] = ra.x; As[0][ak + 1][am] = ra.y; As[0][ak + 2][am] = ra.z; As[0][ak + 3][am] = ra.w;
        *reinterpret_cast<float4*>(&Bs[0][bk][bn]) = rb;
        __syncthreads();
    }
    for (int t = 0; t < n; t += 8) {
        if (DBUF) {
            if (t + 8 < n) {  // prefetch the next slab into registers
                ra = Ap[(t + 8) / 4];
                rb = Bp[(t + 8) * n / 4];
            }
        } else {
            if (t > 0) {
                ra = Ap[t / 4];
                rb = Bp[t * n / 4];
            }
            As[0][ak + 0][am] = ra.x; As[0][ak + 1][am] = ra.y; As[0][ak + 2][am] = ra.z; As[0][ak + 3][am] = ra.w;
            *reinterpret_cast<float4*>(&Bs[0][bk][bn]) = rb;
            __syncthreads();
        }
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            float4 a0 = *reinterpret_cast<const float4*>(&As[buf][k][tr * 8]);
            float4 a1 = *reinterpret_cast<const float4*>(&As[buf][k][tr * 8 + 4]);
            float4 b0 = *reinterpret_cast<const float4*>(&Bs[buf][k][tc * 8]);
            float4 b1 = *reinterpret_cast<const float4*>(&Bs[buf][k][tc * 8 + 4]);
            float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] += a[i] * b[j];
        }
        if (DBUF) {
            if (t + 8 < n) {  // fill the other buffer; the barrier also ends every read of this one
                int nb = buf ^ 1;
                As[nb][ak + 0][am] = ra.x; As[nb][ak + 1][am] = ra.y; As[nb][ak + 2][am] = ra.z; As[nb][ak + 3][am] = ra.w;
                *reinterpret_cast<float4*>(&Bs[nb][bk][bn]) = rb;
                __syncthreads();
                buf = nb;
            }
        } else {
            __syncthreads();
        }
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        float4* Cp = reinterpret_cast<float4*>(C + (row0 + tr * 8 + i) * n + col0 + tc * 8);
        Cp[0] = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        Cp[1] = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
    }
}
template __global__ void sgemm_vec4<0>(const float*, const float*, float*, int);
template __global__ void sgemm_vec4<1>(const float*, const float*, float*, int);

// ---------------------------------------------------------------------------------------------------
// Warp-level tiling: 128 x 128 tile, k-slab 8, 128 threads (4 warps), 128 outputs per thread.
// Warp w owns the 64 x 64 quadrant (w / 2, w % 2); inside it the warp sweeps 2 x 2 sub-tiles of
// 32 x 32, lane (lr = lane / 8, lc = lane % 8) computing 8 rows x 4 columns of each. Per k: 4 LDS.128
// of A fragments (4 distinct addresses per warp), 2 LDS.128 of B fragments (128 contiguous bytes),
// 128 FFMA. All global traffic is 128 bits wide.
__global__ void __launch_bounds__(128) sgemm_warptile(const float* A, const float* B, float* C, int n)
{
    __shared__ __align__(16) float As[8][128 + 4];
    __shared__ __align__(16) float Bs[8][128];
    int tid = threadIdx.x, lane = tid % 32, w = tid / 32;
    int wr = w / 2, wc = w % 2, lr = lane / 8, lc = lane % 8;
    int row0 = blockIdx.y * 128, col0 = blockIdx.x * 128;
    float acc[2][2][8][4];
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int ni = 0; ni < 2; ++ni)
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[mi][ni][i][j] = 0.0f;
    for (int t = 0; t < n; t += 8) {
#pragma unroll
        for (int l = 0; l < 2; ++l) {
            int am = tid / 2 + 64 * l, ak = (tid % 2) * 4;
            float4 va = *reinterpret_cast<const float4*>(A + (row0 + am) * n + t + ak);
            As[ak + 0][am] = va.x; As[ak + 1][am] = va.y; As[ak + 2][am] = va.z; As[ak + 3][am] = va.w;
            int bk = tid / 32 + 4 * l, bn = (tid % 32) * 4;
            *reinterpret_cast<float4*>(&Bs[bk][bn]) = *reinterpret_cast<const float4*>(B + (t + bk) * n + col0 + bn);
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            float a[2][8], b[2][4];
#pragma unroll
            for (int mi = 0; mi < 2; ++mi) {
                float4 x0 = *reinterpret_cast<const float4*>(&As[k][wr * 64 + mi * 32 + lr * 8]);
                float4 x1 = *reinterpret_cast<const float4*>(&As[k][wr * 64 + mi * 32 + lr * 8 + 4]);
                a[mi][0] = x0.x; a[mi][1] = x0.y; a[mi][2] = x0.z; a[mi][3] = x0.w;
                a[mi][4] = x1.x; a[mi][5] = x1.y; a[mi][6] = x1.z; a[mi][7] = x1.w;
            }
#pragma unroll
            for (int ni = 0; ni < 2; ++ni) {
                float4 y = *reinterpret_cast<const float4*>(&Bs[k][wc * 64 + ni * 32 + lc * 4]);
                b[ni][0] = y.x; b[ni][1] = y.y; b[ni][2] = y.z; b[ni][3] = y.w;
            }
#pragma unroll
            for (int mi = 0; mi < 2; ++mi)
#pragma unroll
                for (int ni = 0; ni < 2; ++ni)
#pragma unroll
                    for (int i = 0; i < 8; ++i)
#pragma unroll
                        for (int j = 0; j < 4; ++j) acc[mi][ni][i][j] += a[mi][i] * b[ni][j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int ni = 0; ni < 2; ++ni)
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                int r = row0 + wr * 64 + mi * 32 + lr * 8 + i;
                int c = col0 + wc * 64 + ni * 32 + lc * 4;
                *reinterpret_cast<float4*>(C + r * n + c) =
                    make_float4(acc[mi][ni][i][0], acc[mi][ni][i][1], acc[mi][ni][i][2], acc[mi][ni][i][3]);
            }
}

// ---------------------------------------------------------------------------------------------------
// FP64 register-tiled DGEMM: 64 x 64 tile, k-slab 8, 64 threads, 8 x 8 outputs per thread.
// Thread (tr = tid / 8, tc = tid % 8) owns rows 16*ii + 2*tr + {0,1} and columns 16*jj + 2*tc + {0,1}
// (ii, jj = 0..3), so each fragment read is a 128-bit load of two adjacent doubles and the 8 lanes of
// a row group read 128 contiguous bytes. As[k][m] transposed, rows padded to 66 doubles: the STS.64 of
// (k = tid % 8, m = tid / 8 + 8l) lands on word 4k + 2m (mod 32) within a half-warp, conflict-free.
__global__ void __launch_bounds__(64) dgemm_regtile(const double* A, const double* B, double* C, int n)
{
    __shared__ __align__(16) double As[8][64 + 2];
    __shared__ __align__(16) double Bs[8][64];
    int tid = threadIdx.x;
    int tr = tid / 8, tc = tid % 8;
    int row0 = blockIdx.y * 64, col0 = blockIdx.x * 64;
    double acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0;
    for (int t = 0; t < n; t += 8) {
#pragma unroll
        for (int l = 0; l < 8; ++l) {
            int am = tid / 8 + 8 * l, ak = tid % 8;
            As[ak][am] = A[(row0 + am) * n + t + ak];
            Bs[l][tid] = B[(t + l) * n + col0 + tid];
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            double a[8], b[8];
#pragma unroll
            for (int ii = 0; ii < 4; ++ii) {
                double2 x = *reinterpret_cast<const double2*>(&As[k][16 * ii + 2 * tr]);
                a[2 * ii] = x.x; a[2 * ii + 1] = x.y;
                double2 y = *reinterpret_cast<const double2*>(&Bs[k][16 * ii + 2 * tc]);
                b[2 * ii] = y.x; b[2 * ii + 1] = y.y;
            }
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
            int r = row0 + 16 * (i / 2) + 2 * tr + (i % 2);
            int c = col0 + 16 * jj + 2 * tc;
            *reinterpret_cast<double2*>(C + r * n + c) = make_double2(acc[i][2 * jj], acc[i][2 * jj + 1]);
        }
}

// ---------------------------------------------------------------------------------------------------
// Transpose of an m x m float matrix (out = in^T), 32 x 32 tile per block (32, 8), 4 rows per thread.
// Naive: reads coalesced, writes strided by m floats across the warp (32 sectors per store).
__global__ void transpose_naive(const float* in, float* out, int m)
{
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
#pragma unroll
    for (int j = 0; j < 32; j += 8)
        out[x * m + y + j] = in[(y + j) * m + x];
}

// Through shared memory: both global accesses coalesced; the column read tile[tx][ty + j] is a
// 32-way bank conflict without padding (stride 32 words), conflict-free with PAD = 1.
template <int PAD>
__global__ void transpose_smem(const float* in, float* out, int m)
{
    __shared__ float tile[32][32 + PAD];
    int tx = threadIdx.x, ty = threadIdx.y;
    int x = blockIdx.x * 32 + tx, y = blockIdx.y * 32 + ty;
#pragma unroll
    for (int j = 0; j < 32; j += 8)
        tile[ty + j][tx] = in[(y + j) * m + x];
    __syncthreads();
    int ox = blockIdx.y * 32 + tx, oy = blockIdx.x * 32 + ty;
#pragma unroll
    for (int j = 0; j < 32; j += 8)
        out[(oy + j) * m + ox] = tile[tx][ty + j];
}
template __global__ void transpose_smem<0>(const float*, float*, int);
template __global__ void transpose_smem<1>(const float*, float*, int);

// ---------------------------------------------------------------------------------------------------
// float4 copy: one 16-byte element per thread, read through the read-only path (LDG.128) and stored
// with STG.128; count4 = number of float4 elements. DRAM-bound at large sizes (reads and writes).
__global__ void copy_float4(const float4* __restrict__ in, float4* __restrict__ out, int count4)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count4)
        out[i] = in[i];
}
