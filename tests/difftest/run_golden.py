"""Run the first difftest family on a GPU (CUDA driver API through ctypes; no numpy, no toolkit):

    python3 tests/difftest/run_golden.py CUBIN OUTDIR

rebuilds the inputs (gen.inputs), launches every kernel of gen.KERNELS twice (O zero before each
launch) and writes OUTDIR/<kernel>.bin (O after the first launch, uint64 little-endian, N x K words),
OUTDIR/inputs.bin (A, B, C), OUTDIR/device.txt (device name, driver version, the cubin's sha256) and
OUTDIR/repeat.txt (kernels whose two launches differed, which pack.py refuses); see cuda_run.py."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import gen  # noqa: E402
from cuda_run import measure  # noqa: E402


def main(cubin: str, outdir: str) -> int:
    measure(cubin, outdir, list(gen.KERNELS), gen.inputs(), [0] * (gen.N * gen.K), [gen.N], gen.BLOCK)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: run_golden.py CUBIN OUTDIR")
    sys.exit(main(sys.argv[1], sys.argv[2]))
