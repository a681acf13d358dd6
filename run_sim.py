"""The main job: replay the seed GEMM variants on the cards the seeds are about and on the H100, and report.

Each seed document's variants (traces/kernels/seed*.cu) run on the card of that seed's era
(`HOME`: the DGEMM family and maxas on the GTX 970, whose DGEMM times seed 000 measured; the
Fermi/Kepler-era matrix products of seeds 001 and 003 on the Kepler K40) and on the H100, where we
measured every one (validation/h100/timing). `--all` runs every variant on every card named by
`--cards` instead. For each, gpusim emulates the committed real SASS, times it in sampled mode, and
prints one table: variant, card, predicted time, measured time where known, error, and the top three
stall reasons. It writes results.json and an HTML report (gpusim.viz) into the output folder it
names. Needs no GPU and no CUDA toolchain. Results are cached in the output folder, so a rerun (or
an interrupted run) is quick. bench/run_sim_time.py times it from an empty cache.

Usage: python run_sim.py [OUTDIR] [--cards gtx970,k40,h100] [--all]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from concurrent.futures import as_completed
from pathlib import Path

from rich.progress import Progress
from rich.table import Table

from gpusim import REPO_ROOT
from gpusim.console import make_console, print_table
from gpusim.interrupt import Interrupted, WorkerPool, handle_signals, leave
from gpusim.timing.results import SimResult
from gpusim.validate import GTX970_DGEMM  # the seed-000 GTX 970 table (seconds per GEMM)
from gpusim.workloads import list_workloads

# the card of each seed's era (the seeds' own measurements: GTX 970 for seed 000; seeds 001 and 003
# discuss Fermi/Kepler banks and a Tesla M2090, whose nearest card here is the K40); plus the H100
HOME = {"seed000_dgemm.cu": ("gtx970",), "seed001_matmatmul.cu": ("k40",), "seed002_sgemm_maxas.cu": ("gtx970",),
        "seed003_aat.cu": ("k40",)}


def size_for(wl) -> int:
    """The smallest size >= 1024 measured on the H100 (1024 for the GEMMs, M = 2048 for C = AA^T)."""
    measured = [s for s in sorted(wl.sizes) if s >= 1024
                and (REPO_ROOT / "validation" / "h100" / "timing" / f"{wl.name}__n{s}.json").exists()]
    return measured[0] if measured else min(s for s in wl.sizes if s >= 1024)


def measured_time(name: str, card: str, n: int) -> tuple[float | None, str]:
    if card == "gtx970" and name in GTX970_DGEMM:
        return GTX970_DGEMM[name].get(n), "seed 000 (GTX 970)"
    if card == "h100":
        path = REPO_ROOT / "validation" / "h100" / "timing" / f"{name}__n{n}.json"
        if path.exists():
            rec = json.loads(path.read_text())
            ms = (rec.get("timing") or {}).get("median_ms")
            return (ms / 1e3 if ms else None), "H100 (validation/h100)"
    return None, ""


def simulate(name: str, card: str, n: int, cache: Path, figure: tuple[int, int, Path]) -> tuple[SimResult, dict]:
    """The result (from the cache or simulated) and its report figures, rendered here, in the worker,
    while the other jobs still run: figure = (its index in the report, results, report folder)."""
    from gpusim.timing.driver import run_workload
    from gpusim.viz.report import figure_files

    if cache.exists():
        text = cache.read_text()
    else:
        text = run_workload(name, card, n, mode="sampled").model_dump_json()
        tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")  # whole or absent, even if interrupted
        tmp.write_text(text)
        os.replace(tmp, cache)
    result = SimResult.model_validate_json(text)
    i, total, report_dir = figure
    return result, figure_files(i, result, total, report_dir)


def code_version() -> str:
    h = hashlib.sha256()
    for p in sorted((REPO_ROOT / "gpusim").rglob("*.py")) + sorted((REPO_ROOT / "configs").rglob("*.yaml")):
        if "viz" not in p.relative_to(REPO_ROOT).parts:  # the report's code does not change a result
            h.update(p.read_bytes())
    return h.hexdigest()[:12]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", nargs="?", default=str(REPO_ROOT / "out" / "run_sim"))
    ap.add_argument("--cards", default="gtx970,k40,h100")
    ap.add_argument("--all", action="store_true", help="every variant on every card of --cards (default: the "
                    "seed's own card and the H100)")
    args = ap.parse_args(argv)
    out = Path(args.outdir)
    cache = out / "cache" / code_version()
    cache.mkdir(parents=True, exist_ok=True)
    console = make_console()
    from gpusim.config import load_gpu

    # the seed documents' variants (traces/kernels/seed*.cu), on each card whose architecture they are built for
    seeds = [wl for wl in list_workloads() if wl.source_path.name.startswith("seed")]
    cards = args.cards.split(",")
    jobs = [(wl.name, card, size_for(wl)) for wl in seeds for card in cards
            if load_gpu(card).arch in wl.archs and (args.all or card in HOME.get(wl.source_path.name, ()) + ("h100",))]
    # the FP64 GEMMs first: with two workers, the long jobs do not end up last
    start = sorted(jobs, key=lambda j: not j[0].startswith("dgemm"))
    results: dict[tuple, SimResult] = {}
    with WorkerPool() as pool:  # the same workers then render the report's figures
        with Progress(console=console) as progress:
            task = progress.add_task("simulating (sampled mode)", total=len(jobs))
            futures = {pool.submit(simulate, n, c, s, cache / f"{n}__{c}__{s}.json",
                                   (jobs.index((n, c, s)), len(jobs), out / "report")): (n, c, s) for n, c, s in start}
            figures: dict[tuple, dict] = {}
            for fut in as_completed(futures):
                results[futures[fut]], figures[futures[fut]] = fut.result()
                progress.advance(task)
        rows = []
        for key in jobs:
            r = results[key]
            meas, source = measured_time(*key)
            rows.append({"workload": key[0], "card": key[1], "size": key[2], "predicted_s": r.time_s,
                         "measured_s": meas, "measured_source": source,
                         "error": (r.time_s - meas) / meas if meas else None,
                         "top_stalls": [[k, round(v, 3)] for k, v in r.top_stalls(3)], "cycles": r.cycles})
        table = Table(title="gpusim: seed GEMM variants, predicted (sampled mode) vs measured")
        for col in ("variant", "card", "n", "predicted", "measured", "error", "top stall reasons"):
            table.add_column(col, justify="right" if col in ("n", "predicted", "measured", "error") else "left")
        for row in rows:
            fmt = lambda s: "" if s is None else (f"{s * 1e3:.3f} ms" if s < 1 else f"{s:.3f} s")  # noqa: E731
            err = "" if row["error"] is None else f"{row['error']:+.1%}"
            stalls = ", ".join(f"{k} {v:.0%}" for k, v in row["top_stalls"])
            stalls = stalls.replace("_scoreboard", "_sb").replace("_throttle", "_thr")
            table.add_row(row["workload"], row["card"], str(row["size"]), fmt(row["predicted_s"]),
                          fmt(row["measured_s"]), err, stalls)
        print_table(console, table)
        known = [abs(r["error"]) for r in rows if r["error"] is not None]
        if known:
            console.print(f"mean absolute error over {len(known)} measured cases: {sum(known) / len(known):.1%}")
        (out / "results.json").write_text(json.dumps(rows, indent=2))
        from gpusim.viz.report import write_report

        report = write_report([results[k] for k in jobs], out / "report", rendered=[figures[k] for k in jobs])
        console.print(f"wrote {out / 'results.json'} and {report}")
    return 0


if __name__ == "__main__":
    handle_signals()
    try:
        sys.exit(main())
    except (Interrupted, KeyboardInterrupt) as exc:  # Ctrl-C or SIGTERM: the workers are already ended
        leave("run_sim.py", exc)
