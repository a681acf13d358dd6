"""Run the second difftest family on a GPU (CUDA driver API through ctypes; no numpy, no toolkit):

    python3 tests/difftest/run_golden2.py CUBIN OUTDIR

rebuilds the inputs (gen2.inputs, gen2.o_init), launches every kernel of gen2.KERNELS twice (O reset
to o_init before each launch) and writes OUTDIR/<kernel>.bin (O after the first launch, uint64
little-endian, N * K + TAIL words), OUTDIR/inputs.bin (A, B, C), OUTDIR/device.txt (device name,
driver version, the cubin's sha256) and OUTDIR/repeat.txt (kernels whose two launches differed: a
non-deterministic output, which pack2.py refuses); see cuda_run.py."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import gen2  # noqa: E402
from cuda_run import measure  # noqa: E402


def main(cubin: str, outdir: str) -> int:
    measure(cubin, outdir, gen2.KERNELS, gen2.inputs(), gen2.o_init(), [gen2.N, *gen2.PARAMS], gen2.BLOCK)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: run_golden2.py CUBIN OUTDIR")
    sys.exit(main(sys.argv[1], sys.argv[2]))
