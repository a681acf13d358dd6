#!/bin/bash
# DRAM bytes of the suite's H100 cases profiled in one Nsight pass (issue 12, DRAM write bytes).
# validation/h100/{small,ncu_large,suite12} hold DRAM bytes collected with the full metric set, over
# several dozen replay passes; Nsight restores the memory a kernel writes before each pass, and a
# read-only microbenchmark showed 2.26 MiB of DRAM writes that way against 0.06 MiB in one pass
# (validation/h100/micro/dram_writes_h100.json). This profiles every H100 case with DRAM bytes and
# cycles alone (`--ncu-metrics dram`: one pass, cache flushed before it as before), then a few cases a
# second time with each set, to tell the metric set's effect from run-to-run spread.
#   bash bench/micro/measure_dram_single.sh OUTDIR     (on the H100; needs cupy, nvcc, ncu, pydantic)
# OUTDIR gets one archive per run (the device tool brings back few files). REPEAT_ONLY=N: instead,
# N further one-pass runs of every case of n >= 512 (dram_suite12_rI, dram_seeds_rI), for the spread.
# PRIMED_ONLY=N: N one-pass runs of the suite12 cases at n = 512 (dram_suite12_primed_rI).
set -euo pipefail
OUT=${1:?usage: measure_dram_single.sh OUTDIR}
PY=${PYTHON:-python3}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
mkdir -p "$OUT"
SEEDS=coalescedMultiply,coalescedMultiply_padded,dgemm_unroll,dgemm_unroll_128b,dgemm_unroll_128b_prefsmem,dgemm_unroll_db,dgemm_unroll_db_128b,dgemm_unroll_db_128b_prefsmem,naiveMatMatMul,naiveMatMatMul_corrected,sgemm_maxas_128,sgemm_maxas_64,simpleMatMatMul,simpleMatMatMul_corrected,simpleMultiply
SUITE12=copy_float4,dgemm_naive_coalesced,dgemm_regtile,sgemm_naive_coalesced,sgemm_naive_colmajor,sgemm_naive_colmajor_coalesced,sgemm_naive_rowmajor,sgemm_regtile1d,sgemm_regtile2d,sgemm_smem,sgemm_smem_padded,sgemm_vec4,sgemm_vec4_dbuf,sgemm_warptile,transpose_naive,transpose_smem,transpose_smem_padded
REPEAT=dgemm_unroll,sgemm_regtile2d,sgemm_smem,copy_float4
run() {  # name, then measure.run's options
    local name=$1; shift
    $PY -m gpusim.measure.run --out "$OUT/$name" --reps 0 --no-check --ncu --ncu-timeout 150 "$@" 2>&1 | tee "$OUT/$name.log" || true
    tar czf "$OUT/$name.tgz" -C "$OUT" "$name" && rm -rf "${OUT:?}/$name"
}
if [ -n "${PRIMED_ONLY:-}" ]; then  # N one-pass runs of the suite12 cases at n = 512 with the ncu child's
    # context primed (gpusim.measure.run --single now launches a kernel of its own first): in the runs above
    # n = 512 was each child's first kernel, which starts with dirty data the flush left (dram_first_h100.json)
    for i in $(seq 1 "$PRIMED_ONLY"); do
        run dram_suite12_primed_r$i --ncu-metrics dram --workloads $SUITE12 --sizes-from 512 --deadline ${DEADLINE1:-120}
    done
    exit 0
fi
if [ -n "${REPEAT_ONLY:-}" ]; then  # further one-pass runs of every case that writes (n >= 512): the spread
    for i in $(seq 2 $((REPEAT_ONLY + 1))); do
        run dram_suite12_r$i --ncu-metrics dram --workloads $SUITE12 --sizes-from 512,1024,2048 --deadline ${DEADLINE1:-120}
        run dram_seeds_r$i --ncu-metrics dram --workloads $SEEDS --sizes-from 512,1024,2048 --deadline ${DEADLINE2:-120}
    done
    exit 0
fi
run dram_suite12 --ncu-metrics dram --workloads $SUITE12 --sizes-from 512,1024,2048 --deadline ${DEADLINE1:-200}
run dram_seeds --ncu-metrics dram --workloads $SEEDS --sizes-from 64,128,256,512,1024,2048 --deadline ${DEADLINE2:-200}
run repeat_dram --ncu-metrics dram --workloads $REPEAT --sizes-from 512,1024,2048 --deadline ${DEADLINE3:-60}
run repeat_all --ncu-metrics all --workloads $REPEAT --sizes-from 512,1024,2048 --deadline ${DEADLINE4:-100}
