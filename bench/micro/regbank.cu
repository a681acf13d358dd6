// gpusim H100 microbenchmarks: FFMA / DFMA issue rate against the register sources they read.
// Build: nvcc -arch=sm_90 -O3 -cubin -o regbank.cubin regbank.cu ; driven by run_regbank.py (CuPy).
//
// Question: what does an FMA cost at issue when its register sources share a register-file bank?
// gpusim's sm_90 rule (gpusim/timing/precompute.py) is Volta's as [JIA18] reports it (2 banks of
// 64 bits, a conflict only when three sources fall into one bank) and had not been checked on Hopper.
// Each kernel keeps one SM's sub-partitions busy with independent FMAs whose sources follow one
// pattern; ptxas picks the registers, and run_regbank.py records the SASS of every timed loop
// (registers, .reuse flags, stall counts) beside the measured rate, so that any rule can be scored
// against them afterwards.
//
// Conventions (as micro.cu): one CTA per SM, `warps` warps; each warp stamps clock64 before and after
// the timed loop (a warm-up pass runs first); out[2*warp] = start, out[2*warp+1] = end.
//  * tp:    x[j] = fma(x[j], A, B)       A, B the same for every chain: .reuse can serve both
//  * abc:   x[j] = fma(a[j], b[j], x[j]) a[j], b[j] distinct per chain: three register reads each
//  * outer: acc[i][j] = fma(a[i], b[j], acc[i][j])  a 4 x 4 register tile, as GEMM inner loops
//  * outer8: the same with an 8 x 8 tile (maxas-like SGEMM)
//  * acc2:  y[j] = fma(a[j], b[j], x[j]); x[j] = fma(a[j], b[j], y[j])  destination != accumulator
#include <cstdint>

#define DEVI __device__ __forceinline__

DEVI long long clk() {
    long long c;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c)::"memory");
    return c;
}

template <class T>
DEVI T fma_(T a, T b, T c);
template <>
DEVI float fma_<float>(float a, float b, float c) { return __fmaf_rn(a, b, c); }
template <>
DEVI double fma_<double>(double a, double b, double c) { return __fma_rn(a, b, c); }

template <class T>
DEVI void stamp(long long* out, long long t0, long long t1) {
    if ((threadIdx.x & 31) == 0) {
        out[2 * (threadIdx.x >> 5) + 2 * blockIdx.x * (blockDim.x >> 5)] = t0;
        out[2 * (threadIdx.x >> 5) + 2 * blockIdx.x * (blockDim.x >> 5) + 1] = t1;
    }
}

// p: 96 parameters, read once at thread-dependent offsets (vector registers, not uniform ones, and nothing
// folds); sink keeps every result alive.
#define NCH 8
#define STEPS 8

// The timed loops' barrier: every thread of the CTA, or with PARK (run_regbank.py --park) the 8 active
// warps only (named barrier 2), the others parked at named barrier 1 until the active ones are done.
template <bool PARK>
DEVI void sync_loop() {
    if (PARK)
        asm volatile("bar.sync 2, 256;" ::: "memory");
    else
        __syncthreads();
}
template <bool PARK>
DEVI void loop_done() {
    if (PARK && blockDim.x > 256) asm volatile("bar.arrive 1, %0;" ::"r"(blockDim.x) : "memory");
}

// The timed loop every kernel here runs: two passes (the first a warm-up), each a barrier, a clock64
// stamp, `iters` times `body`, a stamp; t0 / t1 keep the second pass's.
template <bool PARK, class Body>
DEVI void timed_passes(int iters, long long& t0, long long& t1, Body body) {
#pragma unroll 1
    for (int r = 0; r < 2; ++r) {
        sync_loop<PARK>();
        t0 = clk();
#pragma unroll 1
        for (int i = 0; i < iters; ++i) body();
        t1 = clk();
    }
}

template <class T, bool PARK = false>
DEVI void k_tp(long long* out, T* sink, const T* p, int iters) {
    const int q = threadIdx.x & 31;
    T A = p[q], B = p[q + 1];
    T x[NCH];
#pragma unroll
    for (int j = 0; j < NCH; ++j) x[j] = p[q + 2 + j];
    long long t0 = 0, t1 = 0;
    timed_passes<PARK>(iters, t0, t1, [&] {
#pragma unroll
        for (int s = 0; s < STEPS; ++s) {
#pragma unroll
            for (int j = 0; j < NCH; ++j) x[j] = fma_(x[j], A, B);
        }
    });
    loop_done<PARK>();
    stamp<T>(out, t0, t1);
    T s = 0;
#pragma unroll
    for (int j = 0; j < NCH; ++j) s += x[j];
    sink[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

template <class T, int C, int SHIFT, bool PARK = false>
DEVI void k_abc(long long* out, T* sink, const T* p, int iters) {
    const int q = threadIdx.x & 31;
    T a[C], b[C], x[C];
#pragma unroll
    for (int j = 0; j < C; ++j) {
        a[j] = p[q + j];
        b[j] = p[q + C + j];
        x[j] = p[q + 2 * C + j];
    }
    long long t0 = 0, t1 = 0;
    timed_passes<PARK>(iters, t0, t1, [&] {
#pragma unroll
        for (int s = 0; s < 64 / C; ++s) {
#pragma unroll
            for (int j = 0; j < C; ++j) x[j] = fma_(a[j], b[(j + SHIFT) % C], x[j]);
        }
    });
    loop_done<PARK>();
    stamp<T>(out, t0, t1);
    T s = 0;
#pragma unroll
    for (int j = 0; j < C; ++j) s += x[j];
    sink[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

template <class T, int M>
DEVI void k_outer(long long* out, T* sink, const T* p, int iters) {
    T a[M], b[M], acc[M][M];
#pragma unroll
    for (int i = 0; i < M; ++i) {
        a[i] = p[(threadIdx.x & 31) + i];
        b[i] = p[(threadIdx.x & 31) + M + i];
    }
#pragma unroll
    for (int i = 0; i < M; ++i)
#pragma unroll
        for (int j = 0; j < M; ++j) acc[i][j] = p[(threadIdx.x & 31) + ((i * M + j) & 31)];
    long long t0 = 0, t1 = 0;
    timed_passes<false>(iters, t0, t1, [&] {
#pragma unroll
        for (int s = 0; s < (M == 4 ? 4 : 1); ++s) {
#pragma unroll
            for (int i = 0; i < M; ++i)
#pragma unroll
                for (int j = 0; j < M; ++j) acc[i][j] = fma_(a[i], b[j], acc[i][j]);
        }
    });
    stamp<T>(out, t0, t1);
    T s = 0;
#pragma unroll
    for (int i = 0; i < M; ++i)
#pragma unroll
        for (int j = 0; j < M; ++j) s += acc[i][j];
    sink[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// FMAs per warp per loop iteration: tp: NCH * STEPS = 64; abc*: 64; outer: 4 * 16 = 64; outer8: 64.
#define KERNELS(T, SUF)                                                                                        \
    extern "C" __global__ void __launch_bounds__(1024) tp_##SUF(long long* o, T* s, const T* p, int n) {         \
        k_tp<T>(o, s, p, n);                                                                                   \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(1024) abc_##SUF(long long* o, T* s, const T* p, int n) {        \
        k_abc<T, 8, 0>(o, s, p, n);                                                                            \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(1024) abc4_##SUF(long long* o, T* s, const T* p, int n) {       \
        k_abc<T, 4, 1>(o, s, p, n);                                                                            \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(512) abc16_##SUF(long long* o, T* s, const T* p, int n) {       \
        k_abc<T, 16, 3>(o, s, p, n);                                                                           \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(512) outer_##SUF(long long* o, T* s, const T* p, int n) {       \
        k_outer<T, 4>(o, s, p, n);                                                                             \
    }
KERNELS(float, ffma)
KERNELS(double, dfma)

extern "C" __global__ void __launch_bounds__(256) outer8_ffma(long long* o, float* s, const float* p, int n) {
    k_outer<float, 8>(o, s, p, n);
}

// ---- parked warps (run_regbank.py --park): does the FFMA slow-down at 4-8 warps per sub-partition go with
// the warps resident or the warps issuing? Warps 0-7 (2 per sub-partition) run tp / abc's loop; warps 8
// and up stay resident at named barrier 1 the whole run and stamp nothing (the rate is the 8 warps').
#define PARKED_WHEN(NAME, CALL, PARK)                                                                          \
    extern "C" __global__ void __launch_bounds__(1024) NAME(long long* o, float* s, const float* p, int n) { \
        if (PARK) {                                                                                            \
            asm volatile("bar.sync 1, %0;" ::"r"(blockDim.x) : "memory");                                     \
            return;                                                                                            \
        }                                                                                                      \
        CALL(o, s, p, n);                                                                                      \
    }
#define PARKED(NAME, CALL) PARKED_WHEN(NAME, CALL, (threadIdx.x >> 5) >= 8)
PARKED(park_tp_ffma, (k_tp<float, true>))
PARKED(park_abc_ffma, (k_abc<float, 8, 0, true>))

// ---- slots (run_regbank.py --slots): does the sub-partition's FFMA rate at 2 warps depend on which warp slots
// the two occupy? A CTA of 16 warps puts 4 on each sub-partition (warp w on w % 4, in slot w / 4); the warps
// whose slot is in the bit mask SLOTS run the loop (2 per sub-partition, 8 in all, named barrier 2 as with
// --park), the other 8 stay parked at named barrier 1. If the two half-rate FMA pipes went by slot parity,
// slots 0 + 2 or 1 + 3 would run slower than 0 + 1 or 0 + 3.
#define SLOTTED(NAME, CALL, SLOTS) PARKED_WHEN(NAME, CALL, !(((SLOTS) >> ((threadIdx.x >> 7) & 3)) & 1))
SLOTTED(slots01_tp_ffma, (k_tp<float, true>), 0x3)
SLOTTED(slots02_tp_ffma, (k_tp<float, true>), 0x5)
SLOTTED(slots13_tp_ffma, (k_tp<float, true>), 0xA)
SLOTTED(slots03_tp_ffma, (k_tp<float, true>), 0x9)
SLOTTED(slots01_abc_ffma, (k_abc<float, 8, 0, true>), 0x3)
SLOTTED(slots02_abc_ffma, (k_abc<float, 8, 0, true>), 0x5)
SLOTTED(slots13_abc_ffma, (k_abc<float, 8, 0, true>), 0xA)
SLOTTED(slots03_abc_ffma, (k_abc<float, 8, 0, true>), 0x9)

// ---- dilution, split and IMAD (run_regbank.py --mix). Does the FFMA slow-down at 4-8 warps per sub-partition
// go with the FMA pipe's warps or with every issuing warp, and what do integer multiply-adds cost? k_ops runs
// 8 chains per kind, per step and chain: FIRST (an FFMA of abc's, an IADD3 of three registers, or nothing),
// then N ops of kind OP (ADD3: IADD3s, the ALU pipe; IMAD: IMADs; WIDE: IMAD.WIDE.U32s, a 64-bit sum; WIDEI:
// IMAD.WIDE by an immediate, 12 x another chain's low word: the address-arithmetic form, `IMAD.WIDE R160, R7,
// 0x8, R160` in dgemm_regtile; by 8, ptxas writes LEA / LEA.HI.X instead).
// mix<N>: each FFMA followed by N IADD3s. split: the warps of every other group of 4 (one per sub-partition)
// run abc's loop, the others the same loop with IADD3 for FFMA (the FFMA warps' stamps give the rate).
// imad / imadw / imadwi: IMADs / IMAD.WIDE.U32s / IMAD.WIDEs by an immediate alone; fimad / fimadw: each FFMA
// followed by an IMAD / IMAD.WIDE.U32. 64 FFMAs (or IMADs
// where there are none) per warp per iteration.
enum { FFMA_OP = 0, IADD3_OP = 1, NO_OP = 2, TP_OP = 3 };  // TP_OP: tp's FFMA, x[j] = fma(x[j], A, B), A and B shared
enum { ADD3 = 0, IMAD = 1, WIDE = 2, WIDEI = 3 };
template <int FIRST, int OP, int N>
DEVI void k_ops(long long* out, float* sink, const float* p, int iters) {
    const int q = threadIdx.x & 31;
    float a[8], b[8], x[8];
    int u[8], v[8], k[8];
    unsigned long long w[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        a[j] = p[q + j];
        b[j] = p[q + 8 + j];
        x[j] = p[q + 16 + j];
        u[j] = __float_as_int(p[q + 24 + j]);
        v[j] = __float_as_int(p[q + 32 + j]);
        k[j] = __float_as_int(p[q + 40 + j]);
        w[j] = (unsigned long long)(unsigned)k[j] << 3;
    }
    long long t0 = 0, t1 = 0;
    timed_passes<false>(iters, t0, t1, [&] {
#pragma unroll
        for (int s = 0; s < 8; ++s) {
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                if (FIRST == FFMA_OP)
                    x[j] = fma_(a[j], b[j], x[j]);
                else if (FIRST == TP_OP)
                    x[j] = fma_(x[j], a[0], b[0]);
                else if (FIRST == IADD3_OP)
                    k[j] = k[j] + u[j] + v[(j + s) & 7];
#pragma unroll
                for (int n = 0; n < N; ++n) {
                    if (OP == ADD3)
                        k[j] = k[j] + u[(j + n) & 7] + v[(j + s + n) & 7];
                    else if (OP == IMAD)
                        k[j] = k[j] * u[j] + v[(j + s) & 7];
                    else if (OP == WIDE)
                        w[j] = (unsigned long long)(unsigned)w[j] * (unsigned)v[(j + s) & 7] + w[j];
                    else  // by an immediate, in PTX: nvcc turns such C++ loops into shifts and adds
                        asm volatile("mad.wide.s32 %0, %1, 12, %0;" : "+l"(w[j]) : "r"((int)w[(j + 1) & 7]));
                }
            }
        }
    });
    stamp<float>(out, t0, t1);
    float s = 0;
#pragma unroll
    for (int j = 0; j < 8; ++j) s += x[j] + __int_as_float(k[j]) + (float)w[j];
    sink[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
// a kernel that runs k_ops<FIRST, OP, N> alone
#define OPS(NAME, ...)                                                                                         \
    extern "C" __global__ void __launch_bounds__(1024) NAME(long long* o, float* s, const float* p, int n) { \
        k_ops<__VA_ARGS__>(o, s, p, n);                                                                        \
    }
OPS(mix1_ffma, FFMA_OP, ADD3, 1)
// tp's FFMAs (two sources the same for every chain: .reuse) alone and each followed by an IADD3 (run_regbank.py
// --mix): does an instruction between a warp's FFMAs keep their reuse hits when 3 or more warps interleave?
OPS(tp0_ffma, TP_OP, ADD3, 0)
OPS(mixtp1_ffma, TP_OP, ADD3, 1)
OPS(mix2_ffma, FFMA_OP, ADD3, 2)
extern "C" __global__ void __launch_bounds__(1024) split_ffma(long long* o, float* s, const float* p, int n) {
    if (((threadIdx.x >> 7) & 1) == 0)
        k_ops<FFMA_OP, ADD3, 0>(o, s, p, n);
    else
        k_ops<IADD3_OP, ADD3, 0>(o, s, p, n);
}

OPS(imadwi_i, NO_OP, WIDEI, 1)
OPS(imad_i, NO_OP, IMAD, 1)
OPS(imadw_i, NO_OP, WIDE, 1)
OPS(fimad_ffma, FFMA_OP, IMAD, 1)
OPS(fimadw_ffma, FFMA_OP, WIDE, 1)
