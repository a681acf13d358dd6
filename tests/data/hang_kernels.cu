// Kernels that hang on a GPU, for the emulator's watchdog tests (tests/test_watchdogs.py).
// endless_loop: every thread walks a ring of indices until it finds a negative entry; the data
// holds none, so the loop never exits.
__global__ void endless_loop(const int* __restrict__ ring, int* out) {
    int i = threadIdx.x & 63, hops = 0;
    while (ring[i] >= 0) { i = ring[i] & 63; ++hops; }
    out[threadIdx.x] = hops;
}

// partial_barrier: warp 0 waits at __syncthreads(); the other warps walk the ring like
// endless_loop and so never reach it.
__global__ void partial_barrier(const int* __restrict__ ring, int* out) {
    int i = threadIdx.x & 63, hops = 0;
    if (threadIdx.x < 32) {
        __syncthreads();
    } else {
        while (ring[i] >= 0) { i = ring[i] & 63; ++hops; }
    }
    out[threadIdx.x] = hops + i;
}
