"""Reading result JSON files for `gpusim viz`, and the small lookups every view shares:
a label per result, the SASS text of each instruction in the timeline, a colour per stall reason."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from gpusim.errors import GpusimError, pydantic_one_line
from gpusim.timing.results import RESULT_SCHEMA_VERSION, SimResult
from gpusim.timing.stalls import REASONS


class ResultFileError(GpusimError):
    """A result JSON that is missing, unreadable, or of another schema version."""


def load_result(path: str | Path) -> SimResult:
    """Read and validate one `gpusim run --json` file; every failure is one line naming the file."""
    return load_with_measured(path)[0]


def load_with_measured(path: str | Path) -> tuple[SimResult, dict | None]:
    """A result file's SimResult and its `measured` block (Nsight Compute counters of the same
    launch, written by `gpusim run ... --ncu FILE`; None if it has none)."""
    data = _read_result_json(Path(path))
    measured = data.pop("measured", None)
    if measured is not None and (not isinstance(measured, dict) or not isinstance(measured.get("metrics"), dict)):
        raise ResultFileError("its 'measured' block is not an Nsight Compute block (expected a mapping with "
                              "'metrics'); re-run `gpusim run ... --ncu FILE --json R.json`", str(path))
    try:
        return SimResult.model_validate(data), measured
    except ValidationError as exc:
        raise ResultFileError(pydantic_one_line(exc, str(path))) from None


def _read_result_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ResultFileError("no such result file", str(path)) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultFileError(f"not a readable JSON file ({type(exc).__name__})", str(path)) from None
    if not isinstance(data, dict) or "schema_version" not in data:
        raise ResultFileError("not a gpusim result (no schema_version); write one with `gpusim run ... --json`",
                              str(path))
    version = data["schema_version"]
    if version != RESULT_SCHEMA_VERSION:
        raise ResultFileError(f"result schema_version {version!r} but this gpusim reads version "
                              f"{RESULT_SCHEMA_VERSION}; re-run `gpusim run ... --json` to regenerate it", str(path))
    return data


def label(result: SimResult) -> str:
    """A short name for a result: workload, card and size."""
    return f"{result.workload or result.kernel} · {result.card} · n={result.size}"


def labels(results: list[SimResult]) -> list[str]:
    """One distinct label per result (variants of the same run get #2, #3, ...)."""
    out, seen = [], {}
    for r in results:
        name = label(r)
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} #{seen[name]}")
    return out


# ---- colours: one per stall reason, the same in every plot and in the HTML ----

_PALETTE = ("#2ca02c", "#bcbd22", "#1f77b4", "#17becf", "#d62728", "#ff7f0e", "#9467bd",
            "#8c564b", "#e377c2", "#7f7f7f", "#aec7e8", "#c7c7c7", "#ffbb78")


def reason_colour(reason: str) -> str:
    """Hex colour of a stall reason (green for `selected`, red for `long_scoreboard`, ...)."""
    i = REASONS.index(reason) if reason in REASONS else len(reason)
    return _PALETTE[i % len(_PALETTE)]


# ---- timeline pc index -> SASS text ----

def _address_of(arch: str, index: int) -> int:
    """Byte address of the index-th instruction when the listing holds every instruction in order:
    sm_90 has 16-byte instructions; sm_5x puts a control word before each 3 instructions (32-byte
    groups), sm_3x before each 7 (64-byte groups)."""
    if arch.startswith("sm_3"):
        return 8 * (index + index // 7 + 1)
    if arch.startswith("sm_5") or arch.startswith("sm_6"):
        return 8 * (index + index // 3 + 1)
    return 16 * index


def instruction_index(result: SimResult) -> dict[int, tuple[int, str]]:
    """Map the timeline's pc index (position in the kernel's Program) to (address, SASS text).

    The committed listing of the workload gives it exactly; without it, the address follows from the
    architecture's instruction layout and the text from `stalls_per_pc` (every timeline pc is there)."""
    by_address = {row.address: row.text for row in result.stalls_per_pc}
    try:
        from gpusim.isa.parser import parse_listing
        from gpusim.toolchain.listings import load_program
        from gpusim.workloads import find_workload

        if result.build and result.build.get("listing"):  # a user's spec: the listing that ran, not a namesake
            program = parse_listing(result.build["listing"])
        else:
            program = load_program(find_workload(result.workload), result.arch)
        table = {i: (ins.address, ins.text) for i, ins in enumerate(program.instructions)}
        if all(by_address.get(a, t) == t for a, t in table.values()):  # the same listing as the run's
            return table
    except (GpusimError, OSError, TypeError, ValueError):
        pass
    used = {e[6] for e in result.timeline or []}
    return {i: (_address_of(result.arch, i), by_address.get(_address_of(result.arch, i), f"pc index {i}"))
            for i in used}
