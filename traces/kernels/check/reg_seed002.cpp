// Registers the seed-002 (maxas-style) SGEMM kernels with the CPU checker.
#include "cpusim.h"
#include "../seed002_sgemm_maxas.cu"
using namespace cpusim;
#define SGEMM(K) static Register reg_##K(#K, [](Args& a) { \
    K((float*)a[0].ptr(), (const float*)a[1].ptr(), (const float*)a[2].ptr(), (int)a[3].i, (int)a[4].i, \
      (int)a[5].i, (int)a[6].i, (int)a[7].i, (int)a[8].i, (float)a[9].f); });
SGEMM(sgemm_maxas_64)
SGEMM(sgemm_maxas_128)
