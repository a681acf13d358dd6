#!/bin/sh
# The GPU side of the second difftest family, in one command (run from anywhere):
#     sh tests/difftest/device_run.sh OUTDIR
# Needs python3 and the CUDA driver (libcuda.so.1), no numpy and no toolkit. The cubin is made here by
# gen2.py into tests/difftest/build/ (git-ignored: carry that path to the GPU machine); it must match
# the hash committed beside the listing. Writes OUTDIR/<kernel>.bin, inputs.bin, device.txt,
# repeat.txt (run_golden2.py) and nvidia-smi.txt; then pack2.py OUTDIR makes the golden npz.
set -eu
out=${1:?usage: device_run.sh OUTDIR}
cd "$(dirname "$0")/../.."
cubin=tests/difftest/build/difftest2.cubin
if [ ! -f "$cubin" ]; then
    echo "device_run.sh: $cubin is missing (make it with tests/difftest/gen2.py and carry tests/difftest/build)" >&2
    exit 2
fi
want=$(cat tests/difftest/golden/difftest2_sm_90.cubin.sha256)
got=$(python3 -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$cubin")
if [ "$want" != "$got" ]; then
    echo "device_run.sh: $cubin (sha256 $got) is not the cubin of the committed listing ($want)" >&2
    exit 2
fi
mkdir -p "$out"
nvidia-smi -L > "$out/nvidia-smi.txt" 2>&1 || true
python3 tests/difftest/run_golden2.py "$cubin" "$out"
