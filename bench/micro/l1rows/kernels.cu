// gpusim microbenchmark (issue 12): how fast do few warps per SM issue global loads whose 32 lanes
// each read their own 128-byte line (32 lines per request), the pattern of a GEMV with one thread per
// row (traces/external gemv_rowthread: 4 warps per SM, predicted 22-25% fast)? One CTA of 32 x n
// threads per SM (n = warps per SM, the spec's size); every thread walks a row of A, `cols` floats,
// rows `ld` floats apart, and multiplies by x as the GEMV does, so the loop's SASS is the GEMV's.
//   rows_walk      ld = 4096: each row's sectors miss L1 on their first float (1 request in 8 misses)
//   rows_hit       the row's first line again and again (j & 31): every request hits L1 after the first 32
//   rows_hit_skew  rows_hit with ld = 4097: the lanes' words sit in different banks (no data-bank conflict)
// Measured with gpusim's own harness (bench/micro/measure_specs.sh): CUDA events and Nsight Compute.

__global__ void rows_walk(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y,
                          int cols, int ld)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int j = 0; j < cols; ++j) acc += A[(long)row * ld + j] * x[j];
    y[row] = acc;
}

__global__ void rows_hit(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y,
                         int cols, int ld)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int j = 0; j < cols; ++j) acc += A[(long)row * ld + (j & 31)] * x[j];
    y[row] = acc;
}

// The latency of one request's L1 misses from DRAM, by how many lines it touches: one warp per SM
// (n = lanes taking part, the spec's size); `steps` dependent loads, each lane's next address taken
// from the word it loaded (A is zeros), every load on a line no load touched before.
//   rows_chase   the lanes' lines 8 KiB apart (rows of 2,048 floats; step s reads line s of each row)
//   lines_chase  the lanes' lines consecutive (one 4 KiB block per step, 128 KiB apart per warp)
__global__ void rows_chase(const float* __restrict__ A, float* __restrict__ y, int steps, int lanes)
{
    int lane = threadIdx.x & 31;
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int off = 0;
    if (lane < lanes)
        for (int s = 0; s < steps; ++s) off = (int)A[(long)row * 2048 + s * 32 + off];
    y[row] = (float)off;
}

__global__ void lines_chase(const float* __restrict__ A, float* __restrict__ y, int steps, int lanes)
{
    int lane = threadIdx.x & 31;
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int off = 0;
    if (lane < lanes)
        for (int s = 0; s < steps; ++s)
            off = (int)A[((long)s * gridDim.x * blockDim.x + row) * 32 + off];
    y[row] = (float)off;
}
