// Registers the issue-12 suite (../suite12.cu) with the CPU checker.
#include "cpusim.h"
#include "../suite12.cu"
using namespace cpusim;
#define GEMM(ID, NAME, K, T) static Register reg_##ID(NAME, [](Args& a) { \
    K((const T*)a[0].ptr(), (const T*)a[1].ptr(), (T*)a[2].ptr(), (int)a[3].i); });
GEMM(k1, "sgemm_naive_rowmajor", sgemm_naive_rowmajor, float)
GEMM(k2, "sgemm_naive_colmajor<0>", sgemm_naive_colmajor<0>, float)
GEMM(k3, "sgemm_naive_colmajor<1>", sgemm_naive_colmajor<1>, float)
GEMM(k4, "gemm_naive_coalesced<float>", gemm_naive_coalesced<float>, float)
GEMM(k5, "gemm_naive_coalesced<double>", gemm_naive_coalesced<double>, double)
GEMM(k6, "sgemm_smem<0>", sgemm_smem<0>, float)
GEMM(k7, "sgemm_smem<1>", sgemm_smem<1>, float)
GEMM(k8, "sgemm_regtile1d", sgemm_regtile1d, float)
GEMM(k9, "sgemm_regtile2d", sgemm_regtile2d, float)
GEMM(k10, "sgemm_vec4<0>", sgemm_vec4<0>, float)
GEMM(k11, "sgemm_vec4<1>", sgemm_vec4<1>, float)
GEMM(k12, "sgemm_warptile", sgemm_warptile, float)
GEMM(k13, "dgemm_regtile", dgemm_regtile, double)
#define TRANSPOSE(ID, NAME, K) static Register reg_##ID(NAME, [](Args& a) { \
    K((const float*)a[0].ptr(), (float*)a[1].ptr(), (int)a[2].i); });
TRANSPOSE(k14, "transpose_naive", transpose_naive)
TRANSPOSE(k15, "transpose_smem<0>", transpose_smem<0>)
TRANSPOSE(k16, "transpose_smem<1>", transpose_smem<1>)
static Register reg_copy("copy_float4", [](Args& a) {
    copy_float4((const float4*)a[0].ptr(), (float4*)a[1].ptr(), (int)a[2].i); });
