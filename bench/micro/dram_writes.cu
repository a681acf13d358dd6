// gpusim H100 microbenchmarks: when does L2 write dirty data back to DRAM (issue 12, DRAM write bytes).
// Built with  nvcc -arch=sm_90 -O3 -cubin -o build/dram_writes.cubin dram_writes.cu  and driven by
// run_dram_writes.py beside this file, which profiles each launch once with Nsight Compute
// (dram__bytes_write.sum, dram__bytes_read.sum). Every kernel runs on 8 x SMs CTAs of 256 threads (all
// resident at once), each thread walking its part of the buffers grid-stride with 16-byte accesses, so
// the grid moves through each phase together. Reads are ld.global.cg (L2, not L1).
//
//   wr_rd      order 0: write W, then read R (another buffer) once; order 1: read R, then write W
//              (a tiled GEMM's order: outputs after the inputs). W = 0 is a read-only kernel.
//   wr_hot     `passes` times: read all of H (a hot input, re-read every pass, each pass starting at a
//              different offset so other SMs read each line), then write the next 1/passes of W
//              (a naive GEMM's order: outputs written while the inputs stay hot).
//   wr_hot_a   wr_hot with a stream A beside the hot input (each pass reads its chunk of A `ar` times);
//   wr_wave_a  the same traffic with one wave of CTAs per pass (run_dram_writes.py --set hota).
//   wr_twice   writes W twice (same values the second time too): a rewrite of a dirty line.

extern "C" __global__ void wr_rd(float4* w, long long nw, const float4* __restrict__ r, long long nr,
                                 float* sink, int order, float v) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    float acc = 0.f;
#pragma unroll 1
    for (int ph = 0; ph < 2; ++ph) {
        if ((ph == 0) == (order == 0)) {
#pragma unroll 4
            for (long long i = t; i < nw; i += stride) w[i] = make_float4(v, v, v, v);
        } else {
#pragma unroll 4
            for (long long i = t; i < nr; i += stride) {
                float4 x = __ldcg(r + i);
                acc += (x.x + x.y) + (x.z + x.w);
            }
        }
    }
    if (acc == 1.2345f) sink[0] = acc;
}

extern "C" __global__ void wr_hot(float4* w, long long nw, const float4* __restrict__ h, long long nh,
                                  float* sink, int passes, float v) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const long long chunk = (nw + passes - 1) / passes;
    float acc = 0.f;
#pragma unroll 1
    for (int p = 0; p < passes; ++p) {
        const long long shift = (long long)p * (stride / 3 + 8);  // another CTA reads each line next pass
#pragma unroll 4
        for (long long i = t; i < nh; i += stride) {
            float4 x = __ldcg(h + (i + shift) % nh);
            acc += (x.x + x.y) + (x.z + x.w);
        }
        const long long lo = p * chunk, hi = min(nw, lo + chunk);
#pragma unroll 4
        for (long long i = lo + t; i < hi; i += stride) w[i] = make_float4(v, v, v, v);
    }
    if (acc == 1.2345f) sink[0] = acc;
}

// wr_hot_a: wr_hot with a stream besides the hot input: pass p also reads its chunk of A (A / passes,
// new each pass), `ar` times (each time from another offset, so other CTAs read each line: after the
// first, L2 hits), before writing its chunk of W (a naive GEMM's rows of A beside its re-read B).
// wr_wave_a: the same traffic with one wave of CTAs per pass instead of persistent CTAs: CTA b runs pass
// b / cpp alone (cpp CTAs per pass, grid-stride over the pass's chunks), ends, and the next wave starts.
__device__ __forceinline__ float hot_a_pass(float4* w, long long nw, const float4* __restrict__ h, long long nh,
                                            const float4* __restrict__ a, long long na, int passes, int ar,
                                            float v, int p, long long t, long long stride) {
    float acc = 0.f;
    const long long shift = (long long)p * (stride / 3 + 8);
#pragma unroll 4
    for (long long i = t; i < nh; i += stride) {
        float4 x = __ldcg(h + (i + shift) % nh);
        acc += (x.x + x.y) + (x.z + x.w);
    }
    const long long achunk = (na + passes - 1) / passes, alo = p * achunk, alen = min(na, alo + achunk) - alo;
#pragma unroll 1
    for (int r = 0; r < ar && alen > 0; ++r) {
        const long long s = (long long)r * (stride / 3 + 8);
#pragma unroll 4
        for (long long i = t; i < alen; i += stride) {
            float4 x = __ldcg(a + alo + (i + s) % alen);
            acc += (x.x + x.y) + (x.z + x.w);
        }
    }
    const long long chunk = (nw + passes - 1) / passes, lo = p * chunk, hi = min(nw, lo + chunk);
#pragma unroll 4
    for (long long i = lo + t; i < hi; i += stride) w[i] = make_float4(v, v, v, v);
    return acc;
}

extern "C" __global__ void wr_hot_a(float4* w, long long nw, const float4* __restrict__ h, long long nh,
                                    const float4* __restrict__ a, long long na, float* sink, int passes, int ar,
                                    float v) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    float acc = 0.f;
#pragma unroll 1
    for (int p = 0; p < passes; ++p) acc += hot_a_pass(w, nw, h, nh, a, na, passes, ar, v, p, t, stride);
    if (acc == 1.2345f) sink[0] = acc;
}

extern "C" __global__ void wr_wave_a(float4* w, long long nw, const float4* __restrict__ h, long long nh,
                                     const float4* __restrict__ a, long long na, float* sink, int passes, int ar,
                                     float v, int cpp) {
    const int p = blockIdx.x / cpp;
    const long long stride = (long long)cpp * blockDim.x;
    const long long t = (blockIdx.x % cpp) * (long long)blockDim.x + threadIdx.x;
    float acc = hot_a_pass(w, nw, h, nh, a, na, passes, ar, v, p, t, stride);
    if (acc == 1.2345f) sink[0] = acc;
}

extern "C" __global__ void wr_twice(float4* w, long long nw, float v) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
#pragma unroll 1
    for (int rep = 0; rep < 2; ++rep)
#pragma unroll 4
        for (long long i = t; i < nw; i += stride) w[i] = make_float4(v, v, v, v);
}

// ---- set "partial" (run_dram_writes.py --set partial): stores of partial sectors, and copies near
// the L2's capacity.
//   st_tpose   transpose_naive's stores alone: a CTA of 32 x 8 threads covers 32 lines of 128 B (line
//              = 32 * blockIdx.x + lane, one line per lane: 32 sectors per warp store); iteration j
//              writes float ty + 8j of each line, so each sector is written 4 bytes at a time by the
//              CTA's 8 warps, the line's 4 sectors one after another (j = 0..3).
//   st_sector  the same lines, each sector written whole by one thread (two 16-byte stores): warp ty
//              writes sector ty % 4 of lines 32 * (2 * blockIdx.x + ty / 4) + lane.
//   copy_il    out[i] = in[i] over n float4, grid-stride (reads and writes interleaved, as copy_float4).
extern "C" __global__ void st_tpose(float* out, long long lines, float v) {
    const long long line = 32LL * blockIdx.x + threadIdx.x;
    if (line >= lines) return;
#pragma unroll
    for (int j = 0; j < 32; j += 8) out[line * 32 + threadIdx.y + j] = v;
}

extern "C" __global__ void st_sector(float4* out, long long lines, float v) {
    const long long line = 32LL * (2LL * blockIdx.x + threadIdx.y / 4) + threadIdx.x;
    if (line >= lines) return;
    float4* p = out + line * 8 + (threadIdx.y % 4) * 2;
    p[0] = make_float4(v, v, v, v);
    p[1] = make_float4(v, v, v, v);
}

extern "C" __global__ void copy_il(const float4* __restrict__ in, float4* out, long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
#pragma unroll 4
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) out[i] = in[i];
}

// ---- set "transpose" (run_dram_writes.py --set transpose): which part of transpose_naive costs the
// extra DRAM traffic (one-pass: +22-25% reads and writes at 16-256 MiB, where its stores alone,
// st_tpose above, cost +4%). All on m x m floats, block (32, 8), one 32 x 32 tile per CTA.
//   tp_naive   transpose_naive itself (traces/kernels/suite12.cu): coalesced loads, stores 4 B into
//              32 sectors per warp instruction.
//   tp_sector  the same loads; the tile's 32 lines x 4 sectors then written whole, one sector per
//              thread of warps 0-3 (two 16-byte stores), in the same line-scattered order.
//   tp_colread loads down columns (4 B from 32 lines per warp instruction), coalesced row stores.
//   st_delay   st_tpose with warp ty spinning (ty + 1) x `spin` cycles after each store: the same
//              partial-sector stores with the pieces of a sector spread out in time, no loads.
extern "C" __global__ void tp_naive(const float* in, float* out, int m) {
    const int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
#pragma unroll
    for (int j = 0; j < 32; j += 8) out[(long long)x * m + y + j] = in[(long long)(y + j) * m + x];
}

extern "C" __global__ void tp_sector(const float* in, float* out, int m) {
    const int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < 32; j += 8) s += in[(long long)(y + j) * m + x];
    if (threadIdx.y < 4) {
        float4* p = (float4*)(out + (long long)x * m + blockIdx.y * 32 + 8 * threadIdx.y);
        p[0] = make_float4(s, s, s, s);
        p[1] = make_float4(s, s, s, s);
    }
}

extern "C" __global__ void tp_colread(const float* in, float* out, int m) {
    const int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
#pragma unroll
    for (int j = 0; j < 32; j += 8) out[(long long)(y + j) * m + x] = in[(long long)x * m + y + j];
}

extern "C" __global__ void st_delay(float* out, long long lines, float v, int spin) {
    const long long line = 32LL * blockIdx.x + threadIdx.x;
    if (line >= lines) return;
#pragma unroll
    for (int j = 0; j < 32; j += 8) {
        out[line * 32 + threadIdx.y + j] = v;
        const long long t0 = clock64();
        while (clock64() - t0 < (long long)(threadIdx.y + 1) * spin) { }
    }
}

// ---- set "copy" (run_dram_writes.py --set copy): how the write-back of streamed output grows as the
// data touched after it approach the L2's capacity, in the order a one-element-per-thread kernel
// (copy_float4) makes, and whether the load path matters. copy_il above is not that order: its
// `unroll 4` makes each thread load four elements a grid stride apart before it stores them, so at
// S <= 16.5 MiB the whole grid reads its input before it writes (read, then write).
//   copy_1pt        out[i] = in[i], one float4 per thread, no loop: CTAs of 256 threads stream through
//                   the buffers in launch order, each writing right after it reads (read-only loads).
//   copy_1pt_plain  the same with plain loads (no __restrict__: LDG.E.128, not .CONSTANT).
//   copy_gs1        copy_il with `unroll 1`: 8 x SMs CTAs, each thread load, store, load, store, ...
//   tp_naive_nc     tp_naive with __restrict__ pointers (read-only loads of the input).
extern "C" __global__ void copy_1pt(const float4* __restrict__ in, float4* out, long long n) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i];
}

extern "C" __global__ void copy_1pt_plain(const float4* in, float4* out, long long n) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i];
}

extern "C" __global__ void copy_gs1(const float4* __restrict__ in, float4* out, long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
#pragma unroll 1
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) out[i] = in[i];
}

extern "C" __global__ void tp_naive_nc(const float* __restrict__ in, float* __restrict__ out, int m) {
    const int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
#pragma unroll
    for (int j = 0; j < 32; j += 8) out[(long long)x * m + y + j] = in[(long long)(y + j) * m + x];
}

// ---- set "tpose2" (run_dram_writes.py --set tpose2): what makes transpose_naive's partial-sector stores
// cost a DRAM read and write for ~22% of its output sectors when it loads (tp_naive: +22% reads, +25%
// writes at 16-256 MiB; its stores alone, st_tpose: +4% at 256 MiB, ~0 at 16-64). Variants of tp_naive:
//   tp_sync   the CTA's four loads first (registers), __syncthreads(), then its four stores
//   tp_ldcg   loads with __ldcg (L2 only: no L1 allocation)
//   tp_hot    loads from the input's first 32 rows only (L2-resident: no DRAM reads of the input)
//   tp_stcs   stores with __stcs (streaming, evict-first hint)
extern "C" __global__ void tp_sync(const float* in, float* out, int m) {
    const int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    float v[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) v[j] = in[(long long)(y + 8 * j) * m + x];
    __syncthreads();
#pragma unroll
    for (int j = 0; j < 4; ++j) out[(long long)x * m + y + 8 * j] = v[j];
}

extern "C" __global__ void tp_ldcg(const float* in, float* out, int m) {
    const int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
#pragma unroll
    for (int j = 0; j < 32; j += 8) out[(long long)x * m + y + j] = __ldcg(in + (long long)(y + j) * m + x);
}

extern "C" __global__ void tp_hot(const float* in, float* out, int m) {
    const int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
#pragma unroll
    for (int j = 0; j < 32; j += 8) out[(long long)x * m + y + j] = in[(long long)(threadIdx.y + j) * m + x];
}

extern "C" __global__ void tp_stcs(const float* in, float* out, int m) {
    const int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
#pragma unroll
    for (int j = 0; j < 32; j += 8) __stcs(out + (long long)x * m + y + j, in[(long long)(y + j) * m + x]);
}

// ---- set "stload" (run_dram_writes.py --set stload): st_tpose's partial-sector stores with k loads
// between consecutive stores of a warp, the loads hitting L2 (a 256 KiB hot buffer, __ldcg: L2 only).
// Each store waits for the loads before it (its value depends on them). Does the extra DRAM read and
// write per partial sector (set tpose2) grow with the loads in between?
extern "C" __global__ void st_tpose_ld(float* out, long long lines, const float* __restrict__ hot, int k,
                                       float scale, float* sink) {
    const long long line = 32LL * blockIdx.x + threadIdx.x;
    if (line >= lines) return;
    float acc = 0.f;
#pragma unroll 1
    for (int j = 0; j < 32; j += 8) {
        out[line * 32 + threadIdx.y + j] = 2.0f + acc * scale;
#pragma unroll 1
        for (int i = 0; i < k; ++i) acc += __ldcg(hot + ((threadIdx.y * 32 + i * 256 + threadIdx.x + j * 4096) & 65535));
    }
    if (acc == 1.2345f) sink[0] = acc;
}

// ---- set "pitch" (run_dram_writes.py --set pitch): tp_naive with the output's rows `pitch` floats apart
// (pitch = m: tp_naive itself; m + 8, m + 32, m + 1024: the 32 lines a warp store touches no longer a
// power of two apart). If the extra DRAM read and write per partial sector comes from those lines
// meeting in few L2 sets (evicted before they are whole), it should go with the power-of-two stride.
extern "C" __global__ void tp_pitch(const float* in, float* out, int m, int pitch) {
    const int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
#pragma unroll
    for (int j = 0; j < 32; j += 8) out[(long long)x * pitch + y + j] = in[(long long)(y + j) * m + x];
}

// tp_stonly (set "pitch" too): tp_naive's stores alone, no loads: the lines of a warp store m floats
// apart (st_tpose's are consecutive).
extern "C" __global__ void tp_stonly(const float* in, float* out, int m) {
    const int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
#pragma unroll
    for (int j = 0; j < 32; j += 8) out[(long long)x * m + y + j] = 2.0f;
}

// ---- set "pstride" (run_dram_writes.py --set pstride): which feature of tp_stonly's partial-sector stores
// makes ~13% (16 MiB) to ~27% (64 MiB) of their sectors cost a DRAM read and write, where st_tpose's cost
// 2-4%. st_stride generalises both: the output is rows x pitch floats; CTA (bx, by) of 32 x 8 threads
// writes the 128-byte segments at column 32 * by of rows 32 * bx + lane, each sector 4 bytes at a time by
// the CTA's 8 warps (iteration j writes float ty + j of the segment), as transpose_naive does.
// pitch = 32 floats: consecutive lines (st_tpose); pitch = m: tp_stonly. swap = 1 launches the CTAs
// along a row instead (consecutive CTAs write neighbouring segments of the same 32 rows). spin: cycles
// each warp waits after each store, times (ty + 1). Dynamic shared memory (unused) limits CTAs per SM.
// The four pieces a thread of a 32 x 8 CTA writes into its line at `base` (floats ty, ty + 8, ty + 16,
// ty + 24: one per sector), waiting (ty + 1) x `spin` cycles after each where `spin` > 0.
__device__ __forceinline__ void store_pieces(float* out, long long base, int spin, float v) {
#pragma unroll
    for (int j = 0; j < 32; j += 8) {
        out[base + j] = v;
        if (spin) {
            const long long t0 = clock64();
            while (clock64() - t0 < (long long)(threadIdx.y + 1) * spin) { }
        }
    }
}

extern "C" __global__ void st_stride(float* out, int pitch, int swap, int spin, float v) {
    const int bx = swap ? blockIdx.y : blockIdx.x, by = swap ? blockIdx.x : blockIdx.y;
    store_pieces(out, (long long)(bx * 32 + threadIdx.x) * pitch + by * 32 + threadIdx.y, spin, v);
}

// ---- set "pgroup" (run_dram_writes.py --set pgroup): st_stride with the 32 lines of a warp store in groups
// of g consecutive lines, the groups `gap` lines apart: lane l writes line (l / g) * gap + l % g of its
// CTA's block (g = 32: st_tpose; g = 1, gap = k: st_stride k). CTA b's block starts at 32 * gap / g * b
// lines... (blocks of consecutive CTAs interleave so that every line is written once): line =
// ((l / g) * (nctas) + b) * g + l % g for nctas CTAs: the groups of CTA b sit b groups into each row of
// groups. Which granularity of neighbouring lines written together keeps partial sectors cheap?
extern "C" __global__ void st_group(float* out, int g, int spin, float v) {
    const long long line = ((long long)(threadIdx.x / g) * gridDim.x + blockIdx.x) * g + threadIdx.x % g;
    store_pieces(out, line * 32 + threadIdx.y, spin, v);
}

// ---- set "popen" (run_dram_writes.py --set popen): does the extra DRAM read + write of partial sectors go
// with how many partly written lines are open at once? CTA (bx, by) of 32 x 8 threads owns R segments of 32
// lines; lane l's line of segment r is ((bx * R + r) * 32 + l) * k + by (k = 1: every CTA's 32 R lines are
// consecutive and the resident CTAs' lines one range; k > 1: the lines a CTA opens are k lines apart, as
// st_stride's). Each thread writes its R lines round robin, sector by sector (float ty + 8 j of each line for
// the first `nsec` sectors), so all 32 R lines of a CTA stay open from its first store to its last, and
// each sector gets its 8 pieces from the CTA's 8 warps.
extern "C" __global__ void st_open(float* out, int R, int k, int nsec, float v) {
    for (int j = 0; j < nsec; ++j)
        for (int r = 0; r < R; ++r) {
            const long long line = ((long long)(blockIdx.x * R + r) * 32 + threadIdx.x) * k + blockIdx.y;
            out[line * 32 + threadIdx.y + 8 * j] = v;
        }
}

// ---- set "dmix" (run_dram_writes.py --set dmix): what DRAM delivers when reads and writes share it, and
// whether the transpose's scattered 128-byte write segments cost DRAM more than a stream does.
//   mix_rw    grid-stride over `units`: unit u reads in[j * units + u] for j < a and writes
//             out[j * units + u] for j < b (float4s): a + b coalesced streams, a : b bytes read : written.
//             With b = 0 a read-only stream, with a = 0 a write-only one.
//   copy_tile one 32 x 32 tile of m x m floats per CTA of 32 x 8 threads, as transpose_smem moves it
//             (suite12.cu) but through registers, with the data not transposed: mode 0 reads and writes
//             the tile's rows in place (a copy); mode 1 writes them where transpose_smem writes its output
//             (tile (by, bx)): the same 128-byte segments, scattered over rows as a transpose's are;
//             mode 2 reads from there and writes in place.
//   hot_wr    read H `k` times (each pass at another offset, so other SMs read each line: L2 hits after
//             the first), then write W: a single-wave tiled GEMM's order (re-read inputs, then outputs).
//   copy_run  copy_tile's tiles (mode 0: in place) with the CTAs ordered so that g consecutive CTAs take
//             neighbouring tiles of one row block, the next g the row block below: the CTAs resident
//             together touch runs of g x 128 contiguous bytes of each row (g = m / 32: copy_tile's
//             order). dir 0 copies, 1 only reads (a sum kept live), 2 only writes.
//   hot_ep    hot_wr with the write phase in one of four store forms (a tiled GEMM's epilogue), W = rows x m
//             floats (rows of m): form 0 float4 grid-stride (hot_wr's), 1 float grid-stride (whole sectors per
//             instruction), 2 each warp writes 32 x 8 blocks, lane = row, 8 stores in a row one column each
//             (4 bytes in each of 32 lines per instruction, the warp's 8 stores complete each sector:
//             sgemm_regtile2d's and sgemm_maxas_64's STG.E epilogues), 3 each CTA writes 32 x 8 blocks,
//             warp = column, lane = row (a sector's 8 pieces from 8 warps: transpose_naive's stores).
extern "C" __global__ void mix_rw(const float4* __restrict__ in, float4* out, long long units, int a, int b,
                                  float* sink, float v) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    float acc = 0.f;
#pragma unroll 1
    for (long long u = blockIdx.x * (long long)blockDim.x + threadIdx.x; u < units; u += stride) {
        float s = v;
        for (int j = 0; j < a; ++j) {
            const float4 x = __ldcg(in + j * units + u);
            s += (x.x + x.y) + (x.z + x.w);
        }
        for (int j = 0; j < b; ++j) out[j * units + u] = make_float4(s, s, s, s);
        acc += s;
    }
    if (acc == 1.2345f) sink[0] = acc;
}

extern "C" __global__ void copy_tile(const float* __restrict__ in, float* out, int m, int mode) {
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long long x = blockIdx.x * 32 + tx, y = blockIdx.y * 32 + ty;   // the tile in place
    const long long tx_ = blockIdx.y * 32 + tx, ty_ = blockIdx.x * 32 + ty;  // where transpose_smem writes
    float r[4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
        r[j] = mode == 2 ? in[(ty_ + 8 * j) * m + tx_] : in[(y + 8 * j) * m + x];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        if (mode == 1) out[(ty_ + 8 * j) * m + tx_] = r[j];
        else out[(y + 8 * j) * m + x] = r[j];
    }
}

extern "C" __global__ void copy_run(const float* __restrict__ in, float* out, int m, int g, int dir, float* sink) {
    const int tiles = m / 32;
    const long long c = blockIdx.x;
    const long long bx = (c % g) + (long long)g * (c / ((long long)g * tiles)), by = (c / g) % tiles;
    const long long x = bx * 32 + threadIdx.x, y = by * 32 + threadIdx.y;
    float r[4], s = 0.f;
#pragma unroll
    for (int j = 0; j < 4; ++j) r[j] = dir == 2 ? 1.f : in[(y + 8 * j) * m + x];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        if (dir == 1)
            s += r[j];
        else
            out[(y + 8 * j) * m + x] = r[j];
    }
    if (s == 1.2345f) sink[0] = s;
}

// hot_wr's and hot_ep's reads: H (nh float4s) k times, each pass at another offset, so that other SMs read
// each line (L2 hits after the first).
__device__ __forceinline__ float hot_passes(const float4* __restrict__ h, long long nh, int k) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    float acc = 0.f;
#pragma unroll 1
    for (int p = 0; p < k; ++p) {
        const long long shift = (long long)p * (stride / 3 + 8);
#pragma unroll 4
        for (long long i = t; i < nh; i += stride) {
            const float4 x = __ldcg(h + (i + shift) % nh);
            acc += (x.x + x.y) + (x.z + x.w);
        }
    }
    return acc;
}

extern "C" __global__ void hot_ep(const float4* __restrict__ h, long long nh, int k, float* w, int m, int rows,
                                  int form, float* sink, float v) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const float acc = hot_passes(h, nh, k);
    const long long n = (long long)rows * m;
    const int lane = threadIdx.x & 31;
    const long long blocks = (long long)(rows / 32) * (m / 8);  // 32 x 8 blocks, 8 columns fastest
    if (form == 0) {
#pragma unroll 4
        for (long long i = t; i < n / 4; i += stride) reinterpret_cast<float4*>(w)[i] = make_float4(v, v, v, v);
    } else if (form == 1) {
#pragma unroll 4
        for (long long i = t; i < n; i += stride) w[i] = v;
    } else if (form == 2) {
        const long long warps = stride / 32;
#pragma unroll 1
        for (long long b = t / 32; b < blocks; b += warps) {
            float* o = w + ((b / (m / 8)) * 32 + lane) * m + (b % (m / 8)) * 8;
#pragma unroll
            for (int j = 0; j < 8; ++j) o[j] = v;
        }
    } else {
        const int wid = threadIdx.x / 32;
#pragma unroll 1
        for (long long b = blockIdx.x; b < blocks; b += gridDim.x)
            w[((b / (m / 8)) * 32 + lane) * m + (b % (m / 8)) * 8 + wid] = v;
    }
    if (acc == 1.2345f) sink[0] = acc;
}

extern "C" __global__ void hot_wr(const float4* __restrict__ h, long long nh, int k, float4* w, long long nw,
                                  float* sink, float v) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const float acc = hot_passes(h, nh, k);
#pragma unroll 4
    for (long long i = t; i < nw; i += stride) w[i] = make_float4(v, v, v, v);
    if (acc == 1.2345f) sink[0] = acc;
}

// ---- set "pkeep" (run_dram_writes.py --set pkeep): how many partly written sectors does L2 hold, and
// does a sector whose pieces arrive later stay dear? The buffer is `sectors` 32-byte sectors; a grid-stride
// loop gives each thread sectors i = t, t + stride, ...; `spread` 1 maps i to sector i (a warp store covers 32
// consecutive sectors, 8 lines), 4 to sector (i % (sectors / 4)) * 4 + i / (sectors / 4) (one sector in each
// of 32 consecutive lines, sector 0 of every line first). Pass 1 writes floats 0 .. w0 - 1 of every sector of
// the thread (one 4-byte store each, back to back); pass 2, after pass 1 has gone over the whole buffer
// (in step: every CTA resident), writes floats w0 .. w0 + w1 - 1. w0 + w1 < 8 leaves every sector partly
// written to the kernel's end; w0 = 8 (or w0 + w1 = 8) completes them.
__device__ __forceinline__ long long keep_sector(long long i, long long sectors, int spread) {
    return spread == 1 ? i : (i % (sectors / spread)) * spread + i / (sectors / spread);
}

// One sweep of st_keep's: floats lo .. hi - 1 of each of the thread's sectors, one 4-byte store each.
__device__ __forceinline__ void keep_pass(float* out, long long sectors, int spread, int lo, int hi, float v) {
    const long long stride = (long long)gridDim.x * blockDim.x;
#pragma unroll 1
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < sectors; i += stride) {
        float* s = out + keep_sector(i, sectors, spread) * 8;
#pragma unroll 1
        for (int j = lo; j < hi; ++j) s[j] = v;
    }
}

extern "C" __global__ void st_keep(float* out, long long sectors, int spread, int w0, int w1, float v) {
    keep_pass(out, sectors, spread, 0, w0, v);
    if (w1 == 0) return;
    __syncthreads();
    keep_pass(out, sectors, spread, w0, w0 + w1, v);
}

// st_keep after a first phase that fills L2 (set "pkeep", its second part): what crowds partly written lines
// out? Phase 1 either writes `pre` float4s of whole lines into `w` (pre_kind 1: dirty data), or reads `pre`
// float4s of `r` (pre_kind 2: clean data, ld.global.cg), grid-stride; then, after a CTA barrier, st_keep's
// pass 1 on the `sectors` sectors of `out` (w0 floats of each, `spread` as st_keep's).
extern "C" __global__ void st_after(float4* w, const float4* __restrict__ r, long long pre, int pre_kind, float* out,
                                    long long sectors, int spread, int w0, float* sink, float v) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    float acc = 0.f;
    if (pre_kind == 1) {
#pragma unroll 4
        for (long long i = t; i < pre; i += stride) w[i] = make_float4(v, v, v, v);
    } else if (pre_kind == 2) {
#pragma unroll 4
        for (long long i = t; i < pre; i += stride) {
            const float4 x = __ldcg(r + i);
            acc += (x.x + x.y) + (x.z + x.w);
        }
    }
    __syncthreads();
    keep_pass(out, sectors, spread, 0, w0, v);
    if (acc == 1.2345f) sink[0] = acc;
}

// st_keep with the lines of a warp store `k` lines apart (set "pkeep", its fourth part): keep_sector's sector
// s, in line s / 4 of L lines, moves to line (line % (L / k)) * k + line / (L / k) (a transpose of the line
// index), so lanes on neighbouring lines land k lines apart. Does the table hold neighbouring lines better
// than scattered ones at the same number open at once (the H100's st_stride: k = 1, 2 cheap)?
extern "C" __global__ void st_keepk(float* out, long long sectors, int spread, int k, int w0, float v) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const long long per = sectors / 4 / k;  // lines / k
#pragma unroll 1
    for (long long i = t; i < sectors; i += stride) {
        const long long s = keep_sector(i, sectors, spread), line = s / 4;
        float* p = out + (((line % per) * k + line / per) * 4 + s % 4) * 8;
#pragma unroll 1
        for (int j = 0; j < w0; ++j) p[j] = v;
    }
}
