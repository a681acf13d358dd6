#!/usr/bin/env python3
"""Run the gpusim CLI on the object engine (gpusim/timing/sm.py and mem/), the one the trials in this
folder patch; the compiled engine gives the same results where nothing is patched.

    python3 bench/micro/trials/objects_run.py run dgemm_unroll --gpu h100 --size 512 --mode sampled
    GPUSIM_VALIDATE_CACHE=/tmp/v python3 bench/micro/trials/objects_run.py validate --json --workers 2
"""
import sys

from gpusim.timing.gpu import GPU

GPU.engine = "objects"

from gpusim.cli import app  # noqa: E402

app(sys.argv[1:])
