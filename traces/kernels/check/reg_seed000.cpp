// Registers the seed-000/004 DGEMM kernels with the CPU checker.
#include "cpusim.h"
#include "../seed000_dgemm.cu"
using namespace cpusim;
#define DGEMM(K) static Register reg_##K(#K, [](Args& a) { \
    K((double*)a[0].ptr(), (const double*)a[1].ptr(), (const double*)a[2].ptr(), \
      (int)a[3].i, (int)a[4].i, (int)a[5].i, (int)a[6].i); });
DGEMM(cuk_dgemm_unroll)
DGEMM(cuk_dgemm_unroll_db)
DGEMM(cuk_dgemm_unroll_128b)
DGEMM(cuk_dgemm_unroll_128b_prefsmem)
DGEMM(cuk_dgemm_unroll_db_128b)
DGEMM(cuk_dgemm_unroll_db_128b_prefsmem)
