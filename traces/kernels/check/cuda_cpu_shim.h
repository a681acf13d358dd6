// CPU stand-in for the small subset of CUDA C++ used by the kernels in traces/kernels/*.cu, so that
// the kernels themselves (not a transcription) can be compiled with g++ and run on the host.
//
// Every CUDA thread of a block is a ucontext fiber; __syncthreads() / __syncwarp() switch back to a
// scheduler that releases a barrier once every live thread of the block (warp) has arrived.  Between
// barriers a thread runs without interruption, and the order in which the threads of a block run is
// chosen by a policy (forward, reverse, random): a kernel whose result changes with the policy has a
// shared-memory race.  __shared__ variables become function-local statics (blocks run one after the
// other, so one copy is enough).  Only what the kernels use is provided.
#pragma once

#include <cstdint>
#include <cstddef>

struct uint3 { unsigned int x, y, z; };
struct dim3 {
    unsigned int x, y, z;
    dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) double2 { double x, y; };
inline float2 make_float2(float x, float y) { return float2{x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
inline double2 make_double2(double x, double y) { return double2{x, y}; }

namespace cpusim {
extern uint3 g_threadIdx, g_blockIdx;
extern dim3 g_blockDim, g_gridDim;
void syncthreads();
void syncwarp();
}

#define threadIdx cpusim::g_threadIdx
#define blockIdx cpusim::g_blockIdx
#define blockDim cpusim::g_blockDim
#define gridDim cpusim::g_gridDim

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

template <class T> inline T __ldg(const T* p) { return *p; }
inline void __syncthreads() { cpusim::syncthreads(); }
inline void __syncwarp(unsigned = 0xffffffffu) { cpusim::syncwarp(); }
