#!/bin/bash
# Measure the L1 microbenchmarks of this folder on the local GPU with gpusim's harness: CUDA events
# (20 timed launches after warm-up) and one Nsight Compute launch per size (full metric set).
#   bash bench/micro/l1rows/measure.sh OUTDIR [SPEC ...]   (from the checkout root; needs cupy, nvcc, ncu, pydantic)
set -euo pipefail
OUT=${1:?usage: measure.sh OUTDIR [SPEC ...]}
shift
PY=${PYTHON:-python3}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv > "$OUT/gpu.csv" || true
specs=("$@")
[ ${#specs[@]} -eq 0 ] && specs=(bench/micro/l1rows/*.yaml)
for spec in "${specs[@]}"; do
    sizes=$($PY -c "import yaml,sys; print(','.join(str(s) for s in yaml.safe_load(open(sys.argv[1]))['sizes']))" "$spec")
    $PY -m gpusim.measure.run --out "$OUT" --workloads "$spec" --sizes-from "$sizes" --reps 20 \
        --ncu --ncu-sizes all --ncu-timeout 200 --max-gib 4 2>&1 | tee -a "$OUT/measure.log" || true
done
