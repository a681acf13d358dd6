#!/bin/bash
# The measurements taken only on an H200 so far (no H100 was lent in those sessions), in one batch for the
# next H100 session: each command is the one its H200 result file records in meta.command_line (or env.argv),
# writing the same name with _h100 (l2_sources/ for the suite's L2 profiles). About 4-6 minutes of device time
# in all (each set took 5-15 s of profiling on the H200, plus compiles and the suite's profiles).
#   bash bench/micro/pending_h100.sh OUTDIR    (from the checkout root on the H100 machine; cupy, nvcc, ncu)
# Then copy OUTDIR/*.json to validation/h100/micro/, OUTDIR/l2_sources to validation/h100/l2_sources/,
# OUTDIR/tpose to validation/h100/tpose/, and convert OUTDIR/tpose_source/source.csv with ncu_source.py --to-json.
set -euo pipefail
OUT=${1:?usage: bench/micro/pending_h100.sh OUTDIR}
name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
case "$name" in
    *H100*) ;;
    *) echo "pending_h100.sh: needs an H100 (this machine's GPU: '${name:-none}')" >&2; exit 2 ;;
esac
PY=${PYTHON:-python3}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
mkdir -p "$OUT"
step() { echo "== $*"; "$@" || echo "pending_h100.sh: failed: $*" >&2; }
# partly written sectors: what L2 holds, what crowds it, neighbouring lines (README, DRAM writes, pkeep)
step $PY bench/micro/run_dram_writes.py --set pkeep --out "$OUT/dram_pkeep_h100.json"
# a GEMM epilogue's four store forms after hot reads (epi) and DRAM rate against run length (run)
step $PY bench/micro/run_dram_writes.py --set epi --out "$OUT/dram_epi_h100.json"
step $PY bench/micro/run_dram_writes.py --set run --out "$OUT/dram_run_h100.json"
# FFMA crowding diluted, split, IMAD rates; parked warps (README, FP32 FMA issue)
step $PY bench/micro/run_regbank.py --warps 4,8,12,16,24,32 --mix --ncu --out "$OUT/regbank_mix_h100.json"
step $PY bench/micro/run_regbank.py --warps 4,8,12,16,24,32 --park --ncu --reps 3 --out "$OUT/regbank_park_h100.json"
step $PY bench/micro/run_regbank.py --warps 16 --slots --only-extra --ncu --out "$OUT/regbank_slots_h100.json"
# dirty data across launches, and their write-back's cost inside a read stream (README, DRAM's two directions)
step $PY bench/micro/dirty_gap.py --ncu --out "$OUT/dirty_gap_h100.json"
# CTA life (the H200's read spread), L2 bandwidth
step $PY bench/micro/cta_life.py --out "$OUT/cta_life_h100.json"
step $PY bench/micro/run_memory.py --only bandwidth --ncu --out "$OUT/memory_l2_h100.json"
# the MIO queue's pool and the S2R wait behind it (bench/micro/README.md mioq, s2rq); the transpose skeletons
# (records to validation/h100/tpose/) and their Nsight source page
step $PY bench/micro/run_memory.py --only mioq,s2rq --out "$OUT/memory29_h100.json"
# the read latency's spread SM by SM (memory.dram.read_spread_cycles) and a warp's loads returning in order
# (sm.global_loads_return_in_order): chase_sm, hbm
step $PY bench/micro/run_memory.py --only chase_sm,hbm --out "$OUT/memory32_h100.json"
step bash bench/micro/measure_specs.sh "$OUT/tpose" bench/micro/tpose/*.yaml
step $PY bench/micro/ncu_source.py --out "$OUT/tpose_source" --only tp_lds_1024,tp_l2_1024,tp_dram_1024
# the suite's L2 sources (near/far partition traffic) on the card it is judged on
L2="--reps 0 --no-check --ncu --ncu-metrics l2 --ncu-sizes all --ncu-timeout 200 --max-gib 4"
step $PY -m gpusim.measure.run --out "$OUT/l2_sources" --workloads sgemm_naive_coalesced,sgemm_smem,sgemm_maxas_64,sgemm_regtile2d,sgemm_regtile1d,dgemm_unroll,dgemm_regtile,dgemm_naive_coalesced \
    --sizes-from 2048 $L2
step $PY -m gpusim.measure.run --out "$OUT/l2_sources" --workloads transpose_naive,transpose_smem,copy_float4 --sizes-from 512,1024 $L2
echo "pending_h100.sh: results in $OUT"
