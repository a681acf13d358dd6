"""gpusim: a discrete-event model of NVIDIA SMs replaying real SASS traces of GEMM kernels.

Data flow (one subpackage per stage):
    .cu + workload spec --toolchain--> SASS listing --isa--> Program
    Program + launch + data --emu--> dynamic warp trace (checked against numpy)
    trace + GPU config --sm/mem--> cycles, stalls, counters --> reports
"""

__version__ = "0.1.0"

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
TRACES_DIR = REPO_ROOT / "traces"
CONFIGS_DIR = REPO_ROOT / "configs"
