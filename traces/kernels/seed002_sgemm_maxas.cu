// Reconstructed from seed 002 (/work/shared/seeds/002_09409bef7b74f211.txt): a Chinese analysis of
// Scott Gray's maxas SGEMM for Maxwell (NervanaSystems/maxas, wiki page "SGEMM", sgemm64.sass /
// sgemm128.sass).  maxas is hand-written SASS; this is the same algorithm written in CUDA C.
//
//   sgemm_maxas_64   64 threads (2 warps) compute a 64x64 tile of C, 8x8 per thread as four 4x4
//                    blocks (rows x..x+3, x+32..x+35; columns y..y+3, y+32..y+35).  Warp 0 loads
//                    A, warp 1 loads B (float4 per thread, 4 loads per 8-deep k-slab) into
//                    double-buffered shared memory (4 KB per buffer: A 8x64 + B 8x64 floats), one
//                    __syncthreads per k-slab, 128-bit shared loads (LDS.128), k loop unrolled by 8,
//                    registers for k-line j+1 loaded while the 64 FFMAs of line j run, FFMAs written
//                    in the maxas "swirl/vortex" order; C is written through shared memory so that
//                    each warp stores 32 consecutive floats per column (coalesced).
//   sgemm_maxas_128  256 threads (8 warps), 128x128 tile (x..x+3, x+64..x+67), threads 0-127 load
//                    A and 128-255 load B, 8 KB per shared buffer; otherwise the same.
//
// Data layout (maxas): all matrices column-major, B given transposed ("NT" in cuBLAS terms:
// maxas is checked against cublasSgemm(N, T)).  Both inputs are "k-major": consecutive floats run
// along m (for A) or n (for B), consecutive k are lda / ldb apart:
//     A(m_, k_) = A[k_*lda + m_],   B(k_, n_) = B[k_*ldb + n_],   C(m_, n_) = C[n_*ldc + m_]
//     C = alpha * A^T B   with A stored as a k x m and B as a k x n row-major array.
// Parameters as maxas: (C, m, n, k, lda, ldb, ldc, alpha) with the two texture inputs passed as
// pointers here (after C).  m, n, k in elements; lda, ldb, ldc in elements.
//
// Guesses (see NOTES.md): maxas reads A and B through 1-D textures (TLD, zero outside the matrix);
// here they are read through the read-only path, __ldg on const float4* __restrict__ (LDG.CONSTANT),
// without bounds checks, so: m, n multiples of the tile (64 / 128), k a multiple of 8 (>= 8),
// lda, ldb multiples of 4 and 16-byte aligned rows.  The C stores keep maxas' bounds predicates
// (cx < m, cy < n).  The C shuffle through shared memory is warp-synchronous in maxas (each warp
// only touches its own rows of the staging area); CUDA C since Volta needs an explicit barrier and
// __syncwarp() compiles on sm_90 to a BRA.DIV / WARPSYNC.COLLECTIVE fallback path that duplicates
// the epilogue, so each shuffle step is bracketed by __syncthreads() instead (16 extra barriers
// per block, outside the k loop; the first one also makes reusing buffer 0 race-free for any k).
// Launch: sgemm_maxas_64: block 64, grid (m/64, n/64);  sgemm_maxas_128: block 256, grid (m/128, n/128).

// Component i (a compile-time constant after unrolling) of a float4.
#define F4(v, i) ((i) == 0 ? (v).x : (i) == 1 ? (v).y : (i) == 2 ? (v).z : (v).w)

// The 64 FFMAs of one k-line in maxas' swirl order (cOrder of sgemm64.sass / sgemm128.sass):
// c[xi][yi] += A(xi) * B(yi); xi, yi = 0..3 -> x/y + 0..3, 4..7 -> x/y + 32 (or 64) + 0..3.
#define SG_FFMA(xi, yi) c[xi][yi] += F4(jA[cur][(xi) >> 2], (xi) & 3) * F4(jB[cur][(yi) >> 2], (yi) & 3);
#define SG_FFMA64()                                                                                  \
    SG_FFMA(2,0) SG_FFMA(2,1) SG_FFMA(0,1) SG_FFMA(0,0) SG_FFMA(3,0) SG_FFMA(3,1) SG_FFMA(1,1) SG_FFMA(1,0) \
    SG_FFMA(6,0) SG_FFMA(6,1) SG_FFMA(4,1) SG_FFMA(4,0) SG_FFMA(7,0) SG_FFMA(7,1) SG_FFMA(5,1) SG_FFMA(5,0) \
    SG_FFMA(7,2) SG_FFMA(7,3) SG_FFMA(5,3) SG_FFMA(5,2) SG_FFMA(6,2) SG_FFMA(6,3) SG_FFMA(4,3) SG_FFMA(4,2) \
    SG_FFMA(3,2) SG_FFMA(3,3) SG_FFMA(1,3) SG_FFMA(1,2) SG_FFMA(2,2) SG_FFMA(2,3) SG_FFMA(0,3) SG_FFMA(0,2) \
    SG_FFMA(2,4) SG_FFMA(2,5) SG_FFMA(0,5) SG_FFMA(0,4) SG_FFMA(3,4) SG_FFMA(3,5) SG_FFMA(1,5) SG_FFMA(1,4) \
    SG_FFMA(6,4) SG_FFMA(6,5) SG_FFMA(4,5) SG_FFMA(4,4) SG_FFMA(7,4) SG_FFMA(7,5) SG_FFMA(5,5) SG_FFMA(5,4) \
    SG_FFMA(7,6) SG_FFMA(7,7) SG_FFMA(5,7) SG_FFMA(5,6) SG_FFMA(6,6) SG_FFMA(6,7) SG_FFMA(4,7) SG_FFMA(4,6) \
    SG_FFMA(3,6) SG_FFMA(3,7) SG_FFMA(1,7) SG_FFMA(1,6) SG_FFMA(2,6) SG_FFMA(2,7) SG_FFMA(0,7) SG_FFMA(0,6)

#define LDS4(off) (*reinterpret_cast<const float4*>(&smem[(off)]))
#define STS4(off, v) (*reinterpret_cast<float4*>(&smem[(off)]) = (v))

// ---------------------------------------------------------------------------------------------
__global__ void sgemm_maxas_64(float* C, const float* __restrict__ A, const float* __restrict__ B,
                               int m, int n, int k, int lda, int ldb, int ldc, float alpha)
{
    // 2 buffers x (A: 8 lines x 64 floats, B: 8 lines x 64 floats) = 2 x 4 KB
    __shared__ float4 smem4[2 * 2 * 8 * 64 / 4];
    float* smem = reinterpret_cast<float*>(smem4);

    const int tid = threadIdx.x;
    const int bx = blockIdx.x;
    const int by = blockIdx.y;

    // warp 0 loads A, warp 1 loads B
    const int blk = tid >= 32 ? by : bx;
    const int ldx = tid >= 32 ? ldb / 4 : lda / 4;     // line stride in float4
    const float4* __restrict__ tex = reinterpret_cast<const float4*>(tid >= 32 ? B : A);
    const int tid2 = (tid >> 4) & 1;                   // which of 2 lines per load
    const int tid15 = tid & 15;                        // float4 within the 64-float line

    int track0 = blk * 64 / 4 + tid15 + ldx * tid2;
    int track2 = track0 + ldx * 2;
    int track4 = track0 + ldx * 4;
    int track6 = track0 + ldx * 6;
    const int end = track0 + (k - 8) * ldx;

    // shared offsets in floats (maxas uses bytes: these are its values / 4)
    int writeS = tid15 * 4 + tid2 * 64 + (tid >= 32 ? 8 * 64 : 0);
    int readAs = ((tid >> 1) & 7) << 2;
    int readBs = ((((tid & 0x30) >> 3) | (tid & 1)) << 2) + 8 * 64;

    float4 loadX0 = __ldg(tex + track0);
    float4 loadX2 = __ldg(tex + track2);
    float4 loadX4 = __ldg(tex + track4);
    float4 loadX6 = __ldg(tex + track6);

    STS4(writeS + 0 * 64, loadX0);
    STS4(writeS + 2 * 64, loadX2);
    STS4(writeS + 4 * 64, loadX4);
    STS4(writeS + 6 * 64, loadX6);

    track0 += ldx * 8;
    track2 += ldx * 8;
    track4 += ldx * 8;
    track6 += ldx * 8;

    __syncthreads();

    writeS ^= 16 * 64;   // next slab goes to the other buffer

    float c[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
            c[i][j] = 0.0f;

    float4 jA[2][2], jB[2][2];     // [register buffer][x+0..3 | x+32..35]
    jA[0][0] = LDS4(readAs + 0 * 64 + 0);
    jB[0][0] = LDS4(readBs + 0 * 64 + 0);
    jA[0][1] = LDS4(readAs + 0 * 64 + 32);
    jB[0][1] = LDS4(readBs + 0 * 64 + 32);

    for (;;)
    {
        const bool more = track0 <= end;   // another slab to load (same outcome in every thread)
#pragma unroll
        for (int j = 0; j < 8; ++j)
        {
            const int cur = j & 1;
            const int nxt = cur ^ 1;
            const int j1 = (j + 1) & 7;
            // shared -> registers for line j+1 (line 0 of the next slab on j == 7)
            if (j < 7 || more)
            {
                jA[nxt][0] = LDS4(readAs + j1 * 64 + 0);
                jB[nxt][0] = LDS4(readBs + j1 * 64 + 0);
                jA[nxt][1] = LDS4(readAs + j1 * 64 + 32);
                jB[nxt][1] = LDS4(readBs + j1 * 64 + 32);
            }
            if (j == 0 && more)
            {
                loadX0 = __ldg(tex + track0);
                loadX2 = __ldg(tex + track2);
            }
            if (j == 1 && more)
            {
                loadX4 = __ldg(tex + track4);
                loadX6 = __ldg(tex + track6);
            }

            SG_FFMA64()

            if (j == 5 && more)
            {
                STS4(writeS + 0 * 64, loadX0);
                STS4(writeS + 2 * 64, loadX2);
            }
            if (j == 6 && more)
            {
                STS4(writeS + 4 * 64, loadX4);
                STS4(writeS + 6 * 64, loadX6);
                __syncthreads();
                readAs ^= 16 * 64;
                readBs ^= 16 * 64;
                writeS ^= 16 * 64;
            }
        }
        if (!more)
            break;
        track0 += ldx * 8;
        track2 += ldx * 8;
        track4 += ldx * 8;
        track6 += ldx * 8;
    }

    // ---- C: shuffle through shared memory (warp-local) for coalesced global stores ----
    // (as maxas: remove the buffer bit and the B offset; the shuffle uses the A part of buffer 0)
    readAs &= 0x1ff;                                      // x of this thread's first row
    readBs &= 0x1ff;                                      // y of this thread's first column
    const int writeCs = readBs * 16 + readAs;             // (y/4)*64 + x
    const int tid31 = tid & 31;
    const int tid32 = tid & 32;
    const int readCs = (tid32 << 3) + tid31;
    const int cx = bx * 64 + tid31;
    const int cy = by * 64 + (tid32 >> 1);
    const bool px0 = cx < m;
    const bool px32 = cx + 32 < m;

#pragma unroll
    for (int yi = 0; yi < 8; ++yi)
    {
        __syncthreads();   // WAR: previous reads done (first: k-loop readers of buffer 0 done)
        STS4(writeCs + 0,  make_float4(c[0][yi] * alpha, c[1][yi] * alpha, c[2][yi] * alpha, c[3][yi] * alpha));
        STS4(writeCs + 32, make_float4(c[4][yi] * alpha, c[5][yi] * alpha, c[6][yi] * alpha, c[7][yi] * alpha));
        __syncthreads();   // RAW: the shuffled column is in shared memory
        const float cs0 = smem[readCs + 0 * 64 + 0];
        const float cs1 = smem[readCs + 0 * 64 + 32];
        const float cs2 = smem[readCs + 1 * 64 + 0];
        const float cs3 = smem[readCs + 1 * 64 + 32];
        const float cs4 = smem[readCs + 2 * 64 + 0];
        const float cs5 = smem[readCs + 2 * 64 + 32];
        const float cs6 = smem[readCs + 3 * 64 + 0];
        const float cs7 = smem[readCs + 3 * 64 + 32];
        const int cy00 = cy + (yi & 3) + (yi >> 2) * 32;   // columns y+0..3, then y+32..35
        float* Cy00 = C + cy00 * ldc + cx;
        if (cy00 +  0 < n && px0)  Cy00[ 0 * ldc +  0] = cs0;
        if (cy00 +  0 < n && px32) Cy00[ 0 * ldc + 32] = cs1;
        if (cy00 +  4 < n && px0)  Cy00[ 4 * ldc +  0] = cs2;
        if (cy00 +  4 < n && px32) Cy00[ 4 * ldc + 32] = cs3;
        if (cy00 +  8 < n && px0)  Cy00[ 8 * ldc +  0] = cs4;
        if (cy00 +  8 < n && px32) Cy00[ 8 * ldc + 32] = cs5;
        if (cy00 + 12 < n && px0)  Cy00[12 * ldc +  0] = cs6;
        if (cy00 + 12 < n && px32) Cy00[12 * ldc + 32] = cs7;
    }
}

// ---------------------------------------------------------------------------------------------
__global__ void sgemm_maxas_128(float* C, const float* __restrict__ A, const float* __restrict__ B,
                                int m, int n, int k, int lda, int ldb, int ldc, float alpha)
{
    // 2 buffers x (A: 8 lines x 128 floats, B: 8 lines x 128 floats) = 2 x 8 KB
    __shared__ float4 smem4[2 * 2 * 8 * 128 / 4];
    float* smem = reinterpret_cast<float*>(smem4);

    const int tid = threadIdx.x;
    const int bx = blockIdx.x;
    const int by = blockIdx.y;

    // threads 0-127 load A, 128-255 load B
    const int blk = tid >= 128 ? by : bx;
    const int ldx = tid >= 128 ? ldb / 4 : lda / 4;
    const float4* __restrict__ tex = reinterpret_cast<const float4*>(tid >= 128 ? B : A);
    const int tid4 = (tid >> 5) & 3;     // line 0..3 (and +4)
    const int tid31 = tid & 31;          // float4 within the 128-float line
    const int tid96 = tid & 96;
    const int tid128 = tid & 128;

    int track0 = blk * 128 / 4 + tid31 + ldx * tid4;
    int track4 = track0 + ldx * 4;
    const int end = track0 + (k - 8) * ldx;

    int writeS = tid31 * 4 + tid4 * 128 + (tid >= 128 ? 8 * 128 : 0);
    int readAs = ((tid128 >> 4) | ((tid >> 1) & 7)) << 2;
    int readBs = ((((tid & 0x70) >> 3) | (tid & 1)) << 2) + 8 * 128;

    float4 loadX0 = __ldg(tex + track0);
    float4 loadX4 = __ldg(tex + track4);

    STS4(writeS + 0 * 128, loadX0);
    STS4(writeS + 4 * 128, loadX4);

    track0 += ldx * 8;
    track4 += ldx * 8;

    __syncthreads();

    writeS ^= 16 * 128;

    float c[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
            c[i][j] = 0.0f;

    float4 jA[2][2], jB[2][2];     // [register buffer][x+0..3 | x+64..67]
    jA[0][0] = LDS4(readAs + 0 * 128 + 0);
    jB[0][0] = LDS4(readBs + 0 * 128 + 0);
    jA[0][1] = LDS4(readAs + 0 * 128 + 64);
    jB[0][1] = LDS4(readBs + 0 * 128 + 64);

    for (;;)
    {
        const bool more = track0 <= end;
#pragma unroll
        for (int j = 0; j < 8; ++j)
        {
            const int cur = j & 1;
            const int nxt = cur ^ 1;
            const int j1 = (j + 1) & 7;
            if (j < 7 || more)
            {
                jA[nxt][0] = LDS4(readAs + j1 * 128 + 0);
                jB[nxt][0] = LDS4(readBs + j1 * 128 + 0);
                jA[nxt][1] = LDS4(readAs + j1 * 128 + 64);
                jB[nxt][1] = LDS4(readBs + j1 * 128 + 64);
            }
            if (j == 0 && more)
            {
                loadX0 = __ldg(tex + track0);
                loadX4 = __ldg(tex + track4);
            }

            SG_FFMA64()

            if (j == 6 && more)
            {
                STS4(writeS + 0 * 128, loadX0);
                STS4(writeS + 4 * 128, loadX4);
                __syncthreads();
                readAs ^= 16 * 128;
                readBs ^= 16 * 128;
                writeS ^= 16 * 128;
            }
        }
        if (!more)
            break;
        track0 += ldx * 8;
        track4 += ldx * 8;
    }

    // ---- C: shuffle through shared memory (warp-local) for coalesced global stores ----
    readAs &= 0x3ff;
    readBs &= 0x3ff;
    const int writeCs = readBs * 32 + readAs;              // (y/4)*128 + x
    int cx = tid31 | (tid128 >> 2);
    const int readCs = (tid96 << 4) | cx;
    cx += bx * 128;
    const int cy = by * 128 + (tid96 >> 1);
    const bool px0 = cx < m;
    const bool px64 = cx + 64 < m;

#pragma unroll
    for (int yi = 0; yi < 8; ++yi)
    {
        __syncthreads();   // WAR: previous reads done (first: k-loop readers of buffer 0 done)
        STS4(writeCs + 0,  make_float4(c[0][yi] * alpha, c[1][yi] * alpha, c[2][yi] * alpha, c[3][yi] * alpha));
        STS4(writeCs + 64, make_float4(c[4][yi] * alpha, c[5][yi] * alpha, c[6][yi] * alpha, c[7][yi] * alpha));
        __syncthreads();   // RAW: the shuffled column is in shared memory
        const float cs0 = smem[readCs + 0 * 128 + 0];
        const float cs1 = smem[readCs + 0 * 128 + 64];
        const float cs2 = smem[readCs + 1 * 128 + 0];
        const float cs3 = smem[readCs + 1 * 128 + 64];
        const float cs4 = smem[readCs + 2 * 128 + 0];
        const float cs5 = smem[readCs + 2 * 128 + 64];
        const float cs6 = smem[readCs + 3 * 128 + 0];
        const float cs7 = smem[readCs + 3 * 128 + 64];
        const int cy00 = cy + (yi & 3) + (yi >> 2) * 64;   // columns y+0..3, then y+64..67
        float* Cy00 = C + cy00 * ldc + cx;
        if (cy00 +  0 < n && px0)  Cy00[ 0 * ldc +  0] = cs0;
        if (cy00 +  0 < n && px64) Cy00[ 0 * ldc + 64] = cs1;
        if (cy00 +  4 < n && px0)  Cy00[ 4 * ldc +  0] = cs2;
        if (cy00 +  4 < n && px64) Cy00[ 4 * ldc + 64] = cs3;
        if (cy00 +  8 < n && px0)  Cy00[ 8 * ldc +  0] = cs4;
        if (cy00 +  8 < n && px64) Cy00[ 8 * ldc + 64] = cs5;
        if (cy00 + 12 < n && px0)  Cy00[12 * ldc +  0] = cs6;
        if (cy00 + 12 < n && px64) Cy00[12 * ldc + 64] = cs7;
    }
}
