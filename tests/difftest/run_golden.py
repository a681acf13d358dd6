"""Run the difftest cubin on a GPU (CUDA driver API through ctypes; no numpy, no toolkit needed):
python run_golden.py DIR OUTDIR reads DIR/difftest.cubin, DIR/{A,B,C}.bin, DIR/kernels.txt and writes
OUTDIR/<kernel>.bin (uint64 little-endian, N x 8) and OUTDIR/device.txt."""

import ctypes
import sys
from pathlib import Path

K, BLOCK = 8, 128


def check(rc, what):
    if rc != 0:
        raise SystemExit(f"{what} failed: CUresult {rc}")


def main(src: str, dst: str) -> int:
    src, dst = Path(src), Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    cu = ctypes.CDLL("libcuda.so.1")
    check(cu.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    name = ctypes.create_string_buffer(256)
    cu.cuDeviceGetName(name, 256, dev)
    ctx = ctypes.c_void_p()
    check(cu.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev), "cuCtxCreate")
    image = (src / "difftest.cubin").read_bytes()
    mod = ctypes.c_void_p()
    check(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(image)), "cuModuleLoadData")
    data = {x: (src / f"{x}.bin").read_bytes() for x in "ABC"}
    n = len(data["A"]) // 8
    ptr = {}
    for x, size in [("A", 8 * n), ("B", 8 * n), ("C", 8 * n), ("O", 8 * n * K)]:
        p = ctypes.c_uint64()
        check(cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(size)), "cuMemAlloc")
        ptr[x] = p
    for x in "ABC":
        check(cu.cuMemcpyHtoD_v2(ptr[x], ctypes.c_char_p(data[x]), ctypes.c_size_t(8 * n)), "cuMemcpyHtoD")
    nn = ctypes.c_int(n)
    args = (ctypes.c_void_p * 5)(*[ctypes.cast(ctypes.byref(ptr[x]), ctypes.c_void_p) for x in "ABCO"],
                                 ctypes.cast(ctypes.byref(nn), ctypes.c_void_p))
    zeros = bytes(8 * n * K)
    for kernel in (src / "kernels.txt").read_text().split():
        fn = ctypes.c_void_p()
        check(cu.cuModuleGetFunction(ctypes.byref(fn), mod, kernel.encode()), f"cuModuleGetFunction {kernel}")
        check(cu.cuMemcpyHtoD_v2(ptr["O"], ctypes.c_char_p(zeros), ctypes.c_size_t(len(zeros))), "clear O")
        check(cu.cuLaunchKernel(fn, n // BLOCK, 1, 1, BLOCK, 1, 1, 0, None, args, None), f"launch {kernel}")
        check(cu.cuCtxSynchronize(), f"sync {kernel}")
        out = ctypes.create_string_buffer(len(zeros))
        check(cu.cuMemcpyDtoH_v2(out, ptr["O"], ctypes.c_size_t(len(zeros))), "cuMemcpyDtoH")
        (dst / f"{kernel}.bin").write_bytes(out.raw)
        print(kernel, "ok")
    (dst / "device.txt").write_text(name.value.decode() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
