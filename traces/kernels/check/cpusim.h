// Scheduler and kernel registry of the CPU checker (see cuda_cpu_shim.h).
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>
#include "cuda_cpu_shim.h"

namespace cpusim {

enum Policy { FORWARD = 0, REVERSE = 1, RANDOM = 2 };

// Runs body() once per thread of every block of the grid; throws std::runtime_error on a barrier
// deadlock (threads waiting at different barriers, or exited while others wait).
void launch(dim3 grid, dim3 block, const std::function<void()>& body, Policy policy, unsigned seed);

struct Arg {
    char kind = 0;           // 'b' buffer, 'i' int32, 'u' uint32, 'f' float32, 'd' float64
    std::vector<char> data;  // buffer contents
    long long i = 0;
    double f = 0;
    void* ptr() { return data.data(); }
};
using Args = std::vector<Arg>;
using KernelCall = std::function<void(Args&)>;   // calls the kernel once with the arguments

std::map<std::string, KernelCall>& registry();
struct Register {
    Register(const char* name, KernelCall fn) { registry()[name] = std::move(fn); }
};

}  // namespace cpusim
