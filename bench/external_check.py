"""gpusim on kernels it was never tuned on: the external-check kernels (traces/external/) against their
measurements on an H200 (validation/h200/external/, `bash traces/external/measure.sh OUT` on the device).

Each (kernel, size) is simulated in sampled mode on the `h200` card twice, as `gpusim validate` does
for its rows: warm L2 against the CUDA-event time, cold against Nsight Compute's cycles, stall mix and
(one-pass profile, `dram/`) DRAM bytes. Simulations are kept under out/external_check/ (delete it, or
pass --redo, after a model change), so a crashed run resumes where it stopped.

    python bench/external_check.py [--workers 2] [--redo] [--out bench/results/external_check_h200.txt]
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEASURED = ROOT / "validation" / "h200" / "external"
SPECS = ROOT / "traces" / "external"
CACHE = ROOT / "out" / "external_check"
CARD = "h200"


def simulate(job):
    """(spec path, size, cache state) -> the result dict (cached on disk)."""
    spec, size, state = job
    path = CACHE / f"{Path(spec).stem}__n{size}__{state}.json"
    if path.exists():
        return json.loads(path.read_text())
    from gpusim import validate as V

    return V._simulate_to_cache(V.Case(workload=spec, size=size, card=CARD, mode="sampled", source="external", l2=state),
                                str(path))


def cases():
    """[(spec path, size, record path, one-pass DRAM record path)] for every measured size."""
    out = []
    for rec_path in sorted(MEASURED.glob("*__n*.json")):
        name, size = rec_path.stem.split("__n")
        dram = MEASURED / "dram" / rec_path.name
        out.append((str(SPECS / f"{name}.yaml"), int(size), rec_path, dram if dram.exists() else None))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--redo", action="store_true", help="simulate again (drop out/external_check/)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "external_check_h200.txt"))
    args = ap.parse_args(argv)
    from gpusim import validate as V

    if args.redo:
        for p in CACHE.glob("*.json"):
            p.unlink()
    todo = cases()
    if not todo:
        print(f"external_check: no records in {MEASURED}", file=sys.stderr)
        return 2
    jobs = [(spec, size, state) for spec, size, _, _ in todo for state in ("warm", "cold")]
    with ProcessPoolExecutor(max_workers=max(1, args.workers)) as pool:
        sims = dict(zip(jobs, pool.map(simulate, jobs)))
    rows = []
    for spec, size, rec_path, dram_path in todo:
        rec = json.loads(rec_path.read_text())
        rel = str(rec_path.relative_to(ROOT))
        case = V.Case(workload=spec, size=size, card=CARD, mode="sampled", source="external", path=rel, ncu_path=rel)
        dram = None
        if dram_path:
            d = json.loads(dram_path.read_text())
            dram = {"read": V._metric(d, "dram__bytes_read.sum"), "write": V._metric(d, "dram__bytes_write.sum"),
                    "records": [str(dram_path.relative_to(ROOT))]}
        row = V.build_row(case, sims[(spec, size, "warm")], sims[(spec, size, "cold")], rec, rec, dram)
        row["workload"] = Path(spec).stem
        rows.append(row)
    lines = [f"gpusim ({CARD} card, sampled mode) on the external-check kernels (traces/external/), measured on an "
             "H200 (validation/h200/external/)", "",
             f"{'kernel':18s} {'n':>9s} {'event ms':>9s} {'sim ms':>8s} {'time %':>7s} {'ncu cyc':>10s} "
             f"{'cyc %':>6s} {'rd MiB':>8s} {'rd %':>6s} {'wr MiB':>8s} {'wr %':>6s} {'dist':>5s}  top stall (Nsight / gpusim)"]

    def f(v, spec):
        return format(v, spec) if v is not None else "-"
    for r in rows:
        mib = 2.0 ** 20
        mt, pt = (r.get("measured_top_stalls") or [["-"]])[0][0], (r.get("predicted_top_stalls") or [["-"]])[0][0]
        lines.append(
            f"{r['workload']:18s} {r['size']:9d} {r['measured_time_ms']:9.4f} {f(r.get('predicted_time_ms'), '8.4f')} "
            f"{f(r.get('time_error_pct'), '+7.1f')} {f(r.get('ncu_cycles'), '10.0f')} {f(r.get('cycles_error_pct_vs_ncu'), '+6.1f')} "
            f"{f((r.get('measured_dram_read_bytes') or 0) / mib, '8.1f')} {f(r.get('dram_read_error_pct'), '+6.1f')} "
            f"{f((r.get('measured_dram_write_bytes') or 0) / mib, '8.1f')} {f(r.get('dram_write_error_pct'), '+6.1f')} "
            f"{f(r.get('stall_distance'), '5.3f')}  {mt} / {pt}{'' if mt == pt else '  *'}")
    s = V.summarize(rows)
    t, c = s["time"], s["cycles_vs_ncu"]
    lines += ["", f"time (events, warm): MAPE {t['mape_pct']:.1f}% (median {t['median_ape_pct']:.1f}%, mean signed "
              f"{t['mean_signed_pct']:+.1f}%) over {t['n']}; cycles vs Nsight (cold): MAPE {c['mape_pct']:.1f}% "
              f"(mean signed {c['mean_signed_pct']:+.1f}%)",
              f"top stall as Nsight's: {s['top_stall_match']['matches']} of {s['top_stall_match']['n']}; "
              f"stall distance mean {s['stall_distance']['mean']:.3f}"]
    for kind in ("dram_read_bytes", "dram_write_bytes"):
        b = s[kind]["above_noise"]
        if b["n"]:
            lines.append(f"{kind.replace('_', ' ')} above 0.25 MiB: MAPE {b['mape_pct']:.1f}% over {b['n']}")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
