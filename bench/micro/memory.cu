// gpusim H100 microbenchmarks of the load/store and memory path (issue 12). Built with
//   nvcc -arch=sm_90 -O3 -cubin -o build/memory.cubin memory.cu
// and driven by run_memory.py beside this file. Every kernel is extern "C"; timed loops use inline
// PTX `asm volatile` so that ptxas neither hoists, merges nor narrows the accesses being measured.
//
// Kernels:
//   ldg_{ca,cg}_{32,64,128}  U independent global loads per iteration at [p + k*step], p = base +
//                            lane*stride: L1-cached (.ca) or L2-only (.cg); one CTA per SM, W warps.
//   ldg_stream_{32,128}      the same loads walking a large buffer (L1 and L2 misses: DRAM).
//   stg_{32,64,128}          U global stores per iteration (small ring: L2-resident; large: DRAM).
//   sts_{32,64,128}          U shared stores per iteration at lane*stride (conflict degree by stride).
//   issue_{lds,ldg,stg,sts}  ONE warp issues N accesses back to back and reads the clock after each:
//                            the issue timestamps show when the warp's accesses start to wait for a queue.
//   mix_lds_ldg              per warp (masks by warp id): U shared loads per iteration, or U L1-hitting
//                            global loads, or nothing: do shared wavefronts and global lines share a stage?
//                            (mix_lds{64,128}_ldg*: wide shared loads; *_ldgmiss: L1 misses; *_ldgplain: LDG.E)
//   war_<kind>_f<FILL>       FILL accesses, then one whose address/data register the next instruction
//                            overwrites: when does an access read its registers?
//   lds_<bits>, issue_lds<bits>_w, chase[1]_lds<bits>   wide shared loads: rate, one sub-partition's
//                            drain, load-to-use latency (32 lanes / one lane)
//   issue_xq_<a>_<b>         one kind fills the queue, then the other: one queue for LDS and LDG?
//   mix_pace*                LDS warps beside LDG (or FFMA-only) warps far below the stage's rate
//   mix_burst                a burst of L1-missing LDGs, then LDS groups: when do the misses take the data stage?
//   pair_probe               one sector of each line, then its neighbour: what an L1 miss fetches and keeps
//   order_probe_<N>          N LDGs, then an LDS (same warp, same or other sub-partition): does it wait for them?
//   l1p<B>_<ca|nc>           32-line / coalesced global loads that hit L1: their data-stage wavefronts (Nsight)
//   dstage<G>_<L>            a DGEMM loop's skeleton: G 32-wavefront LDGs, then L LDS, per warp and barrier
//   read_twice               every thread reads its part of a buffer twice (grid-stride): DRAM read bytes
//                            (Nsight) show whether the buffer survived in L2 between the passes.
//   write_once               writes a buffer once: DRAM write bytes show how much L2 writes back in-kernel.
//   empty                    an empty kernel, for CTA launch rate and launch overhead.

#include <cstdint>

#define DEVI __device__ __forceinline__

DEVI long long clk() {
    long long t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
    return t;
}

constexpr int U = 16;  // accesses per loop iteration

// ---- global loads ------------------------------------------------------------------------------------
// Every loaded word is XORed into one of 4 accumulators (ptxas deletes loads whose values are dead,
// asm volatile or not, and narrows vector loads with dead components): LOP3 folds two words per
// instruction, so a 32-bit load costs 1/2 ALU op, a 128-bit one 2, on a pipe that does 2 per SM-cycle.
#define LD32(Q)                                                                                           \
    { unsigned a;                                                                                         \
      asm volatile("ld.global." Q ".u32 %0, [%1+%2];" : "=r"(a) : "l"(p), "n"(OFF) : "memory");           \
      acc[I & 3] ^= a; }
#define LD64(Q)                                                                                           \
    { unsigned a, b;                                                                                      \
      asm volatile("ld.global." Q ".v2.u32 {%0,%1}, [%2+%3];" : "=r"(a), "=r"(b) : "l"(p), "n"(OFF)       \
                   : "memory");                                                                           \
      acc[I & 3] ^= a ^ b; }
#define LD128(Q)                                                                                          \
    { unsigned a, b, c, d;                                                                                \
      asm volatile("ld.global." Q ".v4.u32 {%0,%1,%2,%3}, [%4+%5];"                                       \
                   : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "l"(p), "n"(OFF) : "memory");                   \
      acc[I & 3] ^= a ^ b ^ c ^ d; }

template <int I, int STEP, typename F> DEVI void unroll(F f) {
    if constexpr (I < U) {
        f.template operator()<I, I * STEP>();
        unroll<I + 1, STEP>(f);
    }
}

DEVI void keep(const unsigned (&acc)[4], unsigned* sink) {  // never stores at run time (the data are 0)
    if ((acc[0] ^ acc[1] ^ acc[2] ^ acc[3]) == 0x12345678u) sink[threadIdx.x] = acc[0];
}

DEVI void stamp(long long* out, long long t0, long long t1) {
    if ((threadIdx.x & 31) == 0) {
        int w = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
        out[2 * w] = t0;
        out[2 * w + 1] = t1;
    }
}

// The timed frame of the rate kernels: two passes of `iters` iterations of U accesses (the statement
// after NEXT, with I the access and OFF = I * STEP its offset), then `NEXT`; the second pass is timed.
#define TIMED_PASSES(STEP, OFF, NEXT, ...)                                                               \
    long long t0 = 0;                                                                                    \
    _Pragma("unroll 1") for (int rep = 0; rep < 2; ++rep) {                                              \
        __syncthreads();                                                                                 \
        t0 = clk();                                                                                      \
        _Pragma("unroll 1") for (int i = 0; i < iters; ++i) {                                            \
            unroll<0, STEP>([&]<int I, int OFF>() { __VA_ARGS__; });                                     \
            NEXT;                                                                                        \
        }                                                                                                \
    }                                                                                                    \
    stamp(out, t0, clk());

// loads at [base + lane*stride + k*4096] (k = 0..U-1: U different lines for every lane stride used
// here); `flip` XORs the pointer every iteration (0: the same lines again: L1 hits with .ca)
#define LDG_KERNEL(NAME, LD)                                                                             \
    extern "C" __global__ void ldg_##NAME(const char* base, unsigned* sink, long long* out, int iters,    \
                                          int stride, unsigned long long flip) {             \
        const char* p = base + (threadIdx.x & 31) * stride;                                              \
        unsigned acc[4] = {0, 0, 0, 0};                                                                  \
        TIMED_PASSES(4096, OFF, p = (const char*)((unsigned long long)p ^ flip), LD)                     \
        keep(acc, sink);                                                                                 \
    }
LDG_KERNEL(ca32, LD32("ca"))
LDG_KERNEL(ca64, LD64("ca"))
LDG_KERNEL(ca128, LD128("ca"))
LDG_KERNEL(cg32, LD32("cg"))
LDG_KERNEL(cg64, LD64("cg"))
LDG_KERNEL(cg128, LD128("cg"))

// streaming loads: each warp walks its own contiguous chunk (U * 32 * width bytes per iteration)
#define LDG_STREAM(NAME, BYTES, LD)                                                                      \
    extern "C" __global__ void ldg_stream_##NAME(const char* base, unsigned* sink, long long* out,       \
                                                 int iters) {                                \
        int w = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);                                     \
        const char* p = base + (size_t)w * iters * (U * 32 * BYTES) + (threadIdx.x & 31) * BYTES;        \
        unsigned acc[4] = {0, 0, 0, 0};                                                                           \
        long long t0 = clk();                                                                            \
        _Pragma("unroll 1") for (int i = 0; i < iters; ++i) {                                            \
            unroll<0, 32 * BYTES>([&]<int I, int OFF>() { LD; });                                        \
            p += U * 32 * BYTES;                                                                         \
        }                                                                                                \
        stamp(out, t0, clk());                                                                           \
        keep(acc, sink);                                                                           \
    }
LDG_STREAM(cg32, 4, LD32("cg"))
LDG_STREAM(cg128, 16, LD128("cg"))

// wrapped loads: warp w reads chunk (w + i * warps) of U * 32 * width bytes, wrapped inside mask + 1
// bytes: 16 MB never fits L1 (every load misses it) but fits L2; 2 GB goes to DRAM
#define LDG_WRAP(NAME, BYTES, LD)                                                                        \
    extern "C" __global__ void ldg_wrap_##NAME(const char* base, unsigned* sink, long long* out, int iters, \
                                               unsigned long long mask) {                                \
        int w = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);                                     \
        unsigned long long off = (unsigned long long)w * (U * 32 * BYTES);                               \
        unsigned acc[4] = {0, 0, 0, 0};                                                                  \
        long long t0 = clk();                                                                            \
        _Pragma("unroll 1") for (int i = 0; i < iters; ++i) {                                            \
            const char* p = base + (off & mask) + (threadIdx.x & 31) * BYTES;                            \
            unroll<0, 32 * BYTES>([&]<int I, int OFF>() { LD; });                                        \
            off += (unsigned long long)gridDim.x * (blockDim.x >> 5) * (U * 32 * BYTES);                 \
        }                                                                                                \
        stamp(out, t0, clk());                                                                           \
        keep(acc, sink);                                                                                 \
    }
#define LDP32                                                                                             \
    { unsigned a;                                                                                         \
      asm volatile("ld.global.u32 %0, [%1+%2];" : "=r"(a) : "l"(p), "n"(OFF) : "memory");                 \
      acc[I & 3] ^= a; }
#define LDP128                                                                                            \
    { unsigned a, b, c, d;                                                                                \
      asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4+%5];"                                             \
                   : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "l"(p), "n"(OFF) : "memory");                   \
      acc[I & 3] ^= a ^ b ^ c ^ d; }
LDG_WRAP(plain32, 4, LDP32)
LDG_WRAP(plain128, 16, LDP128)

// scattered loads that miss L1: lane l reads p + l*stride (stride 4..128 B: 1 to 32 lines of 1 to 4
// sectors per instruction), U loads 4 KB apart; warp w's 64 KB region moves by all warps' regions per
// iteration, wrapped inside mask + 1 bytes (16 MB: L2 hits, revisited only after 64 iterations)
extern "C" __global__ void ldg_scatter_plain32(const char* base, unsigned* sink, long long* out, int iters,
                                               unsigned long long mask, int stride) {
    int w = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    unsigned long long off = (unsigned long long)w * (U * 4096);
    unsigned acc[4] = {0, 0, 0, 0};
    long long t0 = clk();
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
        const char* p = base + (off & mask) + (threadIdx.x & 31) * stride;
        unroll<0, 4096>([&]<int I, int OFF>() { LDP32; });
        off += (unsigned long long)gridDim.x * (blockDim.x >> 5) * (U * 4096);
    }
    stamp(out, t0, clk());
    keep(acc, sink);
}

// ---- global stores -------------------------------------------------------------------------------------
#define ST32 asm volatile("st.global.u32 [%0+%1], %2;" ::"l"(p), "n"(K), "r"(v) : "memory")
#define ST64 asm volatile("st.global.v2.u32 [%0+%1], {%2,%2};" ::"l"(p), "n"(K), "r"(v) : "memory")
#define ST128 asm volatile("st.global.v4.u32 [%0+%1], {%2,%2,%2,%2};" ::"l"(p), "n"(K), "r"(v) : "memory")

// stores at [base + w*wstride + lane*bytes + k*32*bytes], advancing by `advance` bytes per iteration
// and wrapping (AND) inside `mask`: mask small -> the same L2 lines again and again; large -> DRAM
#define STG_KERNEL(NAME, BYTES, PTX)                                                                     \
    extern "C" __global__ void stg_##NAME(char* base, long long* out, int iters, unsigned long long mask, \
                                          unsigned v) {                                                  \
        int w = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);                                     \
        unsigned long long off = (unsigned long long)w * (U * 32 * BYTES);                               \
        long long t0 = clk();                                                                            \
        _Pragma("unroll 1") for (int i = 0; i < iters; ++i) {                                            \
            char* p = base + (off & mask) + (threadIdx.x & 31) * BYTES;                                   \
            unroll<0, 32 * BYTES>([&]<int I, int K>() { PTX; });                                                \
            off += (unsigned long long)gridDim.x * (blockDim.x >> 5) * (U * 32 * BYTES);                 \
        }                                                                                                \
        stamp(out, t0, clk());                                                                           \
    }
// scattered 32-bit stores: lane l writes 4 bytes at p + l*stride (stride 4: one line, every byte of it;
// 32: 32 sectors of 8 lines, 4 of each sector's 32 bytes; 128: 32 lines), U stores 4 KB apart per
// iteration, the window moving by U*4 KB per iteration per warp and wrapping inside `mask` (a transpose's
// column writes are the stride >= 32 case)
extern "C" __global__ void stg_scatter32(char* base, long long* out, int iters, unsigned long long mask,
                                         int stride, unsigned v) {
    int w = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    unsigned long long off = (unsigned long long)w * (U * 4096ull);
    long long t0 = clk();
    _Pragma("unroll 1") for (int i = 0; i < iters; ++i) {
        char* p = base + (off & mask) + (threadIdx.x & 31) * stride;
        unroll<0, 4096>([&]<int I, int K>() { ST32; });
        off += (unsigned long long)gridDim.x * (blockDim.x >> 5) * (U * 4096ull);
    }
    stamp(out, t0, clk());
}
STG_KERNEL(32, 4, ST32)
STG_KERNEL(64, 8, ST64)
STG_KERNEL(128, 16, ST128)

// ---- shared stores --------------------------------------------------------------------------------------
#define STS32 asm volatile("st.shared.u32 [%0+%1], %2;" ::"r"(a), "n"(K), "r"(v) : "memory")
#define STS64 asm volatile("st.shared.v2.u32 [%0+%1], {%2,%2};" ::"r"(a), "n"(K), "r"(v) : "memory")
#define STS128 asm volatile("st.shared.v4.u32 [%0+%1], {%2,%2,%2,%2};" ::"r"(a), "n"(K), "r"(v) : "memory")

#define STS_KERNEL(NAME, PTX)                                                                            \
    extern "C" __global__ void __launch_bounds__(1024) sts_##NAME(long long* out, int iters, int stride,  \
                                                                  unsigned v) {                          \
        extern __shared__ __align__(16) char smem[];                                                     \
        unsigned a = (unsigned)__cvta_generic_to_shared(smem) + (threadIdx.x & 31) * stride;              \
        TIMED_PASSES(128, K, v += 1, PTX)                                                                \
    }
STS_KERNEL(32, STS32)
STS_KERNEL(64, STS64)
STS_KERNEL(128, STS128)

// ---- shared loads: rate by warps per SM (run_memory.py --only lds) ------------------------------------------
// U independent shared loads per iteration at lane*stride + k*512, folded into 4 accumulators (LOP3: a
// 32/64/128-bit load costs 1/2, 1, 2 ALU ops), the address XOR-flipped by `flip` every iteration (0 keeps it;
// ptxas cannot hoist the loads). With stride = the access width every load is conflict-free: 1 / 2 / 4
// wavefronts for 32 / 64 / 128 bits. How many wavefronts per cycle does one sub-partition pass (the
// 0.5 of 32-way conflicting LDS, issue.lds_s128, or more), and does it depend on the access width?
#define LDS32 { unsigned x; asm volatile("ld.shared.u32 %0, [%1+%2];" : "=r"(x) : "r"(a), "n"(K) : "memory"); acc[I & 3] ^= x; }
#define LDS64 { unsigned x, y; asm volatile("ld.shared.v2.u32 {%0,%1}, [%2+%3];" : "=r"(x), "=r"(y) : "r"(a), "n"(K) \
                                            : "memory"); acc[I & 3] ^= x ^ y; }
#define LDS128 { unsigned x, y, z, u; asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4+%5];"                  \
                                                  : "=r"(x), "=r"(y), "=r"(z), "=r"(u) : "r"(a), "n"(K) : "memory"); \
                 acc[I & 3] ^= x ^ y ^ z ^ u; }
// the timed loop of the shared-load kernels: U loads (the access, `...`) at lane * stride + OFFSET + k * STEP
#define LDS_BODY(STEP, OFFSET, ...)                                                                      \
        extern __shared__ __align__(16) char smem[];                                                     \
        unsigned a = (unsigned)__cvta_generic_to_shared(smem) + (OFFSET) + (threadIdx.x & 31) * stride;   \
        unsigned acc[4] = {0, 0, 0, 0};                                                                  \
        TIMED_PASSES(STEP, K, a ^= flip, __VA_ARGS__)                                                    \
        keep(acc, sink);
#define LDS_KERNEL(NAME, PTX)                                                                            \
    extern "C" __global__ void __launch_bounds__(1024) lds_##NAME(long long* out, unsigned* sink, int iters, \
                                                                  int stride, unsigned flip) {           \
        LDS_BODY(512, 0, PTX)                                                                            \
    }
LDS_KERNEL(32, LDS32)
LDS_KERNEL(64, LDS64)
LDS_KERNEL(128, LDS128)

// ---- shared accesses off their 128-byte alignment (run_memory.py --only align) ---------------------------
// lds_at<bits>: lds_<bits> with the warp's addresses moved by `offset` bytes (lane * stride + offset + k*512):
// with stride = the access width the lanes still touch 32 distinct banks (conflict-free), but an offset that
// is not a multiple of 128 puts the warp's 128 bytes (32-bit) across two aligned 128-byte blocks. Stride 132
// puts each lane in its own 128-byte row, banks still distinct. lds_row32: the loads of a padded tile's rows
// (float t[..][33]): lane * 4 + k * 132, so load k is off by 4k bytes, as coalescedMultiply_padded's are.
// sts_at32: the same for 32-bit shared stores (stride 132: the padded transposed store t[lane][ty]).
#define LDS_AT_KERNEL(NAME, PTX)                                                                         \
    extern "C" __global__ void __launch_bounds__(1024) lds_at##NAME(long long* out, unsigned* sink, int iters, \
                                                                    int stride, int offset, unsigned flip) { \
        LDS_BODY(512, offset, PTX)                                                                       \
    }
LDS_AT_KERNEL(32, LDS32)
LDS_AT_KERNEL(64, LDS64)
LDS_AT_KERNEL(128, LDS128)
extern "C" __global__ void __launch_bounds__(1024) lds_row32(long long* out, unsigned* sink, int iters, int stride,
                                                             int offset, unsigned flip) {
    LDS_BODY(132, offset, LDS32)
}
extern "C" __global__ void __launch_bounds__(1024) sts_at32(long long* out, int iters, int stride, int offset,
                                                            unsigned v) {
    extern __shared__ __align__(16) char smem[];
    unsigned a = (unsigned)__cvta_generic_to_shared(smem) + offset + (threadIdx.x & 31) * stride;
    TIMED_PASSES(512, K, v += 1, STS32)
}

// Two passes of N accesses (`PTX`, using k), the clock read into t[0] before and t[k + 1] after each;
// `AFTER_PASS` at each pass's end. The second pass's stamps are the ones kept.
#define STAMPED_PASSES(N, PTX, AFTER_PASS)                                                               \
    _Pragma("unroll 1") for (int r = 0; r < 2; ++r) {                                                    \
        __syncwarp();                                                                                    \
        t[0] = clk();                                                                                    \
        _Pragma("unroll") for (int k = 0; k < N; ++k) {                                                  \
            PTX;                                                                                         \
            t[k + 1] = clk();                                                                            \
        }                                                                                                \
        AFTER_PASS;                                                                                      \
    }

// issue_lds<bits>_w: ONE warp (every `every`-th) issues NW conflict-free 64/128-bit shared loads (2 / 4
// wavefronts) back to back with the clock read after each: once its sub-partition's MIO queue is full, the
// gaps say how many wavefronts per cycle one sub-partition passes for wide loads (32-way conflicting LDS.32:
// 0.5, issue.lds_s128). chase_lds<bits>: one warp, a dependent chain of conflict-free loads (each lane's
// next address in the word it loaded): cycles per load = the load-to-use latency of a 32/64/128-bit LDS.
constexpr int NW = 32;
#define ISSUE_WIDE_KERNEL(BITS, VEC, DECL, PTX, FOLD)                                                     \
    extern "C" __global__ void issue_lds##BITS##_w(long long* out, unsigned* sink, int every) {           \
        extern __shared__ __align__(16) char smem[];                                                     \
        const int wid = threadIdx.x >> 5;                                                                \
        if (wid % every) return;                                                                         \
        unsigned a = (unsigned)__cvta_generic_to_shared(smem) + (threadIdx.x & 31) * (BITS / 8);         \
        DECL;                                                                                            \
        unsigned acc = 0;                                                                                \
        long long t[NW + 1];                                                                             \
        STAMPED_PASSES(NW, PTX, _Pragma("unroll") for (int k = 0; k < NW; ++k) acc ^= FOLD);             \
        if ((threadIdx.x & 31) == 0)                                                                     \
            for (int k = 0; k <= NW; ++k) out[wid * (NW + 1) + k] = t[k];                                \
        if (acc == 0x12345678u) sink[0] = acc;                                                           \
    }
ISSUE_WIDE_KERNEL(64, 2, uint2 x[NW],
                  asm volatile("ld.shared.v2.u32 {%0,%1}, [%2];" : "=r"(x[k].x), "=r"(x[k].y) : "r"(a + k * 256) : "memory"),
                  x[k].x ^ x[k].y)
ISSUE_WIDE_KERNEL(128, 4, uint4 x[NW],
                  asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(x[k].x), "=r"(x[k].y), "=r"(x[k].z), "=r"(x[k].w)
                               : "r"(a + k * 512) : "memory"),
                  x[k].x ^ x[k].y ^ x[k].z ^ x[k].w)
// the chain: smem word at byte offset o holds the offset of the lane's next element (set up by the kernel)
// chase1_lds<bits>: the same chain run by lane 0 alone (the others return first): does the latency
// depend on how many lanes the load serves (`micro`'s one-thread LDS.32 chase: 23 cycles)?
#define CHASE_KERNEL(BITS, ...) CHASE_KERNEL_(chase_lds##BITS, BITS, 32, __VA_ARGS__)                    \
                                CHASE_KERNEL_(chase1_lds##BITS, BITS, 1, __VA_ARGS__)
#define CHASE_KERNEL_(NAME, BITS, LANES, ...)                                                            \
    extern "C" __global__ void NAME(long long* out, unsigned* sink, int steps) {                         \
        extern __shared__ __align__(16) unsigned sm[];                                                   \
        const int lane = threadIdx.x & 31;                                                               \
        for (int i = lane; i < 8 * 32 * (BITS / 32); i += 32) sm[i] = 0;                                 \
        __syncwarp();                                                                                    \
        if (LANES < 32 && lane >= LANES) return;                                                         \
        /* element e of lane l at byte (e * 32 + l) * BITS/8; its first word points at element e + 1 (mod 8) */ \
        for (int e = 0; e < 8; ++e)                                                                      \
            sm[(e * 32 + lane) * (BITS / 32)] = (((e + 1) & 7) * 32 + lane) * (BITS / 8);                \
        __syncwarp(LANES < 32 ? 1u : 0xffffffffu);                                                       \
        unsigned base = (unsigned)__cvta_generic_to_shared(sm), o = lane * (BITS / 8), y = 0;            \
        long long t0 = 0, t1 = 0;                                                                        \
        _Pragma("unroll 1") for (int r = 0; r < 2; ++r) {                                                \
            t0 = clk();                                                                                  \
            _Pragma("unroll 1") for (int i = 0; i < steps; ++i) { __VA_ARGS__; }                                 \
            t1 = clk();                                                                                  \
        }                                                                                                \
        if (lane == 0) { out[0] = t0; out[1] = t1; }                                                     \
        if ((o ^ y) == 0x12345678u) sink[0] = y;                                                         \
    }
CHASE_KERNEL(32, asm volatile("ld.shared.u32 %0, [%1];" : "=r"(o) : "r"(base + o) : "memory"))
CHASE_KERNEL(64, { unsigned z; asm volatile("ld.shared.v2.u32 {%0,%1}, [%2];" : "=r"(o), "=r"(z) : "r"(base + o) : "memory"); y ^= z; })
CHASE_KERNEL(128, { unsigned z, u, v; asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(o), "=r"(z), "=r"(u), "=r"(v)
                                                   : "r"(base + o) : "memory"); y ^= z ^ u ^ v; })

// ---- issue timestamps of one warp: when does the warp's next access have to wait? -------------------
constexpr int NQ = 48;
#define ISSUE_KERNEL(NAME, SETUP, PTX)                                                                   \
    extern "C" __global__ void issue_##NAME(const char* gbase, long long* out, unsigned* sink, int stride,  \
                                            int every) {                                                 \
        extern __shared__ __align__(16) char smem[];                                                     \
        int wid = threadIdx.x >> 5;                                                                      \
        if (wid % every) return;                                                                         \
        SETUP;                                                                                           \
        unsigned acc = 0, x[NQ];                                                                         \
        long long t[NQ + 1];                                                                             \
        STAMPED_PASSES(NQ, PTX, _Pragma("unroll") for (int k = 0; k < NQ; ++k) acc ^= x[k]);             \
        if ((threadIdx.x & 31) == 0)                                                                     \
            for (int k = 0; k <= NQ; ++k) out[wid * (NQ + 1) + k] = t[k];                                \
        if (acc == 0x12345678u) sink[0] = acc;                                                           \
    }
#define ISSUE_LDS asm volatile("ld.shared.u32 %0, [%1];" : "=r"(x[k]) : "r"(a + k * 128) : "memory")
#define ISSUE_STS asm volatile("st.shared.u32 [%0], %1;" ::"r"(a + k * 128), "r"(k) : "memory"); x[k] = 0
#define ISSUE_LDG asm volatile("ld.global.ca.u32 %0, [%1];" : "=r"(x[k]) : "l"(p + k * 128) : "memory")
#define ISSUE_STG asm volatile("st.global.u32 [%0], %1;" ::"l"(q + k * 128), "r"(k) : "memory"); x[k] = 0
ISSUE_KERNEL(lds, unsigned a = (unsigned)__cvta_generic_to_shared(smem) + (threadIdx.x & 31) * stride, ISSUE_LDS)
ISSUE_KERNEL(sts, unsigned a = (unsigned)__cvta_generic_to_shared(smem) + (threadIdx.x & 31) * stride, ISSUE_STS)
ISSUE_KERNEL(ldg, const char* p = gbase + (threadIdx.x & 31) * stride, ISSUE_LDG)
ISSUE_KERNEL(stg, char* q = (char*)gbase + (threadIdx.x & 31) * stride, ISSUE_STG)
// issue_xq_<first>_<then>: the first 32 accesses of one kind at lane * `stride` (128: 32-line LDG or 32-way
// conflicting LDS), then 16 of the other kind, conflict-free / one line (lane * 4): does the second kind's
// issue wait for the first kind's queue (one queue per sub-partition for both) or not (one per kind)?
#define ISSUE_XQ ((k < 32) == LDG_FIRST ? 1 : 0)
#define ISSUE_XQ_PTX                                                                                     \
    if (k < 32) {                                                                                        \
        if (LDG_FIRST) asm volatile("ld.global.ca.u32 %0, [%1];" : "=r"(x[k]) : "l"(p + k * 128) : "memory"); \
        else asm volatile("ld.shared.u32 %0, [%1];" : "=r"(x[k]) : "r"(a + k * 128) : "memory");       \
    } else {                                                                                             \
        if (LDG_FIRST) asm volatile("ld.shared.u32 %0, [%1];" : "=r"(x[k]) : "r"(a1 + k * 128) : "memory"); \
        else asm volatile("ld.global.ca.u32 %0, [%1];" : "=r"(x[k]) : "l"(p1 + k * 128) : "memory");  \
    }
// (issue_xq_<a>_<b> is an ISSUE_KERNEL whose setup names both kinds' addresses and which comes first)
#define ISSUE_XQ_SETUP(FIRST)                                                                            \
    constexpr bool LDG_FIRST = FIRST;                                                                    \
    const unsigned lane = threadIdx.x & 31;                                                              \
    const unsigned a = (unsigned)__cvta_generic_to_shared(smem) + lane * stride;                         \
    const unsigned a1 = (unsigned)__cvta_generic_to_shared(smem) + lane * 4;                             \
    const char* p = gbase + lane * stride;                                                               \
    const char* p1 = gbase + (1 << 19) + lane * 4
ISSUE_KERNEL(xq_ldg_lds, ISSUE_XQ_SETUP(true), ISSUE_XQ_PTX)
ISSUE_KERNEL(xq_lds_ldg, ISSUE_XQ_SETUP(false), ISSUE_XQ_PTX)

// mioq_lds: how many 32-way conflicting LDS can warps on several sub-partitions queue at once? One CTA of
// `block` threads; the warps whose bit is set in `mask` take part (warp w on sub-partition w mod 4). A first
// pass of NQ loads warms up, every warp waits for its results, the CTA meets at a barrier (so all warps start
// the stamped pass together, the queues empty), then each issues NQ loads at lane x 128 bytes with a clock
// read after each. Per-sub-partition queues of ~30 let every warp queue ~30; a shared pool less.
extern "C" __global__ void mioq_lds(long long* out, unsigned* sink, unsigned mask) {
    extern __shared__ __align__(16) char smem[];
    const int wid = threadIdx.x >> 5;
    const bool on = (mask >> wid) & 1u;
    const unsigned a = (unsigned)__cvta_generic_to_shared(smem) + (threadIdx.x & 31) * 128;
    unsigned acc = 0, x[NQ];
    long long t[NQ + 1];
    _Pragma("unroll 1") for (int r = 0; r < 2; ++r) {
        __syncthreads();
        if (on) {
            t[0] = clk();
            _Pragma("unroll") for (int k = 0; k < NQ; ++k) {
                asm volatile("ld.shared.u32 %0, [%1];" : "=r"(x[k]) : "r"(a + k * 128) : "memory");
                t[k + 1] = clk();
            }
            _Pragma("unroll") for (int k = 0; k < NQ; ++k) acc ^= x[k];
        }
    }
    if (on && (threadIdx.x & 31) == 0)
        for (int k = 0; k <= NQ; ++k) out[wid * (NQ + 1) + k] = t[k];
    if (acc == 0x12345678u) sink[0] = acc;
}

// s2r_q_<reg>: does an S2R wait for its MIO queue? (The H200's Nsight source page of the transpose skeletons,
// bench/micro/tpose, puts 17-39% of all warp stall samples in mio_throttle at a new warp's first S2R SR_TID.X.)
// One CTA of 8 warps per SM. After a barrier the warps whose bit is set in `fill` (w on sub-partition w mod 4)
// issue 48 32-way conflicting LDS back to back (mioq_lds: their queues fill within ~120 cycles); 300 cycles
// after the barrier warp 4 (sub-partition 0) and warp 5 (sub-partition 1) each read one special register
// between two clock reads, the second after an add of it and `fill` (one ptxas cannot fold, so the clock waits for
// the register); out[CTA * 8 + w] = the cycles between. One
// kernel per register (a runtime choice among them is if-converted into a run of predicated S2Rs): tid_y
// (SR_TID.Y: the kernel's block is 1-D, so ptxas has not read it before), laneid, warpid (SR_VIRTID), ctaid_x,
// smid (SR_VIRTUALSMID).
#define S2R_QUEUE_KERNEL(NAME, REG)                                                                      \
    extern "C" __global__ void s2r_q_##NAME(long long* out, unsigned* sink, unsigned fill) {             \
        extern __shared__ __align__(16) char smem[];                                                     \
        const int w = threadIdx.x >> 5;                                                                  \
        const unsigned a = (unsigned)__cvta_generic_to_shared(smem) + (threadIdx.x & 31) * 128;          \
        __syncthreads();                                                                                 \
        const long long t0 = clk();                                                                      \
        if ((fill >> w) & 1u) {                                                                          \
            unsigned acc = 0, x[NQ];                                                                     \
            _Pragma("unroll") for (int k = 0; k < NQ; ++k)                                               \
                asm volatile("ld.shared.u32 %0, [%1];" : "=r"(x[k]) : "r"(a + k * 128) : "memory");     \
            _Pragma("unroll") for (int k = 0; k < NQ; ++k) acc ^= x[k];                                  \
            if (acc == 0x12345678u) sink[0] = acc;                                                       \
        } else if (w == 4 || w == 5) {                                                                   \
            while (clk() - t0 < 300) { }                                                                 \
            unsigned t, u;                                                                               \
            const long long b0 = clk();                                                                  \
            asm volatile("mov.u32 %0, %%" REG ";" : "=r"(t));                                           \
            asm volatile("add.u32 %0, %1, %2;" : "=r"(u) : "r"(t), "r"(fill)); /* (+ 0 would fold away) */ \
            const long long b1 = clk();                                                                  \
            if ((threadIdx.x & 31) == 0) out[blockIdx.x * 8 + w] = b1 - b0;                              \
            if (u == 12345u) sink[1] = u;                                                                \
        }                                                                                                \
    }
S2R_QUEUE_KERNEL(tid_y, "tid.y")
S2R_QUEUE_KERNEL(laneid, "laneid")
S2R_QUEUE_KERNEL(warpid, "warpid")
S2R_QUEUE_KERNEL(ctaid_x, "ctaid.x")
S2R_QUEUE_KERNEL(smid, "smid")

// ---- issue timestamps of stores whose data registers stay live to the end (run_memory.py --only issue_st):
// issue_stg / issue_sts above reuse a register the previous store still reads for the next clock, so their
// gaps time the store's register read, not its queue. Here each store has its own data register, kept live
// by a use after the sequence: a warp waits only when its store finds no room. How many stores does a warp
// (or a sub-partition) have in flight before it waits, and is it the ~36 of loads (`issue.ldg_s128`)?
#define ISSUE_ST_KERNEL(NAME, SETUP, PTX)                                                                \
    extern "C" __global__ void issue_st_##NAME(char* gbase, long long* out, unsigned* sink, int stride,   \
                                               int every) {                                              \
        extern __shared__ __align__(16) char smem[];                                                     \
        int wid = threadIdx.x >> 5;                                                                      \
        if (wid % every) return;                                                                         \
        SETUP;                                                                                           \
        unsigned d[NQ];                                                                                  \
        _Pragma("unroll") for (int k = 0; k < NQ; ++k) d[k] = threadIdx.x * 977u + k * 131u + sink[k & 63]; \
        long long t[NQ + 1];                                                                             \
        STAMPED_PASSES(NQ, PTX, );                                                                       \
        unsigned acc = 0;                                                                                \
        _Pragma("unroll") for (int k = 0; k < NQ; ++k) acc ^= d[k];                                      \
        if ((threadIdx.x & 31) == 0)                                                                     \
            for (int k = 0; k <= NQ; ++k) out[wid * (NQ + 1) + k] = t[k];                                \
        if (acc == 0x12345678u) sink[0] = acc;                                                           \
    }
#define ISSUE_ST_STS asm volatile("st.shared.u32 [%0], %1;" ::"r"(a + k * 128), "r"(d[k]) : "memory")
#define ISSUE_ST_STG asm volatile("st.global.u32 [%0], %1;" ::"l"(q + k * 128), "r"(d[k]) : "memory")
ISSUE_ST_KERNEL(sts, unsigned a = (unsigned)__cvta_generic_to_shared(smem) + (threadIdx.x & 31) * stride, ISSUE_ST_STS)
ISSUE_ST_KERNEL(stg, char* q = gbase + (threadIdx.x & 31) * stride, ISSUE_ST_STG)

// ---- shared and global loads side by side: one L1 data stage, or two? ------------------------------------
// Warp w (w < 32) runs if bit w of `active` is set: the global loads of ldg_ca32 (ld.global.ca.u32 at
// gbase + lane*ldg_stride + k*4096, the same lines every iteration: L1 hits) if bit w of `ldg` is set,
// else the shared loads of the sts kernels' pattern (ld.shared.u32 at lane*lds_stride + k*128, XOR-flipped
// by `flip` bytes every iteration so that ptxas cannot hoist them). Each warp stamps its own start and end.
// mix_lds<bits>_ldg (64, 128): the same with conflict-free ld.shared.v2/v4 at lane*bits/8 + k*512 (2 / 4
// wavefronts each, by width rather than by conflicts): does a wide shared load cost what as many
// conflicting wavefronts cost beside the global lines? mix_lds<bits>_ldgmiss: the global loads walk
// forward instead (warp w's iteration i at gbase + (w * ldg_iters + i) * 64 KiB): every line is new to L1
// (L2 hits after the first SM): do L1 misses cost the data stage what hits cost?
template <int V, bool MISS = false, bool PLAIN = false>
DEVI void mix_body(const char* gbase, unsigned* sink, long long* out, int lds_iters, int ldg_iters, int lds_stride,
                   int ldg_stride, unsigned ldg, unsigned active, unsigned flip, unsigned long long gflip) {
    extern __shared__ __align__(16) char smem[];
    int wid = threadIdx.x >> 5;
    bool run = (active >> (wid & 31)) & 1u, global = (ldg >> (wid & 31)) & 1u;
    unsigned a = (unsigned)__cvta_generic_to_shared(smem) + (threadIdx.x & 31) * lds_stride;
    const char* p = gbase + (threadIdx.x & 31) * ldg_stride;
    unsigned acc[4] = {0, 0, 0, 0};
    long long t0 = 0, t1 = 0;
    _Pragma("unroll 1") for (int rep = 0; rep < 2; ++rep) {
        __syncthreads();
        if constexpr (MISS) p = gbase + (threadIdx.x & 31) * ldg_stride + (long long)(wid * ldg_iters) * 65536;
        t0 = clk();
        if (run && global) {
            _Pragma("unroll 1") for (int i = 0; i < ldg_iters; ++i) {
                if constexpr (PLAIN) unroll<0, 4096>([&]<int I, int OFF>() { LDP32; });
                else unroll<0, 4096>([&]<int I, int OFF>() { LD32("ca"); });
                if constexpr (MISS) p += 65536;
                else p = (const char*)((unsigned long long)p ^ gflip);
            }
        } else if (run) {
            _Pragma("unroll 1") for (int i = 0; i < lds_iters; ++i) {
                unroll<0, 128 * V>([&]<int I, int K>() {
                    if constexpr (V == 1) {
                        unsigned v;
                        asm volatile("ld.shared.u32 %0, [%1+%2];" : "=r"(v) : "r"(a), "n"(K) : "memory");
                        acc[I & 3] ^= v;
                    } else if constexpr (V == 2) {
                        unsigned v, w;
                        asm volatile("ld.shared.v2.u32 {%0,%1}, [%2+%3];" : "=r"(v), "=r"(w) : "r"(a), "n"(K) : "memory");
                        acc[I & 3] ^= v ^ w;
                    } else {
                        unsigned v, w, x, y;
                        asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4+%5];" : "=r"(v), "=r"(w), "=r"(x), "=r"(y)
                                     : "r"(a), "n"(K) : "memory");
                        acc[I & 3] ^= v ^ w ^ x ^ y;
                    }
                });
                a ^= flip;
            }
        }
        t1 = clk();
    }
    stamp(out, t0, t1);
    keep(acc, sink);
}
#define MIX_KERNEL(NAME, ...)                                                                                 \
    extern "C" __global__ void __launch_bounds__(1024) NAME(const char* gbase, unsigned* sink, long long* out, \
                                                             int lds_iters, int ldg_iters, int lds_stride,     \
                                                             int ldg_stride, unsigned ldg, unsigned active,    \
                                                             unsigned flip, unsigned long long gflip) {        \
        mix_body<__VA_ARGS__>(gbase, sink, out, lds_iters, ldg_iters, lds_stride, ldg_stride, ldg, active, flip, gflip); \
    }
MIX_KERNEL(mix_lds_ldg, 1)
MIX_KERNEL(mix_lds64_ldg, 2)
MIX_KERNEL(mix_lds128_ldg, 4)
MIX_KERNEL(mix_lds_ldgmiss, 1, true)
MIX_KERNEL(mix_lds128_ldgmiss, 4, true)
MIX_KERNEL(mix_lds_ldgplain, 1, false, true)
MIX_KERNEL(mix_lds128_ldgplain, 4, false, true)

// ---- when do an L1 miss's lines pass the data stage: at issue, or as they come back? -------------------
// mix_burst: 1 CTA of 32 warps per SM. The warps in `ldg` (at most one per sub-partition: warp w reads
// block 4 * CTA + w % 4 of 64 KiB) each issue 16 plain LDG.E whose 32 lanes touch 32 lines (lane*128 +
// k*4096: the whole block), all new to L1 (this launch's region `goff` of gbase:
// from DRAM, or from L2 where the previous launch read the same region), and stamp the cycle all 16 have
// returned. The warps in `lds` run `groups` groups of 16 conflict-free LDS.64 (2 wavefronts each) and stamp
// after each group. If a miss's 32 lines take the SM's data stage as it is issued, the first LDS groups
// slow down at once; if as its data return (L2 / DRAM pace), later and less.
extern "C" __global__ void __launch_bounds__(1024) mix_burst(const char* gbase, unsigned* sink, long long* out,
                                                             int groups, unsigned ldg, unsigned lds,
                                                             long long goff) {
    extern __shared__ __align__(16) char smem[];
    int wid = threadIdx.x >> 5, lane = threadIdx.x & 31;
    unsigned a = (unsigned)__cvta_generic_to_shared(smem) + lane * 8;
    const char* p = gbase + goff + (long long)(blockIdx.x * 4 + (wid & 3)) * (U * 4096) + lane * 128;
    unsigned acc[4] = {0, 0, 0, 0};
    long long* o = out + (long long)(blockIdx.x * 32 + wid) * (groups + 1);
    __syncthreads();
    long long t0 = clk();
    if ((ldg >> wid) & 1u) {
        unroll<0, 4096>([&]<int I, int OFF>() { LDP32; });
        if ((acc[0] | acc[1] | acc[2] | acc[3]) == 0x12345678u) t0 = 0;  // waits for every load's data
        if (lane == 0) { o[0] = t0; o[1] = clk(); }
    } else if ((lds >> wid) & 1u) {
        if (lane == 0) o[0] = t0;
        _Pragma("unroll 1") for (int g = 0; g < groups; ++g) {
            unroll<0, 256>([&]<int I, int K>() {
                unsigned v, w;
                asm volatile("ld.shared.v2.u32 {%0,%1}, [%2+%3];" : "=r"(v), "=r"(w) : "r"(a), "n"(K) : "memory");
                acc[I & 3] ^= v ^ w;
            });
            a ^= 4096;
            long long t = clk();
            if (lane == 0) o[g + 1] = t;
        }
    }
    keep(acc, sink);
}

// pair_probe: does an L1 miss fetch more than its sector (cudaLimitMaxL2FetchGranularity), and does L1
// keep what came with it? Each warp loads one sector of each of 512 lines (lane*128 + k*4096, 16 plain
// LDG.E of 32 lines), waits for them, then the sector `second` bytes further on in every line (32: the
// other half of the first one's 64-byte pair; 64: the other pair). Nsight's L1 hits and L2 sectors of
// the second pass tell what the first brought.
extern "C" __global__ void __launch_bounds__(1024) pair_probe(const char* gbase, unsigned* sink, int second) {
    int wid = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const char* p = gbase + (long long)(blockIdx.x * 32 + wid) * (U * 4096) + lane * 128;
    unsigned acc[4] = {0, 0, 0, 0};
    unroll<0, 4096>([&]<int I, int OFF>() { LDP32; });
    p += second + ((acc[0] ^ acc[1] ^ acc[2] ^ acc[3]) == 0x12345678u ? 4 : 0);  // after every first load's data
    unroll<0, 4096>([&]<int I, int OFF>() { LDP32; });
    keep(acc, sink);
}

// order_probe_<N>: does a shared load pass the global loads queued before it (one CTA of 8 warps)? Warp 0
// issues N LDG.E (lane * `stride` + k * 64 KiB: 32 lines each at stride 128, one line at 4) from L1 (`hot`:
// it loaded the same words before the barrier) or from L2, then (probe == 0) one conflict-free LDS.32 and an
// add that uses it, clock after the add; then uses the LDGs, clock after. With probe = 4 (warp 0's
// sub-partition) or 1 (another), that warp issues the LDS instead, `delay` cycles after the barrier (warp
// 0's LDGs issued by then), clock before it and after its use. Stamps: out[0..4] = LDG start, LDS used
// (warp 0), LDGs used, probe's LDS issue, probe's LDS used.
template <int N>
DEVI void order_body(const char* gbase, unsigned* sink, long long* out, int stride, int hot, int probe, int delay) {
    extern __shared__ __align__(16) unsigned osm[];
    const int wid = threadIdx.x >> 5, lane = threadIdx.x & 31;
    for (int i = threadIdx.x; i < 1024; i += blockDim.x) osm[i] = i;
    const char* p = gbase + lane * stride;
    unsigned acc = 0;
    if (wid == 0 && hot) {
#pragma unroll
        for (int k = 0; k < N; ++k) {
            unsigned v;
            asm volatile("ld.global.ca.u32 %0, [%1];" : "=r"(v) : "l"(p + k * 65536) : "memory");
            acc ^= v;
        }
        if (acc == 0x12345678u) sink[1] = acc;  // waits for the warm loads' data
    }
    __syncthreads();
    const unsigned a = (unsigned)__cvta_generic_to_shared(osm) + lane * 4;
    if (wid == 0) {
        unsigned x[N > 0 ? N : 1];
        long long t0 = clk(), t1 = 0;
#pragma unroll
        for (int k = 0; k < N; ++k) asm volatile("ld.global.ca.u32 %0, [%1];" : "=r"(x[k]) : "l"(p + k * 65536) : "memory");
        if (probe == 0) {
            unsigned y;
            asm volatile("ld.shared.u32 %0, [%1];" : "=r"(y) : "r"(a) : "memory");
            asm volatile("add.u32 %0, %0, 1;" : "+r"(y));
            t1 = clk();
            acc ^= y;
        }
#pragma unroll
        for (int k = 0; k < N; ++k) acc ^= x[k];
        asm volatile("add.u32 %0, %0, 1;" : "+r"(acc));
        long long t2 = clk();
        if (lane == 0) { out[0] = t0; out[1] = t1; out[2] = t2; }
    } else if (wid == probe) {
        long long s = clk();
        while (clk() - s < delay) {}
        long long t3 = clk();
        unsigned y;
        asm volatile("ld.shared.u32 %0, [%1];" : "=r"(y) : "r"(a) : "memory");
        asm volatile("add.u32 %0, %0, 1;" : "+r"(y));
        long long t4 = clk();
        acc ^= y;
        if (lane == 0) { out[3] = t3; out[4] = t4; }
    }
    if (acc == 0x12345678u) sink[0] = acc;
}
#define ORDER_KERNEL(N)                                                                                       \
    extern "C" __global__ void order_probe_##N(const char* gbase, unsigned* sink, long long* out, int stride, \
                                               int hot, int probe, int delay) {                               \
        order_body<N>(gbase, sink, out, stride, hot, probe, delay);                                           \
    }
ORDER_KERNEL(0)
ORDER_KERNEL(1)
ORDER_KERNEL(2)
ORDER_KERNEL(4)
ORDER_KERNEL(8)
ORDER_KERNEL(16)

// l1p<BYTES>_<ca|nc>: how many L1 data-stage wavefronts does a global load cost (Nsight, run_memory.py
// --ncu --ncu-only l1wf)? Each warp loads, `iters` times, one BYTES-wide element per lane at lane * `stride` +
// (k * BYTES) % 128 in its own `wstride` bytes: with stride >= 128 every load touches 32 lines at one offset (stride
// 128; a DGEMM's column loads of A) or at offsets 8 bytes apart lane to lane (stride 136), the same lines
// each time, so all but the first 128 / BYTES loads hit L1; stride = BYTES: one coalesced request.
template <int BYTES, bool NC>
DEVI void l1p_body(const char* g, unsigned* sink, int stride, int iters, int wstride) {
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    const char* p = g + (long long)(blockIdx.x * (blockDim.x >> 5) + wid) * wstride + (long long)lane * stride;
    unsigned acc = 0;
#pragma unroll 4
    for (int k = 0; k < iters; ++k) {
        const char* a = p + (k * BYTES) % 128;
        if constexpr (BYTES == 4) {
            unsigned v = NC ? __ldg((const unsigned*)a) : *(const unsigned*)a;
            acc ^= v;
        } else {
            uint2 v = NC ? __ldg((const uint2*)a) : *(const uint2*)a;
            acc ^= v.x ^ v.y;
        }
    }
    if (acc == 0x12345678u) sink[threadIdx.x] = acc;
}
#define L1P_KERNEL(BYTES, TAG, NC)                                                                       \
    extern "C" __global__ void l1p##BYTES##_##TAG(const char* g, unsigned* sink, int stride, int iters,   \
                                                  int wstride) {                                         \
        l1p_body<BYTES, NC>(g, sink, stride, iters, wstride);                                            \
    }
L1P_KERNEL(4, ca, false)
L1P_KERNEL(8, ca, false)
L1P_KERNEL(4, nc, true)
L1P_KERNEL(8, nc, true)

// dstage<G>_<L>: a DGEMM's loop in skeleton (dgemm_unroll: after each barrier every warp issues its LDGs of
// the next tile, then a burst of LDS of this one). One CTA of `warps` warps per SM; per iteration each warp
// issues G LDG.E.64 (32 lines at one offset: 32 data-stage wavefronts each, L1 hits after the first pass),
// then L conflict-free LDS.64 (2 wavefronts each), and stamps the clock after using its first LDS, its
// last LDS and its LDGs; then a barrier. out[(warp * iters + it) * 4 + 0..3] = start, first LDS used, last
// LDS used, LDGs used. Does the LDS burst wait for the LDGs' wavefronts (processor sharing: about twice its
// own), pass first, or take turns with them?
template <int G, int L>
DEVI void dstage_body(const char* gbase, unsigned* sink, long long* out, int iters, int sync = 1) {
    extern __shared__ __align__(16) unsigned dsm[];
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    for (int i = threadIdx.x; i < 4096; i += blockDim.x) dsm[i] = i;
    const char* p = gbase + (long long)(blockIdx.x * (blockDim.x >> 5) + wid) * 4352 + lane * 128;
    const unsigned a = (unsigned)__cvta_generic_to_shared(dsm) + lane * 8;
    unsigned acc = 0;
    __syncthreads();
#pragma unroll 1
    for (int it = 0; it < iters; ++it) {
        long long t0 = clk();
        uint2 x[G > 0 ? G : 1];
#pragma unroll
        for (int k = 0; k < G; ++k)
            asm volatile("ld.global.nc.v2.u32 {%0,%1}, [%2];" : "=r"(x[k].x), "=r"(x[k].y) : "l"(p + ((it * G + k) * 8) % 128) : "memory");
        // (the LDS addresses depend on a clock read after the LDGs, so that ptxas keeps them behind)
        const long long tm = clk();
        const unsigned b = a + (tm < 0 ? 4u : 0u);
        unsigned y[L][2];
#pragma unroll
        for (int k = 0; k < L; ++k)
            asm volatile("ld.shared.v2.u32 {%0,%1}, [%2];" : "=r"(y[k][0]), "=r"(y[k][1]) : "r"(b + (k % 16) * 256) : "memory");
        unsigned f = y[0][0] ^ y[0][1];
        asm volatile("add.u32 %0, %0, 1;" : "+r"(f));
        long long t1 = clk();
        unsigned l = y[L - 1][1] ^ y[L - 1][0];
#pragma unroll
        for (int k = 1; k < L - 1; ++k) l ^= y[k][0] ^ y[k][1];
        asm volatile("add.u32 %0, %0, 1;" : "+r"(l));
        long long t2 = clk();
        unsigned gsum = 0;
#pragma unroll
        for (int k = 0; k < G; ++k) gsum ^= x[k].x ^ x[k].y;
        asm volatile("add.u32 %0, %0, 1;" : "+r"(gsum));
        long long t3 = clk();
        acc ^= f ^ l ^ gsum;
        if (lane == 0) {
            long long* o = out + ((long long)(blockIdx.x * (blockDim.x >> 5) + wid) * iters + it) * 4;
            o[0] = t0; o[1] = t1; o[2] = t2; o[3] = t3;
        }
        if (sync) __syncthreads();
    }
    if (acc == 0x12345678u) sink[threadIdx.x] = acc;
}
#define DSTAGE_KERNEL(G, L)                                                                                     \
    extern "C" __global__ void __launch_bounds__(1024) dstage##G##_##L(const char* gbase, unsigned* sink,        \
                                                                      long long* out, int iters) {              \
        dstage_body<G, L>(gbase, sink, out, iters);                                                             \
    }
// dfree<G>_<L>: the same loop without the barrier, so that the warps drift apart and their kinds interleave
#define DFREE_KERNEL(G, L)                                                                                      \
    extern "C" __global__ void __launch_bounds__(1024) dfree##G##_##L(const char* gbase, unsigned* sink,         \
                                                                     long long* out, int iters) {               \
        dstage_body<G, L>(gbase, sink, out, iters, 0);                                                          \
    }
DFREE_KERNEL(0, 12)
DFREE_KERNEL(1, 12)
DFREE_KERNEL(4, 12)
DSTAGE_KERNEL(0, 12)
DSTAGE_KERNEL(1, 12)
DSTAGE_KERNEL(4, 12)
DSTAGE_KERNEL(4, 24)
DSTAGE_KERNEL(4, 1)

// ---- L2 state: read a buffer twice, write a buffer once ------------------------------------------------
extern "C" __global__ void read_twice(const float4* __restrict__ src, float* sink, long long n4) {
    float acc = 0.f;
    long long stride = (long long)gridDim.x * blockDim.x;
#pragma unroll 1
    for (int pass = 0; pass < 2; ++pass)
#pragma unroll 4
        for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += stride) {
            float4 v = __ldcg(src + i);
            acc += (v.x + v.y) + (v.z + v.w);
        }
    if (acc == 1.2345f) sink[0] = acc;
}

// read_twice_on: read_twice by the CTAs of some SMs only (`sel`: 0 all, 1 even SM ids, 2 SM ids below
// `half`, 3 odd SM ids, 4 SM ids from `half`), which take 4,096-float4 chunks of the buffer from `next[0]`
// (first pass) and `next[1]` (second pass) as they go: if the L2 keeps a copy of far data near the SMs that
// read it, a buffer read by one half of the chip should survive in L2 at sizes where one read by all does not.
extern "C" __global__ void read_twice_on(const float4* __restrict__ src, float* sink, long long n4,
                                         unsigned long long* next, int sel, int half) {
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    const bool mine = sel == 0 || (sel == 1 && sm % 2 == 0) || (sel == 2 && (int)sm < half) ||
                      (sel == 3 && sm % 2 == 1) || (sel == 4 && (int)sm >= half);
    if (!mine) return;
    __shared__ long long base;
    float acc = 0.f;
#pragma unroll 1
    for (int pass = 0; pass < 2; ++pass) {
        while (true) {
            __syncthreads();
            if (threadIdx.x == 0) base = (long long)atomicAdd(next + pass, 4096ull);
            __syncthreads();
            if (base >= n4) break;
#pragma unroll 4
            for (int k = 0; k < 16; ++k) {
                const long long i = base + k * 256 + threadIdx.x;
                if (i < n4) {
                    float4 v = __ldcg(src + i);
                    acc += (v.x + v.y) + (v.z + v.w);
                }
            }
        }
    }
    if (acc == 1.2345f) sink[0] = acc;
}

extern "C" __global__ void write_once(float4* dst, long long n4, float v) {
    long long stride = (long long)gridDim.x * blockDim.x;
#pragma unroll 4
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += stride)
        dst[i] = make_float4(v, v, v, v);
}

// ---- launch ----------------------------------------------------------------------------------------------
extern "C" __global__ void empty(int* p) {
    if (p != 0 && threadIdx.x == 1023) p[0] = 1;
}

// ---- L2 partitions: a chase by one CTA over a ring another CTA walked last ---------------------------
// Launch 1 (`who` = the warming CTA) walks the ring once, so its lines sit in L2 as that SM left them;
// launch 2 (`who` = the measured CTA) walks it again and times it. out[0..2] = smid, cycles, loads.
extern "C" __global__ void ring_walk(const unsigned long long* ring, long long* out, int who, int loads) {
    if (blockIdx.x != who || threadIdx.x) return;
    unsigned long long p = (unsigned long long)ring;
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    long long t0 = clk();
#pragma unroll 1
    for (int i = 0; i < loads; ++i) asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p)::"memory");
    long long t1 = clk();
    out[0] = smid;
    out[1] = t1 - t0;
    out[2] = (long long)p;  // keeps the chain
}

// ---- store order (run_memory.py --only st_order): in what order do the warps of the CTAs sharing an SM
// issue their stores? st_stride's stores (dram_writes.cu: 4 pieces of each of 32 lines k lines apart per CTA,
// CTA (bx, by) of a grid gx wide, launched x fastest), with a clock read after each store. Per warp:
// stamps[w * 6 + 0] its start, [1..4] after each store, [5] its SM. How many CTAs of an SM hold partly
// written lines at once (gpusim: one or two; the H100's partial-sector cost says all resident ones)?
// Warp `ty` of this CTA: its start and its four store stamps `t`, then its SM, at stamps[(CTA x 8 + ty) x 6].
DEVI void order_stamps(long long* stamps, int ty, const long long* t) {
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    long long* s = stamps + ((long long)blockIdx.x * 8 + ty) * 6;
#pragma unroll
    for (int j = 0; j < 5; ++j) s[j] = t[j];
    s[5] = smid;
}

extern "C" __global__ void st_order(float* out, long long* stamps, int k, int gx, float v) {
    const int ty = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int bx = blockIdx.x % gx, by = blockIdx.x / gx;
    float* p = out + ((long long)(bx * 32 + lane) * k + by) * 32 + ty;
    long long t[5];
    t[0] = clk();
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        asm volatile("st.global.f32 [%0], %1;" ::"l"(p + 8 * j), "f"(v) : "memory");
        t[j + 1] = clk();
    }
    if (lane == 0) order_stamps(stamps, ty, t);
}

// tp_order: transpose_naive (dram_writes.cu tp_naive: out[x m + y + j] = in[(y + j) m + x], m x m floats,
// 32 x 8 threads per CTA) with the same stamps as st_order: does loading between the stores change how many
// CTAs of an SM are between their first and last store at once? tps_order: tp_stonly (its stores alone,
// 2.0f) with the same stamps: the H100 gives its partial sectors the cost of st_stride's (the same lines and
// pieces); does it store in the same order?
template <bool LOADS>
DEVI void transpose_order(const float* in, float* out, long long* stamps, int m) {
    const int ty = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int gx = m / 32;
    const int x = (blockIdx.x % gx) * 32 + lane, y = (blockIdx.x / gx) * 32 + ty;
    long long t[5];
    t[0] = clk();
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        out[(long long)x * m + y + 8 * j] = LOADS ? in[(long long)(y + 8 * j) * m + x] : 2.0f;
        t[j + 1] = clk();
    }
    if (lane == 0) order_stamps(stamps, ty, t);
}
extern "C" __global__ void tp_order(const float* in, float* out, long long* stamps, int m) {
    transpose_order<true>(in, out, stamps, m);
}
extern "C" __global__ void tps_order(const float* in, float* out, long long* stamps, int m) {
    transpose_order<false>(in, out, stamps, m);
}

// ---- when does an access read its registers? (run_memory.py --only war) ----------------------------------
// gpusim reads an access's address (and a store's data) as the access starts to pass its SM-wide stage, so
// a later instruction overwriting that register (a write-after-read on the access's read barrier) waits
// for every access queued in front of it. DGEMM loops do this (IMAD.WIDE R24 ... LDG [R24]; LDS.128 R24:
// the LDS waits for the LDG's read barrier). One warp (or every `every`-th warp) issues FILL accesses
// with immediate offsets from one base (no register reuse), then the probe access whose address (or
// data) register the next instruction overwrites in place, then reads the clock: t[1] - t[0] is the
// FILL accesses' issue, t[2] - t[1] the probe's issue plus the overwrite's wait for the probe's read.
// Second of two passes kept. Kinds: ldg (probe LDG, address overwritten), stg (probe STG, data
// overwritten), lds (probe LDS, address), sts (probe STS, data); FILL accesses are of the probe's kind
// (global: ld.global.ca / st.global; `cg` fill: ld.global.cg, L2 only), `stride` bytes between lanes.
template <int FILL, int KIND>
DEVI void war_body(char* gbase, long long* out, unsigned* sink, int stride, int every, long long step) {
    extern __shared__ __align__(16) char smem[];
    const int wid = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (wid % every) return;
    char* p = gbase + lane * stride;
    char* q = gbase + (1 << 19) + lane * stride;
    unsigned a = (unsigned)__cvta_generic_to_shared(smem) + lane * stride;
    unsigned b = a + 8192u;
    const unsigned slot = (unsigned)__cvta_generic_to_shared(smem) + 12288u + lane * 8u;
    if constexpr (KIND <= 1) *(char**)(smem + 12288 + lane * 8) = q;  // the probe's pointer, re-read each pass
    __syncwarp();
    unsigned x[FILL + 1], y = 0, v = threadIdx.x * 7u + sink[lane], acc = 0;
    long long t[3];
#pragma unroll 1
    for (int r = 0; r < 2; ++r) {
        __syncwarp();
        t[0] = clk();
#pragma unroll
        for (int k = 0; k < FILL; ++k) {
            if constexpr (KIND == 0) asm volatile("ld.global.ca.u32 %0, [%1];" : "=r"(x[k]) : "l"(p + k * 128) : "memory");
            if constexpr (KIND == 1) asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(x[k]) : "l"(p + k * 128) : "memory");
            if constexpr (KIND == 2) { asm volatile("st.global.u32 [%0], %1;" ::"l"(p + k * 128), "r"(v + k) : "memory"); x[k] = 0; }
            if constexpr (KIND == 3) asm volatile("ld.shared.u32 %0, [%1];" : "=r"(x[k]) : "r"(a + k * 128) : "memory");
            if constexpr (KIND == 4) { asm volatile("st.shared.u32 [%0], %1;" ::"r"(a + k * 128), "r"(v + k) : "memory"); x[k] = 0; }
        }
        t[1] = clk();
        if constexpr (KIND <= 1) {  // probe LDG; its address pair overwritten in place
            asm volatile("ld.global.ca.u32 %0, [%1];" : "=r"(y) : "l"(q) : "memory");
            asm volatile("ld.shared.u64 %0, [%1];" : "=l"(q) : "r"(slot) : "memory");  // the same pointer, from shared
        } else if constexpr (KIND == 2) {  // probe STG; its data register overwritten in place
            asm volatile("st.global.u32 [%0], %1;" ::"l"(q), "r"(v) : "memory");
            asm volatile("add.u32 %0, %0, %1;" : "+r"(v) : "r"((unsigned)step));
        } else if constexpr (KIND == 3) {  // probe LDS; its address overwritten
            asm volatile("ld.shared.u32 %0, [%1];" : "=r"(y) : "r"(b) : "memory");
            asm volatile("add.u32 %0, %0, %1;" : "+r"(b) : "r"((unsigned)step));
        } else {  // probe STS; its data overwritten
            asm volatile("st.shared.u32 [%0], %1;" ::"r"(b), "r"(v) : "memory");
            asm volatile("add.u32 %0, %0, %1;" : "+r"(v) : "r"((unsigned)step));
        }
        t[2] = clk();
        acc ^= y;
#pragma unroll
        for (int k = 0; k < FILL; ++k) acc ^= x[k];
    }
    acc ^= v ^ b ^ (unsigned)(long long)q;
    if (lane == 0)
        for (int k = 0; k < 3; ++k) out[wid * 3 + k] = t[k];
    if (acc == 0x12345678u) sink[0] = acc;
}
#define WAR_KERNEL(NAME, KIND, FILL)                                                                          \
    extern "C" __global__ void war_##NAME##_f##FILL(char* g, long long* out, unsigned* sink, int stride,       \
                                                   int every, long long step) {                               \
        war_body<FILL, KIND>(g, out, sink, stride, every, step);                                              \
    }
#define WAR_KERNELS(NAME, KIND) WAR_KERNEL(NAME, KIND, 0) WAR_KERNEL(NAME, KIND, 4) WAR_KERNEL(NAME, KIND, 8) \
    WAR_KERNEL(NAME, KIND, 16) WAR_KERNEL(NAME, KIND, 24) WAR_KERNEL(NAME, KIND, 32)
WAR_KERNELS(ldg, 0)
WAR_KERNELS(ldgcg, 1)
WAR_KERNELS(stg, 2)
WAR_KERNELS(lds, 3)
WAR_KERNELS(sts, 4)

// ---- the data stage below saturation (run_memory.py --only pace) ----------------------------------------
// Warp w (of one 32-warp CTA per SM) runs if bit w of `active` is set: an LDG warp (bit w of `ldg`) repeats
// `iters` times a burst of 4 ld.global.ca.u32 touching 32 lines each (L1 hits, lanes 128 B apart), then a
// chain of `pad` dependent FFMAs that starts from the loaded words (so the next burst waits for them);
// an LDS warp repeats `iters` times one conflict-free ld.shared.v4 (4 wavefronts), then `pad` dependent
// FFMAs from its words. Each kind's `pad` sets how busy it keeps the SM's data stage alone: does a shared
// load pay the mixing cost of `mix` (saturated) while global lines are queued but the stage has room, as
// in a DGEMM (its shared loads spread over its FMAs, its 32-line loads in bursts)? Each warp stamps its
// start and end.
// mix_pace_plain: the same with plain loads (ld.global.u32: LDG.E, as compiled kernels issue them; the .ca
// loads of every mix kernel are LDG.E.STRONG.SM).
// mix_pace_noload: the LDG warps run their FFMA pad loops without the loads: does an LDS warp crawl beside
// warps that only compute (the scheduler), or only beside warps that load (the memory path)?
// mix_pace_u<P>_<Q>: plain loads and the FFMA chains unrolled (P per shared load, Q per burst of global ones,
// no loop, no branch inside a step): does the coupling come with the pad loops' branches?
// mix_pace_un<P>_<Q>: the same without the global loads (the "LDG" warps only run their unrolled FFMA chains):
// LDS warps beside warps with neither loads nor branches.
// (P, Q < 0: the chains are loops of the runtime lds_pad / ldg_pad FFMAs.)
template <int N>
DEVI void pad_chain(float& f, int n) {  // N FFMAs unrolled, or (N < 0) a loop of n
    if constexpr (N < 0) {
        _Pragma("unroll 1") for (int j = 0; j < n; ++j) f = fmaf(f, 0.999f, 0.001f);
    } else {
        _Pragma("unroll") for (int j = 0; j < N; ++j) f = fmaf(f, 0.999f, 0.001f);
    }
}
template <bool PLAIN, bool NOLOAD = false, int P = -1, int Q = -1>
DEVI void pace_body(const char* gbase, unsigned* sink, long long* out, int lds_iters, int ldg_iters, int lds_pad,
                    int ldg_pad, unsigned ldg, unsigned active) {
    extern __shared__ __align__(16) char smem[];
    const int wid = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const bool run = (active >> wid) & 1u, global = (ldg >> wid) & 1u;
    const unsigned a = (unsigned)__cvta_generic_to_shared(smem) + lane * 16 + (wid & 7) * 512;
    const char* p = gbase + lane * 128;
    float f = 1.0f;
    unsigned z = 0;  // 0 at run time (the data are 0): ties each burst's addresses to the chain before it
    long long t0 = 0, t1 = 0;
    _Pragma("unroll 1") for (int rep = 0; rep < 2; ++rep) {
        __syncthreads();
        t0 = clk();
        if (run && global) {
            _Pragma("unroll 1") for (int i = 0; i < ldg_iters; ++i) {
                unsigned x0, x1, x2, x3;
                const char* q = p + z;
                if constexpr (NOLOAD) {
                    x0 = x1 = x2 = x3 = (unsigned)(unsigned long long)q & 0u;
                } else if constexpr (PLAIN) {
                    asm volatile("ld.global.u32 %0, [%1];" : "=r"(x0) : "l"(q) : "memory");
                    asm volatile("ld.global.u32 %0, [%1+4096];" : "=r"(x1) : "l"(q) : "memory");
                    asm volatile("ld.global.u32 %0, [%1+8192];" : "=r"(x2) : "l"(q) : "memory");
                    asm volatile("ld.global.u32 %0, [%1+12288];" : "=r"(x3) : "l"(q) : "memory");
                } else {
                    asm volatile("ld.global.ca.u32 %0, [%1];" : "=r"(x0) : "l"(q) : "memory");
                    asm volatile("ld.global.ca.u32 %0, [%1+4096];" : "=r"(x1) : "l"(q) : "memory");
                    asm volatile("ld.global.ca.u32 %0, [%1+8192];" : "=r"(x2) : "l"(q) : "memory");
                    asm volatile("ld.global.ca.u32 %0, [%1+12288];" : "=r"(x3) : "l"(q) : "memory");
                }
                f += __uint_as_float(x0 ^ x1 ^ x2 ^ x3);
                pad_chain<Q>(f, ldg_pad);
                z = __float_as_uint(f) == 0x7f800001u ? 128u : 0u;
            }
        } else if (run) {
            _Pragma("unroll 1") for (int i = 0; i < lds_iters; ++i) {
                unsigned x0, x1, x2, x3;
                asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(x0), "=r"(x1), "=r"(x2), "=r"(x3)
                             : "r"(a + z) : "memory");
                f += __uint_as_float(x0 ^ x1 ^ x2 ^ x3);
                pad_chain<P>(f, lds_pad);
                z = __float_as_uint(f) == 0x7f800001u ? 4096u : 0u;
            }
        }
        t1 = clk();
    }
    stamp(out, t0, t1);
    if (__float_as_uint(f) == 0x12345678u) sink[threadIdx.x] = z;
}
#define PACE_U(TAG, NOLOAD, P, Q)                                                                             \
    extern "C" __global__ void __launch_bounds__(1024) mix_pace_##TAG##P##_##Q(                                \
        const char* gbase, unsigned* sink, long long* out, int lds_iters, int ldg_iters, int lds_pad,         \
        int ldg_pad, unsigned ldg, unsigned active) {                                                         \
        pace_body<true, NOLOAD, P, Q>(gbase, sink, out, lds_iters, ldg_iters, 0, 0, ldg, active);             \
    }
PACE_U(u, false, 0, 256)
PACE_U(u, false, 8, 256)
PACE_U(u, false, 32, 256)
PACE_U(u, false, 8, 1024)
PACE_U(un, true, 0, 256)
PACE_U(un, true, 8, 256)
#define PACE_KERNEL(NAME, ...)                                                                                \
    extern "C" __global__ void __launch_bounds__(1024) NAME(const char* gbase, unsigned* sink, long long* out, \
                                                             int lds_iters, int ldg_iters, int lds_pad,        \
                                                             int ldg_pad, unsigned ldg, unsigned active) {     \
        pace_body<__VA_ARGS__>(gbase, sink, out, lds_iters, ldg_iters, lds_pad, ldg_pad, ldg, active);        \
    }
PACE_KERNEL(mix_pace, false)
PACE_KERNEL(mix_pace_plain, true)
PACE_KERNEL(mix_pace_noload, true, true)

// ---- s2r_probe (run_memory.py --only s2r): does an S2R wait behind shared loads in its sub-partition's
// queue? Warp 0 issues `n` 32-way-conflicting LDS (32 wavefronts each) back to back; 400 cycles after the
// CTA's start, warp 4 (warp 0's sub-partition) and warp 1 (another) each read %warpid (S2R) between two clock
// reads, the second after an add that uses it: out[CTA * 8 + w] = the cycles between (the S2R's latency as
// its warp sees it, issue wait included), for w = 1 and 4.
extern "C" __global__ void s2r_probe(long long* out, unsigned* sink, int n) {
    extern __shared__ __align__(16) unsigned s2r_smem[];
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    __syncthreads();
    const long long t0 = clk();
    if (w == 0) {
        const unsigned a = (unsigned)__cvta_generic_to_shared(s2r_smem) + lane * 128;
        unsigned acc = 0;
        for (int i = 0; i < n; ++i) {
            unsigned x;
            asm volatile("ld.shared.u32 %0, [%1];" : "=r"(x) : "r"(a) : "memory");
            acc ^= x;
        }
        sink[threadIdx.x] = acc;
    } else if (w == 1 || w == 4) {
        while (clk() - t0 < 400) { }
        const long long a = clk();
        unsigned t, u;
        asm volatile("mov.u32 %0, %%warpid;" : "=r"(t));  // (%warpid may change, so ptxas reads it here: an S2R)
        asm volatile("add.u32 %0, %1, 0;" : "=r"(u) : "r"(t));
        const long long b = clk();
        if (lane == 0) out[blockIdx.x * 8 + w] = b - a;
        if (u == 12345u) sink[0] = u;
    }
}

// ---- chase_sm: the latency of an n-line request, SM by SM -----------------------------------------------
// One warp per CTA, one CTA per SM (grid = SM count). The CTAs in [from, from + count * every) whose index
// minus `from` is a multiple of `every` chase: lanes < `lanes` take `steps` dependent loads (A is zeros), lane l
// of CTA b at step s loading float b x cta + l x pitch + s x step (in floats): rows (pitch 2,048: rows 8 KiB
// apart, step 32: the next line of the row, the l1rows rows_chase pattern) or lines (pitch 32: the lanes'
// lines consecutive, step 1,024: the next 4 KiB), every load on a line no load of the launch touched before.
// out[3 x CTA ..] = smid, the chase's cycles, whether it chased. Run cold (L2 flushed) or warm (the same
// launch just before: L2 hits, L1 empty at the launch). Does a request of more lines take longer on every
// SM (contention), on some SMs only (the SM's place), from L2 as from DRAM (the SM's side)?
extern "C" __global__ void chase_sm(const float* __restrict__ A, long long* out, int steps, int lanes, int from,
                                    int every, int count, long long cta, long long pitch, long long step) {
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    const int b = blockIdx.x, lane = threadIdx.x & 31;
    const bool on = b >= from && (b - from) % every == 0 && (b - from) / every < count;
    const float* p = A + b * cta + lane * pitch;
    int off = 0;
    __syncwarp();
    const long long t0 = clock64();
    if (on && lane < lanes)
#pragma unroll 1
        for (int s = 0; s < steps; ++s) off = (int)p[s * step + off];
    __syncwarp();
    const long long t1 = clock64();
    if (lane == 0) {
        out[3 * b] = smid;
        out[3 * b + 1] = t1 - t0;
        out[3 * b + 2] = on ? 1 : 0;
    }
    if (off == 12345) out[0] = off;
}

// ---- hit_behind_miss: does an L1 hit wait for an earlier miss of the same warp? -----------------------------
// One warp per CTA, one CTA per SM. The lanes first load their hit line(s) and wait for them (L1 now holds
// them: `hit_lines` 32 consecutive lines, one a lane, or 1 line all lanes read). Then, after a clock read,
// one load that misses to DRAM (`miss_lines` 32 rows 8 KiB apart, one a lane, or 1 line; 0: none), a clock
// read whose value (and `zero`, 0 at run time) the hit addresses take, so that ptxas keeps them after the
// miss, then `hits` loads of the hit line(s), then the hits' values are used (clock), then the miss's
// (clock). out[4 x CTA ..] = smid, cycles to the hits' use, cycles to the miss's use. If hits return in
// their own time, the first is about an L1 hit whatever the miss; if a warp's loads return in order, it is
// the miss's latency. Caution: ptxas gives the loads six write scoreboards and the 4th hit shares the
// miss's, so the sum waits for the miss through that scoreboard whatever the hardware does (it measured
// 1,167-1,342 cycles behind a 32-row miss); hit_behind_miss_q has no hit on the miss's scoreboard.
// `_nc`: the loads as .nc (LDG.E.CONSTANT); `_cg`: as .cg (L2 only; the hits are L2 hits).
#define HIT_BEHIND_MISS(NAME, Q)                                                                               \
extern "C" __global__ void hit_behind_miss##NAME(const float* __restrict__ M, const float* H, long long* out,  \
                                           int miss_lines, int hits, int hit_lines, long long zero) {          \
    unsigned smid;                                                                                             \
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));                                                          \
    const int b = blockIdx.x, lane = threadIdx.x & 31;                                                         \
    const float* h = H + (long long)b * 1024 + (hit_lines == 32 ? lane * 32 : 0);                              \
    const float* m = M + (long long)b * 32 * 2048 + (miss_lines == 32 ? lane * 2048 : 0);                      \
    float w, a = 0.f, x, u;                                                                                    \
    asm volatile("ld.global." Q ".f32 %0, [%1];" : "=f"(w) : "l"(h) : "memory");                               \
    asm volatile("add.f32 %0, %1, 0f00000000;" : "=f"(u) : "f"(w));                                            \
    __syncwarp();                                                                                              \
    const long long t0 = clk();                                                                                \
    if (miss_lines > 0) asm volatile("ld.global." Q ".f32 %0, [%1];" : "=f"(a) : "l"(m) : "memory");           \
    const long long tm = clk();                                                                                \
    const float* hz = h + (tm & zero);                                                                         \
_Pragma("unroll")                                                                                                \
    for (int k = 0; k < 16; ++k)                                                                               \
        if (k < hits) {                                                                                        \
            asm volatile("ld.global." Q ".f32 %0, [%1];" : "=f"(x) : "l"(hz + k * 0) : "memory");              \
            asm volatile("add.f32 %0, %1, %2;" : "=f"(w) : "f"(x), "f"(w));                                    \
        }                                                                                                      \
    asm volatile("add.f32 %0, %1, %2;" : "=f"(u) : "f"(w), "f"(u));                                            \
    const long long t1 = clk();                                                                                \
    asm volatile("add.f32 %0, %1, %2;" : "=f"(u) : "f"(a), "f"(u));                                            \
    const long long t2 = clk();                                                                                \
    if (lane == 0) {                                                                                           \
        out[4 * b] = smid;                                                                                     \
        out[4 * b + 1] = t1 - t0;                                                                              \
        out[4 * b + 2] = t2 - t0;                                                                              \
    }                                                                                                          \
    if (u == 12345.f) out[4 * b + 3] = 1;                                                                      \
}
HIT_BEHIND_MISS(, "ca")      // L1-cached (LDG.E.STRONG.SM)
HIT_BEHIND_MISS(_nc, "nc")   // the non-coherent path const __restrict__ code takes (LDG.E.CONSTANT)
HIT_BEHIND_MISS(_cg, "cg")   // L2 only: the "hits" are L2 hits

// hit_behind_miss_w / _q: `p`'s word, loaded (.ca: into L1) and waited for
DEVI float loaded(const float* p) {
    float w, u;
    asm volatile("ld.global.ca.f32 %0, [%1];" : "=f"(w) : "l"(p) : "memory");
    asm volatile("add.f32 %0, %1, 0f00000000;" : "=f"(u) : "f"(w));
    return u;
}

// hit_behind_miss_w / _q: up to 16 loads (.ca) of `p`, each added into `w` (the sum's use waits for all of them)
DEVI float sum_loads(const float* p, int n, float w) {
#pragma unroll
    for (int k = 0; k < 16; ++k)
        if (k < n) {
            float x;
            asm volatile("ld.global.ca.f32 %0, [%1];" : "=f"(x) : "l"(p) : "memory");
            asm volatile("add.f32 %0, %1, %2;" : "=f"(w) : "f"(x), "f"(w));
        }
    return w;
}

// hit_behind_miss_w / _q: the hit warp's part: `delay` cycles after `t0`, `hits` loads of `h` summed into `u`;
// the cycles from `t0` to the sum's use
DEVI long long hits_after(const float* h, int hits, long long t0, int delay, float& u) {
    while (clk() - t0 < delay) {
    }
    const float w = sum_loads(h, hits, u);
    asm volatile("add.f32 %0, %1, %2;" : "=f"(u) : "f"(w), "f"(u));
    return clk() - t0;
}

// hit_behind_miss_w: the same across warps. One CTA of 256 threads per SM; after the hit lines are in L1 and a
// barrier, warp 0 issues the miss (`miss_lines` 32 rows 8 KiB apart, or 1 line) and uses it, and warp
// `hit_warp` (same sub-partition as warp 0 if it is 4, another if 1), 64 cycles later, issues `hits` loads of
// its hit line(s) and uses them. out[4 x CTA ..] = smid, the hit warp's cycles to its use, the miss warp's.
extern "C" __global__ void hit_behind_miss_w(const float* __restrict__ M, const float* H, long long* out,
                                             int miss_lines, int hits, int hit_lines, int hit_warp) {
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    const int b = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const float* h = H + (long long)b * 1024 + (hit_lines == 32 ? lane * 32 : 0);
    const float* m = M + (long long)b * 32 * 2048 + (miss_lines == 32 ? lane * 2048 : 0);
    float u = loaded(h), x;
    __syncthreads();
    const long long t0 = clk();
    if (warp == 0) {
        asm volatile("ld.global.ca.f32 %0, [%1];" : "=f"(x) : "l"(m) : "memory");
        asm volatile("add.f32 %0, %1, %2;" : "=f"(u) : "f"(x), "f"(u));
        const long long t2 = clk();
        if (lane == 0) out[4 * b + 2] = t2 - t0;
    } else if (warp == hit_warp) {
        const long long t1 = hits_after(h, hits, t0, 64, u);
        if (lane == 0) {
            out[4 * b] = smid;
            out[4 * b + 1] = t1;
        }
    }
    if (u == 12345.f) out[4 * b + 3] = 1;
}

// hit_behind_miss_q: whose loads wait when a warp has many behind its miss? One CTA of 256 threads per SM;
// after the hit lines (32 consecutive lines, one a lane) are in L1 and a barrier, warp 0 issues a 32-row miss
// and then `hits0` loads of the hit lines (past ~8 they pass the tag stage only after the miss), and warp
// `hit_warp` (4: warp 0's sub-partition, 1: another), `delay` cycles after the barrier, issues `hits` loads
// of its own copy of the lines. out[4 x CTA ..] = smid, the hit warp's cycles to its hits' use (from the
// barrier), warp 0's to its hits' use. `zero`: 0 at run time.
extern "C" __global__ void hit_behind_miss_q(const float* __restrict__ M, const float* H, long long* out, int hits0,
                                             int hits, int hit_warp, int delay, long long zero) {
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    const int b = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const float* h = H + (long long)b * 2048 + (warp == 0 ? 0 : 1024) + lane * 32;
    const float* m = M + (long long)b * 32 * 2048 + lane * 2048;
    float u = loaded(h), w = u, a = 0.f;
    __syncthreads();
    const long long t0 = clk();
    if (warp == 0) {
        asm volatile("ld.global.ca.f32 %0, [%1];" : "=f"(a) : "l"(m) : "memory");
        const long long tm = clk();  // (the hits' address takes it, and `zero`: ptxas keeps them after the miss)
        w = sum_loads(h + (tm & zero), hits0, w);
        asm volatile("add.f32 %0, %1, %2;" : "=f"(u) : "f"(w), "f"(u));
        const long long t2 = clk();
        if (lane == 0) out[4 * b + 2] = t2 - t0;
    } else if (warp == hit_warp) {
        const long long t1 = hits_after(h, hits, t0, delay, u);
        if (lane == 0) {
            out[4 * b] = smid;
            out[4 * b + 1] = t1;
        }
    }
    if (u + a == 12345.f) out[4 * b + 3] = 1;
}
