// 32x32 tiled SGEMM, C = A*B (N x N, row-major), one thread per C element.
template <int BS>
__global__ void k(const float* __restrict__ A, const float* __restrict__ B,
                  float* __restrict__ C, int N) {
    __shared__ float As[BS][BS];
    __shared__ float Bs[BS][BS];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * BS + ty, col = blockIdx.x * BS + tx;
    float acc = 0.0f;
    for (int t = 0; t < N; t += BS) {
        As[ty][tx] = (row < N && t + tx < N) ? A[row * N + t + tx] : 0.0f;
        Bs[ty][tx] = (col < N && t + ty < N) ? B[(t + ty) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int i = 0; i < BS; ++i) acc += As[ty][i] * Bs[i][tx];
        __syncthreads();
    }
    if (row < N && col < N) C[row * N + col] = acc;
}
template __global__ void k<32>(const float*, const float*, float*, int);
