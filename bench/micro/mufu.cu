// One MUFU per output: bare approximations through inline PTX (bench/micro/mufu_tables.py).
// out[i] = MUFU.<fn>(in[i]); the 64-bit forms take/return a double's high word (low word 0 in,
// both words out).
#define K32(name, ptx)                                                              \
  extern "C" __global__ void name(const unsigned* in, unsigned* out, unsigned n) {  \
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;                             \
    if (i >= n) return;                                                             \
    float x = __uint_as_float(in[i]), r;                                            \
    asm volatile(ptx " %0, %1;" : "=f"(r) : "f"(x));                                \
    out[i] = __float_as_uint(r);                                                    \
  }
K32(k_rcp, "rcp.approx.ftz.f32")
K32(k_rsq, "rsqrt.approx.ftz.f32")
K32(k_ex2, "ex2.approx.ftz.f32")
K32(k_lg2, "lg2.approx.ftz.f32")
K32(k_sin, "sin.approx.ftz.f32")
K32(k_cos, "cos.approx.ftz.f32")
#define K64(name, ptx)                                                              \
  extern "C" __global__ void name(const unsigned* in, unsigned* out, unsigned n) {  \
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;                             \
    if (i >= n) return;                                                             \
    double x = __hiloint2double((int)in[i], 0), r;                                  \
    asm volatile(ptx " %0, %1;" : "=d"(r) : "d"(x));                                \
    out[2 * i] = (unsigned)__double2hiint(r);                                       \
    out[2 * i + 1] = (unsigned)__double2loint(r);                                   \
  }
K64(k_rcp64h, "rcp.approx.ftz.f64")
K64(k_rsq64h, "rsqrt.approx.ftz.f64")
