#!/bin/sh
# The GPU side of both difftest families, in one command (run from the repository root or anywhere):
#     sh tests/difftest/device_run.sh OUTDIR
# Needs python3 and the CUDA driver (libcuda.so.1), no numpy and no toolkit. The cubins are made here
# by gen.py and gen2.py into tests/difftest/build/ (git-ignored: carry that path to the GPU machine);
# each must match the hash committed beside its listing. Runs every kernel of both families twice
# (run_golden.py, run_golden2.py) and writes OUTDIR/difftest_run.tar.gz holding family1/ and family2/
# (each: <kernel>.bin, inputs.bin, device.txt, repeat.txt), nvidia-smi.txt and log.txt. Then, here:
#     mkdir -p RUN && tar xzf OUTDIR/difftest_run.tar.gz -C RUN
#     python3 tests/difftest/pack.py RUN/family1 && python3 tests/difftest/pack2.py RUN/family2
set -eu
out=${1:?usage: device_run.sh OUTDIR}
cd "$(dirname "$0")/../.."
verify() {  # cubin, file holding the committed sha256
    if [ ! -f "$1" ]; then
        echo "device_run.sh: $1 is missing (make it with tests/difftest/gen.py / gen2.py and carry tests/difftest/build)" >&2
        exit 2
    fi
    want=$(cat "$2")
    got=$(python3 -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$1")
    if [ "$want" != "$got" ]; then
        echo "device_run.sh: $1 (sha256 $got) is not the cubin of the committed listing ($want)" >&2
        exit 2
    fi
}
verify tests/difftest/build/difftest.cubin tests/difftest/golden/difftest_sm_90.cubin.sha256
verify tests/difftest/build/difftest2.cubin tests/difftest/golden/difftest2_sm_90.cubin.sha256
work=$(mktemp -d)
nvidia-smi -L > "$work/nvidia-smi.txt" 2>&1 || true
status=0
# a kernel that hangs (d2_converge, last, relies on lanes of two paths meeting) is stopped after 240 s;
# what was written before it is kept
timeout 240 python3 tests/difftest/run_golden.py tests/difftest/build/difftest.cubin "$work/family1" \
    >> "$work/log.txt" 2>&1 || status=$?
timeout 240 python3 tests/difftest/run_golden2.py tests/difftest/build/difftest2.cubin "$work/family2" \
    >> "$work/log.txt" 2>&1 || status=$?
cat "$work/log.txt"
mkdir -p "$out"
tar czf "$out/difftest_run.tar.gz" -C "$work" .
echo "device_run.sh: wrote $out/difftest_run.tar.gz (exit status $status)"
exit "$status"
