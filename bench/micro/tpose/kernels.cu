// gpusim microbenchmark (issue 12): where transpose_smem's time goes. gpusim puts the suite's unpadded
// shared-tile transpose (traces/kernels/suite12.cu transpose_smem<0>: 32-way conflicting column reads of
// the tile) 14% fast on the H100 at n = 1024 and 2048, where its padded twin is within 4%. These kernels
// are that transpose with one part at a time taken away, so that gpusim can be held against each:
//   tp<PAD, LOAD, STORE, WRAP>
//     PAD    0: the tile's column reads conflict 32 ways (32 wavefronts each); 1: padded, conflict-free
//     LOAD   1: the tile is filled from `in`, as the suite's kernel; 0: from v x (x + j), no global load
//     STORE  1: the tile's columns go to `out`; 0: they are summed and stored only if the sum is 1 (never:
//            the data are zeros), so the shared loads stay and no global store runs
//     WRAP   1: every global index is masked with `mask` (in and out 8 MiB: L2 hits after the first touch,
//            no DRAM); 0: the whole m x m matrices, as the suite's kernel (DRAM-bound at these sizes)
// The body is the suite's (int indices, 32 x 8 threads, four rows per thread); specs beside, measured
// with bench/micro/measure_specs.sh, simulated by bench/micro/compare_specs.py tpose.
template <int PAD, int LOAD, int STORE, int WRAP>
__global__ void tp(const float* __restrict__ in, float* __restrict__ out, int m, int mask, float v)
{
    __shared__ float tile[32][32 + PAD];
    int tx = threadIdx.x, ty = threadIdx.y;
    int x = blockIdx.x * 32 + tx, y = blockIdx.y * 32 + ty;
#pragma unroll
    for (int j = 0; j < 32; j += 8) {
        int i = (y + j) * m + x;
        if (WRAP) i &= mask;
        tile[ty + j][tx] = LOAD ? in[i] : v * (float)(x + j);
    }
    __syncthreads();
    int ox = blockIdx.y * 32 + tx, oy = blockIdx.x * 32 + ty;
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < 32; j += 8) {
        int o = (oy + j) * m + ox;
        if (WRAP) o &= mask;
        if (STORE) out[o] = tile[tx][ty + j];
        else acc += tile[tx][ty + j];
    }
    if (!STORE && acc == 1.0f) out[(oy * m + ox) & mask] = acc;
}

template __global__ void tp<0, 1, 1, 0>(const float*, float*, int, int, float);
template __global__ void tp<1, 1, 1, 0>(const float*, float*, int, int, float);
template __global__ void tp<0, 1, 1, 1>(const float*, float*, int, int, float);
template __global__ void tp<1, 1, 1, 1>(const float*, float*, int, int, float);
template __global__ void tp<0, 0, 1, 1>(const float*, float*, int, int, float);
template __global__ void tp<0, 1, 0, 1>(const float*, float*, int, int, float);
template __global__ void tp<0, 0, 0, 1>(const float*, float*, int, int, float);
