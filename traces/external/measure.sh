#!/bin/bash
# Measure the external-check kernels (this folder) on the local GPU: CUDA events (warm L2, 20 timed
# launches after warm-up) and one Nsight Compute launch per size with the suite's full metric set.
#   bash traces/external/measure.sh OUTDIR [SPEC ...]   (from the checkout root; needs cupy, nvcc, ncu, pydantic;
#                                                     default: every spec of this folder)
# Each workload is measured at the sizes its spec lists (measure.run's default window is the suite's).
# OUTDIR/dram/ gets DRAM bytes from a second, one-pass profile (`--ncu-metrics dram`): the full set's
# replay passes add the profiler's own DRAM writes (validation/README.md).
set -euo pipefail
OUT=${1:?usage: measure.sh OUTDIR [SPEC ...]}
shift
specs=("$@")
[ ${#specs[@]} -eq 0 ] && specs=(traces/external/*.yaml)
PY=${PYTHON:-python3}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
mkdir -p "$OUT"
for spec in "${specs[@]}"; do
    sizes=$($PY -c "import yaml,sys; print(','.join(str(s) for s in yaml.safe_load(open(sys.argv[1]))['sizes']))" "$spec")
    $PY -m gpusim.measure.run --out "$OUT" --workloads "$spec" --sizes-from "$sizes" --reps 20 \
        --ncu --ncu-sizes all --ncu-timeout 200 --max-gib 4 2>&1 | tee -a "$OUT/measure.log" || true
    $PY -m gpusim.measure.run --out "$OUT/dram" --workloads "$spec" --sizes-from "$sizes" --reps 0 --no-check \
        --ncu --ncu-metrics dram --ncu-sizes all --ncu-timeout 200 --max-gib 4 2>&1 | tee -a "$OUT/measure.log" || true
done
