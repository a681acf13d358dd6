// Issue 13: small kernels that exercise SASS forms the suite does not (gpusim tests/test_issue13.py).
// Each kernel writes integer bit patterns so the check against numpy is exact.

// u64 division and remainder: the divisor exceeds 32 bits for most lanes, so nvcc's slow path
// CALLs its internal subroutines ($__internal_*_$__cuda_sm20_div_u64 / rem_u64).
extern "C" __global__ void k13_divu64(const unsigned *xh, const unsigned *xl, const unsigned *d,
                                      unsigned *qlo, unsigned *qhi, unsigned *rlo, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long x = ((unsigned long long)xh[i] << 32) | xl[i];
    unsigned long long y = ((unsigned long long)(d[i] >> 20) << 32) | (d[i] | 1u);
    unsigned long long q = x / y, r = x % y;
    qlo[i] = (unsigned)q;
    qhi[i] = (unsigned)(q >> 32);
    rlo[i] = (unsigned)r;
}

// unsigned 32-bit division (I2F.U32.RP, MUFU.RCP, F2I.FTZ.U32.TRUNC) and unsigned conversions.
extern "C" __global__ void k13_divu32(const unsigned *a, const unsigned *b, const float *f,
                                      unsigned *q, unsigned *r, unsigned *fu, unsigned *uf, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned bb = b[i] | 1u;
    q[i] = a[i] / bb;
    r[i] = a[i] % (bb >> 3 | 1u);
    fu[i] = (unsigned)f[i];                  // F2I.U32.TRUNC
    uf[i] = __float_as_uint((float)a[i]);    // I2F.U32 (round to nearest)
}

// 64-bit products: the high word of a 64 x 64-bit product (IMAD.HI.U32 with a register-pair
// addend and carries) and a 64-bit multiply-add.
extern "C" __global__ void k13_mul64(const unsigned *xh, const unsigned *xl, const unsigned *yh,
                                     const unsigned *yl, unsigned *hlo, unsigned *hhi, unsigned *plo,
                                     unsigned *phi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long x = ((unsigned long long)xh[i] << 32) | xl[i];
    unsigned long long y = ((unsigned long long)yh[i] << 32) | yl[i];
    unsigned long long h = __umul64hi(x, y);
    unsigned long long p = x * y + (x >> 7);
    hlo[i] = (unsigned)h;
    hhi[i] = (unsigned)(h >> 32);
    plo[i] = (unsigned)p;
    phi[i] = (unsigned)(p >> 32);
}

// A running sum of two loads: nvcc writes `IADD3 R19, R16, R7, R19`, the destination also the
// third source (read before the write on the hardware).
extern "C" __global__ void k13_sum3(const int *x, const int *y, int *out, int n, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int acc = x[i] * 3;
    for (int j = 1; j < m; j++)
        acc = x[j * n + i] + y[j * n + i] + acc;
    out[i] = acc + m * n + (int)blockIdx.y;
}
