#!/bin/bash
# Measure microbenchmarks written as user kernels with specs (bench/micro/l1rows/, bench/micro/cpasync/)
# on the local GPU with gpusim's harness: CUDA events (20 timed launches after warm-up) and one Nsight
# Compute launch per size (full metric set), each spec at the sizes it lists.
#   bash bench/micro/measure_specs.sh OUTDIR SPEC...   (from the checkout root; needs cupy, nvcc, ncu, pydantic)
#   e.g. bash bench/micro/measure_specs.sh /tmp/l1rows bench/micro/l1rows/*.yaml
set -euo pipefail
OUT=${1:?usage: measure_specs.sh OUTDIR SPEC...}
shift
[ $# -gt 0 ] || { echo "measure_specs.sh: no spec given (e.g. bench/micro/l1rows/*.yaml)" >&2; exit 2; }
PY=${PYTHON:-python3}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv > "$OUT/gpu.csv" || true
for spec in "$@"; do
    sizes=$($PY -c "import yaml,sys; print(','.join(str(s) for s in yaml.safe_load(open(sys.argv[1]))['sizes']))" "$spec")
    $PY -m gpusim.measure.run --out "$OUT" --workloads "$spec" --sizes-from "$sizes" --reps 20 \
        --ncu --ncu-sizes all --ncu-timeout 200 --max-gib 4 2>&1 | tee -a "$OUT/measure.log" || true
done
