"""Differential tests against the hardware, second family: the kernels of difftest2.cu (shared-memory
tiles and barriers, every load/store width and space, LEA and uniform-datapath index arithmetic, warp
shuffles, votes, REDUX, MATCH, shared and global atomics, divergent loops, CALL/RET, warp-synchronous
operations over a partial mask (d2_partial) and over lanes on different paths (WARPSYNC.COLLECTIVE,
d2_converge)).

Pure Python (no numpy): run_golden2.py imports it on the GPU machine to rebuild the same inputs.

    python tests/difftest/gen2.py      # compiles difftest2.cu to tests/difftest/build/difftest2.cubin
                                       # (git-ignored; carried to the GPU machine) and writes the listing
                                       # tests/difftest/golden/difftest2_sm_90.sass and the cubin's hash
Then tests/difftest/device_run.sh OUTDIR on the GPU machine, and pack2.py OUTDIR here (golden npz).

Launch: every kernel k(A, B, C, O, n, p0, p1, p2) on n / 128 blocks of 128 threads; A, B, C are n
uint64 words, O is n * K + TAIL words set to o_init() before each launch (the whole O is the output).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from edges import EDGE32, EDGE64, MASK64, f32, f64, splitmix64  # noqa: E402

SOURCE = HERE / "difftest2.cu"
CUBIN = HERE / "build" / "difftest2.cubin"
LISTING = HERE / "golden" / "difftest2_sm_90.sass"
CUBIN_HASH = HERE / "golden" / "difftest2_sm_90.cubin.sha256"
KERNELS = ["d2_smem", "d2_tile", "d2_gmem", "d2_index", "d2_stride", "d2_regtile", "d2_shfl", "d2_vote",
           "d2_atoms", "d2_atomg", "d2_ctrl", "d2_local", "d2_const", "d2_partial",
           "d2_converge"]
K = 8            # words per lane
N = 2048         # lanes
TAIL = 128       # words after the lanes' outputs: the global atomics' targets (d2_atomg)
BLOCK = 128
PARAMS = (27, 29, -3)  # p0 (trip counts), p1 (strides), p2 (a negative offset)


def inputs() -> dict[str, list[int]]:
    """A, B, C (N uint64 each). Per lane, by i % 4: an EDGE64 value, an EDGE32 value in the low word
    (random high word), a random word, and small values (lane numbers, shift counts, bytes: what
    shuffles, shifts and the lane-indexed paths read). The three use different edge orders, so lanes
    of one warp disagree (votes, ballots, MATCH, REDUX see mixed inputs)."""
    rnd = splitmix64(2013)
    out = {}
    for name, step in (("A", 1), ("B", 7), ("C", 13)):
        words = []
        for i in range(N):
            r = next(rnd)
            j = (i // 4 * step + i // 128) % 32
            kind = i % 4
            if kind == 0:
                words.append(EDGE64[j])
            elif kind == 1:
                words.append((r & 0xFFFFFFFF00000000) | EDGE32[j])
            elif kind == 2:
                words.append(r)
            else:
                words.append((r >> 58) * 0x0000000100000001 + (i & 63))
        out[name] = words
    return out


def o_init() -> list[int]:
    """O before every launch: a random word everywhere (so a store of the wrong width or place shows),
    except the tail's float and double atomic-add targets (d2_atomg: g32[112..119], g64[56..63]),
    which start at small integers so their sums are exact in any order."""
    rnd = splitmix64(1313)
    o = [next(rnd) for _ in range(N * K + TAIL)]
    base = N * K
    for j in range(8):
        lo32 = 112 + j  # a 32-bit slot of the tail: word base + lo32 // 2, half lo32 % 2
        w = base + lo32 // 2
        shift = 32 * (lo32 % 2)
        o[w] = (o[w] & ~(0xFFFFFFFF << shift) & MASK64) | (f32(float(j)) << shift)
        o[base + 64 + 56 + j] = f64(float(3 * j))
    return o


def main() -> int:
    from gen import build

    build(SOURCE, CUBIN, LISTING, CUBIN_HASH, KERNELS,
          "difftest kernels, family 2 (tests/difftest/difftest2.cu, gen2.py)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
