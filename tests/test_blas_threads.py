"""gpusim asks for one OpenBLAS thread when imported before numpy, unless the user chose a number."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("user, expect", [({}, "1"), ({"OMP_NUM_THREADS": "3"}, "None"),
                                          ({"OPENBLAS_NUM_THREADS": "2"}, "2")])
def test_one_blas_thread_unless_chosen(user, expect):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
                                                            "OMP_NUM_THREADS")}
    env.update(user, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", "import os, gpusim; print(os.environ.get('OPENBLAS_NUM_THREADS'))"],
                         env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert out == expect
