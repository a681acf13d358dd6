"""Differential tests against the hardware: generate small sm_90 kernels that apply integer,
conversion and FP operations to edge inputs, compile them, and write what the H100 run needs.

Every kernel has one signature, `k(const u64 *A, const u64 *B, const u64 *C, u64 *O, int n)`: lane i
reads A[i], B[i], C[i] and views them as u32/s32/f32 (low word) or u64/s64/f64, and writes K = 8
results (each zero-extended bit patterns) to O[i * 8 + k]. Inputs: the first 1024 lanes cross 32
32-bit edge values (0, +-1, INT_MIN, INT_MAX, shift counts 31..64, +-0.0, +-inf, NaNs, denormals,
2^31, 2^32, halfway cases...), the next 1024 cross 32 64-bit edge values (doubles and int64s).

    python tests/difftest/gen.py OUTDIR   # writes difftest.cu, difftest.cubin, inputs.npz there and
                                          # the listing tests/difftest/golden/difftest_sm_90.sass
Then run_golden.py (no numpy needed) runs the cubin on a GPU and writes O of every kernel; the
outputs and inputs go to tests/difftest/golden/difftest_sm_90.npz (see pack.py), which
tests/test_difftest.py replays in the emulator, bit for bit.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from edges import EDGE32, EDGE64  # noqa: E402

HERE = Path(__file__).parent
K = 8
N = 2048

# name -> K C expressions (U: u32 result, F: f32 bits, D: f64 bits, L: 64-bit integer)
KERNELS = {
    "dt_int": ["U(a + b + c)", "U(a - b)", "U(a * b + c)", "U(__umulhi(a, b))", "U(__mulhi(sa, sb))",
               "U(min(sa, sb))", "U(max(a, b))", "U(__byte_perm(a, b, c))"],
    "dt_shift": ["U(a << (b & 31))", "U(a >> (b & 31))", "U(sa >> (b & 31))", "U(__funnelshift_l(a, b, c))",
                 "U(__funnelshift_r(a, b, c))", "U(__funnelshift_lc(a, b, c))", "U(__popc(a))",
                 "U(__funnelshift_rc(a, b, c))"],
    "dt_mul64": ["L(a64 * b64)", "L(__umul64hi(a64, b64))", "L(__mul64hi(la, lb))", "L((unsigned long long)a * b)",
                 "L((long long)sa * sb)", "L(a64 * b64 + c64)", "L(a64 + b64)", "L(la - lb)"],
    "dt_div": ["U(a / b)", "U(a % b)", "U(sa / sb)", "U(sa % sb)", "L(a64 / b64)", "L(a64 % b64)",
               "L(la / lb)", "L(la % lb)"],
    "dt_cvt32": ["F((float)a)", "F((float)sa)", "F(__uint2float_rz(a))", "F(__int2float_ru(sa))",
                 "F(__int2float_rd(sa))", "U((unsigned)fa)", "U((int)fa)", "U(__float2int_rn(fa))"],
    "dt_cvt64": ["U(__float2uint_rn(fa))", "U(__float2int_rd(fa))", "U(__float2int_ru(fa))", "L(__float2ll_rz(fa))",
                 "L(__float2ull_rz(fa))", "F((float)a64)", "F((float)la)", "D((double)a64)"],
    "dt_cvtf64": ["L((long long)da)", "L((unsigned long long)da)", "U((int)da)", "U((unsigned)da)",
                  "F((float)da)", "D((double)fa)", "D((double)sa)", "D((double)a)"],
    "dt_fp32": ["F(fa + fb)", "F(fa * fb)", "F(__fmaf_rn(fa, fb, fc))", "F(__fadd_rz(fa, fb))",
                "F(__fmul_ru(fa, fb))", "F(fminf(fa, fb))", "F(fmaxf(fa, fb))", "F(__saturatef(fa))"],
    "dt_fcmp": ["U(fa < fb)", "U(fa <= fb)", "U(fa == fb)", "U(fa != fb)", "U(!(fa < fb))", "U(isnan(fa))",
                "U(fa > fb ? a : b)", "U(fabsf(fa) >= fb)"],
    "dt_fp64": ["D(da + db)", "D(da * db)", "D(fma(da, db, dc))", "D(__dadd_rz(da, db))", "D(fmin(da, db))",
                "D(fmax(da, db))", "U(da < db)", "U(da != db)"],
    "dt_mufu": ["F(fa / fb)", "F(sqrtf(fa))", "F(__fdividef(fa, fb))", "F(rsqrtf(fa))", "F(__expf(fa))",
                "F(__sinf(fa))", "D(da / db)", "D(sqrt(da))"],
}

PRELUDE = r"""
#define U(x) ((unsigned long long)(unsigned)(x))
#define F(x) ((unsigned long long)__float_as_uint(x))
#define D(x) ((unsigned long long)__double_as_longlong(x))
#define L(x) ((unsigned long long)(x))
"""

TEMPLATE = r"""
extern "C" __global__ void {name}(const unsigned long long *A, const unsigned long long *B,
                                  const unsigned long long *C, unsigned long long *O, int n)
{{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long a64 = A[i], b64 = B[i], c64 = C[i];
    long long la = (long long)a64, lb = (long long)b64;
    unsigned a = (unsigned)a64, b = (unsigned)b64, c = (unsigned)c64;
    int sa = (int)a, sb = (int)b;
    float fa = __uint_as_float(a), fb = __uint_as_float(b), fc = __uint_as_float(c);
    double da = __longlong_as_double(la), db = __longlong_as_double(lb), dc = __longlong_as_double((long long)c64);
    unsigned long long *o = O + (size_t)i * {K};
{body}
}}
"""


def inputs() -> dict[str, np.ndarray]:
    """A, B, C (uint64, N each): lanes 0..1023 cross EDGE32 (in the low words, random high words),
    lanes 1024..2047 cross EDGE64."""
    rng = np.random.default_rng(13)
    e32, e64 = np.array(EDGE32, np.uint64), np.array(EDGE64, np.uint64)
    i = np.arange(1024)
    hi = rng.integers(0, 2**32, (3, 1024), dtype=np.uint64) << np.uint64(32)
    a = np.concatenate([e32[i // 32] | hi[0], e64[i // 32]])
    b = np.concatenate([e32[i % 32] | hi[1], e64[i % 32]])
    c = np.concatenate([e32[(5 * i + 3) % 32] | hi[2], e64[(7 * i + 1) % 32]])
    return {"A": a, "B": b, "C": c}


def source() -> str:
    parts = [PRELUDE]
    for name, exprs in KERNELS.items():
        assert len(exprs) == K
        body = "\n".join(f"    o[{k}] = {e};" for k, e in enumerate(exprs))
        parts.append(TEMPLATE.format(name=name, K=K, body=body))
    return "".join(parts)


def main(outdir: str) -> int:
    from gpusim.toolchain.compile import NVCC_FLAGS, _version, toolchain

    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    cu = out / "difftest.cu"
    cu.write_text(source())
    (HERE / "difftest.cu").write_text(source())
    tools = toolchain("sm_90")
    subprocess.run([tools["nvcc"], "-arch=sm_90", *NVCC_FLAGS, "-o", str(out / "difftest.cubin"), str(cu)], check=True)
    listing = subprocess.run([tools["nvdisasm"], "-hex", str(out / "difftest.cubin")], check=True,
                             capture_output=True, text=True).stdout
    header = (f"// gpusim SASS listing: difftest kernels (tests/difftest/gen.py), sm_90\n"
              f"// nvcc {_version(tools['nvcc'])} flags: -arch=sm_90 {' '.join(NVCC_FLAGS)}; "
              f"nvdisasm {_version(tools['nvdisasm'])} -hex\n")
    (HERE / "golden" / "difftest_sm_90.sass").write_text(header + listing)
    np.savez(out / "inputs.npz", **inputs())
    for k, v in inputs().items():
        (out / f"{k}.bin").write_bytes(v.astype("<u8").tobytes())
    (out / "kernels.txt").write_text("\n".join(KERNELS) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/difftest13"))
