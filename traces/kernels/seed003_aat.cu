// Reconstructed from seed 003 (/work/shared/seeds/003_bf5c3fa249e61eab.txt): CUDA C Best Practices
// Guide, "Shared Memory in Matrix Multiplication (C = AA^T)" (Chinese translation, "CUDA实践指南(十八)").
//
//   simpleMultiply            strided global reads of the second operand (no shared memory)
//   coalescedMultiply         a row of A read coalesced into transposedTile[TILE_DIM][TILE_DIM]
//                             (32-way bank conflicts on the transposed shared store)
//   coalescedMultiply_padded  the same with transposedTile[TILE_DIM][TILE_DIM + 1] (the guide's
//                             one-line fix, given as a separate kernel here)
//
// A (a) is M x TILE_DIM floats, row-major (a[row*TILE_DIM + i]); C (c) is M x M, row-major.
// Launch: block (TILE_DIM, TILE_DIM), grid (M/TILE_DIM, M/TILE_DIM); M a multiple of TILE_DIM.
// w = TILE_DIM = 32 as in the guide's measurements (compute capability 2.0 and higher).
// The code is the guide's, verbatim apart from layout; the guide's `float *a` is kept non-const.

#define TILE_DIM 32

__global__ void simpleMultiply(float *a, float *c, int M)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    for (int i = 0; i < TILE_DIM; i++) {
        sum += a[row*TILE_DIM + i] * a[col*TILE_DIM + i];
    }
    c[row*M + col] = sum;
}

__global__ void coalescedMultiply(float *a, float *c, int M)
{
    __shared__ float aTile[TILE_DIM][TILE_DIM],
                     transposedTile[TILE_DIM][TILE_DIM];
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    aTile[threadIdx.y][threadIdx.x] = a[row*TILE_DIM + threadIdx.x];
    transposedTile[threadIdx.x][threadIdx.y] =
        a[(blockIdx.x*blockDim.x + threadIdx.y)*TILE_DIM + threadIdx.x];
    __syncthreads();
    for (int i = 0; i < TILE_DIM; i++) {
        sum += aTile[threadIdx.y][i] * transposedTile[i][threadIdx.x];
    }
    c[row*M + col] = sum;
}

__global__ void coalescedMultiply_padded(float *a, float *c, int M)
{
    __shared__ float aTile[TILE_DIM][TILE_DIM],
                     transposedTile[TILE_DIM][TILE_DIM+1];
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    aTile[threadIdx.y][threadIdx.x] = a[row*TILE_DIM + threadIdx.x];
    transposedTile[threadIdx.x][threadIdx.y] =
        a[(blockIdx.x*blockDim.x + threadIdx.y)*TILE_DIM + threadIdx.x];
    __syncthreads();
    for (int i = 0; i < TILE_DIM; i++) {
        sum += aTile[threadIdx.y][i] * transposedTile[i][threadIdx.x];
    }
    c[row*M + col] = sum;
}
