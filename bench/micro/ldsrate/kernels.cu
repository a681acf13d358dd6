// gpusim microbenchmark (issue 12): how fast one sub-partition passes conflict-free shared loads of
// 32, 64 and 128 bits. gpusim's MIO takes 0.5 wavefronts a cycle from one sub-partition
// (sm.mio_sub_partition_rate, measured with 32-way conflicting 32-bit stores), 1.0 a cycle for the SM;
// a conflict-free LDS.128 is 4 wavefronts. The register-tiled DGEMMs, whose loads are LDS.64 / LDS.128,
// wait on shared loads in gpusim (short_scoreboard 0.16-0.32 of warp-cycles) far more than on the H100
// (0.04-0.15). One CTA per SM of n warps (n = 1: one sub-partition busy; 4: one warp on each; 16: four
// on each); each warp runs `iters` iterations of 16 independent volatile loads (lane t reads word /
// pair / quad t, so no bank conflict) and then adds them, so the loads of an iteration are in flight
// together. Specs beside; measured with bench/micro/measure_specs.sh, simulated by compare.py.
__global__ void lds32(float* __restrict__ y, int iters)
{
    __shared__ float s[16 * 32];
    for (int i = threadIdx.x; i < 16 * 32; i += blockDim.x) s[i] = 0.0f;
    __syncthreads();
    volatile float* v = s;
    int lane = threadIdx.x & 31;
    float acc = 0.0f;
    for (int i = 0; i < iters; ++i) {
        float r[16];
        #pragma unroll
        for (int k = 0; k < 16; ++k) r[k] = v[k * 32 + lane];
        #pragma unroll
        for (int k = 0; k < 16; ++k) acc += r[k];
    }
    y[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

__global__ void lds64(float* __restrict__ y, int iters)
{
    __shared__ float2 s[16 * 32];
    for (int i = threadIdx.x; i < 16 * 32; i += blockDim.x) s[i] = make_float2(0.0f, 0.0f);
    __syncthreads();
    unsigned base = (unsigned)__cvta_generic_to_shared(s);  // (ld.volatile: every load stays in the loop)
    int lane = threadIdx.x & 31;
    float acc = 0.0f;
    for (int i = 0; i < iters; ++i) {
        float r[16];
        #pragma unroll
        for (int k = 0; k < 16; ++k) {
            float a, b;
            asm volatile("ld.volatile.shared.v2.f32 {%0, %1}, [%2];" : "=f"(a), "=f"(b) : "r"(base + 8u * (k * 32 + lane)));
            r[k] = a + b;
        }
        #pragma unroll
        for (int k = 0; k < 16; ++k) acc += r[k];
    }
    y[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

__global__ void lds128(float* __restrict__ y, int iters)
{
    __shared__ float4 s[16 * 32];
    for (int i = threadIdx.x; i < 16 * 32; i += blockDim.x) s[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    __syncthreads();
    unsigned base = (unsigned)__cvta_generic_to_shared(s);
    int lane = threadIdx.x & 31;
    float acc = 0.0f;
    for (int i = 0; i < iters; ++i) {
        float r[16];
        #pragma unroll
        for (int k = 0; k < 16; ++k) {
            float a, b, c, d;
            asm volatile("ld.volatile.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(a), "=f"(b), "=f"(c), "=f"(d)
                         : "r"(base + 16u * (k * 32 + lane)));
            r[k] = (a + b) + (c + d);
        }
        #pragma unroll
        for (int k = 0; k < 16; ++k) acc += r[k];
    }
    y[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
