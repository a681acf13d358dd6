"""Sampled mode on every workload and size of the suite, on one card per architecture (H100, GTX 970,
K40): that it runs, how long it takes, and how it got its answer (SMs simulated, fast-forwards,
made-up iterations, whether the elided trace sufficed). Results are appended to
bench/results/sampled_sweep.json as they come (a rerun skips the cases already there; a case that
fails is recorded with its error), then summarised.

Usage: python bench/sampled_sweep.py [--workers 2] [--cards h100,gtx970,k40]
"""

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "sampled_sweep.json"
ARCH = {"h100": "sm_90", "gtx970": "sm_52", "k40": "sm_35"}


def one(name: str, card: str, n: int) -> dict:
    from gpusim.timing.driver import run_workload

    t0 = time.perf_counter()
    try:
        r = run_workload(name, card, n, mode="sampled")
    except Exception as exc:  # recorded, not raised: the sweep goes on
        return {"error": f"{type(exc).__name__}: {exc}", "wall_s": round(time.perf_counter() - t0, 2)}
    s = r.sampling
    return {"cycles": r.cycles, "wall_s": round(time.perf_counter() - t0, 2),
            "sms_simulated": s["sms_simulated"], "ctas_simulated": s["ctas_simulated"],
            "fast_forwards": s["fast_forwards"], "synthesized_iterations": s["synthesized_iterations"],
            "elided": s["trace_left_out_instructions"] > 0, "error_estimate": s["error_estimate"]}


def main():
    from gpusim.workloads import list_workloads

    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cards", default="h100,gtx970,k40")
    args = ap.parse_args()
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    todo = [(wl.name, card, n) for card in args.cards.split(",") for wl in list_workloads()
            if ARCH[card] in wl.archs for n in wl.sizes if f"{wl.name}:{card}:{n}" not in results]
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        futures = {pool.submit(one, *case): case for case in todo}
        for fut in as_completed(futures):
            key = ":".join(map(str, futures[fut]))
            results[key] = fut.result()
            RESULTS.parent.mkdir(parents=True, exist_ok=True)
            RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True))
            print(key, results[key], flush=True)
    ok = [v for v in results.values() if "error" not in v]
    slow = sorted(results.items(), key=lambda kv: -kv[1]["wall_s"])[:5]
    print(f"{len(ok)} of {len(results)} cases ran; the trace left loop iterations out in "
          f"{sum(v['elided'] for v in ok)}; several SMs simulated in {sum(v['sms_simulated'] > 1 for v in ok)}; "
          f"median wall {sorted(v['wall_s'] for v in ok)[len(ok) // 2]:.1f} s; slowest: "
          + ", ".join(f"{k} {v['wall_s']:.1f} s" for k, v in slow))
    for k, v in results.items():
        if "error" in v:
            print(f"FAILED {k}: {v['error']}")


if __name__ == "__main__":
    main()
