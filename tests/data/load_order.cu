// One load that misses L1 and L2 (a line of its own per warp), then a load of a line the warp read and
// waited for before (an L1 hit; its address takes a clock read after the miss, so that ptxas keeps it
// after the miss), then a chain of dependent FFMAs on the hit's value, and only then the miss's value: if
// a warp's loads hand it their data in issue order (sm.global_loads_return_in_order), the chain starts when
// the miss is back; otherwise when the hit is.
extern "C" __global__ void load_order(const float* __restrict__ cold, const float* __restrict__ hot, float* out,
                                      long long zero)
{
    const int lane = threadIdx.x & 31, w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const float h = hot[lane];
    if (h != 0.0f) out[0] = h;  // (hot is zeros: never stored; the branch waits for the load)
    const float m = cold[w * 1024];
    const long long t = clock64();
    float x = hot[(lane + (t & zero)) & 31] + 1.0f;
#pragma unroll
    for (int k = 0; k < 256; ++k) x = x * 0.999f + 0.001f;
    out[blockIdx.x * blockDim.x + threadIdx.x] = x + m;
}
