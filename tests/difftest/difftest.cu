
#define U(x) ((unsigned long long)(unsigned)(x))
#define F(x) ((unsigned long long)__float_as_uint(x))
#define D(x) ((unsigned long long)__double_as_longlong(x))
#define L(x) ((unsigned long long)(x))
#define P(x, y) (F(x) | (F(y) << 32))
// MUFU.RCP64H / MUFU.RSQ64H alone: the high word's approximation, low word zero
__device__ __forceinline__ double rcp_approx(double x)
{ double r; asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(x)); return r; }
__device__ __forceinline__ double rsqrt_approx(double x)
{ double r; asm("rsqrt.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(x)); return r; }

extern "C" __global__ void dt_int(const unsigned long long *A, const unsigned long long *B,
                                  const unsigned long long *C, unsigned long long *O, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long a64 = A[i], b64 = B[i], c64 = C[i];
    long long la = (long long)a64, lb = (long long)b64;
    unsigned a = (unsigned)a64, b = (unsigned)b64, c = (unsigned)c64;
    int sa = (int)a, sb = (int)b;
    float fa = __uint_as_float(a), fb = __uint_as_float(b), fc = __uint_as_float(c);
    float fh = __uint_as_float((unsigned)(c64 >> 32));
    double da = __longlong_as_double(la), db = __longlong_as_double(lb), dc = __longlong_as_double((long long)c64);
    unsigned long long *o = O + (size_t)i * 8;
    o[0] = U(a + b + c);
    o[1] = U(a - b);
    o[2] = U(a * b + c);
    o[3] = U(__umulhi(a, b));
    o[4] = U(__mulhi(sa, sb));
    o[5] = U(min(sa, sb));
    o[6] = U(max(a, b));
    o[7] = U(__byte_perm(a, b, c));
}

extern "C" __global__ void dt_shift(const unsigned long long *A, const unsigned long long *B,
                                  const unsigned long long *C, unsigned long long *O, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long a64 = A[i], b64 = B[i], c64 = C[i];
    long long la = (long long)a64, lb = (long long)b64;
    unsigned a = (unsigned)a64, b = (unsigned)b64, c = (unsigned)c64;
    int sa = (int)a, sb = (int)b;
    float fa = __uint_as_float(a), fb = __uint_as_float(b), fc = __uint_as_float(c);
    float fh = __uint_as_float((unsigned)(c64 >> 32));
    double da = __longlong_as_double(la), db = __longlong_as_double(lb), dc = __longlong_as_double((long long)c64);
    unsigned long long *o = O + (size_t)i * 8;
    o[0] = U(a << (b & 31));
    o[1] = U(a >> (b & 31));
    o[2] = U(sa >> (b & 31));
    o[3] = U(__funnelshift_l(a, b, c));
    o[4] = U(__funnelshift_r(a, b, c));
    o[5] = U(__funnelshift_lc(a, b, c));
    o[6] = U(__popc(a));
    o[7] = U(__funnelshift_rc(a, b, c));
}

extern "C" __global__ void dt_mul64(const unsigned long long *A, const unsigned long long *B,
                                  const unsigned long long *C, unsigned long long *O, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long a64 = A[i], b64 = B[i], c64 = C[i];
    long long la = (long long)a64, lb = (long long)b64;
    unsigned a = (unsigned)a64, b = (unsigned)b64, c = (unsigned)c64;
    int sa = (int)a, sb = (int)b;
    float fa = __uint_as_float(a), fb = __uint_as_float(b), fc = __uint_as_float(c);
    float fh = __uint_as_float((unsigned)(c64 >> 32));
    double da = __longlong_as_double(la), db = __longlong_as_double(lb), dc = __longlong_as_double((long long)c64);
    unsigned long long *o = O + (size_t)i * 8;
    o[0] = L(a64 * b64);
    o[1] = L(__umul64hi(a64, b64));
    o[2] = L(__mul64hi(la, lb));
    o[3] = L((unsigned long long)a * b);
    o[4] = L((long long)sa * sb);
    o[5] = L(a64 * b64 + c64);
    o[6] = L(a64 + b64);
    o[7] = L(la - lb);
}

extern "C" __global__ void dt_div(const unsigned long long *A, const unsigned long long *B,
                                  const unsigned long long *C, unsigned long long *O, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long a64 = A[i], b64 = B[i], c64 = C[i];
    long long la = (long long)a64, lb = (long long)b64;
    unsigned a = (unsigned)a64, b = (unsigned)b64, c = (unsigned)c64;
    int sa = (int)a, sb = (int)b;
    float fa = __uint_as_float(a), fb = __uint_as_float(b), fc = __uint_as_float(c);
    float fh = __uint_as_float((unsigned)(c64 >> 32));
    double da = __longlong_as_double(la), db = __longlong_as_double(lb), dc = __longlong_as_double((long long)c64);
    unsigned long long *o = O + (size_t)i * 8;
    o[0] = U(a / b);
    o[1] = U(a % b);
    o[2] = U(sa / sb);
    o[3] = U(sa % sb);
    o[4] = L(a64 / b64);
    o[5] = L(a64 % b64);
    o[6] = L(la / lb);
    o[7] = L(la % lb);
}

extern "C" __global__ void dt_cvt32(const unsigned long long *A, const unsigned long long *B,
                                  const unsigned long long *C, unsigned long long *O, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long a64 = A[i], b64 = B[i], c64 = C[i];
    long long la = (long long)a64, lb = (long long)b64;
    unsigned a = (unsigned)a64, b = (unsigned)b64, c = (unsigned)c64;
    int sa = (int)a, sb = (int)b;
    float fa = __uint_as_float(a), fb = __uint_as_float(b), fc = __uint_as_float(c);
    float fh = __uint_as_float((unsigned)(c64 >> 32));
    double da = __longlong_as_double(la), db = __longlong_as_double(lb), dc = __longlong_as_double((long long)c64);
    unsigned long long *o = O + (size_t)i * 8;
    o[0] = F((float)a);
    o[1] = F((float)sa);
    o[2] = F(__uint2float_rz(a));
    o[3] = F(__int2float_ru(sa));
    o[4] = F(__int2float_rd(sa));
    o[5] = U((unsigned)fa);
    o[6] = U((int)fa);
    o[7] = U(__float2int_rn(fa));
}

extern "C" __global__ void dt_cvt64(const unsigned long long *A, const unsigned long long *B,
                                  const unsigned long long *C, unsigned long long *O, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long a64 = A[i], b64 = B[i], c64 = C[i];
    long long la = (long long)a64, lb = (long long)b64;
    unsigned a = (unsigned)a64, b = (unsigned)b64, c = (unsigned)c64;
    int sa = (int)a, sb = (int)b;
    float fa = __uint_as_float(a), fb = __uint_as_float(b), fc = __uint_as_float(c);
    float fh = __uint_as_float((unsigned)(c64 >> 32));
    double da = __longlong_as_double(la), db = __longlong_as_double(lb), dc = __longlong_as_double((long long)c64);
    unsigned long long *o = O + (size_t)i * 8;
    o[0] = U(__float2uint_rn(fa));
    o[1] = U(__float2int_rd(fa));
    o[2] = U(__float2int_ru(fa));
    o[3] = L(__float2ll_rz(fa));
    o[4] = L(__float2ull_rz(fa));
    o[5] = F((float)a64);
    o[6] = F((float)la);
    o[7] = D((double)a64);
}

extern "C" __global__ void dt_cvtf64(const unsigned long long *A, const unsigned long long *B,
                                  const unsigned long long *C, unsigned long long *O, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long a64 = A[i], b64 = B[i], c64 = C[i];
    long long la = (long long)a64, lb = (long long)b64;
    unsigned a = (unsigned)a64, b = (unsigned)b64, c = (unsigned)c64;
    int sa = (int)a, sb = (int)b;
    float fa = __uint_as_float(a), fb = __uint_as_float(b), fc = __uint_as_float(c);
    float fh = __uint_as_float((unsigned)(c64 >> 32));
    double da = __longlong_as_double(la), db = __longlong_as_double(lb), dc = __longlong_as_double((long long)c64);
    unsigned long long *o = O + (size_t)i * 8;
    o[0] = L((long long)da);
    o[1] = L((unsigned long long)da);
    o[2] = U((int)da);
    o[3] = U((unsigned)da);
    o[4] = F((float)da);
    o[5] = D((double)fa);
    o[6] = D((double)sa);
    o[7] = D((double)a);
}

extern "C" __global__ void dt_fp32(const unsigned long long *A, const unsigned long long *B,
                                  const unsigned long long *C, unsigned long long *O, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long a64 = A[i], b64 = B[i], c64 = C[i];
    long long la = (long long)a64, lb = (long long)b64;
    unsigned a = (unsigned)a64, b = (unsigned)b64, c = (unsigned)c64;
    int sa = (int)a, sb = (int)b;
    float fa = __uint_as_float(a), fb = __uint_as_float(b), fc = __uint_as_float(c);
    float fh = __uint_as_float((unsigned)(c64 >> 32));
    double da = __longlong_as_double(la), db = __longlong_as_double(lb), dc = __longlong_as_double((long long)c64);
    unsigned long long *o = O + (size_t)i * 8;
    o[0] = F(fa + fb);
    o[1] = F(fa * fb);
    o[2] = F(__fmaf_rn(fa, fb, fc));
    o[3] = F(__fadd_rz(fa, fb));
    o[4] = F(__fmul_ru(fa, fb));
    o[5] = F(fminf(fa, fb));
    o[6] = F(fmaxf(fa, fb));
    o[7] = F(__saturatef(fa));
}

extern "C" __global__ void dt_fcmp(const unsigned long long *A, const unsigned long long *B,
                                  const unsigned long long *C, unsigned long long *O, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long a64 = A[i], b64 = B[i], c64 = C[i];
    long long la = (long long)a64, lb = (long long)b64;
    unsigned a = (unsigned)a64, b = (unsigned)b64, c = (unsigned)c64;
    int sa = (int)a, sb = (int)b;
    float fa = __uint_as_float(a), fb = __uint_as_float(b), fc = __uint_as_float(c);
    float fh = __uint_as_float((unsigned)(c64 >> 32));
    double da = __longlong_as_double(la), db = __longlong_as_double(lb), dc = __longlong_as_double((long long)c64);
    unsigned long long *o = O + (size_t)i * 8;
    o[0] = U(fa < fb);
    o[1] = U(fa <= fb);
    o[2] = U(fa == fb);
    o[3] = U(fa != fb);
    o[4] = U(!(fa < fb));
    o[5] = U(isnan(fa));
    o[6] = U(fa > fb ? a : b);
    o[7] = U(fabsf(fa) >= fb);
}

extern "C" __global__ void dt_fp64(const unsigned long long *A, const unsigned long long *B,
                                  const unsigned long long *C, unsigned long long *O, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long a64 = A[i], b64 = B[i], c64 = C[i];
    long long la = (long long)a64, lb = (long long)b64;
    unsigned a = (unsigned)a64, b = (unsigned)b64, c = (unsigned)c64;
    int sa = (int)a, sb = (int)b;
    float fa = __uint_as_float(a), fb = __uint_as_float(b), fc = __uint_as_float(c);
    float fh = __uint_as_float((unsigned)(c64 >> 32));
    double da = __longlong_as_double(la), db = __longlong_as_double(lb), dc = __longlong_as_double((long long)c64);
    unsigned long long *o = O + (size_t)i * 8;
    o[0] = D(da + db);
    o[1] = D(da * db);
    o[2] = D(fma(da, db, dc));
    o[3] = D(__dadd_rz(da, db));
    o[4] = D(fmin(da, db));
    o[5] = D(fmax(da, db));
    o[6] = U(da < db);
    o[7] = U(da != db);
}

extern "C" __global__ void dt_fdiv(const unsigned long long *A, const unsigned long long *B,
                                  const unsigned long long *C, unsigned long long *O, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long a64 = A[i], b64 = B[i], c64 = C[i];
    long long la = (long long)a64, lb = (long long)b64;
    unsigned a = (unsigned)a64, b = (unsigned)b64, c = (unsigned)c64;
    int sa = (int)a, sb = (int)b;
    float fa = __uint_as_float(a), fb = __uint_as_float(b), fc = __uint_as_float(c);
    float fh = __uint_as_float((unsigned)(c64 >> 32));
    double da = __longlong_as_double(la), db = __longlong_as_double(lb), dc = __longlong_as_double((long long)c64);
    unsigned long long *o = O + (size_t)i * 8;
    o[0] = P(fa / fb, fh / fc);
    o[1] = P(sqrtf(fa), sqrtf(fh));
    o[2] = P(__fdiv_rz(fa, fb), __fdiv_rd(fh, fa));
    o[3] = P(__fdiv_ru(fb, fc), __frcp_rn(fh));
    o[4] = P(__frcp_rd(fa), __frcp_ru(fh));
    o[5] = P(__fsqrt_ru(fa), __fsqrt_rd(fh));
    o[6] = P(__frsqrt_rn(fa), __frsqrt_rn(fh));
    o[7] = P(__fmul_rz(fa, fc), __fmul_rd(fh, fb));
}

extern "C" __global__ void dt_ddiv(const unsigned long long *A, const unsigned long long *B,
                                  const unsigned long long *C, unsigned long long *O, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long a64 = A[i], b64 = B[i], c64 = C[i];
    long long la = (long long)a64, lb = (long long)b64;
    unsigned a = (unsigned)a64, b = (unsigned)b64, c = (unsigned)c64;
    int sa = (int)a, sb = (int)b;
    float fa = __uint_as_float(a), fb = __uint_as_float(b), fc = __uint_as_float(c);
    float fh = __uint_as_float((unsigned)(c64 >> 32));
    double da = __longlong_as_double(la), db = __longlong_as_double(lb), dc = __longlong_as_double((long long)c64);
    unsigned long long *o = O + (size_t)i * 8;
    o[0] = D(da / db);
    o[1] = D(sqrt(da));
    o[2] = D(__ddiv_rz(da, db));
    o[3] = D(__ddiv_ru(db, dc));
    o[4] = D(__drcp_rd(da));
    o[5] = D(__dsqrt_ru(da));
    o[6] = D(__dmul_ru(da, db));
    o[7] = D(__fma_rd(da, db, dc));
}

extern "C" __global__ void dt_approx(const unsigned long long *A, const unsigned long long *B,
                                  const unsigned long long *C, unsigned long long *O, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long a64 = A[i], b64 = B[i], c64 = C[i];
    long long la = (long long)a64, lb = (long long)b64;
    unsigned a = (unsigned)a64, b = (unsigned)b64, c = (unsigned)c64;
    int sa = (int)a, sb = (int)b;
    float fa = __uint_as_float(a), fb = __uint_as_float(b), fc = __uint_as_float(c);
    float fh = __uint_as_float((unsigned)(c64 >> 32));
    double da = __longlong_as_double(la), db = __longlong_as_double(lb), dc = __longlong_as_double((long long)c64);
    unsigned long long *o = O + (size_t)i * 8;
    o[0] = P(__fdividef(fa, fb), __fdividef(fh, fc));
    o[1] = P(rsqrtf(fa), rsqrtf(fh));
    o[2] = P(__expf(fa), __expf(fh));
    o[3] = P(__exp10f(fb), __expf(fc));
    o[4] = P(__log2f(fb), __logf(fc));
    o[5] = P(__log2f(fa), __log2f(fh));
    o[6] = D(rcp_approx(da));
    o[7] = D(rsqrt_approx(da));
}

extern "C" __global__ void dt_trig(const unsigned long long *A, const unsigned long long *B,
                                  const unsigned long long *C, unsigned long long *O, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long a64 = A[i], b64 = B[i], c64 = C[i];
    long long la = (long long)a64, lb = (long long)b64;
    unsigned a = (unsigned)a64, b = (unsigned)b64, c = (unsigned)c64;
    int sa = (int)a, sb = (int)b;
    float fa = __uint_as_float(a), fb = __uint_as_float(b), fc = __uint_as_float(c);
    float fh = __uint_as_float((unsigned)(c64 >> 32));
    double da = __longlong_as_double(la), db = __longlong_as_double(lb), dc = __longlong_as_double((long long)c64);
    unsigned long long *o = O + (size_t)i * 8;
    o[0] = P(__sinf(fa), __sinf(fh));
    o[1] = P(__cosf(fa), __cosf(fh));
    o[2] = P(__sinf(fb), __cosf(fb));
    o[3] = P(__sinf(fc), __cosf(fc));
    o[4] = P(__sinf(fa * 0.001f), __cosf(fa * 0.001f));
    o[5] = P(__sinf(fh * 100.0f), __cosf(fh * 100.0f));
    o[6] = P(__tanf(fa), __tanf(fh));
    o[7] = P(__sinf(fb * 3.0f), __cosf(fc * 7.0f));
}
