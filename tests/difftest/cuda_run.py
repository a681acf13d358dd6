"""The GPU side of both difftest families (CUDA driver API through ctypes; no numpy, no toolkit):
load a cubin, launch each kernel twice on the same inputs (O reset before each launch) and write
OUTDIR/device.txt first (device name, driver version, the cubin's sha256), then per kernel
OUTDIR/<kernel>.bin (O after the first launch, uint64 little-endian) and a line in OUTDIR/repeat.txt
when the two launches differ (a non-deterministic output, which the pack scripts refuse), and last
OUTDIR/inputs.bin (A, B, C)."""

import ctypes
import hashlib
import struct
from pathlib import Path


def check(rc, what):
    if rc != 0:
        raise SystemExit(f"{what} failed: CUresult {rc}")


def words(values) -> bytes:
    return struct.pack(f"<{len(values)}Q", *values)


def measure(cubin: str, outdir: str, kernels, inputs: dict, o0: list, ints: list, block: int) -> None:
    """k(A, B, C, O, *ints) for k in kernels, on len(A) / block blocks of `block` threads; O starts
    as o0 (a list of uint64 words) before every launch."""
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
    (out / "device.txt").write_text(f"{name.value.decode()}\ndriver {driver.value}\n"
                                    f"cubin sha256 {hashlib.sha256(image).hexdigest()}\n")
    (out / "repeat.txt").write_text("")
    ctx = ctypes.c_void_p()
    check(cu.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev), "cuCtxCreate")
    mod = ctypes.c_void_p()
    check(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(image)), "cuModuleLoadData")

    host = {x: words(inputs[x]) for x in "ABC"}
    init = words(o0)
    ptr = {}
    for x, size in [("A", len(host["A"])), ("B", len(host["B"])), ("C", len(host["C"])), ("O", len(init))]:
        p = ctypes.c_uint64()
        check(cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(size)), "cuMemAlloc")
        ptr[x] = p
    for x in "ABC":
        check(cu.cuMemcpyHtoD_v2(ptr[x], ctypes.c_char_p(host[x]), ctypes.c_size_t(len(host[x]))), "cuMemcpyHtoD")
    cints = [ctypes.c_int(v) for v in ints]
    args = (ctypes.c_void_p * (4 + len(cints)))(
        *[ctypes.cast(ctypes.byref(ptr[x]), ctypes.c_void_p) for x in "ABCO"],
        *[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in cints])
    blocks = len(inputs["A"]) // block
    for kernel in kernels:
        fn = ctypes.c_void_p()
        check(cu.cuModuleGetFunction(ctypes.byref(fn), mod, kernel.encode()), f"cuModuleGetFunction {kernel}")
        results = []
        for _ in range(2):
            check(cu.cuMemcpyHtoD_v2(ptr["O"], ctypes.c_char_p(init), ctypes.c_size_t(len(init))), "reset O")
            check(cu.cuLaunchKernel(fn, blocks, 1, 1, block, 1, 1, 0, None, args, None), f"launch {kernel}")
            check(cu.cuCtxSynchronize(), f"sync {kernel}")
            buf = ctypes.create_string_buffer(len(init))
            check(cu.cuMemcpyDtoH_v2(buf, ptr["O"], ctypes.c_size_t(len(init))), "cuMemcpyDtoH")
            results.append(buf.raw)
        (out / f"{kernel}.bin").write_bytes(results[0])
        same = results[0] == results[1]
        if not same:
            with open(out / "repeat.txt", "a") as f:
                f.write(kernel + "\n")
        print(kernel, "ok" if same else "DIFFERS between two launches", flush=True)
    (out / "inputs.bin").write_bytes(host["A"] + host["B"] + host["C"])
