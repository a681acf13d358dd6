"""gpusim: a discrete-event model of NVIDIA SMs replaying real SASS traces of GEMM kernels.

Data flow (one subpackage per stage):
    .cu + workload spec --toolchain--> SASS listing --isa--> Program
    Program + launch + data --emu--> dynamic warp trace (checked against numpy)
    trace + GPU config --sm/mem--> cycles, stalls, counters --> reports
"""

__version__ = "0.1.0"

import os
from pathlib import Path

# One BLAS thread unless the user chose a number: OpenBLAS's threads wait for each other, and on a
# busy machine (this project's shared 2-core one) a sampled run's reference products (128 x 4096
# by 4096 x 256) took 0.13 s on 2 threads against 0.005 s on one; gpusim's products are small, and
# its parallel commands (validate, study, run_sim.py) already run a worker per core. The same
# results (OpenBLAS splits the output, not the sums, among threads). Effective only when numpy is
# imported after gpusim, as in the CLI and the bench scripts.
if not any(os.environ.get(v) for v in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")):
    os.environ["OPENBLAS_NUM_THREADS"] = "1"

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent
# Data (configs/, traces/, validation/): the checkout's folders; in an installed wheel the copies
# shipped as package data under gpusim/_data/ (pyproject.toml); $GPUSIM_DATA names another folder.
DATA_ROOT = (Path(os.environ["GPUSIM_DATA"]) if os.environ.get("GPUSIM_DATA") else
             REPO_ROOT if (REPO_ROOT / "traces" / "workloads").is_dir() else PACKAGE_DIR / "_data")
TRACES_DIR = DATA_ROOT / "traces"
CONFIGS_DIR = DATA_ROOT / "configs"
