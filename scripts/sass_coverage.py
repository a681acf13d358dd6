"""SASS form coverage: every (opcode, modifier set) form in the committed listings, and which of them
the test suite exercises with a checked result.

A form counts as covered when some listing's instruction of that form executes (for at least one
lane) in an emulation whose outputs the tests compare with the numpy reference: the suite workloads
at their smallest size on every architecture (tests/test_emulator.py runs them and checks them) and
the issue-13 kernels under tests/data/issue13 (tests/test_issue13.py). Forms that only sit in a listing
(the trailing `BRA` self-loop and NOP padding, paths no test input takes) are listed as not covered.
The sm_90 forms also include those of the difftest kernels (tests/difftest/golden/difftest_sm_90.sass and,
second family, difftest2_sm_90.sass);
"golden" counts the forms executed by the difftest kernels whose outputs all equal the H100's bit for
bit (tests/test_difftest.py, test_difftest2.py), which also count as covered; a golden file that is not
a run of the committed cubin (sha256 recorded with the device) counts for nothing.
--kernels lists each difftest kernel's status and the forms that only it executes.

The emulation here re-runs those cases and checks them itself (a failed check makes the case count
for nothing and is reported). Usage:
    python scripts/sass_coverage.py [--json FILE] [--missing] [--kernels]
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np

from gpusim import REPO_ROOT, TRACES_DIR
from gpusim.emu.emulator import Emulator
from gpusim.errors import GpusimError
from gpusim.emu.run import build_launch, check, emulate
from gpusim.isa.parser import parse_listing
from gpusim.workloads import list_workloads, load_workload

ISSUE13 = REPO_ROOT / "tests" / "data" / "issue13"
GOLDEN = REPO_ROOT / "tests" / "difftest" / "golden"


def form(ins) -> str:
    """The form of an instruction: its opcode and its modifiers (as a set, sorted)."""
    return ".".join([ins.opcode, *sorted(set(ins.modifiers))])


def _executed_forms(program, emu) -> set[str]:
    """Forms of the instructions that executed for at least one lane."""
    pcs = np.asarray(emu.log.pcs, dtype=np.int64)
    ran = np.zeros(len(program), bool)
    if len(pcs):
        lanes = np.array([int(np.any(m)) for m in emu.log.exec_masks], dtype=bool)
        ran[np.unique(pcs[lanes])] = True
    return {form(program.instructions[i]) for i in np.flatnonzero(ran)}


def _passed(report: dict) -> bool:
    return bool(report) and all(c["passed"] for c in report.values())


def cases():
    """(label, arch, program, run) for every checked test case: run() -> (executed forms, passed)."""
    for wl in list_workloads():
        for arch in wl.archs:
            n = min(wl.sizes)

            def run(wl=wl, arch=arch, n=n):
                emu, inputs = emulate(wl, arch, n)
                return _executed_forms(emu.program, emu), _passed(check(wl, emu, inputs, n))

            yield f"{wl.name}@{n}", arch, parse_listing(TRACES_DIR / "sass" / arch / f"{wl.name}.sass"), run
    for spec in sorted(ISSUE13.glob("k13_*.yaml")):
        if "undef" in spec.stem:  # reads an undefined register by design: no result to check
            continue
        wl = load_workload(spec)
        program = parse_listing(ISSUE13 / f"{wl.name}_sm_90.sass")
        n = min(wl.sizes)

        def run(wl=wl, program=program, n=n):
            launch, params, memory, inputs = build_launch(wl, program, n)
            try:
                emu = Emulator(program, launch, params, memory).run()
            except Exception:  # the undefined-behaviour kernels fault by design at other sizes
                return set(), False
            return _executed_forms(program, emu), _passed(check(wl, emu, inputs, n))

        yield f"issue13/{wl.name}@{n}", "sm_90", program, run


def _measured(npz: Path, cubin_hash: Path, load):
    """The golden file if it is a GPU run of the committed cubin (its sha256 recorded with the
    device), else None: the kernels then count in the listing only."""
    if not npz.exists() or f"cubin sha256 {cubin_hash.read_text().strip()}" not in str(np.load(npz)["device"]):
        return None
    return load(npz)


def golden_forms() -> tuple[set[str], set[str], list]:
    """(forms in the difftest listings, forms executed by the difftest kernels whose every output
    equals the GPU's bit for bit when replayed, and per kernel (name, executed forms, status)) -
    sm_90 only. A kernel whose golden file is not a run of the committed cubin is replayed on the
    generator's inputs and counts in the listing only."""
    sys.path.insert(0, str(REPO_ROOT / "tests" / "difftest"))
    import gen
    import gen2
    from pack2 import load as load2
    from replay import LISTING, LISTING2, replay, replay2

    listed, exact, kernels = set(), set(), []

    def account(name, program, run, compare):
        nonlocal listed, exact
        listed |= {form(i) for i in program.instructions}
        try:
            out, emu = run()
        except GpusimError as exc:  # e.g. an opcode the emulator lacks: the kernel covers nothing
            kernels.append((name, set(), f"emulation fails: {exc}"))
            return
        ran = _executed_forms(program, emu)
        status = compare(out)
        if status == "exact":
            exact |= ran
        kernels.append((name, ran, status))

    def verdict(diff):
        return "exact" if not diff else f"differs from the GPU in {diff}"

    golden = _measured(GOLDEN / "difftest_sm_90.npz", gen.CUBIN_HASH, lambda p: dict(np.load(p)))
    inputs = golden or {x: np.array(v, np.uint64) for x, v in gen.inputs().items()}
    for name in gen.KERNELS:
        account(name, parse_listing(LISTING, name),
                lambda name=name: replay(name, inputs["A"], inputs["B"], inputs["C"], record=True),
                lambda out, name=name: "not measured" if golden is None else
                verdict([f"output {k}" for k in range(gen.K) if (out[:, k] != golden[name][:, k]).any()]))
    golden2 = _measured(GOLDEN / "difftest2_sm_90.npz", gen2.CUBIN_HASH, load2)
    inputs2 = golden2 or {**{x: np.array(v, np.uint64) for x, v in gen2.inputs().items()},
                          "O0": np.array(gen2.o_init(), np.uint64), "params": np.array(gen2.PARAMS, np.int32)}
    for name in gen2.KERNELS:
        account(name, parse_listing(LISTING2, name), lambda name=name: replay2(name, inputs2, record=True),
                lambda out, name=name: "not measured" if golden2 is None else
                verdict(f"{int((out != golden2[name]).sum())} words" if (out != golden2[name]).any() else ""))
    return listed, exact, kernels


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="write the per-arch form lists here")
    ap.add_argument("--missing", action="store_true", help="list the forms not covered")
    ap.add_argument("--kernels", action="store_true",
                    help="per difftest kernel: its status against the GPU and the forms only it executes")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")  # numpy's overflow/invalid warnings on the edge inputs

    in_listings: dict[str, set[str]] = defaultdict(set)
    suite_forms: dict[str, set[str]] = defaultdict(set)
    covered: dict[str, set[str]] = defaultdict(set)
    failed = []
    for label, arch, program, run in cases():
        forms = {form(i) for i in program.instructions}
        if not label.startswith("issue13/"):
            suite_forms[arch] |= forms
        in_listings[arch] |= forms
        executed, ok = run()
        if ok:
            covered[arch] |= executed
        else:
            failed.append(f"{arch} {label}")
    covered_outside_golden = {arch: set(f) for arch, f in covered.items()}
    golden_listed, golden_exact, kernels = golden_forms()
    in_listings["sm_90"] |= golden_listed
    covered["sm_90"] |= golden_exact
    golden = {"sm_90": golden_exact}

    print(f"{'arch':6} {'forms':>6} {'covered':>8} {'%':>6} {'suite forms':>12} {'covered':>8} {'golden':>7} "
          f"{'suite golden':>12}")
    out = {}
    for arch in sorted(in_listings):
        total, cov = in_listings[arch], covered[arch] & in_listings[arch]
        suite, suite_cov = suite_forms[arch], covered[arch] & suite_forms[arch]
        gold = golden.get(arch, set()) & total
        print(f"{arch:6} {len(total):6d} {len(cov):8d} {100 * len(cov) / max(len(total), 1):6.1f} "
              f"{len(suite):12d} {len(suite_cov):8d} {len(gold):7d} {len(gold & suite):12d}")
        out[arch] = {"forms": sorted(total), "covered": sorted(cov), "missing": sorted(total - cov),
                     "golden": sorted(gold), "suite_not_golden": sorted(suite - gold)}
        if args.missing and total - cov:
            print("   not covered: " + ", ".join(sorted(total - cov)))
    if failed:
        print("cases whose check failed (not counted): " + "; ".join(failed))
    if args.kernels:
        print("difftest kernels (forms executed that no checked suite case and no other difftest kernel executes):")
        for name, ran, status in kernels:
            others = covered_outside_golden["sm_90"].union(*(r for n, r, _ in kernels if n != name))
            print(f"  {name}: {status}; {len(ran)} forms executed; only here: {', '.join(sorted(ran - others)) or '-'}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
