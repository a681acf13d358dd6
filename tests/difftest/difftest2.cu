// Differential tests against the hardware, second family (tests/difftest/gen2.py): memory spaces and
// widths, shared-memory tiles and barriers, index arithmetic (LEA forms, the uniform datapath), warp
// shuffles, votes, REDUX and MATCH, shared and global atomics, divergent loops, CALL/RET, warp-synchronous
// operations over lanes on different paths (WARPSYNC.COLLECTIVE).
//
// Every kernel: k(A, B, C, O, n, p0, p1, p2), 128 threads per block, n / 128 blocks. Lane i reads
// A[i], B[i], C[i] (uint64 edge values and random words, gen2.inputs) and writes 8 words at O + 8 i;
// words it does not write keep O's initial pattern (gen2.o_init), as does the tail O[8 n ...] where
// the global atomics land. Every output is deterministic: atomics that meet on one address all apply
// one commutative operation (or the same increment function), and an atomic's return value is kept
// only where the address is the lane's own.

#pragma nv_diag_suppress 177, 550  // LANE declares values some kernels do not use

typedef unsigned long long u64;
#define FULL 0xffffffffu
#define U2(lo, hi) ((u64)(unsigned)(lo) | ((u64)(unsigned)(hi) << 32))
#define SIG(name) extern "C" __global__ void __launch_bounds__(128) name( \
    const u64 *__restrict__ A, const u64 *__restrict__ B, const u64 *C, u64 *O, int n, int p0, int p1, int p2)
#define LANE                                                                                        \
    int i = blockIdx.x * blockDim.x + threadIdx.x, t = threadIdx.x;                                 \
    u64 a64 = A[i], b64 = B[i], c64 = C[i];                                                          \
    unsigned a = (unsigned)a64, b = (unsigned)b64, c = (unsigned)c64;                                \
    int sa = (int)a, sb = (int)b;                                                                    \
    long long la = (long long)a64, lb = (long long)b64;                                              \
    u64 *o = O + (size_t)i * 8;

// shared memory of every width (8..128 bit), a generic pointer that may point into shared or global
// memory (LD), barriers, __syncwarp (WARPSYNC.ALL) and a CTA-scope acquire-release fence (MEMBAR + NOP)
SIG(d2_smem)
{
    __shared__ unsigned s32[128];
    __shared__ u64 s64[128];
    __shared__ uint4 s128[128];
    __shared__ unsigned char s8[128];
    __shared__ short s16[128];
    LANE
    s32[t] = a;
    s64[t] = b64;
    s128[t] = make_uint4(a, b, c, (unsigned)(c64 >> 32));
    s8[t] = (unsigned char)b;
    s16[t] = (short)c;
    __syncthreads();
    int u = (t * p1 + p0) & 127;
    o[0] = s32[u];
    o[1] = s64[(t + p0) & 127];
    uint4 v = s128[127 - t];
    o[2] = U2(v.x, v.y);
    o[3] = U2(v.z, v.w);
    o[4] = (u64)(long long)(signed char)s8[u] ^ ((u64)(long long)s16[(u + 1) & 127] << 8);
    unsigned acc = 0;
#pragma unroll 1
    for (int k = 0; k < p0; ++k) acc += s32[(t + k * p1) & 127] * (k + 1);
    __syncwarp();
    asm volatile("fence.acq_rel.cta;" ::: "memory");
    __syncthreads();
    s32[(t * 5) & 127] = acc ^ a;
    const unsigned *g = (c & 1) ? &s32[(t + 1) & 127] : (const unsigned *)&C[(i * 3) & (n - 1)];
    __syncthreads();
    o[5] = U2(acc, s32[t]);
    o[6] = U2(*g, s16[t ^ 64]);
    o[7] = s64[t ^ 31];
}

// a tiled integer product through shared memory: the k loop's bound is a parameter (uniform counter,
// ISETP against a uniform register), 64-bit tiles, and a transpose through a padded 32 x 33 tile
SIG(d2_tile)
{
    __shared__ unsigned ta[4][33];
    __shared__ u64 tb[32][32];
    __shared__ unsigned tr[32][33];
    LANE
    int r = t >> 5, col = t & 31, row = blockIdx.x * 4 + r;
    int kn = p0 + 40;
    u64 acc = 0;
    for (int k0 = 0; k0 < kn; k0 += 32) {
        int k = k0 + col;
        ta[r][col] = k < kn ? (unsigned)A[(row * p1 + k) & (n - 1)] : 0u;
        for (int kk = r; kk < 32; kk += 4)
            tb[kk][col] = k0 + kk < kn ? C[((k0 + kk) * p1 + col) & (n - 1)] : 0ull;
        __syncthreads();
#pragma unroll 4
        for (int kk = 0; kk < 32; ++kk) acc += ta[r][kk] * tb[kk][col];
        __syncthreads();
    }
    o[0] = acc;
    for (int y = r; y < 32; y += 4) tr[y][col] = (unsigned)B[(blockIdx.x * 32 + y + p2) & (n - 1)] + col;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 7; ++k) o[k + 1] = U2(tr[col][r + 4 * k], tr[(col + k) & 31][r]);
}

// global memory of every width, through the read-only path (__ldg, const __restrict__) and not
SIG(d2_gmem)
{
    LANE
    uint4 v = __ldg(&((const uint4 *)A)[i >> 1]);
    ulonglong2 w = ((const ulonglong2 *)C)[(i * p1) & (n / 2 - 1)];
    u64 x = __ldg(&B[(i * p1 + p2) & (n - 1)]);
    unsigned y = ((const unsigned *)C)[2 * i + 1];
    unsigned yc = __ldg((const unsigned *)B + ((2 * i + p0) & (2 * n - 1)));
    unsigned short h = ((const unsigned short *)C)[4 * i + 3];
    short hs = __ldg((const short *)A + ((4 * i + p1) & (4 * n - 1)));
    signed char sc = ((const signed char *)C)[8 * i + 7];
    unsigned char uc = __ldg((const unsigned char *)B + ((8 * i + p0) & (8 * n - 1)));
    unsigned *o32 = (unsigned *)o;
    o32[0] = v.x + y;
    o32[3] = v.y ^ yc;
    ((uint4 *)o)[1] = make_uint4(v.z, v.w, (unsigned)w.x, (unsigned)(w.y >> 7));
    o[4] = x * 3 + w.y;
    ((short *)o)[20] = (short)(hs ^ sc);
    ((unsigned char *)o)[43] = uc;
    ((unsigned short *)o)[23] = h;
    o[6] = w.x ^ a64;
    ((double2 *)o)[3].y = __ldg((const double *)A + (i ^ 3));
}

// index arithmetic: loops whose trip counts and strides are parameters (uniform datapath: UIADD3,
// UIADD3.X, UISETP, 64-bit uniform strides through USHF.R.S32.HI / USHF.L.U64.HI), a block base from
// blockIdx (S2UR, USHF, ULEA), int indices into 64-bit pointers (LEA / LEA.HI.X / SX32), signed
// division by powers of two (LEA.HI), 64-bit shifts, compound conditions (ISETP ... .OR)
SIG(d2_index)
{
    LANE
    int row = i & 31, col = (i >> 5) & 31;
    u64 acc = 0;
#pragma unroll 4
    for (int k = 0; k < p0; ++k) acc += A[row * p1 + k] * B[k * p1 + col];
    o[0] = acc;
    double dacc = 0.0;
#pragma unroll 1
    for (int k = p0; k > 0; k -= 2) dacc += (double)C[k * 8 + col];
    const u64 *p = C + (int)(blockIdx.x * 8);
    u64 acc2 = 0;
#pragma unroll 2
    for (int k = 0; k < p0; ++k) {
        acc2 += p[t];
        p += p1;
    }
    o[1] = __double_as_longlong(dacc) ^ acc2;
    const u64 *blk = C + (long long)(blockIdx.x * p1) - p2;
    o[2] = blk[(t * 3) & 63];
    const unsigned *w = (const unsigned *)(B + ((long long)(int)blockIdx.x << 5)) + ((long long)p2 << 2);
    o[3] = w[t + 32];
    int idx = i * p0 + p2;
    o[4] = (idx >= 0 && idx < n) ? C[idx] : 0;
    unsigned ui = (unsigned)i * (unsigned)p1;
    o[5] = U2(ui <= (unsigned)n * 16u, ((unsigned)i >= (unsigned)p0 || a == 0u) | (i - 1000 >= p2 || b == 0u) << 1 |
                                                  (sa != p0 || sb != p1) << 2);
    o[6] = U2((sa / 16) ^ (sb % 8), sa / p0);
    o[7] = (a64 << (b & 63)) ^ ((u64)la >> (c & 63));
}

// a pointer walked by a parameter stride, unrolled: the 64-bit stride is built on the uniform
// datapath (USHF.R.S32.HI, USHF.L.U64.HI, ULEA, ULEA.HI.X)
SIG(d2_stride)
{
    LANE
    const u64 *q = A + (int)(blockIdx.x * 8 + p1 * 4);
    u64 acc = 0;
#pragma unroll 4
    for (int k = p0; k > 1; k -= 2) {
        acc ^= q[t] * k;
        q += p1 - 3;
    }
    o[0] = acc;
}

// a register tile (8 x 8 accumulators) fed from shared memory by 128-bit loads, in k steps of 8 with
// a remainder loop (the structure of the suite's dgemm_unroll_db): the register pressure moves the
// loop counters to the uniform datapath (UISETP.GE, UISETP.GT)
SIG(d2_regtile)
{
    __shared__ unsigned sh[2048];
    LANE
    for (int j = t; j < 2048; j += 128) sh[j] = (unsigned)C[j] ^ j;
    unsigned acc[8][8];
#pragma unroll
    for (int y = 0; y < 8; ++y)
#pragma unroll
        for (int x = 0; x < 8; ++x) acc[y][x] = y * x;
    int lane = t & 15, slot = (t >> 4) + 1024, k;
    for (k = p0 - 8; k >= 0; k -= 8) {
        __syncthreads();
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            uint4 ua = *(const uint4 *)&sh[j * 128 + lane * 4];
            uint4 ub = *(const uint4 *)&sh[j * 128 + 512 + lane * 4];
            unsigned av[8] = {ua.x, ua.y, ua.z, ua.w, ub.x, ub.y, ub.z, ub.w};
            uint4 uc = *(const uint4 *)&sh[j * 128 + (slot & 1023) * 4 % 1024];
            unsigned bv[4] = {uc.x, uc.y, uc.z, uc.w};
#pragma unroll
            for (int y = 0; y < 8; ++y)
#pragma unroll
                for (int x = 0; x < 8; ++x) acc[y][x] += av[y] * bv[x & 3];
        }
        lane ^= 0x80;
        slot ^= 0x20;
    }
    if (k != -8) {
        __syncthreads();
        k += 8;
        do {
#pragma unroll
            for (int y = 0; y < 8; ++y)
#pragma unroll
                for (int x = 0; x < 8; ++x) acc[y][x] ^= sh[(lane + y) & 2047] + sh[(slot + x) & 2047];
            lane += 128;
            slot += 128;
        } while ((--k) > 0);
    }
#pragma unroll
    for (int y = 0; y < 8; ++y) {
        unsigned s = 0;
#pragma unroll
        for (int x = 0; x < 8; ++x) s = s * 33 + acc[y][x];
        o[y] = s;
    }
}

// warp shuffles of all four kinds with lane / delta / mask operands from the inputs (out of range
// included), segment widths, 64-bit values, a partial mask in a divergent branch (reading only
// lanes of the mask: another lane's value is undefined), a butterfly sum
SIG(d2_shfl)
{
    LANE
    int lane = t & 31;
    o[0] = U2(__shfl_sync(FULL, a, sb), __shfl_sync(FULL, c, (int)(b >> 8), 16));
    o[1] = U2(__shfl_up_sync(FULL, a, b & 63), __shfl_up_sync(FULL, c, p0 & 31, 8));
    o[2] = U2(__shfl_down_sync(FULL, a, c & 63), __shfl_down_sync(FULL, b, 3, 4));
    o[3] = U2(__shfl_xor_sync(FULL, a, b & 31), __shfl_xor_sync(FULL, c, 5, 16));
    o[4] = __shfl_sync(FULL, b64, lane ^ 7);
    o[5] = __double_as_longlong(__shfl_down_sync(FULL, __longlong_as_double((long long)c64), 1));
    float f = __shfl_xor_sync(FULL, __uint_as_float(a), 16);
    unsigned m = __ballot_sync(FULL, c & 1), r6 = 0;
    if (c & 1) r6 = __shfl_sync(m, a, __ffs(m) - 1) + __shfl_sync(m, b, 31 - __clz(m));  // sources in m
    o[6] = U2(__float_as_uint(f), r6);
    unsigned s = a;
    for (int d = 16; d; d >>= 1) s += __shfl_xor_sync(FULL, s, d);
    o[7] = U2(s, __shfl_up_sync(FULL, b, 1));
}

// votes, ballots, MATCH and the REDUX reductions, over all lanes and over the lanes of a branch
SIG(d2_vote)
{
    LANE
    unsigned bal = __ballot_sync(FULL, sa < sb);
    int all = __all_sync(FULL, a != 0), any = __any_sync(FULL, a == b), all2 = __all_sync(FULL, (c & 3) != 0);
    o[0] = U2(bal, all | any << 1 | all2 << 2 | __any_sync(FULL, c == 0) << 3);
    o[1] = U2(__activemask(), __popc(__ballot_sync(FULL, (a ^ b) & 1)));
    o[2] = U2(__reduce_add_sync(FULL, a), __reduce_add_sync(FULL, sb));
    o[3] = U2(__reduce_min_sync(FULL, a), __reduce_min_sync(FULL, sa));
    o[4] = U2(__reduce_max_sync(FULL, b), __reduce_max_sync(FULL, sb));
    o[5] = U2(__reduce_and_sync(FULL, a | b), __reduce_or_sync(FULL, c) ^ __reduce_xor_sync(FULL, a));
    int pred, pred2;
    unsigned ma = __match_any_sync(FULL, c & 7), m64 = __match_any_sync(FULL, b64 & 0x300000003ull);
    unsigned mall = __match_all_sync(FULL, (u64)(i >> 6), &pred), mall2 = __match_all_sync(FULL, c & 1, &pred2);
    o[6] = U2(ma ^ (m64 << 1), mall ^ pred ^ (mall2 << 1) ^ (pred2 << 2));
    unsigned m = __ballot_sync(FULL, b & 1), rs = 0, q = 0;
    if (b & 1) {
        rs = __reduce_add_sync(m, c) ^ __reduce_max_sync(m, sa);
        q = __ballot_sync(m, a > c) ^ (__any_sync(m, a == 0) << 31) ^ __all_sync(m, c != 0);
    }
    o[7] = U2(rs, q);
}

// shared-memory atomics, 32 and 64 bit: each address gets one operation kind (final values do not
// depend on the order); return values only from the lane's own slots
SIG(d2_atoms)
{
    __shared__ unsigned sadd[32], umax[8], umin[8], sand[8], sor[8], sxor[8], sinc[8], sdec[8], own[128];
    __shared__ int smax[16], smin[16];
    __shared__ u64 ladd[8], lmax[8], own64[128];
    __shared__ long long lmin[8];
    __shared__ float fadd[8];
    LANE
    if (t < 32) sadd[t] = c;
    if (t < 16) { smax[t] = (int)(c64 >> 32); smin[t] = (int)c; }
    if (t < 8) {
        umax[t] = c; umin[t] = b; sand[t] = ~0u; sor[t] = 0; sxor[t] = c; sinc[t] = t; sdec[t] = t;
        ladd[t] = c64; lmax[t] = 0; lmin[t] = (long long)c64; fadd[t] = 0.0f;
    }
    own[t] = b;
    own64[t] = c64;
    __syncthreads();
    atomicAdd(&sadd[t & 31], a);
    atomicMax(&smax[(t * 7) & 15], sa);
    atomicMin(&smin[t & 15], sb);
    atomicMax(&umax[t & 7], a);
    atomicMin(&umin[(t >> 3) & 7], a);
    atomicAnd(&sand[t & 7], a | (1u << (t & 31)));
    atomicOr(&sor[t & 7], a & b);
    atomicXor(&sxor[t & 7], c);
    atomicInc(&sinc[t & 7], 19u);
    atomicDec(&sdec[t & 7], 23u);
    atomicAdd(&ladd[t & 7], b64);
    atomicMax(&lmax[t & 7], a64);
    atomicMin(&lmin[t & 7], lb);
    atomicAdd(&fadd[t & 7], (float)(a & 0xff));
    unsigned r0 = atomicExch(&own[t], a);
    u64 r2 = atomicAdd(&own64[t], a64);
    u64 r3 = atomicCAS(&own64[t], (t & 1) ? r2 + a64 : r2, b64);
    unsigned r4 = atomicCAS(&own[t], (t & 2) ? a : b, c);
    __syncthreads();
    o[0] = U2(sadd[t & 31], smax[t & 15]);
    o[1] = U2(smin[t & 15], umax[t & 7]);
    o[2] = U2(umin[t & 7], sand[t & 7]);
    o[3] = U2(sor[t & 7], sxor[t & 7]);
    o[4] = U2(sinc[t & 7], sdec[t & 7]) ^ ((u64)__float_as_uint(fadd[t & 7]) << 16);
    o[5] = ladd[t & 7] ^ lmax[(t + 1) & 7] ^ (u64)lmin[(t + 2) & 7];
    o[6] = U2(r0, r4) ^ (u64)own[t];
    o[7] = r2 ^ r3 ^ own64[t];
}

// global atomics (RED without, ATOMG with a return value), 32 and 64 bit, integer and float (the
// float sums are of small integers, exact in any order); the shared targets are in O's tail
SIG(d2_atomg)
{
    LANE
    unsigned *g32 = (unsigned *)(O + (size_t)n * 8);
    u64 *g64 = O + (size_t)n * 8 + 64;
    atomicAdd(&g32[i & 31], a);
    atomicMax((int *)&g32[32 + (i & 15)], sa);
    atomicMin(&g32[48 + (i & 15)], b);
    atomicAnd(&g32[64 + (i & 7)], a | b);
    atomicOr(&g32[72 + (i & 7)], a & c);
    atomicXor(&g32[80 + (i & 7)], c);
    atomicInc(&g32[88 + (i & 7)], 1000u);
    atomicDec(&g32[96 + (i & 7)], 77u);
    atomicAdd(&g32[104], 1u);
    atomicAdd((float *)&g32[112 + (i & 7)], (float)(b & 0xff));
    atomicAdd(&g64[i & 15], b64);
    atomicMax(&g64[16 + (i & 7)], a64);
    atomicMin((long long *)&g64[24 + (i & 7)], la);
    atomicAnd(&g64[32 + (i & 7)], a64 | c64);
    atomicOr(&g64[40 + (i & 7)], a64 & b64);
    atomicXor(&g64[48 + (i & 7)], c64);
    atomicAdd((double *)&g64[56 + (i & 7)], (double)(c & 0xfff));
    unsigned *o32 = (unsigned *)o;
    unsigned cur = o32[3];
    unsigned r0 = atomicExch(&o32[2], a);
    unsigned r1 = atomicCAS(&o32[3], (i & 1) ? cur : cur + 1, b);
    u64 r2 = atomicAdd(&o[2], b64);
    u64 cur3 = o[3];
    u64 r3 = atomicCAS(&o[3], (i & 2) ? cur3 : ~cur3, c64);
    u64 r4 = atomicExch(&o[4], c64);
    unsigned r5 = atomicMax(&o32[10], a) ^ atomicMin((int *)&o32[11], sb);
    float r6 = atomicAdd((float *)&o32[12], __uint_as_float(a));
    o[0] = U2(r0, r1);
    o[5] = r2 ^ r3 ^ U2(r5, __float_as_uint(r6));
    o[6] = r4;
    o[7] = atomicOr(&o[7], a64) ^ atomicAdd(&o[7], 0ull);
}

__device__ __noinline__ u64 mix(u64 x, unsigned s)
{
    return (x ^ (x >> (s & 31))) * 0x9E3779B97F4A7C15ull + s;
}

// control flow: data-dependent loops (BSSY/BSYNC), break/continue, 64-bit division and remainder
// (CALL to the compiler's internal routines), a __noinline__ function (CALL/RET), a switch, a loop
// whose lanes leave at different trips followed by __syncwarp and __syncthreads
SIG(d2_ctrl)
{
    __shared__ unsigned sh[128];
    LANE
    u64 x = (a64 >> 52) | 1;
    int steps = 0;
#pragma unroll 1
    while (x != 1 && steps < 48) {
        x = (x & 1) ? 3 * x + 1 : x >> 1;
        ++steps;
    }
    o[0] = U2(steps, (unsigned)x);
    u64 q = 0;
    for (int j = 0; j < (int)(a & 7) + p0 % 4; ++j) {
        if (((b >> j) & 3) == 3) continue;
        if ((c >> j) == 0) break;
        q += c64 / ((b64 >> j) | (u64)j) + (u64)(la % (long long)(lb | 1));
    }
    o[1] = q;
    o[2] = a64 / (b64 >> (c & 63));
    o[3] = (u64)(la % (lb >> (c & 31)));
    o[4] = mix(a64, b) ^ mix(c64, a);
    unsigned r;
    switch (a & 7) {
    case 0: r = b + c; break;
    case 1: r = b ^ c; break;
    case 2: r = b * c; break;
    case 3: r = __brev(b); break;
    case 4: r = __clz(c); break;
    case 5: r = b - c; break;
    default: r = a;
    }
    o[5] = r;
    int k = 0;
    unsigned acc = 0;
#pragma unroll 1
    do {
        acc = acc * 31 + (b >> (k & 31));
        k += 1 + (int)(c & 3);
    } while (k < (int)(a & 31));
    __syncwarp();
    o[6] = U2(acc, __ballot_sync(FULL, k & 1));
    sh[t] = acc;
    __syncthreads();
    o[7] = U2(sh[(t + 1) & 127], sh[(t * 3) & 127]);
}

// local memory (arrays indexed at run time) of 32, 64 and 128 bit
SIG(d2_local)
{
    LANE
    unsigned loc[24];
    u64 loc64[8];
    uint4 loc128[4];
#pragma unroll 1
    for (int j = 0; j < 24; ++j) loc[j] = a * j + c;
#pragma unroll 1
    for (int j = 0; j < 8; ++j) loc64[j] = b64 << j;
#pragma unroll 1
    for (int j = 0; j < 4; ++j) loc128[j] = make_uint4(a + j, b - j, c ^ j, j);
    loc[b % 24] ^= c;
    loc64[c & 7] += a64;
    loc128[a & 3].y ^= b;
    o[0] = U2(loc[(a + 5) % 24], loc[(b >> 3) % 24]);
    o[1] = loc64[(b + 1) & 7];
    uint4 v = loc128[(c >> 2) & 3];
    o[2] = U2(v.x, v.y);
    o[3] = U2(v.z, v.w);
}

// constant memory indexed at run time
__constant__ unsigned ctab[64] = {
    0x00000000u, 0xffffffffu, 0x80000000u, 0x7fffffffu, 1u, 2u, 3u, 5u, 8u, 13u, 21u, 34u, 55u, 89u, 144u, 233u,
    0x3f800000u, 0xbf800000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x00000001u, 0x00800000u, 0x4b000000u,
    0x12345678u, 0x9abcdef0u, 0xdeadbeefu, 0xcafebabeu, 0x0badf00du, 0xfeedfaceu, 0x01020304u, 0xa5a5a5a5u,
    32u, 33u, 63u, 64u, 65u, 127u, 128u, 255u, 256u, 0xffffu, 0x10000u, 0xffffffu, 0x1000000u, 0x55555555u,
    0xaaaaaaaau, 0x0f0f0f0fu, 0xf0f0f0f0u, 0x00ff00ffu, 0xff00ff00u, 0x33333333u, 0xccccccccu, 31u, 30u, 29u,
    0x40490fdbu, 0xc0490fdbu, 0x3eaaaaabu, 0x00000800u, 0x80000001u, 0x7ffffffeu, 0xfffffffeu, 0x00000002u};
__constant__ u64 ctab64[8] = {0ull, ~0ull, 1ull << 63, 0x123456789abcdef0ull, 7ull, 1ull << 32, 0xffffffffull, 42ull};

SIG(d2_const)
{
    LANE
    o[0] = U2(ctab[a & 63], ctab[(b >> 7) & 63]);
    o[1] = ctab64[c & 7] ^ ctab64[(a >> 3) & 7];
    o[2] = U2(ctab[(t + p0) & 63], ctab[p1 & 63] + ctab[(p2 + 64) & 63]);
}

// warp-synchronous operations over a partial mask held in a vector register (one word per warp from
// memory), inside the branch of the mask's lanes while the other lanes are on the other path:
// shuffles, votes, __syncwarp(m), REDUX and MATCH (nvcc checks at run time that the mask is the same
// in every lane: MATCH.ANY, REDUX.OR, WARPSYNC.EXCLUSIVE)
SIG(d2_partial)
{
    __shared__ unsigned sh[128];
    LANE
    int lane = t & 31;
    unsigned m = (unsigned)C[i & ~31] | 1u;
    sh[t] = a ^ 0x5a5a5a5au;
    u64 r0 = 0, r1 = 0, r2 = 0, r3 = 0;
    if ((m >> lane) & 1) {
        int hi = 31 - __clz(m), lo = __ffs(m) - 1;
        r0 = U2(__shfl_sync(m, a, hi), __shfl_sync(m, b, lo));
        r1 = U2(__ballot_sync(m, b & 1), __all_sync(m, c & 1) | __any_sync(m, a & 2) << 1);
        __syncwarp(m);
        r2 = U2(sh[(t & ~31) + hi], __reduce_add_sync(m, a));
        r3 = U2(__match_any_sync(m, b & 3), __reduce_or_sync(m, c));
    }
    o[0] = r0;
    o[1] = r1;
    o[2] = r2;
    o[3] = r3;
}

// warp-synchronous operations whose member lanes are on different paths at that moment: the
// WARPSYNC.COLLECTIVE slow path behind BRA.DIV. Since sm_70 a shfl.sync / vote.sync / bar.warp.sync
// waits until every non-exited lane of its member mask has executed one with the same qualifiers
// and mask, from whichever instruction [PTX ISA, shfl.sync, vote.sync, bar.warp.sync]: a lane reads
// the value its source lane gave to its own shuffle, on the other side of the branch
SIG(d2_converge)
{
    __shared__ unsigned sh[128];
    LANE
    int lane = t & 31;
    unsigned r;
    if (c & 2)  // a full-mask shuffle on each side
        r = __shfl_sync(FULL, a, (lane + 1) & 31) * 3u;
    else
        r = __shfl_sync(FULL, b, (lane + 1) & 31) + 7u;
    o[0] = r;
    unsigned m = __ballot_sync(FULL, c & 1);
    r = 0;
    if (c & 1) {  // a partial mask split again: lanes outside it are on a third path
        int src = 31 - __clz(m);
        if (b & 1)
            r = __shfl_sync(m, a, src);
        else
            r = __shfl_sync(m, c, src) ^ 0x55u;
    }
    o[1] = r;
    if (a & 4)  // ballots on both sides: each lane's own predicate
        r = __ballot_sync(FULL, b & 1);
    else
        r = __ballot_sync(FULL, c & 8) + 1;
    o[2] = r;
    sh[t] = a;
    if (b & 2) {  // __syncwarp on both sides orders the shared-memory stores before the loads
        __syncwarp();
        r = sh[t ^ 1];
    } else {
        __syncwarp();
        r = sh[t ^ 2] + 1;
    }
    o[3] = r;
}
