"""Pack a GPU run of run_golden.py into tests/difftest/golden/difftest_sm_90.npz: the inputs A, B, C
and each kernel's outputs (uint64, N x 8), plus the device's name.
    python tests/difftest/pack.py RUN_DIR"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from gen import K, KERNELS, inputs  # noqa: E402


def main(run_dir: str) -> int:
    run = Path(run_dir)
    arrays = dict(inputs())
    for name in KERNELS:
        arrays[name] = np.frombuffer((run / f"{name}.bin").read_bytes(), "<u8").reshape(-1, K)
    device = (run / "device.txt").read_text().strip()
    np.savez_compressed(Path(__file__).parent / "golden" / "difftest_sm_90.npz", device=np.array(device), **arrays)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
