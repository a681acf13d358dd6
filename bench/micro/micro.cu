// gpusim H100 microbenchmarks (kernels).  Build: nvcc -arch=sm_90 -O3 -cubin -o micro.cubin micro.cu
// Driven by bench/micro/run_micro.py (CuPy RawModule).  All kernels are extern "C" (unmangled names).
//
// Conventions
//  * Timestamps come from clk() = %clock64 (per-SM cycle counter), read with asm volatile + "memory"
//    clobber.  run_micro.py --dry-run checks in the SASS that the CS2R SR_CLOCKLO reads bracket exactly
//    the instructions we mean to time.
//  * Latency kernels (lat_*, smem_lat_*): one warp (or one thread) runs one dependent chain.  The timed
//    loop runs twice (rep 0 = warm-up of the instruction cache / data, rep 1 = the one recorded).  Two
//    variants per operation differ only in the unrolled body length (LEN_A vs LEN_B) with the same
//    iteration count, so  cycles/op = (T_B - T_A) / (iters * (LEN_B - LEN_A))  cancels the loop overhead.
//  * Throughput kernels (tp_*, smem_tp_*): one CTA of 1024 threads on one SM; per-warp start/end clocks;
//    span = max(end) - min(start); the two body lengths are again differenced.
//  * Global pointer chases (gchase_*): one thread, 64-bit absolute pointers stored in the buffer, three
//    clock reads (after warm-up, after n1 loads, after n1+n2 loads).
#include <cstdint>
#include <utility>

#define DEVI __device__ __forceinline__

DEVI long long clk() {
    long long c;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c)::"memory");
    return c;
}
DEVI unsigned long long gtimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
    return t;
}

// ------------------------------------------------------------------------------------------------
// Dependent-operation definitions.  Each step(x, a, b) makes x depend on the previous x through exactly
// one SASS instruction.  Operands a, b rotate over 4 register pairs (k & 3) so that ptxas cannot fuse
// two consecutive steps into one 3-input instruction (IADD3 / LOP3 fusion) or fold them.
// ------------------------------------------------------------------------------------------------
struct OpFFMA {
    typedef float T;
    DEVI static void step(T& x, T a, T b) { x = __fmaf_rn(x, a, b); }
};
struct OpFADD {
    typedef float T;
    DEVI static void step(T& x, T a, T) { x = __fadd_rn(x, a); }
};
struct OpDFMA {
    typedef double T;
    DEVI static void step(T& x, T a, T b) { x = __fma_rn(x, a, b); }
};
struct OpIMAD {
    typedef unsigned T;
    DEVI static void step(T& x, T a, T b) { asm("mad.lo.u32 %0, %0, %1, %2;" : "+r"(x) : "r"(a), "r"(b)); }
};
struct OpIADD3 {  // x = x + a + b  -> one IADD3 x, x, a, b
    typedef unsigned T;
    DEVI static void step(T& x, T a, T b) {
        asm("add.u32 %0, %0, %1;\n\tadd.u32 %0, %0, %2;" : "+r"(x) : "r"(a), "r"(b));
    }
};
struct OpLOP3 {  // x = (x & a) ^ b  (LUT 0x6a) -> one LOP3.LUT
    typedef unsigned T;
    DEVI static void step(T& x, T a, T b) { asm("lop3.b32 %0, %0, %1, %2, 0x6a;" : "+r"(x) : "r"(a), "r"(b)); }
};
struct OpMUFU {  // x = 2^(-x) -> one MUFU.EX2 with a negated operand; converges to ~0.641
    typedef float T;
    DEVI static void step(T& x, T, T) { asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(x) : "f"(-x)); }
};

template <class Op, int LEN>
DEVI void chain(typename Op::T& x, const typename Op::T* A, const typename Op::T* B) {
#pragma unroll
    for (int k = 0; k < LEN; ++k) Op::step(x, A[k & 3], B[k & 3]);
}

// params: A[0..3], B[0..3], x0
template <class Op, int LEN>
DEVI void lat_kernel(long long* out, typename Op::T* sink, const typename Op::T* params, int iters) {
    typedef typename Op::T T;
    T A[4], B[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) { A[k] = params[k]; B[k] = params[4 + k]; }
    T x = params[8];
    long long t0 = 0, t1 = 0;
#pragma unroll 1
    for (int r = 0; r < 2; ++r) {
        t0 = clk();
#pragma unroll 1
        for (int i = 0; i < iters; ++i) chain<Op, LEN>(x, A, B);
        t1 = clk();
    }
    if (threadIdx.x == 0) out[0] = t1 - t0;
    sink[threadIdx.x] = x;
}

#define LAT_LEN_A 128
#define LAT_LEN_B 256
#define LAT_KERNELS(NAME, OP)                                                                            \
    extern "C" __global__ void lat_##NAME##_a(long long* out, OP::T* sink, const OP::T* p, int iters) { \
        lat_kernel<OP, LAT_LEN_A>(out, sink, p, iters);                                                  \
    }                                                                                                    \
    extern "C" __global__ void lat_##NAME##_b(long long* out, OP::T* sink, const OP::T* p, int iters) { \
        lat_kernel<OP, LAT_LEN_B>(out, sink, p, iters);                                                  \
    }
LAT_KERNELS(ffma, OpFFMA)
LAT_KERNELS(fadd, OpFADD)
LAT_KERNELS(dfma, OpDFMA)
LAT_KERNELS(imad, OpIMAD)
LAT_KERNELS(iadd3, OpIADD3)
LAT_KERNELS(lop3, OpLOP3)
LAT_KERNELS(mufu_ex2, OpMUFU)

// ------------------------------------------------------------------------------------------------
// Throughput: one CTA of 1024 threads, NCH independent chains per thread, STEPS steps per chain per
// loop iteration.  out[2*warp] = start, out[2*warp+1] = end (clock64 of the same SM).
// ------------------------------------------------------------------------------------------------
#define TP_NCH 8
template <class Op, int STEPS>
DEVI void tp_kernel(long long* out, typename Op::T* sink, const typename Op::T* params, int iters) {
    typedef typename Op::T T;
    T A[4], B[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) { A[k] = params[k]; B[k] = params[4 + k]; }
    T x[TP_NCH];
#pragma unroll
    for (int j = 0; j < TP_NCH; ++j) x[j] = params[8] + (T)(j + (threadIdx.x & 7));
    long long t0 = 0, t1 = 0;
#pragma unroll 1
    for (int r = 0; r < 2; ++r) {
        __syncthreads();
        t0 = clk();
#pragma unroll 1
        for (int i = 0; i < iters; ++i) {
#pragma unroll
            for (int s = 0; s < STEPS; ++s) {
#pragma unroll
                for (int j = 0; j < TP_NCH; ++j) Op::step(x[j], A[s & 3], B[s & 3]);
            }
        }
        t1 = clk();
    }
    if ((threadIdx.x & 31) == 0) {
        out[2 * (threadIdx.x >> 5)] = t0;
        out[2 * (threadIdx.x >> 5) + 1] = t1;
    }
    T s = x[0];
#pragma unroll
    for (int j = 1; j < TP_NCH; ++j) s += x[j];
    sink[threadIdx.x] = s;
}

#define TP_STEPS_A 8
#define TP_STEPS_B 16
#define TP_KERNELS(NAME, OP)                                                                      \
    extern "C" __global__ void __launch_bounds__(1024)                                             \
        tp_##NAME##_a(long long* out, OP::T* sink, const OP::T* p, int iters) {                    \
        tp_kernel<OP, TP_STEPS_A>(out, sink, p, iters);                                            \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(1024)                                             \
        tp_##NAME##_b(long long* out, OP::T* sink, const OP::T* p, int iters) {                    \
        tp_kernel<OP, TP_STEPS_B>(out, sink, p, iters);                                            \
    }
TP_KERNELS(ffma, OpFFMA)
TP_KERNELS(dfma, OpDFMA)
TP_KERNELS(imad, OpIMAD)
TP_KERNELS(iadd3, OpIADD3)
TP_KERNELS(lop3, OpLOP3)
TP_KERNELS(mufu_ex2, OpMUFU)

// ------------------------------------------------------------------------------------------------
// Shared memory latency: one thread chases raw shared-window addresses (ld.shared.u32 p, [p]).
// Ring of 4096 words, next = (i + stride) mod 4096.
// ------------------------------------------------------------------------------------------------
#define SMEM_RING 4096
template <int LEN>
DEVI void smem_lat_kernel(long long* out, unsigned* sink, int iters, int stride_words) {
    __shared__ unsigned s[SMEM_RING];
    unsigned base = (unsigned)__cvta_generic_to_shared(s);
    for (int i = threadIdx.x; i < SMEM_RING; i += blockDim.x)
        s[i] = base + (unsigned)(((i + stride_words) & (SMEM_RING - 1)) * 4);
    __syncthreads();
    unsigned p = base;
    long long t0 = 0, t1 = 0;
#pragma unroll 1
    for (int r = 0; r < 2; ++r) {
        t0 = clk();
#pragma unroll 1
        for (int i = 0; i < iters; ++i) {
#pragma unroll
            for (int k = 0; k < LEN; ++k) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(p)::"memory");
        }
        t1 = clk();
    }
    if (threadIdx.x == 0) {
        out[0] = t1 - t0;
        sink[0] = p;
    }
}
extern "C" __global__ void smem_lat_a(long long* out, unsigned* sink, int iters, int stride_words) {
    smem_lat_kernel<LAT_LEN_A>(out, sink, iters, stride_words);
}
extern "C" __global__ void smem_lat_b(long long* out, unsigned* sink, int iters, int stride_words) {
    smem_lat_kernel<LAT_LEN_B>(out, sink, iters, stride_words);
}

// ------------------------------------------------------------------------------------------------
// Shared memory throughput: 1024 threads, lane address = base + lane * stride_bytes (same for every
// warp), LEN independent ld.shared per iteration at immediate offsets k*128 B (a multiple of the 32
// banks x 4 B, so the bank pattern of every load is the lane pattern).  Results are XOR-accumulated.
// ------------------------------------------------------------------------------------------------
#define SMEM_TP_BYTES 8192
template <int W, int OFF>
DEVI void lds_one(unsigned addr, unsigned& acc) {
    if constexpr (W == 4) {
        unsigned v;
        asm volatile("ld.shared.u32 %0, [%1+%2];" : "=r"(v) : "r"(addr), "n"(OFF) : "memory");
        acc ^= v;
    } else if constexpr (W == 8) {
        unsigned v0, v1;
        asm volatile("ld.shared.v2.u32 {%0, %1}, [%2+%3];" : "=r"(v0), "=r"(v1) : "r"(addr), "n"(OFF) : "memory");
        acc ^= v0 ^ v1;
    } else {
        unsigned v0, v1, v2, v3;
        asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4+%5];"
                     : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3)
                     : "r"(addr), "n"(OFF)
                     : "memory");
        acc ^= v0 ^ v1 ^ v2 ^ v3;
    }
}
template <int W, size_t... K>
DEVI void lds_all(unsigned addr, unsigned& acc, std::index_sequence<K...>) {
    (lds_one<W, (int)(K * 128)>(addr, acc), ...);
}
// flip_bytes (= SMEM_TP_BYTES, a multiple of 128) is XORed into the address every iteration: without it
// ptxas hoists the (loop-invariant) loads out of the loop.  The buffer holds two halves for that reason.
template <int W, int LEN>
DEVI void smem_tp_kernel(long long* out, unsigned* sink, int iters, int stride_bytes, unsigned flip_bytes) {
    __shared__ __align__(16) unsigned s[2 * SMEM_TP_BYTES / 4];
    for (int i = threadIdx.x; i < 2 * SMEM_TP_BYTES / 4; i += blockDim.x) s[i] = (unsigned)i * 2654435761u;
    __syncthreads();
    unsigned addr = (unsigned)__cvta_generic_to_shared(s) + (threadIdx.x & 31) * (unsigned)stride_bytes;
    unsigned acc = 0;
    long long t0 = 0, t1 = 0;
#pragma unroll 1
    for (int r = 0; r < 2; ++r) {
        __syncthreads();
        t0 = clk();
#pragma unroll 1
        for (int i = 0; i < iters; ++i) {
            lds_all<W>(addr, acc, std::make_index_sequence<LEN>{});
            addr ^= flip_bytes;
        }
        t1 = clk();
    }
    if ((threadIdx.x & 31) == 0) {
        out[2 * (threadIdx.x >> 5)] = t0;
        out[2 * (threadIdx.x >> 5) + 1] = t1;
    }
    sink[threadIdx.x] = acc;
}
#define SMEM_TP_LEN_A 16
#define SMEM_TP_LEN_B 32
#define SMEM_TP_KERNELS(W)                                                                          \
    extern "C" __global__ void __launch_bounds__(1024)                                               \
        smem_tp_##W##_a(long long* out, unsigned* sink, int iters, int stride_bytes, unsigned flip) { \
        smem_tp_kernel<W / 8, SMEM_TP_LEN_A>(out, sink, iters, stride_bytes, flip);                  \
    }                                                                                                \
    extern "C" __global__ void __launch_bounds__(1024)                                               \
        smem_tp_##W##_b(long long* out, unsigned* sink, int iters, int stride_bytes, unsigned flip) { \
        smem_tp_kernel<W / 8, SMEM_TP_LEN_B>(out, sink, iters, stride_bytes, flip);                  \
    }
SMEM_TP_KERNELS(32)
SMEM_TP_KERNELS(64)
SMEM_TP_KERNELS(128)

// ------------------------------------------------------------------------------------------------
// Global-memory pointer chase (one thread).  Each node holds the absolute address of the next node.
// out[0..2] = clock after warm-up, after n1 loads, after n1+n2 loads.  Counts are in units of 8 loads.
// ------------------------------------------------------------------------------------------------
#define CHASE_CA(p) asm volatile("ld.global.ca.u64 %0, [%0];" : "+l"(p)::"memory")
#define CHASE_CG(p) asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p)::"memory")
#define CHASE_PLAIN(p) asm volatile("ld.global.u64 %0, [%0];" : "+l"(p)::"memory")
#define CHASE_NC(p) asm volatile("ld.global.nc.u64 %0, [%0];" : "+l"(p)::"memory")
#define CHASE8(M, p) do { M(p); M(p); M(p); M(p); M(p); M(p); M(p); M(p); } while (0)
#define GCHASE_KERNEL(NAME, M)                                                                          \
    extern "C" __global__ void gchase_##NAME(long long* out, unsigned long long* sink,                 \
                                             unsigned long long start, int warm8, int n1_8, int n2_8) { \
        unsigned long long p = start;                                                                   \
        _Pragma("unroll 1") for (int i = 0; i < warm8; ++i) CHASE8(M, p);                               \
        long long t0 = clk();                                                                           \
        _Pragma("unroll 1") for (int i = 0; i < n1_8; ++i) CHASE8(M, p);                                \
        long long t1 = clk();                                                                           \
        _Pragma("unroll 1") for (int i = 0; i < n2_8; ++i) CHASE8(M, p);                                \
        long long t2 = clk();                                                                           \
        out[0] = t0;                                                                                    \
        out[1] = t1;                                                                                    \
        out[2] = t2;                                                                                    \
        sink[0] = p;                                                                                    \
    }
GCHASE_KERNEL(ca, CHASE_CA)
GCHASE_KERNEL(cg, CHASE_CG)
GCHASE_KERNEL(plain, CHASE_PLAIN)
GCHASE_KERNEL(nc, CHASE_NC)

// all four components are used so that ptxas keeps 128-bit loads (with a.x only it emits 32-bit LDG)
DEVI float hsum4(float4 a) { return (a.x + a.y) + (a.z + a.w); }

// ------------------------------------------------------------------------------------------------
// Bandwidth kernels (timed with CUDA events on the host).  n4 = number of float4; grid-stride, 4 float4
// per thread per iteration (all loads issued before the stores).
// ------------------------------------------------------------------------------------------------
extern "C" __global__ void bw_copy(const float4* __restrict__ src, float4* __restrict__ dst, long long n4) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        float4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        dst[i] = a;
        dst[i + stride] = b;
        dst[i + 2 * stride] = c;
        dst[i + 3 * stride] = d;
    }
    for (; i < n4; i += stride) dst[i] = src[i];
}
extern "C" __global__ void bw_read(const float4* __restrict__ src, float* __restrict__ sink, long long n4) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.f;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        float4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        acc += hsum4(a) + hsum4(b) + hsum4(c) + hsum4(d);
    }
    for (; i < n4; i += stride) acc += hsum4(src[i]);
    if (acc == 1234.5f) sink[0] = acc;  // practically never true; keeps the loads alive
}
extern "C" __global__ void bw_write(float4* __restrict__ dst, long long n4, float v) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const float4 w = make_float4(v, v, v, v);
    for (; i < n4; i += stride) dst[i] = w;
}
// L2 bandwidth: every pass reads the whole buffer (n4 = power of two float4s) with ld.global.cg (L1
// bypass); the start index rotates each pass so no SM re-reads its own previous slice either.
extern "C" __global__ void bw_l2_read(const float4* __restrict__ src, float* __restrict__ sink, long long n4,
                                      int passes) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long mask = n4 - 1;
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.f;
#pragma unroll 1
    for (int p = 0; p < passes; ++p) {
        const long long rot = ((long long)p * 104729LL) & mask;
        long long i = tid;
        for (; i + 3 * stride < n4; i += 4 * stride) {
            float4 a = __ldcg(src + ((i + rot) & mask));
            float4 b = __ldcg(src + ((i + stride + rot) & mask));
            float4 c = __ldcg(src + ((i + 2 * stride + rot) & mask));
            float4 d = __ldcg(src + ((i + 3 * stride + rot) & mask));
            acc += hsum4(a) + hsum4(b) + hsum4(c) + hsum4(d);
        }
        for (; i < n4; i += stride) acc += hsum4(__ldcg(src + ((i + rot) & mask)));
    }
    if (acc == 1234.5f) sink[0] = acc;
}

// ------------------------------------------------------------------------------------------------
// Clock cross-check: one thread spins for spin_cycles of clock64 and reads %globaltimer (ns) around it.
// out = {c0, c1, g0, g1}.
// ------------------------------------------------------------------------------------------------
extern "C" __global__ void clock_xcheck(long long* out, long long spin_cycles) {
    unsigned long long g0 = gtimer();
    long long c0 = clk();
    long long c1 = c0;
    while (c1 - c0 < spin_cycles) c1 = clk();
    unsigned long long g1 = gtimer();
    c1 = clk();
    out[0] = c0;
    out[1] = c1;
    out[2] = (long long)g0;
    out[3] = (long long)g1;
}

// Warm-up: every launched thread spins for `ns` nanoseconds of %globaltimer (brings the clocks up from
// idle before anything is measured; changes no setting).
extern "C" __global__ void spin_ns(unsigned long long ns) {
    unsigned long long g0 = gtimer();
    while (gtimer() - g0 < ns) {
    }
}
