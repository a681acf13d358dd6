// Registers the seed-003 kernels with the CPU checker.
#include "cpusim.h"
#include "../seed003_aat.cu"
using namespace cpusim;
#define SEED003(K) static Register reg_##K(#K, [](Args& a) { \
    K((float*)a[0].ptr(), (float*)a[1].ptr(), (int)a[2].i); });
SEED003(simpleMultiply)
SEED003(coalescedMultiply)
SEED003(coalescedMultiply_padded)
