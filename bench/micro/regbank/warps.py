#!/usr/bin/env python3
"""FMA issue rate against warps per sub-partition: gpusim beside the H100 (issue 12 notes).

    python3 bench/micro/regbank/warps.py [--set FIELD=VALUE ...]   # ~1 minute; table on stdout
    python3 bench/micro/regbank/warps.py --mix                     # the IMAD and mixed loops (H200 rates);
                                                                   # bench/results/regbank_mix_h200.txt

The specs here run bench/micro/regbank.cu's kernels as a user's kernels (one CTA of n warps per SM,
120 KB of dynamic shared memory keeping it alone, FMAs whose sources follow one pattern: tp, abc,
outer, outer8; see regbank.cu). gpusim's rate is FMAs per SM-cycle of the timed loop: the kernel
run (sampled mode) at 512 and at 256 iterations, FMAs of the difference over its cycles. The H100's
are run_regbank.py's, measured with clock64 around the same loop (validation/h100/micro/regbank_h100.json
`rates`, the median over SMs and launches). With `--mix`: the IMAD and IMAD.WIDE chains, and abc's FFMAs
each followed by an IMAD, an IMAD.WIDE or an IADD3, against the H200's rates (`run_regbank.py --mix`,
validation/h100/micro/regbank_imad_h200.json `mix`; the H200's SM is the H100's: tp and abc repeat within
2%); their rate counts 64 instructions per warp per iteration as the FMAs (IMADs, or the FFMAs).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
MEASURED = os.path.join(REPO, "validation", "h100", "micro", "regbank_h100.json")
KERNELS = ("tp_ffma", "abc_ffma", "outer_ffma", "outer8_ffma", "tp_dfma", "abc_dfma")
MIX_MEASURED = os.path.join(REPO, "validation", "h100", "micro", "regbank_imad_h200.json")
MIX_KERNELS = ("imad_i", "imadw_i", "fimad_ffma", "fimadw_ffma", "mix1_ffma")
FMAS_PER_ITER = 64


def simulated_rate(spec_text: str, warps: int, sets: list[str], tmp: str) -> float:
    cycles = {}
    for iters in (256, 512):
        path = os.path.join(tmp, f"spec_{iters}.yaml")
        with open(path, "w") as f:
            f.write(spec_text.replace("value: 256", f"value: {iters}")
                    .replace("source: ../regbank.cu", "source: " + os.path.join(os.path.dirname(HERE), "regbank.cu")))
        out = os.path.join(tmp, "result.json")
        cmd = [sys.executable, "-m", "gpusim", "run", path, "--gpu", "h100", "--size", str(warps), "--mode", "sampled",
               "--json", out] + [a for s in sets for a in ("--set", s)]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
        if proc.returncode:
            sys.exit(f"{path}: gpusim run failed: {(proc.stderr or proc.stdout).strip().splitlines()[-1]}")
        with open(out) as f:
            cycles[iters] = json.load(f)["cycles"]
    return warps * FMAS_PER_ITER * 256 * 2 / (cycles[512] - cycles[256])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", action="append", default=[], help="config override passed to gpusim run")
    ap.add_argument("--mix", action="store_true", help="the IMAD and mixed loops against the H200's rates")
    args = ap.parse_args()
    with open(MIX_MEASURED if args.mix else MEASURED) as f:
        measured = json.load(f)["mix" if args.mix else "rates"]
    kernels = MIX_KERNELS if args.mix else KERNELS
    print(("Instructions (IMADs, or FFMAs) per SM-cycle, gpusim (h100, sampled) / H200" if args.mix else
           "FMAs per SM-cycle, gpusim (h100, sampled) / H100") + ", by warps per SM (1, 2, 4, 8 per sub-partition)")
    print(f"{'kernel':12s} " + " ".join(f"{w:>18d}" for w in (4, 8, 16, 32)))
    with tempfile.TemporaryDirectory() as tmp:
        for k in kernels:
            with open(os.path.join(HERE, f"{k}.yaml")) as f:
                text = f.read()
            sizes = json.loads(re.search(r"sizes: (\[.*\])", text).group(1))
            cells = []
            for w in (4, 8, 16, 32):
                hw = measured[k].get(str(w), {}).get("fma_per_sm_cycle")
                if w not in sizes or hw is None:
                    cells.append(f"{'-':>18s}")
                    continue
                sim = simulated_rate(text, w, args.set, tmp)
                cells.append(f"{sim:.2f} / {hw:.2f} {100 * (sim / hw - 1):+4.0f}%".rjust(18))
            print(f"{k:12s} " + " ".join(cells), flush=True)


if __name__ == "__main__":
    main()
