// Registers the seed-001 kernels with the CPU checker.
#include "cpusim.h"
#include "../seed001_matmatmul.cu"
using namespace cpusim;
#define SEED001(K) static Register reg_##K(#K "<32>", [](Args& a) { \
    K<32>((const float*)a[0].ptr(), (const float*)a[1].ptr(), (float*)a[2].ptr(), \
          (index_t)a[3].i, (index_t)a[4].i, (index_t)a[5].i); });
SEED001(simpleMatMatMul)
SEED001(naiveMatMatMul)
SEED001(simpleMatMatMul_corrected)
SEED001(naiveMatMatMul_corrected)
