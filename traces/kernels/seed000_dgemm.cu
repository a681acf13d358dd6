// Reconstructed from seed 000 (/work/shared/seeds/000_f8ee0986a6c7775a.txt, NVIDIA developer forum,
// "GPU编程之进击的优化系列二--GPU矩阵乘法优化技术", chapter 2 sections 2.0-2.4) and seed 004
// (/work/shared/seeds/004_2049cd57960bae68.txt, the same book chapter "第二章 GPU矩阵乘法的高效实现"
// with more complete code: K-tail handling, the 32x8 thread layout, the 128-bit B mapping).
//
// Double-precision GEMM, all matrices column-major:  C = A * B  (no alpha/beta in the seeds).
//   A is m x n (lda), B is n x p (ldb), C is m x p (ldc); the kernel argument `n` is the inner
//   dimension K.  m and p must be multiples of 128 (no bounds checks, as in the seeds, which say
//   "the code assumes the rows of A, the columns of B and C are multiples of 128"); K may be any
//   value >= 1 (the K % 8 remainder runs through the seed-004 tail code, fixed, see NOTES.md).
//   For the workloads: square n x n, n a multiple of 128, lda = ldb = ldc = n.
// Launch: block (32, 8) = 256 threads, grid (m/128, p/128); blockIdx.x tiles the rows of C,
//   blockIdx.y the columns.  Each block computes a 128x128 tile of C, each thread 8x8 doubles.
//
// Kernels (names as in the seeds, prefix cuk_; the two non-db 128b kernels are not printed in the
// seeds and are built from the unroll kernel plus the 128-bit macros):
//   cuk_dgemm_unroll                  global prefetch into registers, d_rank8x8 from shared, 2 syncs/step
//   cuk_dgemm_unroll_db               double-buffered shared memory, 1 sync per k-step
//   cuk_dgemm_unroll_128b             unroll + double2 (128-bit) shared loads (mFetchSmem/mRank8x8)
//   cuk_dgemm_unroll_128b_prefsmem    + shared->register prefetch of step k+1 during the FMAs of step k
//   cuk_dgemm_unroll_db_128b          db + 128-bit shared loads
//   cuk_dgemm_unroll_db_128b_prefsmem db + 128-bit + two-level prefetch
//
// Thread mapping (seed 004): lane = tx & 15, slot = 2*ty + (tx >> 4) (0..15).
//   64-bit versions: thread rows    = 128*bx + lane + 16*r (r = 0..7)
//                    thread columns = 128*by + slot + 16*s (s = 0..7)
//   128-bit versions read pairs of adjacent doubles, so the thread rows are
//                    128*bx + 32*q + 2*lane + e (q = 0..3, e = 0..1);  B is loaded into shared with
//                    the seed-004 column permutation ((tx&1)<<4) + (tx>>1) so that the thread columns
//                    stay 128*by + slot + 16*s.  C is stored directly (the seed says the repack of C
//                    through shared memory is only needed for single precision and was not used).
// Shared layout (doubles): A tile at [k*128 + mm] (k = 0..7, mm = 0..127), B tile at
//   1024 + [k*128 + pp]; the db versions have a second buffer at +0x800 doubles.

// --------------------------------------------------------------------------------------------
// 64-bit shared loads: rank-8 update of the 8x8 register tile from one k-line of shared memory
// (seed 000/004, verbatim).  C[i*8 + r] is row r, column i of the thread's tile.
__device__ __forceinline__ void d_rank8x8( double* C, const double* A, const double* B )
{
    double a[8], b;
    a[0]=A[0*16];
    a[1]=A[1*16];
    a[2]=A[2*16];
    a[3]=A[3*16];
    a[4]=A[4*16];
    a[5]=A[5*16];
    a[6]=A[6*16];
    a[7]=A[7*16];
#pragma unroll
    for( int i=0; i<8; ++i ){
        b=B[i*16];
        C[i*8+0]+=a[0]*b;
        C[i*8+1]+=a[1]*b;
        C[i*8+2]+=a[2]*b;
        C[i*8+3]+=a[3]*b;
        C[i*8+4]+=a[4]*b;
        C[i*8+5]+=a[5]*b;
        C[i*8+6]+=a[6]*b;
        C[i*8+7]+=a[7]*b;
    }
}

// 128-bit shared loads (seed 000/004, verbatim apart from line breaks).  Uses the enclosing
// kernel's variables c[64], double2 a[], b[], smem (double2[]), lane, slot.
#define mRank8x8(i0,i1,i2,i3){      \
    c[0*8+0]+=a[i0].x*b[i0].x;      \
    c[0*8+1]+=a[i0].y*b[i0].x;      \
    c[0*8+2]+=a[i1].x*b[i0].x;      \
    c[0*8+3]+=a[i1].y*b[i0].x;      \
    c[0*8+4]+=a[i2].x*b[i0].x;      \
    c[0*8+5]+=a[i2].y*b[i0].x;      \
    c[0*8+6]+=a[i3].x*b[i0].x;      \
    c[0*8+7]+=a[i3].y*b[i0].x;      \
    c[1*8+0]+=a[i0].x*b[i0].y;      \
    c[1*8+1]+=a[i0].y*b[i0].y;      \
    c[1*8+2]+=a[i1].x*b[i0].y;      \
    c[1*8+3]+=a[i1].y*b[i0].y;      \
    c[1*8+4]+=a[i2].x*b[i0].y;      \
    c[1*8+5]+=a[i2].y*b[i0].y;      \
    c[1*8+6]+=a[i3].x*b[i0].y;      \
    c[1*8+7]+=a[i3].y*b[i0].y;      \
    c[2*8+0]+=a[i0].x*b[i1].x;      \
    c[2*8+1]+=a[i0].y*b[i1].x;      \
    c[2*8+2]+=a[i1].x*b[i1].x;      \
    c[2*8+3]+=a[i1].y*b[i1].x;      \
    c[2*8+4]+=a[i2].x*b[i1].x;      \
    c[2*8+5]+=a[i2].y*b[i1].x;      \
    c[2*8+6]+=a[i3].x*b[i1].x;      \
    c[2*8+7]+=a[i3].y*b[i1].x;      \
    c[3*8+0]+=a[i0].x*b[i1].y;      \
    c[3*8+1]+=a[i0].y*b[i1].y;      \
    c[3*8+2]+=a[i1].x*b[i1].y;      \
    c[3*8+3]+=a[i1].y*b[i1].y;      \
    c[3*8+4]+=a[i2].x*b[i1].y;      \
    c[3*8+5]+=a[i2].y*b[i1].y;      \
    c[3*8+6]+=a[i3].x*b[i1].y;      \
    c[3*8+7]+=a[i3].y*b[i1].y;      \
    c[4*8+0]+=a[i0].x*b[i2].x;      \
    c[4*8+1]+=a[i0].y*b[i2].x;      \
    c[4*8+2]+=a[i1].x*b[i2].x;      \
    c[4*8+3]+=a[i1].y*b[i2].x;      \
    c[4*8+4]+=a[i2].x*b[i2].x;      \
    c[4*8+5]+=a[i2].y*b[i2].x;      \
    c[4*8+6]+=a[i3].x*b[i2].x;      \
    c[4*8+7]+=a[i3].y*b[i2].x;      \
    c[5*8+0]+=a[i0].x*b[i2].y;      \
    c[5*8+1]+=a[i0].y*b[i2].y;      \
    c[5*8+2]+=a[i1].x*b[i2].y;      \
    c[5*8+3]+=a[i1].y*b[i2].y;      \
    c[5*8+4]+=a[i2].x*b[i2].y;      \
    c[5*8+5]+=a[i2].y*b[i2].y;      \
    c[5*8+6]+=a[i3].x*b[i2].y;      \
    c[5*8+7]+=a[i3].y*b[i2].y;      \
    c[6*8+0]+=a[i0].x*b[i3].x;      \
    c[6*8+1]+=a[i0].y*b[i3].x;      \
    c[6*8+2]+=a[i1].x*b[i3].x;      \
    c[6*8+3]+=a[i1].y*b[i3].x;      \
    c[6*8+4]+=a[i2].x*b[i3].x;      \
    c[6*8+5]+=a[i2].y*b[i3].x;      \
    c[6*8+6]+=a[i3].x*b[i3].x;      \
    c[6*8+7]+=a[i3].y*b[i3].x;      \
    c[7*8+0]+=a[i0].x*b[i3].y;      \
    c[7*8+1]+=a[i0].y*b[i3].y;      \
    c[7*8+2]+=a[i1].x*b[i3].y;      \
    c[7*8+3]+=a[i1].y*b[i3].y;      \
    c[7*8+4]+=a[i2].x*b[i3].y;      \
    c[7*8+5]+=a[i2].y*b[i3].y;      \
    c[7*8+6]+=a[i3].x*b[i3].y;      \
    c[7*8+7]+=a[i3].y*b[i3].y;      \
}

// k is a k-line (0..7) of the current shared buffer; smem is double2[], so 512 = B offset 1024 doubles.
#define mFetchSmem(i0,i1,i2,i3,k){          \
    a[i0]=smem[    (k)*64+ 0+lane];         \
    a[i1]=smem[    (k)*64+16+lane];         \
    a[i2]=smem[    (k)*64+32+lane];         \
    a[i3]=smem[    (k)*64+48+lane];         \
    b[i0]=smem[512+(k)*64+ 0+slot];         \
    b[i1]=smem[512+(k)*64+16+slot];         \
    b[i2]=smem[512+(k)*64+32+slot];         \
    b[i3]=smem[512+(k)*64+48+slot];         \
}

// ---- pieces shared by the kernels (kept as macros so every kernel reads like the seed) ----

// Global prefetch of one 8-deep k-slab into registers: A rows 32*j + tx, B columns 32*j + (tx or perm).
#define LOAD_GLOBAL_REGS()                          \
    p0=d_A[0*32]; p1=d_A[1*32]; p2=d_A[2*32]; p3=d_A[3*32]; \
    q0=d_B[0*32*ldb]; q1=d_B[1*32*ldb]; q2=d_B[2*32*ldb]; q3=d_B[3*32*ldb];

// Register -> shared store of the prefetched slab (St = &smem_d[(ty<<7)+tx]).
#define STORE_REGS_TO_SMEM()                        \
    *(St+0*32)=p0; *(St+1*32)=p1; *(St+2*32)=p2; *(St+3*32)=p3; \
    *(St+1024+0*32)=q0; *(St+1024+1*32)=q1; *(St+1024+2*32)=q2; *(St+1024+3*32)=q3;

// db versions: global -> shared directly into buffer sidx (double index).
#define LOAD_GLOBAL_TO_SMEM(sm)                     \
    (sm)[0*32+sidx]=d_A[0*32];                      \
    (sm)[1*32+sidx]=d_A[1*32];                      \
    (sm)[2*32+sidx]=d_A[2*32];                      \
    (sm)[3*32+sidx]=d_A[3*32];                      \
    (sm)[1024+0*32+sidx]=d_B[0*32*ldb];             \
    (sm)[1024+1*32+sidx]=d_B[1*32*ldb];             \
    (sm)[1024+2*32+sidx]=d_B[2*32*ldb];             \
    (sm)[1024+3*32+sidx]=d_B[3*32*ldb];

// C store for the 64-bit versions: d_C -> (128*bx + lane, 128*by + slot); rows +16*r, columns +16*s.
#define STORE_C_64()                                \
    _Pragma("unroll")                               \
    for( int i=0; i<64; i+=8 ){                     \
        d_C[0*16]=c[i+0];                           \
        d_C[1*16]=c[i+1];                           \
        d_C[2*16]=c[i+2];                           \
        d_C[3*16]=c[i+3];                           \
        d_C[4*16]=c[i+4];                           \
        d_C[5*16]=c[i+5];                           \
        d_C[6*16]=c[i+6];                           \
        d_C[7*16]=c[i+7];                           \
        d_C+=(ldc<<4);                              \
    }

// C store for the 128-bit versions: d_C -> (128*bx + 2*lane, 128*by + slot); rows +32*q + e.
#define STORE_C_128()                               \
    _Pragma("unroll")                               \
    for( int i=0; i<64; i+=8 ){                     \
        d_C[0*32+0]=c[i+0];                         \
        d_C[0*32+1]=c[i+1];                         \
        d_C[1*32+0]=c[i+2];                         \
        d_C[1*32+1]=c[i+3];                         \
        d_C[2*32+0]=c[i+4];                         \
        d_C[2*32+1]=c[i+5];                         \
        d_C[3*32+0]=c[i+6];                         \
        d_C[3*32+1]=c[i+7];                         \
        d_C+=(ldc<<4);                              \
    }

// --------------------------------------------------------------------------------------------
// 2.0  loop unrolling + data prefetch
__global__ void cuk_dgemm_unroll( double* d_C, const double* d_A, const double* __restrict__ d_B, int n, int lda, int ldb, int ldc )
{
    __shared__ double smem[2048];
    double p0, p1, p2, p3, q0, q1, q2, q3, c[64]={0.};
    int k, lane, slot;
    lane=threadIdx.x&15;
    slot=(threadIdx.y<<1)+(threadIdx.x>>4);
    d_C+=(((blockIdx.y<<7)+slot)*ldc+(blockIdx.x<<7)+lane);
    d_A+=(threadIdx.y*lda+(blockIdx.x<<7)+threadIdx.x);
    d_B+=(((blockIdx.y<<7)+threadIdx.x)*ldb+threadIdx.y);
    double* St=&smem[(threadIdx.y<<7)+threadIdx.x];
    double* At=&smem[lane];
    double* Bt=&smem[1024+slot];
    if((int)threadIdx.y<n){
        LOAD_GLOBAL_REGS()
    }
    for( k=n-8; k>=0; k-=8 )
    {
        STORE_REGS_TO_SMEM()
        __syncthreads();
        if((int)threadIdx.y<k){
            d_A+=(lda<<3); d_B+=8;
            LOAD_GLOBAL_REGS()
        }
#pragma unroll
        for( int i=0; i<8; ++i ){
            d_rank8x8( c, &At[i*128], &Bt[i*128] );
        }
        __syncthreads();
    }
    if(k!=-8)   // K % 8 remaining k-lines, loaded by the last iteration (rows ty < K%8)
    {
        STORE_REGS_TO_SMEM()
        __syncthreads();
        k+=8;
        do{
            d_rank8x8( c, At, Bt );
            At+=128; Bt+=128;
        }while((--k)>0);
    }
    STORE_C_64()
}

// 2.1  + double-buffered shared memory: one __syncthreads per k-step
__global__ void cuk_dgemm_unroll_db( double* d_C, const double* d_A, const double* __restrict__ d_B, int n, int lda, int ldb, int ldc )
{
    __shared__ double smem[4096];
    double c[64]={0.};
    int k, lane, slot, sidx;
    lane=threadIdx.x&15;
    slot=(threadIdx.y<<1)+(threadIdx.x>>4);
    d_C+=(((blockIdx.y<<7)+slot)*ldc+(blockIdx.x<<7)+lane);
    d_A+=(threadIdx.y*lda+(blockIdx.x<<7)+threadIdx.x);
    d_B+=(((blockIdx.y<<7)+threadIdx.x)*ldb+threadIdx.y);
    sidx=(threadIdx.y<<7)+threadIdx.x;
    slot+=1024;                         // slot now indexes the B part of the buffer
    if((int)threadIdx.y<n){
        LOAD_GLOBAL_TO_SMEM(smem)
    }
    for( k=n-8; k>=0; k-=8 )
    {
        __syncthreads();
        if((int)threadIdx.y<k){
            d_A+=(lda<<3); d_B+=8;
            sidx^=0x800;
            LOAD_GLOBAL_TO_SMEM(smem)
        }
#pragma unroll
        for( int i=0; i<8; ++i ){
            d_rank8x8( c, &smem[i*128+lane], &smem[i*128+slot] );
        }
        lane^=0x800; slot^=0x800;
    }
    if(k!=-8)
    {
        __syncthreads();
        k+=8;
        do{
            d_rank8x8( c, &smem[lane], &smem[slot] );
            lane+=128; slot+=128;
        }while((--k)>0);
    }
    STORE_C_64()
}

// 2.2  unroll + 128-bit shared loads (not printed in the seeds: unroll + mFetchSmem/mRank8x8)
__global__ void cuk_dgemm_unroll_128b( double* d_C, const double* d_A, const double* __restrict__ d_B, int n, int lda, int ldb, int ldc )
{
    __shared__ double2 smem[1024];
    double2 a[4], b[4];
    double p0, p1, p2, p3, q0, q1, q2, q3, c[64]={0.};
    int k, lane, slot;
    lane=threadIdx.x&15;
    slot=(threadIdx.y<<1)+(threadIdx.x>>4);
    d_C+=(((blockIdx.y<<7)+slot)*ldc+(blockIdx.x<<7)+(lane<<1));
    d_A+=(threadIdx.y*lda+(blockIdx.x<<7)+threadIdx.x);
    d_B+=(((blockIdx.y<<7)+((threadIdx.x&1)<<4)+(threadIdx.x>>1))*ldb+threadIdx.y);
    double* St=&((double*)smem)[(threadIdx.y<<7)+threadIdx.x];
    if((int)threadIdx.y<n){
        LOAD_GLOBAL_REGS()
    }
    for( k=n-8; k>=0; k-=8 )
    {
        STORE_REGS_TO_SMEM()
        __syncthreads();
        if((int)threadIdx.y<k){
            d_A+=(lda<<3); d_B+=8;
            LOAD_GLOBAL_REGS()
        }
#pragma unroll
        for( int i=0; i<8; ++i ){
            mFetchSmem(0,1,2,3,i)
            mRank8x8(0,1,2,3)
        }
        __syncthreads();
    }
    if(k!=-8)
    {
        STORE_REGS_TO_SMEM()
        __syncthreads();
        k+=8;
        for( int i=0; i<k; ++i ){
            mFetchSmem(0,1,2,3,i)
            mRank8x8(0,1,2,3)
        }
    }
    STORE_C_128()
}

// 2.3  unroll + 128-bit + shared-memory prefetch (not printed in the seeds; single buffer, so the
//      register->shared store of the next slab needs a second __syncthreads)
__global__ void cuk_dgemm_unroll_128b_prefsmem( double* d_C, const double* d_A, const double* __restrict__ d_B, int n, int lda, int ldb, int ldc )
{
    __shared__ double2 smem[1024];
    double2 a[8], b[8];
    double p0, p1, p2, p3, q0, q1, q2, q3, c[64]={0.};
    int k, lane, slot;
    lane=threadIdx.x&15;
    slot=(threadIdx.y<<1)+(threadIdx.x>>4);
    d_C+=(((blockIdx.y<<7)+slot)*ldc+(blockIdx.x<<7)+(lane<<1));
    d_A+=(threadIdx.y*lda+(blockIdx.x<<7)+threadIdx.x);
    d_B+=(((blockIdx.y<<7)+((threadIdx.x&1)<<4)+(threadIdx.x>>1))*ldb+threadIdx.y);
    double* St=&((double*)smem)[(threadIdx.y<<7)+threadIdx.x];
    if((int)threadIdx.y<n){
        LOAD_GLOBAL_REGS()
    }
    STORE_REGS_TO_SMEM()
    __syncthreads();
    mFetchSmem(0,2,4,6,0)
    for( k=n-8; k>=0; k-=8 )
    {
        if((int)threadIdx.y<k){
            d_A+=(lda<<3); d_B+=8;
            LOAD_GLOBAL_REGS()
        }
        mFetchSmem(1,3,5,7,1)
        mRank8x8(0,2,4,6)
        mFetchSmem(0,2,4,6,2)
        mRank8x8(1,3,5,7)
        mFetchSmem(1,3,5,7,3)
        mRank8x8(0,2,4,6)
        mFetchSmem(0,2,4,6,4)
        mRank8x8(1,3,5,7)
        mFetchSmem(1,3,5,7,5)
        mRank8x8(0,2,4,6)
        mFetchSmem(0,2,4,6,6)
        mRank8x8(1,3,5,7)
        mFetchSmem(1,3,5,7,7)
        mRank8x8(0,2,4,6)
        __syncthreads();
        STORE_REGS_TO_SMEM()
        __syncthreads();
        mFetchSmem(0,2,4,6,0)
        mRank8x8(1,3,5,7)
    }
    if(k!=-8)   // the K % 8 remainder is already in shared memory
    {
        k+=8;
        for( int i=0; i<k; ++i ){
            mFetchSmem(0,2,4,6,i)
            mRank8x8(0,2,4,6)
        }
    }
    STORE_C_128()
}

// 2.2  db + 128-bit shared loads (seed: cuk_dgemm_unroll_db_128b)
__global__ void cuk_dgemm_unroll_db_128b( double* d_C, const double* d_A, const double* __restrict__ d_B, int n, int lda, int ldb, int ldc )
{
    __shared__ double2 smem[2048];
    double2 a[4], b[4];
    double c[64]={0.};
    int k, lane, slot, sidx;
    lane=threadIdx.x&15;
    slot=(threadIdx.y<<1)+(threadIdx.x>>4);
    d_C+=(((blockIdx.y<<7)+slot)*ldc+(blockIdx.x<<7)+(lane<<1));
    d_A+=(threadIdx.y*lda+(blockIdx.x<<7)+threadIdx.x);
    d_B+=(((blockIdx.y<<7)+((threadIdx.x&1)<<4)+(threadIdx.x>>1))*ldb+threadIdx.y);
    sidx=(threadIdx.y<<7)+threadIdx.x;
    if((int)threadIdx.y<n){
        LOAD_GLOBAL_TO_SMEM((double*)smem)
    }
    for( k=n-8; k>=0; k-=8 )
    {
        __syncthreads();
        if((int)threadIdx.y<k){
            d_A+=(lda<<3); d_B+=8;
            sidx^=0x800;
            LOAD_GLOBAL_TO_SMEM((double*)smem)
        }
#pragma unroll
        for( int i=0; i<8; ++i ){
            mFetchSmem(0,1,2,3,i)
            mRank8x8(0,1,2,3)
        }
        lane^=0x400; slot^=0x400;
    }
    if(k!=-8)
    {
        __syncthreads();
        k+=8;
        for( int i=0; i<k; ++i ){
            mFetchSmem(0,1,2,3,i)
            mRank8x8(0,1,2,3)
        }
    }
    STORE_C_128()
}

// 2.3  db + 128-bit + shared-memory prefetch (seed: cuk_dgemm_unroll_db_128b_prefsmem)
__global__ void cuk_dgemm_unroll_db_128b_prefsmem( double* d_C, const double* d_A, const double* __restrict__ d_B, int n, int lda, int ldb, int ldc )
{
    __shared__ double2 smem[2048];
    double2 a[8], b[8];
    double c[64]={0.};
    int k, lane, slot, sidx;
    lane=threadIdx.x&15;
    slot=(threadIdx.y<<1)+(threadIdx.x>>4);
    d_C+=(((blockIdx.y<<7)+slot)*ldc+(blockIdx.x<<7)+(lane<<1));
    d_A+=(threadIdx.y*lda+(blockIdx.x<<7)+threadIdx.x);
    d_B+=(((blockIdx.y<<7)+((threadIdx.x&1)<<4)+(threadIdx.x>>1))*ldb+threadIdx.y);
    sidx=(threadIdx.y<<7)+threadIdx.x;
    if((int)threadIdx.y<n){
        LOAD_GLOBAL_TO_SMEM((double*)smem)
    }
    __syncthreads();
    mFetchSmem(0,2,4,6,0)
    for( k=n-8; k>=0; k-=8 )
    {
        if((int)threadIdx.y<k)
        {
            d_A+=(lda<<3); d_B+=8;
            sidx^=0x800;
            LOAD_GLOBAL_TO_SMEM((double*)smem)
        }
        mFetchSmem(1,3,5,7,1)
        mRank8x8(0,2,4,6)
        mFetchSmem(0,2,4,6,2)
        mRank8x8(1,3,5,7)
        mFetchSmem(1,3,5,7,3)
        mRank8x8(0,2,4,6)
        mFetchSmem(0,2,4,6,4)
        mRank8x8(1,3,5,7)
        mFetchSmem(1,3,5,7,5)
        mRank8x8(0,2,4,6)
        mFetchSmem(0,2,4,6,6)
        mRank8x8(1,3,5,7)
        mFetchSmem(1,3,5,7,7)
        mRank8x8(0,2,4,6)
        __syncthreads();
        lane^=0x400; slot^=0x400;
        mFetchSmem(0,2,4,6,0)
        mRank8x8(1,3,5,7)
    }
    if(k!=-8)   // the K % 8 remainder is in the buffer selected by the last swap
    {
        k+=8;
        for( int i=0; i<k; ++i ){
            mFetchSmem(0,2,4,6,i)
            mRank8x8(0,2,4,6)
        }
    }
    STORE_C_128()
}
