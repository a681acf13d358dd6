// The SM's own cycle counter and the SM a thread runs on, as the CTA microbenchmarks read them
// (cta_turnaround.cu, cta_rate.cu).
#pragma once

__device__ __forceinline__ long long clk() {
    long long t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t));
    return t;
}

__device__ __forceinline__ unsigned smid() {
    unsigned s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}
