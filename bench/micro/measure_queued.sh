#!/bin/bash
# Short kernels timed with their launches queued behind a blocking kernel (issue 12). Host-paced event
# times of kernels under ~10 us are the host's launch pace (10.1 us in one run, 6.8 in another), not
# the kernel's. This re-times the suite's short cases with `gpusim measure --queued` into
# validation/h100/queued/ (which `gpusim validate` prefers for event times), and re-runs the launch-floor
# micro with both timing methods. Cases: every workload of validation/h100/small at 64-256, and those
# of n = 512 or 1024 whose host-paced event time was under 30 us (three floors), plus transpose_naive
# 512 (75 us) as a check that queued and host-paced agree where the host is not the limit.
#   bash bench/micro/measure_queued.sh OUTDIR        (on the H100: the device tool; needs cupy, nvcc, pydantic;
#                                                     SKIP_FLOOR=1 leaves the launch-floor micro out)
set -euo pipefail
OUT=${1:?usage: measure_queued.sh OUTDIR}
PY=${PYTHON:-python3}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
mkdir -p "$OUT"
[ -n "${SKIP_FLOOR:-}" ] || $PY bench/micro/launch_floor.py --ncu > "$OUT/launch_floor_h100.json"
SMALL=coalescedMultiply,coalescedMultiply_padded,dgemm_unroll,dgemm_unroll_128b,dgemm_unroll_128b_prefsmem,dgemm_unroll_db,dgemm_unroll_db_128b,dgemm_unroll_db_128b_prefsmem,naiveMatMatMul,naiveMatMatMul_corrected,sgemm_maxas_128,sgemm_maxas_64,simpleMatMatMul,simpleMatMatMul_corrected,simpleMultiply
$PY -m gpusim.measure.run --queued --out "$OUT/queued" --sizes-from 64,128,256 --workloads $SMALL --deadline 240
$PY -m gpusim.measure.run --queued --out "$OUT/queued_large" --sizes-from 512,1024 --workloads coalescedMultiply,coalescedMultiply_padded --deadline 60
$PY -m gpusim.measure.run --queued --out "$OUT/queued_suite12" --sizes-from 512 --workloads copy_float4,transpose_smem,transpose_smem_padded,transpose_naive --deadline 60
