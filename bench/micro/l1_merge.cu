// gpusim H100 microbenchmark: when does a load get data from a line that another warp of the same SM
// has just missed on (issue 12: the L1's in-flight misses)? One CTA of 8 warps on one SM. Round r uses
// its own 128-byte line, 4 KiB from the last (never touched before in the launch). After a barrier,
// warp w waits w x `gap` cycles, then its 32 lanes load the line's 32 words (`ld.global.ca`: cached in
// L1). Each warp records the cycles from the barrier to its load's issue, and from the issue to the
// moment its data is used (an STS of the loaded word, then a clock read). If a load that finds the line
// still on its way waits for that fill, warp w sees about max(L1 hit latency, warp 0's latency - w x gap);
// if it were served as an L1 hit at once, every warp after the first would see the L1 hit latency.
// `own` = 1: each warp loads a line of its own instead (no sharing: the control).
extern "C" __global__ void l1_merge(const unsigned* buf, int rounds, int gap, int own, long long* out) {
    __shared__ unsigned s[256];
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const unsigned saddr = (unsigned)__cvta_generic_to_shared(s + threadIdx.x);
    for (int r = 0; r < rounds; ++r) {
        __syncthreads();
        long long t0, ti, te;
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(t0)::"memory");
        do {
            asm volatile("mov.u64 %0, %%clock64;" : "=l"(ti)::"memory");
        } while (ti - t0 < (long long)w * gap);
        const unsigned* p = buf + ((long long)(own ? r * 8 + w : r) * 1024 + lane);
        unsigned v;
        asm volatile("ld.global.ca.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
        asm volatile("st.shared.u32 [%0], %1;" ::"r"(saddr), "r"(v) : "memory");
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(te)::"memory");
        if (lane == 0) {
            out[(r * 8 + w) * 2] = ti - t0;
            out[(r * 8 + w) * 2 + 1] = te - ti;
        }
    }
}

// Evicts L2: writes n words.
extern "C" __global__ void l1_merge_flush(unsigned* scratch, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        scratch[i] = (unsigned)i;
}
