"""Sampled mode's memory counters against detailed mode's (issue 12 item 4: "within 5% of detailed mode
on every case of bench/results/speed_table.txt").

For the cases of bench/speed.py's table (`CASES`: the six DGEMMs on the GTX 970, the two SGEMMs and the
six DGEMMs on the H100) at the sizes where detailed mode is affordable, each case is run in detailed
and in sampled mode (`gpusim.timing.driver.run_workload`, outputs checked), each run in a fresh
process (bounded memory). Every counter of `result.memory` (global load instructions, L1 sector hits
and misses, L2 sector hits and misses, L2 bytes, DRAM read / write / total bytes) and the cycles are
compared: detailed value, sampled value, signed difference (sampled / detailed - 1), marked where it
exceeds 5%. Results are appended to bench/results/sampled_counters.json run by run (a rerun skips the
runs already there: a crash loses nothing); the table is printed at the end with a one-line summary.
Detailed runs take 15-40 s each at n = 1024 (GPUSIM_WORKERS=1 unless set: one core).

    python bench/sampled_counters.py [--sizes 1024[,512]] [--only dgemm_unroll:h100[,...]] [--redo sampled]
                                     [--only-table]
    python bench/sampled_counters.py --one dgemm_unroll h100 1024 sampled     (one run, JSON on stdout)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from speed import CASES  # noqa: E402  (the speed table's cases)

RESULTS = Path(__file__).parent / "results" / "sampled_counters.json"
MODES = ("detailed", "sampled")
TOLERANCE = 0.05


def one(name: str, card: str, n: int, mode: str) -> dict:
    """Run one case in one mode in this process: its cycles and memory counters."""
    from gpusim.timing.driver import run_workload

    t0 = time.perf_counter()
    r = run_workload(name, card, n, mode=mode)
    return {"cycles": r.cycles, "memory": dict(r.memory), "wall_s": round(time.perf_counter() - t0, 1)}


def measure(name: str, card: str, n: int, mode: str) -> dict:
    """`one` in a fresh process."""
    env = dict(os.environ)
    env.setdefault("GPUSIM_WORKERS", "1")
    out = subprocess.run([sys.executable, __file__, "--one", name, card, str(n), mode], capture_output=True,
                         text=True, env=env)
    if out.returncode:
        raise SystemExit(f"bench/sampled_counters.py: {name} {card} {n} {mode} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def load() -> dict:
    return json.loads(RESULTS.read_text()) if RESULTS.exists() else {}


def compare(d: float, s: float) -> tuple[str, bool]:
    """(the signed difference as shown, whether it is within TOLERANCE)."""
    if d == 0:
        return ("both 0", True) if s == 0 else ("detailed 0", False)
    diff = s / d - 1
    return f"{diff:+.2%}", abs(diff) <= TOLERANCE


def table(results: dict, sizes: list[int], cases) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"sampled vs detailed mode: memory counters and cycles (! where |sampled / detailed - 1| > "
                    f"{TOLERANCE:.0%})")
    for col in ("workload", "card", "n", "counter", "detailed", "sampled", "diff", ""):
        t.add_column(col, justify="left" if col in ("counter", "") else "right")
    within = total = cyc_within = cyc_total = 0
    for n in sizes:
        for name, card in cases:
            row = results.get(f"{name}:{card}:{n}", {})
            d, s = row.get("detailed"), row.get("sampled")
            if not (d and s):
                continue
            counters = [("cycles", d["cycles"], s["cycles"])] + \
                [(k, v, s["memory"].get(k)) for k, v in d["memory"].items()]
            for i, (key, dv, sv) in enumerate(counters):
                if sv is None:
                    t.add_row(name if i == 0 else "", card if i == 0 else "", str(n) if i == 0 else "", key,
                              f"{dv:,.0f}", "-", "sampled lacks it", "!")
                    total += 1
                    continue
                text, ok = compare(dv, sv)
                if key == "cycles":
                    cyc_within, cyc_total = cyc_within + ok, cyc_total + 1
                else:
                    within, total = within + ok, total + 1
                t.add_row(name if i == 0 else "", card if i == 0 else "", str(n) if i == 0 else "", key,
                          f"{dv:,.0f}", f"{sv:,.0f}", text, "" if ok else "!", end_section=i == len(counters) - 1)
    console = Console(width=160)
    console.print(t)
    console.print(f"memory counters within {TOLERANCE:.0%} of detailed mode: {within}/{total} case x counter pairs; "
                  f"cycles: {cyc_within}/{cyc_total} cases")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2 (not argparse's usage block)
        print(f"bench/sampled_counters.py: {message}", file=sys.stderr)
        raise SystemExit(2)


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(s) for s in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"sizes separated by commas (e.g. 1024,512), not '{text}'")
    if any(s <= 0 for s in sizes):
        raise argparse.ArgumentTypeError(f"sizes must be positive, not '{text}'")
    return sizes


def _cases(text: str) -> list[tuple[str, str]]:
    out = []
    for c in text.split(","):
        parts = tuple(c.split(":"))
        if parts not in CASES:
            raise argparse.ArgumentTypeError(f"workload:card of bench/speed.py's cases (e.g. dgemm_unroll:h100), "
                                             f"not '{c}'")
        out.append(parts)
    return out


def main(argv=None) -> None:
    ap = _Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=_sizes, default=[1024], help="sizes, comma-separated (default 1024)")
    ap.add_argument("--only", type=_cases, default=None, help="workload:card[,workload:card...] (default: all)")
    ap.add_argument("--only-table", action="store_true", help="print the table of the results kept, run nothing")
    ap.add_argument("--redo", choices=MODES, default=None,
                    help="run this mode again where results are kept (e.g. sampled, after a change to it)")
    ap.add_argument("--one", nargs=4, metavar=("WORKLOAD", "CARD", "N", "MODE"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        name, card, n, mode = args.one
        if mode not in MODES or not n.isdigit():
            ap.error(f"--one takes WORKLOAD CARD N MODE (MODE detailed or sampled), not {' '.join(args.one)}")
        print(json.dumps(one(name, card, int(n), mode)))
        return
    cases = args.only or CASES
    from gpusim.errors import GpusimError
    from gpusim.workloads import find_workload

    for name in sorted({w for w, _ in cases}):
        for n in args.sizes:
            try:
                find_workload(name).check_size(n)
            except GpusimError as err:
                ap.error(f"--sizes: {str(err).splitlines()[0]}")
    results = load()
    if not args.only_table:
        for n in args.sizes:
            for name, card in cases:
                key = f"{name}:{card}:{n}"
                for mode in MODES:
                    if mode in results.get(key, {}) and mode != args.redo:
                        continue
                    results.setdefault(key, {})[mode] = measure(name, card, n, mode)
                    RESULTS.parent.mkdir(parents=True, exist_ok=True)
                    RESULTS.write_text(json.dumps(results, indent=1))
                    print(f"{key} {mode}: {results[key][mode]['wall_s']} s", flush=True)
    table(results, args.sizes, cases)


if __name__ == "__main__":
    main()
