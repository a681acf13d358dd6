"""Pack a GPU run of the first difftest family (device_run.sh / run_golden.py) into
tests/difftest/golden/difftest_sm_90.npz: the inputs A, B, C, each kernel's outputs (uint64, N x K)
and the device (name, driver, the cubin's sha256).
Refuses a run of another cubin, other inputs, or one whose two launches of a kernel differed.
    python tests/difftest/pack.py RUN_DIR"""

import struct
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import gen  # noqa: E402

GOLDEN = Path(__file__).parent / "golden" / "difftest_sm_90.npz"


def checked_run(run: Path, family) -> tuple[str, dict]:
    """(device.txt, inputs) of a GPU run of a difftest family (the module gen or gen2), refusing a
    run of another cubin, of other inputs, or one whose two launches of a kernel differed."""
    device = (run / "device.txt").read_text()
    want = family.CUBIN_HASH.read_text().strip()
    if f"cubin sha256 {want}" not in device:
        raise SystemExit(f"{run}/device.txt: not a run of the committed cubin (sha256 {want})")
    inputs = family.inputs()
    if (run / "inputs.bin").read_bytes() != b"".join(struct.pack(f"<{family.N}Q", *inputs[x]) for x in "ABC"):
        raise SystemExit(f"{run}/inputs.bin: not {family.__name__}.inputs()")
    repeat = (run / "repeat.txt").read_text().split()
    if repeat:
        raise SystemExit(f"outputs that differ between two launches (not deterministic): {', '.join(repeat)}")
    return device, inputs


def main(run_dir: str) -> int:
    run = Path(run_dir)
    device, inputs = checked_run(run, gen)
    arrays = {x: np.array(inputs[x], np.uint64) for x in "ABC"}
    for name in gen.KERNELS:
        arrays[name] = np.frombuffer((run / f"{name}.bin").read_bytes(), "<u8").astype(np.uint64).reshape(gen.N, gen.K)
    np.savez_compressed(GOLDEN, device=np.array(device.strip()), **arrays)
    print(f"{GOLDEN} ({GOLDEN.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
