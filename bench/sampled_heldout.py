"""Sampled vs detailed cycles on cases outside bench/speed.py's table (held out from the choices made
with that table): the DGEMMs on the H100, the SGEMMs on the GTX 970 and the K40, two FP64 kernels on
the K40. Detailed results are kept in bench/results/sampled_heldout.json (a rerun skips them: they
take minutes); sampled mode is rerun every time.

The last group (FRESH) was added after the sampler changes that the first group had diagnosed.

Usage: python bench/sampled_heldout.py  (about 15 minutes the first time, a few minutes after)
"""

import json
import time
from pathlib import Path

from gpusim.timing.driver import run_workload

RESULTS = Path(__file__).parent / "results" / "sampled_heldout.json"
DGEMMS = ["dgemm_unroll", "dgemm_unroll_128b", "dgemm_unroll_128b_prefsmem", "dgemm_unroll_db",
          "dgemm_unroll_db_128b", "dgemm_unroll_db_128b_prefsmem"]
CASES = ([(w, "h100", 512) for w in DGEMMS]
         + [(w, c, 512) for c in ("gtx970", "k40") for w in ("sgemm_maxas_64", "sgemm_maxas_128")]
         + [("dgemm_unroll", "k40", 512), ("dgemm_unroll_db", "k40", 512),
            ("sgemm_maxas_64", "gtx970", 1024), ("sgemm_maxas_128", "k40", 1024)])
# added after the sampler changes of 2026-11-22 that the cases above had diagnosed (per-CTA rates,
# made-up iterations, several SMs, three-wave rule): not looked at while making them
FRESH = [("sgemm_maxas_128", "gtx970", 1024), ("sgemm_maxas_64", "k40", 1024), ("dgemm_unroll_128b", "k40", 512),
         ("dgemm_unroll_db_128b_prefsmem", "k40", 512), ("naiveMatMatMul_corrected", "h100", 512),
         ("simpleMatMatMul", "h100", 512)]


def main():
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    errors = []
    print(f"{'workload':32s} {'card':7s} {'n':>5s} {'detailed cycles':>16s} {'sampled':>9s} {'error est.':>10s}")
    for name, card, n in CASES + FRESH:
        key = f"{name}:{card}:{n}"
        row = results.setdefault(key, {})
        if "detailed_cycles" not in row:
            t0 = time.perf_counter()
            row["detailed_cycles"] = run_workload(name, card, n).cycles
            row["detailed_wall_s"] = round(time.perf_counter() - t0, 1)
        s = run_workload(name, card, n, mode="sampled")
        row["sampled_cycles"], row["sampled_error_estimate"] = s.cycles, s.sampling["error_estimate"]
        RESULTS.write_text(json.dumps(results, indent=1))
        err = s.cycles / row["detailed_cycles"] - 1
        errors.append(abs(err))
        print(f"{name:32s} {card:7s} {n:5d} {row['detailed_cycles']:16,.0f} {err:+9.2%} {s.sampling['error_estimate']:10.3f}",
              flush=True)
    for label, part in (("all", errors), ("first 14", errors[:len(CASES)]), ("fresh", errors[len(CASES):])):
        print(f"{label}: mean |sampled - detailed| {sum(part) / len(part):.2%}, max {max(part):.2%}, "
              f"within 2%: {sum(e <= 0.02 for e in part)}/{len(part)}")


if __name__ == "__main__":
    main()
