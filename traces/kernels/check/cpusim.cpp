// Fiber scheduler and command-line driver of the CPU checker.
//
//   emu KERNEL GX GY GZ BX BY BZ POLICY SEED ARG...
//     KERNEL  the registry name (the workload's `kernel:` field, e.g. "simpleMatMatMul<32>")
//     POLICY  fwd | rev | rand   (order in which the threads of a block run between barriers)
//     ARG     in:PATH | out:PATH (buffer read from PATH; out: written back after the run)
//             i32:V | u32:V | f32:V | f64:V
#include "cpusim.h"

#include <ucontext.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>
#include <stdexcept>

namespace cpusim {

uint3 g_threadIdx{0, 0, 0}, g_blockIdx{0, 0, 0};
dim3 g_blockDim, g_gridDim;

std::map<std::string, KernelCall>& registry() {
    static std::map<std::string, KernelCall> r;
    return r;
}

namespace {
enum State { RUNNABLE, WAIT_BLOCK, WAIT_WARP, DONE };
struct Fiber {
    ucontext_t ctx;
    char* stack = nullptr;
    State state = RUNNABLE;
    uint3 tid{0, 0, 0};
};
constexpr size_t kStack = 256 * 1024;
std::vector<Fiber> fibers;
ucontext_t sched_ctx;
int cur = -1;
const std::function<void()>* g_body = nullptr;

void trampoline() {
    (*g_body)();
    fibers[cur].state = DONE;
    swapcontext(&fibers[cur].ctx, &sched_ctx);
}
void block_on(State s) {
    if (cur < 0) throw std::runtime_error("barrier outside a kernel");
    fibers[cur].state = s;
    swapcontext(&fibers[cur].ctx, &sched_ctx);
}
}  // namespace

void syncthreads() { block_on(WAIT_BLOCK); }
void syncwarp() { block_on(WAIT_WARP); }

void launch(dim3 grid, dim3 block, const std::function<void()>& body, Policy policy, unsigned seed) {
    const int nt = int(block.x * block.y * block.z);
    g_gridDim = grid;
    g_blockDim = block;
    g_body = &body;
    if (int(fibers.size()) < nt) fibers.resize(nt);
    for (auto& f : fibers)
        if (!f.stack) f.stack = static_cast<char*>(std::malloc(kStack));
    std::mt19937 rng(seed);
    std::vector<int> order(nt);
    for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
    for (unsigned bx = 0; bx < grid.x; ++bx) {
        g_blockIdx = uint3{bx, by, bz};
        for (int t = 0; t < nt; ++t) {
            Fiber& f = fibers[t];
            f.state = RUNNABLE;
            f.tid = uint3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
            getcontext(&f.ctx);
            f.ctx.uc_stack.ss_sp = f.stack;
            f.ctx.uc_stack.ss_size = kStack;
            f.ctx.uc_link = nullptr;
            makecontext(&f.ctx, trampoline, 0);
        }
        for (;;) {
            std::iota(order.begin(), order.end(), 0);
            if (policy == REVERSE) std::reverse(order.begin(), order.end());
            if (policy == RANDOM) std::shuffle(order.begin(), order.end(), rng);
            for (int t : order) {
                if (fibers[t].state != RUNNABLE) continue;
                cur = t;
                g_threadIdx = fibers[t].tid;
                swapcontext(&sched_ctx, &fibers[t].ctx);
                cur = -1;
            }
            int alive = 0, at_block = 0;
            for (int t = 0; t < nt; ++t) {
                alive += fibers[t].state != DONE;
                at_block += fibers[t].state == WAIT_BLOCK;
            }
            if (alive == 0) break;
            bool released = false;
            if (at_block == alive) {
                if (alive != nt) throw std::runtime_error("__syncthreads with exited threads");
                for (int t = 0; t < nt; ++t) fibers[t].state = RUNNABLE;
                released = true;
            } else {
                for (int w = 0; w * 32 < nt; ++w) {   // warp = 32 consecutive linear thread ids
                    int lo = w * 32, hi = std::min(nt, lo + 32), live = 0, waiting = 0;
                    for (int t = lo; t < hi; ++t) {
                        live += fibers[t].state != DONE;
                        waiting += fibers[t].state == WAIT_WARP;
                    }
                    if (live > 0 && waiting == live) {
                        for (int t = lo; t < hi; ++t)
                            if (fibers[t].state == WAIT_WARP) fibers[t].state = RUNNABLE;
                        released = true;
                    }
                }
            }
            if (!released) throw std::runtime_error("barrier deadlock (divergent __syncthreads/__syncwarp)");
        }
    }
}

}  // namespace cpusim

using namespace cpusim;

static std::vector<char> read_file(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    if (!f) throw std::runtime_error("cannot read " + p);
    return std::vector<char>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

int main(int argc, char** argv) {
    if (argc == 2 && std::string(argv[1]) == "--list") {
        for (auto& kv : registry()) std::printf("%s\n", kv.first.c_str());
        return 0;
    }
    if (argc < 11) {
        std::fprintf(stderr, "usage: %s KERNEL GX GY GZ BX BY BZ fwd|rev|rand SEED ARG...\n", argv[0]);
        return 2;
    }
    try {
        auto it = registry().find(argv[1]);
        if (it == registry().end()) throw std::runtime_error(std::string("unknown kernel ") + argv[1]);
        dim3 grid(std::atoi(argv[2]), std::atoi(argv[3]), std::atoi(argv[4]));
        dim3 block(std::atoi(argv[5]), std::atoi(argv[6]), std::atoi(argv[7]));
        std::string pol = argv[8];
        Policy policy = pol == "fwd" ? FORWARD : pol == "rev" ? REVERSE : RANDOM;
        unsigned seed = unsigned(std::strtoul(argv[9], nullptr, 10));
        Args args;
        std::vector<std::pair<int, std::string>> outs;
        for (int a = 10; a < argc; ++a) {
            std::string s = argv[a];
            auto colon = s.find(':');
            std::string k = s.substr(0, colon), v = s.substr(colon + 1);
            Arg arg;
            if (k == "in" || k == "out") {
                arg.kind = 'b';
                arg.data = read_file(v);
                if (k == "out") outs.push_back({int(args.size()), v});
            } else if (k == "i32") { arg.kind = 'i'; arg.i = std::stoll(v); }
            else if (k == "u32") { arg.kind = 'u'; arg.i = std::stoll(v); }
            else if (k == "f32") { arg.kind = 'f'; arg.f = std::stod(v); }
            else if (k == "f64") { arg.kind = 'd'; arg.f = std::stod(v); }
            else throw std::runtime_error("bad argument " + s);
            args.push_back(std::move(arg));
        }
        KernelCall& call = it->second;
        launch(grid, block, [&] { call(args); }, policy, seed);
        for (auto& o : outs) {
            std::ofstream f(o.second, std::ios::binary | std::ios::trunc);
            f.write(args[o.first].data.data(), std::streamsize(args[o.first].data.size()));
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
