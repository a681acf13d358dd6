// Issue 13: kernels with undefined behaviour that the emulator must report (tests/test_issue13.py).

// Reads a register no instruction wrote: `x` is used uninitialised (the PTX register has no definition).
extern "C" __global__ void k13_undef_reg(int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int x;
    asm volatile("add.s32 %0, %0, 1;" : "+r"(x));
    if (i < n) out[i] = x;
}

// Shared-memory index past the declared 32 floats when `shift` > 0.
extern "C" __global__ void k13_smem_overrun(const float *in, float *out, int shift)
{
    __shared__ float s[32];
    s[threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x + shift];
}

// An 8-byte (float2) load from `in + offset` floats: misaligned when `offset` is odd.
extern "C" __global__ void k13_misaligned(const float *in, float *out, int offset)
{
    const float2 *p = reinterpret_cast<const float2 *>(in + offset);
    float2 v = p[threadIdx.x];
    out[threadIdx.x] = v.x + v.y;
}
