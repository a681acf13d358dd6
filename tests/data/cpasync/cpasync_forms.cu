// Every form of cp.async that nvcc 13.0 makes for sm_90 (LDGSTS), each into its own part of shared
// memory, then shared memory copied to `out` (tests/test_emu_cpasync.py compares it with numpy).
// 128 threads; `in` holds 768 float4; `n` (the bound of the predicated forms) is 100.
__device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__global__ void cpasync_forms(const float4* __restrict__ in, float* __restrict__ out, int n)
{
    __shared__ float sa[128];
    __shared__ float2 sb[128];
    __shared__ float4 sc[128], sd[128], se[128], sf[128], sg[128];
    int t = threadIdx.x;
    const float* inf = (const float*)in;
    sf[t] = make_float4(-1.f, -1.f, -1.f, -1.f);  // what the predicated-off lanes leave
    __syncthreads();
    // 4 and 8 bytes (L1-allocating .ca)
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(smem(&sa[t])), "l"(inf + t));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" :: "r"(smem(&sb[t])), "l"(inf + 128 + 2 * t));
    // 16 bytes, L1-bypassing .cg and .ca
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(smem(&sc[t])), "l"(in + 128 + t));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" :: "r"(smem(&sd[t])), "l"(in + 256 + t));
    asm volatile("cp.async.commit_group;");
    // src-size 0, 4, 8, 12 (zero fill past it), and a predicated copy
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(smem(&se[t])), "l"(in + 384 + t), "r"((t & 3) * 4));
    asm volatile("{ .reg .pred q; setp.lt.s32 q, %2, %3; @q cp.async.cg.shared.global [%0], [%1], 16; }"
                 :: "r"(smem(&sf[t])), "l"(in + 512 + t), "r"(t), "r"(n));
    asm volatile("cp.async.commit_group;");
    asm volatile("cp.async.wait_group 1;");
    // ignore-src: zeros where t > n
    asm volatile("{ .reg .pred q; setp.gt.s32 q, %2, %3; cp.async.cg.shared.global [%0], [%1], 16, q; }"
                 :: "r"(smem(&sg[t])), "l"(in + 640 + t), "r"(t), "r"(n));
    asm volatile("cp.async.commit_group;");
    asm volatile("cp.async.wait_all;");
    __syncthreads();
    out[t] = sa[t];
    out[128 + 2 * t] = sb[t].x; out[129 + 2 * t] = sb[t].y;
    const float4* parts[5] = {sc, sd, se, sf, sg};
    #pragma unroll
    for (int p = 0; p < 5; ++p) {
        float4 v = parts[p][t];
        float* o = out + 384 + 512 * p + 4 * t;
        o[0] = v.x; o[1] = v.y; o[2] = v.z; o[3] = v.w;
    }
}
