"""How long the sampler's rate windows should be, judged without detailed mode: at n=2048 (detailed
mode is out of reach there), each kernel's sampled run with fast-forwards against the same sampled
run without any (every main-loop iteration simulated), for windows of 4, 8 and 16 iterations. The
default (`Sampler(window_iterations=...)`) was chosen from this table. Writes
bench/results/sampled_window.txt.

Usage: python bench/sampled_window.py  (about 5 minutes)
"""

import time
from pathlib import Path

from gpusim.timing.driver import run_workload
from gpusim.timing.gpu import GPU

OUT = Path(__file__).parent / "results" / "sampled_window.txt"
CASES = [("sgemm_maxas_64", "h100"), ("sgemm_maxas_128", "h100"), ("sgemm_maxas_64", "gtx970"),
         ("sgemm_maxas_128", "k40"), ("dgemm_unroll_db_128b", "gtx970"), ("dgemm_unroll", "h100"),
         ("sgemm_maxas_128", "gtx970"), ("dgemm_unroll_db", "k40")]
WINDOWS = (4, 8, 16)


def cycles(name, card, **options):
    GPU.sampler_options = options
    try:
        t0 = time.perf_counter()
        r = run_workload(name, card, 2048, mode="sampled")
        return r.cycles, time.perf_counter() - t0
    finally:
        GPU.sampler_options = {}


def main():
    lines = [f"{'kernel':34s} {'no fast-forward':>16s} " + " ".join(f"{f'{w} it.':>16s}" for w in WINDOWS)]
    errors = {w: [] for w in WINDOWS}
    for name, card in CASES:
        ref, wall = cycles(name, card, tolerance=-1.0)  # never converges: every iteration simulated
        row = f"{name + ' ' + card:34s} {ref:12,.0f} {wall:3.0f}s"
        for w in WINDOWS:
            c, wall = cycles(name, card, window_iterations=w)
            errors[w].append(abs(c / ref - 1))
            row += f" {c / ref - 1:+9.2%} {wall:4.1f}s"
        lines.append(row)
        print(row, flush=True)
    for w in WINDOWS:
        e = errors[w]
        lines.append(f"{w:2d}-iteration windows: mean |fast-forward - none| {sum(e) / len(e):.2%}, max {max(e):.2%}")
    OUT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-len(WINDOWS):]))


if __name__ == "__main__":
    main()
