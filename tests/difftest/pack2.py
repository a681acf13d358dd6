"""Pack a GPU run of device_run.sh / run_golden2.py into tests/difftest/golden/difftest2_sm_90.npz:
inputs A, B, C, the initial O (O0), the parameters, the device, and every kernel's O after the run
(as `<kernel>`: the words it changed, 0 elsewhere, and `<kernel>_changed`: a packed bit per word;
load() puts them back together).
Refuses a run of another cubin, other inputs, or one whose two launches of a kernel differed.
    python tests/difftest/pack2.py RUN_DIR"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import gen2  # noqa: E402

GOLDEN = Path(__file__).parent / "golden" / "difftest2_sm_90.npz"


def load(path=GOLDEN) -> dict:
    """The golden file with every kernel's O whole again (uint64, N * K + TAIL)."""
    g = dict(np.load(path))
    for name in gen2.KERNELS:
        changed = np.unpackbits(g.pop(f"{name}_changed"))[:g["O0"].size].astype(bool)
        g[name] = np.where(changed, g[name], g["O0"])
    return g


def main(run_dir: str) -> int:
    from pack import checked_run

    run = Path(run_dir)
    device, inputs = checked_run(run, gen2)
    arrays = {x: np.array(inputs[x], np.uint64) for x in "ABC"}
    arrays["O0"] = np.array(gen2.o_init(), np.uint64)
    arrays["params"] = np.array(gen2.PARAMS, np.int32)
    for name in gen2.KERNELS:
        out = np.frombuffer((run / f"{name}.bin").read_bytes(), "<u8").astype(np.uint64)
        assert out.size == gen2.N * gen2.K + gen2.TAIL, name
        # words the kernel left alone are stored as 0 plus a bit (O0 is random and would not compress)
        changed = out != arrays["O0"]
        arrays[name] = np.where(changed, out, np.uint64(0))
        arrays[f"{name}_changed"] = np.packbits(changed)
    np.savez_compressed(GOLDEN, device=np.array(device.strip()), **arrays)
    print(f"{GOLDEN} ({GOLDEN.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
