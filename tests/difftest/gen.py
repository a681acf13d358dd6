"""Differential tests against the hardware: generate small sm_90 kernels that apply integer,
conversion and FP operations to edge inputs, compile them, and write what the H100 run needs.

Every kernel has one signature, `k(const u64 *A, const u64 *B, const u64 *C, u64 *O, int n)`: lane i
reads A[i], B[i], C[i] and views them as u32/s32/f32 (low word) or u64/s64/f64, and writes K = 8
results (each zero-extended bit patterns, or two 32-bit results in one word) to O[i * 8 + k].
Inputs: the first 1024 lanes cross 32 32-bit edge values (0, +-1, INT_MIN, INT_MAX, shift counts
31..64, +-0.0, +-inf, NaNs, denormals, 2^31, 2^32, halfway cases...) in the low words, with random
high words (fh: C's high word as a float, a random one there); the next 1024 cross 32 64-bit edge
values (doubles and int64s). Exact operations (IEEE division, square roots, directed rounding) and the
MUFU hardware approximations (__expf, __sinf, ...) sit in different kernels, so that an
approximation the emulator does not model yet leaves the exact kernels' forms covered.

Pure Python at import (no numpy): run_golden.py imports it on the GPU machine to rebuild the inputs.

    python tests/difftest/gen.py    # writes tests/difftest/difftest.cu, compiles it to
                                    # tests/difftest/build/difftest.cubin (git-ignored; carried to the
                                    # GPU machine), the listing tests/difftest/golden/difftest_sm_90.sass
                                    # and the cubin's hash beside it
Then tests/difftest/device_run.sh OUTDIR on the GPU machine (both families), and pack.py here: the
inputs and outputs go to tests/difftest/golden/difftest_sm_90.npz, which tests/test_difftest.py
replays in the emulator, bit for bit.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from edges import EDGE32, EDGE64, splitmix64  # noqa: E402

SOURCE = HERE / "difftest.cu"
CUBIN = HERE / "build" / "difftest.cubin"
LISTING = HERE / "golden" / "difftest_sm_90.sass"
CUBIN_HASH = HERE / "golden" / "difftest_sm_90.cubin.sha256"
K = 8
N = 2048
BLOCK = 128

# name -> K C expressions (U: u32 result, F: f32 bits, D: f64 bits, L: 64-bit integer, P: two f32 results)
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
    # exact: IEEE division, square root and reciprocal square root, directed rounding (slow paths
    # included: FCHK, the division and sqrt subroutines); two FP32 results per word
    "dt_fdiv": ["P(fa / fb, fh / fc)", "P(sqrtf(fa), sqrtf(fh))", "P(__fdiv_rz(fa, fb), __fdiv_rd(fh, fa))",
                "P(__fdiv_ru(fb, fc), __frcp_rn(fh))", "P(__frcp_rd(fa), __frcp_ru(fh))",
                "P(__fsqrt_ru(fa), __fsqrt_rd(fh))", "P(__frsqrt_rn(fa), __frsqrt_rn(fh))",
                "P(__fmul_rz(fa, fc), __fmul_rd(fh, fb))"],
    "dt_ddiv": ["D(da / db)", "D(sqrt(da))", "D(__ddiv_rz(da, db))", "D(__ddiv_ru(db, dc))", "D(__drcp_rd(da))",
                "D(__dsqrt_ru(da))", "D(__dmul_ru(da, db))", "D(__fma_rd(da, db, dc))"],
    # the MUFU hardware approximations (fast-math intrinsics; MUFU.RCP64H / RSQ64H bare, through PTX)
    "dt_approx": ["P(__fdividef(fa, fb), __fdividef(fh, fc))", "P(rsqrtf(fa), rsqrtf(fh))",
                  "P(__expf(fa), __expf(fh))", "P(__exp10f(fb), __expf(fc))", "P(__log2f(fb), __logf(fc))",
                  "P(__log2f(fa), __log2f(fh))", "D(rcp_approx(da))", "D(rsqrt_approx(da))"],
    # MUFU.SIN / MUFU.COS, after the compiler's FMUL.RZ by 1/(2 pi), on arguments of every size
    "dt_trig": ["P(__sinf(fa), __sinf(fh))", "P(__cosf(fa), __cosf(fh))", "P(__sinf(fb), __cosf(fb))",
                "P(__sinf(fc), __cosf(fc))", "P(__sinf(fa * 0.001f), __cosf(fa * 0.001f))",
                "P(__sinf(fh * 100.0f), __cosf(fh * 100.0f))", "P(__tanf(fa), __tanf(fh))",
                "P(__sinf(fb * 3.0f), __cosf(fc * 7.0f))"],
}

PRELUDE = r"""
#define U(x) ((unsigned long long)(unsigned)(x))
#define F(x) ((unsigned long long)__float_as_uint(x))
#define D(x) ((unsigned long long)__double_as_longlong(x))
#define L(x) ((unsigned long long)(x))
#define P(x, y) (F(x) | (F(y) << 32))
// MUFU.RCP64H / MUFU.RSQ64H alone: the high word's approximation, low word zero
__device__ __forceinline__ double rcp_approx(double x)
{ double r; asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(x)); return r; }
__device__ __forceinline__ double rsqrt_approx(double x)
{ double r; asm("rsqrt.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(x)); return r; }
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
    float fh = __uint_as_float((unsigned)(c64 >> 32));
    double da = __longlong_as_double(la), db = __longlong_as_double(lb), dc = __longlong_as_double((long long)c64);
    unsigned long long *o = O + (size_t)i * {K};
{body}
}}
"""


def inputs() -> dict[str, list[int]]:
    """A, B, C (N uint64 each): lanes 0..1023 cross EDGE32 (in the low words, random high words),
    lanes 1024..2047 cross EDGE64."""
    rnd = splitmix64(13)
    out = {}
    for name, edge32, edge64 in (("A", lambda i: i // 32, lambda i: i // 32), ("B", lambda i: i % 32, lambda i: i % 32),
                                 ("C", lambda i: (5 * i + 3) % 32, lambda i: (7 * i + 1) % 32)):
        out[name] = ([(next(rnd) & 0xFFFFFFFF00000000) | EDGE32[edge32(i)] for i in range(1024)]
                     + [EDGE64[edge64(i)] for i in range(1024)])
    return out


def source() -> str:
    parts = [PRELUDE]
    for name, exprs in KERNELS.items():
        assert len(exprs) == K
        body = "\n".join(f"    o[{k}] = {e};" for k, e in enumerate(exprs))
        parts.append(TEMPLATE.format(name=name, K=K, body=body))
    return "".join(parts)


def build(source: Path, cubin: Path, listing: Path, cubin_hash: Path, kernels, title: str) -> None:
    """Compile `source` for sm_90 into `cubin`, write its listing (nvdisasm -hex, with a header naming
    `title` and the tool versions) and the cubin's sha256; stop if a kernel is missing. Both
    difftest families build this way (gen2.py calls it)."""
    from gpusim.toolchain.compile import NVCC_FLAGS, _version, toolchain

    tools = toolchain("sm_90")
    cubin.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([tools["nvcc"], "-arch=sm_90", *NVCC_FLAGS, "-o", str(cubin), str(source)], check=True)
    text = subprocess.run([tools["nvdisasm"], "-hex", str(cubin)], check=True, capture_output=True,
                          text=True).stdout
    header = (f"// gpusim SASS listing: {title}, sm_90\n"
              f"// nvcc {_version(tools['nvcc'])} flags: -arch=sm_90 {' '.join(NVCC_FLAGS)}; "
              f"nvdisasm {_version(tools['nvdisasm'])} -hex\n")
    listing.write_text(header + text)
    cubin_hash.write_text(hashlib.sha256(cubin.read_bytes()).hexdigest() + "\n")
    missing = [k for k in kernels if f".text.{k}:" not in text]
    if missing:
        raise SystemExit(f"kernels missing from the cubin: {missing}")
    print(f"{cubin} ({cubin.stat().st_size} bytes), {listing} ({listing.stat().st_size} bytes)")


def main() -> int:
    SOURCE.write_text(source())
    build(SOURCE, CUBIN, LISTING, CUBIN_HASH, KERNELS, "difftest kernels (tests/difftest/gen.py)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
