// A kernel that reads and never writes its output: the store is guarded by a value the input never
// holds, and nvcc guards it with a predicate (@!P1 STG), so every warp runs a store with no lane on (the
// timing model's store counts must allow that). Thread 0 of each CTA counts its CTA.
extern "C" __global__ void guarded_store(const float* __restrict__ a, float* b, int n, int* count)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && a[i] == 1234.5f) b[i] = 0.0f;
    if (threadIdx.x == 0) atomicAdd(count, 1);
}
