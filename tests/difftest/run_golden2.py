"""Run the second difftest family on a GPU (CUDA driver API through ctypes; no numpy, no toolkit):

    python3 tests/difftest/run_golden2.py CUBIN OUTDIR

rebuilds the inputs (gen2.inputs, gen2.o_init), launches every kernel of gen2.KERNELS twice (O reset
to o_init before each launch) and writes OUTDIR/<kernel>.bin (O after the first launch, uint64
little-endian, N * K + TAIL words), OUTDIR/inputs.bin (A, B, C), OUTDIR/device.txt (device name,
driver version, the cubin's sha256) and OUTDIR/repeat.txt (kernels whose two launches differed: a
non-deterministic output, which pack2.py refuses)."""

import ctypes
import hashlib
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import gen2  # noqa: E402


def check(rc, what):
    if rc != 0:
        raise SystemExit(f"{what} failed: CUresult {rc}")


def words(values) -> bytes:
    return struct.pack(f"<{len(values)}Q", *values)


def main(cubin: str, outdir: str) -> int:
    image = Path(cubin).read_bytes()
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    cu = ctypes.CDLL("libcuda.so.1")
    check(cu.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    name = ctypes.create_string_buffer(256)
    cu.cuDeviceGetName(name, 256, dev)
    driver = ctypes.c_int()
    cu.cuDriverGetVersion(ctypes.byref(driver))
    ctx = ctypes.c_void_p()
    check(cu.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev), "cuCtxCreate")
    mod = ctypes.c_void_p()
    check(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(image)), "cuModuleLoadData")

    data = gen2.inputs()
    host = {x: words(data[x]) for x in "ABC"}
    o0 = words(gen2.o_init())
    ptr = {}
    for x, size in [("A", len(host["A"])), ("B", len(host["B"])), ("C", len(host["C"])), ("O", len(o0))]:
        p = ctypes.c_uint64()
        check(cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(size)), "cuMemAlloc")
        ptr[x] = p
    for x in "ABC":
        check(cu.cuMemcpyHtoD_v2(ptr[x], ctypes.c_char_p(host[x]), ctypes.c_size_t(len(host[x]))), "cuMemcpyHtoD")
    ints = [ctypes.c_int(v) for v in (gen2.N, *gen2.PARAMS)]
    args = (ctypes.c_void_p * 8)(*[ctypes.cast(ctypes.byref(ptr[x]), ctypes.c_void_p) for x in "ABCO"],
                                 *[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in ints])
    differ = []
    for kernel in gen2.KERNELS:
        fn = ctypes.c_void_p()
        check(cu.cuModuleGetFunction(ctypes.byref(fn), mod, kernel.encode()), f"cuModuleGetFunction {kernel}")
        results = []
        for _ in range(2):
            check(cu.cuMemcpyHtoD_v2(ptr["O"], ctypes.c_char_p(o0), ctypes.c_size_t(len(o0))), "reset O")
            check(cu.cuLaunchKernel(fn, gen2.N // gen2.BLOCK, 1, 1, gen2.BLOCK, 1, 1, 0, None, args, None),
                  f"launch {kernel}")
            check(cu.cuCtxSynchronize(), f"sync {kernel}")
            buf = ctypes.create_string_buffer(len(o0))
            check(cu.cuMemcpyDtoH_v2(buf, ptr["O"], ctypes.c_size_t(len(o0))), "cuMemcpyDtoH")
            results.append(buf.raw)
        (out / f"{kernel}.bin").write_bytes(results[0])
        if results[0] != results[1]:
            differ.append(kernel)
        print(kernel, "ok" if results[0] == results[1] else "DIFFERS between two launches")
    (out / "inputs.bin").write_bytes(host["A"] + host["B"] + host["C"])
    (out / "device.txt").write_text(f"{name.value.decode()}\ndriver {driver.value}\n"
                                    f"cubin sha256 {hashlib.sha256(image).hexdigest()}\n")
    (out / "repeat.txt").write_text("".join(f"{k}\n" for k in differ))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: run_golden2.py CUBIN OUTDIR")
    sys.exit(main(sys.argv[1], sys.argv[2]))
