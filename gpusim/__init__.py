"""gpusim: a discrete-event model of NVIDIA SMs replaying real SASS traces of GEMM kernels.

Data flow (one subpackage per stage):
    .cu + workload spec --toolchain--> SASS listing --isa--> Program
    Program + launch + data --emu--> dynamic warp trace (checked against numpy)
    trace + GPU config --sm/mem--> cycles, stalls, counters --> reports
"""

__version__ = "0.1.0"

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent
# Data (configs/, traces/, validation/): the checkout's folders; in an installed wheel the copies
# shipped as package data under gpusim/_data/ (pyproject.toml); $GPUSIM_DATA names another folder.
DATA_ROOT = (Path(os.environ["GPUSIM_DATA"]) if os.environ.get("GPUSIM_DATA") else
             REPO_ROOT if (REPO_ROOT / "traces" / "workloads").is_dir() else PACKAGE_DIR / "_data")
TRACES_DIR = DATA_ROOT / "traces"
CONFIGS_DIR = DATA_ROOT / "configs"
