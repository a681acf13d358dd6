// gpusim microbenchmark kernels for dirty_gap.py: does dirty data a kernel leaves in L2 cost the next kernel
// its write-back, and does an idle gap between the two drain it first?
// n4 float4s of v, grid-stride: leaves up to the L2's dirty room of the buffer dirty
extern "C" __global__ void dg_fill(float4* __restrict__ dst, long long n4, float v) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const float4 w = make_float4(v, v, v, v);
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) dst[i] = w;
}

// n4 float4s read and summed, grid-stride, four loads in flight per thread (run_micro.py's bw_read). Two
// names for one body: dg_read resets the L2 or stands in for the first kernel, dg_probe is the kernel timed
// (and the one Nsight profiles)
#define READ_KERNEL(name)                                                                                 \
    extern "C" __global__ void name(const float4* __restrict__ src, float* __restrict__ sink, long long n4) { \
        const long long stride = (long long)gridDim.x * blockDim.x;                                        \
        long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;                                    \
        float acc = 0.f;                                                                                   \
        for (; i + 3 * stride < n4; i += 4 * stride) {                                                     \
            const float4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride]; \
            acc += (a.x + b.y) + (c.z + d.w);                                                              \
        }                                                                                                  \
        for (; i < n4; i += stride) acc += src[i].x;                                                       \
        if (acc == 1234.5f) sink[0] = acc; /* never with the zeros read here; keeps the loads */           \
    }
READ_KERNEL(dg_read)
READ_KERNEL(dg_probe)

// one thread waits `cycles` SM cycles: a gap in which DRAM has nothing else to do
extern "C" __global__ void dg_spin(long long cycles, int* p) {
    const long long start = clock64();
    while (clock64() - start < cycles) { }
    if (p != 0 && threadIdx.x == 1023) p[0] = 1;
}
