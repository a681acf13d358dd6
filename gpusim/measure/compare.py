"""Measured (Nsight Compute) counters beside simulated ones: the quantities both sides count.

Used by `gpusim validate` (per case) and by `gpusim run ... --ncu FILE` / `gpusim viz` (Nsight
Compute's "baseline" view: the measured value next to the simulated one, per kernel).

Stall fractions. Nsight reports per reason `smsp__average_warps_issue_stalled_<reason>_per_issue_active
.ratio`: warps stalled on the reason per issue-active cycle (`selected` = 1 by definition). Divided by
their sum over all reasons they are the fraction of resident warp-cycles per reason; gpusim's stall
totals (warp-cycles per reason, `selected` = cycles that issued) divided by their sum are the same
quantity. gpusim's reasons carry Nsight's names (gpusim/timing/stalls.py); a gpusim reason Nsight
has no metric for (`register_bank_conflict`) keeps its own name.

Stall-distribution distance = half the L1 distance (total variation) between the two fraction
vectors, over the union of reason names; a reason only one side has counts with fraction 0 on the
other side. 0 = the same mix, 1 = no warp-cycle charged to a reason the other side charges at all.

Nothing here imports the simulator: results are read as dicts (SimResult JSON) or SimResult objects.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from gpusim.errors import GpusimError

STALL_PREFIX, STALL_SUFFIX = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"

# gpusim reason -> Nsight Compute reason, where the names differ (same name otherwise). A gpusim
# reason absent here and from Nsight's list has no Nsight counterpart and keeps its own name.
SIM_TO_NCU: dict[str, str] = {}


class NcuCsvError(GpusimError):
    """An Nsight Compute CSV that is missing, unreadable, or has no row for the simulated launch."""


# ---- stall fractions and their distance ------------------------------------------------------

def ncu_stall_fractions(metrics: dict) -> dict[str, float] | None:
    """Fractions of resident warp-cycles per Nsight reason, from ncu metrics {name: {value, unit}}
    (None when the metrics carry no stall ratios)."""
    vals = {}
    for k, v in (metrics or {}).items():
        if k.startswith(STALL_PREFIX) and k.endswith(STALL_SUFFIX):
            value = v.get("value") if isinstance(v, dict) else v
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                vals[k[len(STALL_PREFIX):-len(STALL_SUFFIX)]] = float(value)
    total = sum(vals.values())
    if not vals or total <= 0:
        return None
    return {k: v / total for k, v in vals.items()}


def sim_stall_fractions(stalls: dict[str, float] | None) -> dict[str, float]:
    """gpusim's warp-cycles per reason as fractions, under Nsight's names (see SIM_TO_NCU)."""
    out: dict[str, float] = {}
    for k, v in (stalls or {}).items():
        name = SIM_TO_NCU.get(k, k)
        out[name] = out.get(name, 0.0) + float(v)
    total = sum(out.values())
    return {k: v / total for k, v in out.items()} if total > 0 else {}


def stall_distance(sim: dict[str, float] | None, ncu: dict[str, float] | None) -> float | None:
    """0.5 * sum over the union of reasons of |sim fraction - ncu fraction| (missing = 0); None
    when either side has no fractions."""
    if not sim or not ncu:
        return None
    return 0.5 * sum(abs(sim.get(r, 0.0) - ncu.get(r, 0.0)) for r in sorted(set(sim) | set(ncu)))


def top_reason(fracs: dict[str, float] | None) -> str | None:
    """The reason with the largest fraction, `selected` (issuing) left out."""
    items = [(r, v) for r, v in (fracs or {}).items() if r != "selected" and v > 0]
    return max(items, key=lambda kv: kv[1])[0] if items else None


# ---- counters both sides have ----------------------------------------------------------------

def _num(metrics: dict, name: str) -> float | None:
    m = (metrics or {}).get(name)
    v = m.get("value") if isinstance(m, dict) else m
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _sum(*vals):
    return None if any(v is None for v in vals) else sum(vals)


def sim_dram_read_bytes(memory: dict) -> float | None:
    """DRAM bytes read: `dram_read_bytes`, else `dram_bytes` (models without a write counter move
    only reads through DRAM, so there `dram_bytes` is the read traffic)."""
    memory = memory or {}
    if memory.get("dram_read_bytes") is not None:
        return float(memory["dram_read_bytes"])
    if "dram_write_bytes" not in memory and memory.get("dram_bytes") is not None:
        return float(memory["dram_bytes"])
    return None


def sim_dram_write_bytes(memory: dict) -> float | None:
    """DRAM bytes written back: `dram_write_bytes`, None where the model does not count them."""
    v = (memory or {}).get("dram_write_bytes")
    return None if v is None else float(v)


def _sim_l1_load_sectors(memory: dict) -> float | None:
    memory = memory or {}
    if memory.get("l1_load_sectors") is not None:
        return float(memory["l1_load_sectors"])
    looked = (memory.get("l1_hits") or 0) + (memory.get("l1_misses") or 0)
    return float(looked) if looked else None  # 0: this card's L1 does not see global loads


def _sim_l2_read_sectors(memory: dict) -> float | None:
    memory = memory or {}
    if memory.get("l2_read_sectors") is not None:
        return float(memory["l2_read_sectors"])
    if memory.get("l2_hits") is None or memory.get("l2_misses") is None:
        return None
    return float(memory["l2_hits"] + memory["l2_misses"])  # L2 lookups are made by reads only


def _opt(memory: dict, key: str) -> float | None:
    v = (memory or {}).get(key)
    return None if v is None else float(v)


_NS_PER = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6, "s": 1e9, "second": 1e9}


def _ncu_time_ns(metrics: dict) -> float | None:
    m = (metrics or {}).get("gpu__time_duration.sum")
    v = _num(metrics, "gpu__time_duration.sum")
    unit = (m.get("unit") if isinstance(m, dict) else "") or "ns"
    return None if v is None or unit not in _NS_PER else v * _NS_PER[unit]


# (label, Nsight value from its metrics, simulated value from a SimResult dict)
COUNTERS = (
    ("cycles", lambda m: _num(m, "gpc__cycles_elapsed.max"), lambda s: float(s["cycles"])),
    ("kernel time, ns (no launch overhead)", _ncu_time_ns, lambda s: float(s["cycles"]) / float(s["clock_mhz"]) * 1e3),
    ("warp-instructions", lambda m: _num(m, "smsp__inst_executed.sum"), lambda s: float(s["warp_instructions"])),
    ("L1 global load sectors", lambda m: _num(m, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
     lambda s: _sim_l1_load_sectors(s.get("memory"))),
    ("L1 global store sectors", lambda m: _num(m, "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"),
     lambda s: _opt(s.get("memory"), "l1_store_sectors")),
    ("L2 read sectors (from L1)", lambda m: _num(m, "lts__t_sectors_srcunit_tex_op_read.sum"),
     lambda s: _sim_l2_read_sectors(s.get("memory"))),
    ("L2 write sectors (from L1)", lambda m: _num(m, "lts__t_sectors_srcunit_tex_op_write.sum"),
     lambda s: _opt(s.get("memory"), "l2_write_sectors")),
    ("DRAM read bytes", lambda m: _num(m, "dram__bytes_read.sum"), lambda s: sim_dram_read_bytes(s.get("memory"))),
    ("DRAM write bytes", lambda m: _num(m, "dram__bytes_write.sum"), lambda s: sim_dram_write_bytes(s.get("memory"))),
    ("shared wavefronts", lambda m: _sum(_num(m, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"),
                                         _num(m, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum")),
     lambda s: _opt(s.get("shared"), "wavefronts")),
    ("shared bank conflicts", lambda m: _sum(_num(m, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"),
                                             _num(m, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")),
     lambda s: _opt(s.get("shared"), "bank_conflicts")),
)


def pct_error(sim: float | None, meas: float | None) -> float | None:
    """100 * (simulated - measured) / measured; None when either is missing or measured is 0."""
    if sim is None or meas is None or meas == 0 or (isinstance(meas, float) and math.isnan(meas)):
        return None
    return 100.0 * (sim - meas) / meas


def compare(sim: dict, measured: dict) -> dict:
    """Simulated (SimResult as a dict) beside a `measured` block (see `measured_block`):
    {"counters": [{name, simulated, measured, error_pct}], "stalls": [{reason, simulated, measured}],
    "stall_distance", "top_reason": {simulated, measured, match}}."""
    metrics = measured.get("metrics") or {}
    counters = []
    for label, meas_of, sim_of in COUNTERS:
        try:
            s = sim_of(sim)
        except (KeyError, TypeError):
            s = None
        m = meas_of(metrics)
        counters.append({"name": label, "simulated": s, "measured": m, "error_pct": pct_error(s, m)})
    sfr = sim_stall_fractions(sim.get("stalls"))
    mfr = measured.get("stall_fractions") or ncu_stall_fractions(metrics) or {}
    reasons = sorted(set(sfr) | set(mfr), key=lambda r: -max(sfr.get(r, 0.0), mfr.get(r, 0.0)))
    stalls = [{"reason": r, "simulated": sfr.get(r, 0.0), "measured": mfr.get(r) if mfr else None,
               "only": "simulated" if r not in mfr else "measured" if r not in sfr else None} for r in reasons]
    ts, tm = top_reason(sfr), top_reason(mfr)
    return {"counters": counters, "stalls": stalls, "stall_distance": stall_distance(sfr, mfr),
            "top_reason": {"simulated": ts, "measured": tm, "match": (ts == tm) if tm else None}}


# ---- picking the launch out of an ncu CSV ----------------------------------------------------

def base_name(name: str) -> str:
    """A kernel's function name from a mangled (`_Z17coalescedMultiplyPfS_i`) or demangled
    (`void ns::k<float>(float *, int)`) name."""
    name = (name or "").strip()
    if name.startswith("_Z"):  # <length><name>, or N<length><name>...E for a nested name: the last one
        i, last = (3 if name.startswith("_ZN") else 2), name
        while i < len(name) and name[i].isdigit():
            m = re.match(r"\d+", name[i:])
            n = int(m.group(0))
            last, i = name[i + len(m.group(0)):i + len(m.group(0)) + n], i + len(m.group(0)) + n
            if not name.startswith("_ZN"):
                break
        return last
    name = name.split("(")[0]
    name = re.sub(r"<.*>$", "", name).strip()
    return name.split()[-1].split("::")[-1] if name else name


def _dims(text: str) -> tuple[int, ...] | None:
    nums = re.findall(r"\d+", text or "")
    if not nums:
        return None
    vals = [int(x) for x in nums][:3]
    return tuple(vals + [1] * (3 - len(vals)))


def read_ncu_csv(path: str | Path) -> list[dict]:
    """Profiled kernels of an `ncu --csv --page raw` (or details page) file; one-line errors naming
    the file when it is missing, unreadable or holds no profiled kernel."""
    from gpusim.measure.ncu import parse_csv

    p = Path(path)
    try:
        text = p.read_text(errors="strict")
    except FileNotFoundError:
        raise NcuCsvError("no such Nsight Compute CSV file", str(p)) from None
    except IsADirectoryError:
        raise NcuCsvError("is a folder, not an Nsight Compute CSV file", str(p)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise NcuCsvError(f"cannot read it as text ({type(exc).__name__})", str(p)) from None
    try:
        kernels = parse_csv(text)
    except Exception as exc:  # csv.Error and the like: a garbled file
        raise NcuCsvError(f"not an Nsight Compute CSV ({type(exc).__name__}: {exc})", str(p)) from None
    kernels = [k for k in kernels if k.get("info", {}).get("Kernel Name")]
    if not kernels:
        raise NcuCsvError("no profiled kernel in it; expected the output of `ncu --csv --page raw` (a header row "
                          "with 'ID','Kernel Name','Grid Size',... and one row per launch)", str(p))
    return kernels


def pick_launch(kernels: list[dict], kernel: str, grid, block, where: str) -> dict:
    """The first profiled launch of `kernel` (by function name) with this grid and block; an error
    listing what the file holds when none matches."""
    want = base_name(kernel)
    grid, block = tuple(grid), tuple(block)
    same_name = [k for k in kernels if base_name(k["info"].get("Kernel Name", "")) == want]
    for k in same_name:
        if _dims(k["info"].get("Grid Size", "")) == grid and _dims(k["info"].get("Block Size", "")) == block:
            return k
    have = "; ".join(f"{base_name(k['info'].get('Kernel Name', ''))} grid {k['info'].get('Grid Size', '?')} "
                     f"block {k['info'].get('Block Size', '?')}" for k in kernels[:8])
    more = f" (+{len(kernels) - 8} more)" if len(kernels) > 8 else ""
    what = (f"no launch of kernel {want} with grid {grid} block {block}" if same_name
            else f"no launch of kernel {want}")
    raise NcuCsvError(f"{what}; the file has: {have}{more}", where)


def measured_block(launch: dict, source: str) -> dict:
    """The `measured` block a result JSON carries: where it came from, the launch, the counters of
    COUNTERS and the stall fractions."""
    info = launch["info"]
    metrics = launch["metrics"]
    wanted = {"gpc__cycles_elapsed.max", "smsp__inst_executed.sum", "gpu__time_duration.sum"}
    # only the metrics the comparison reads (the CSV has ~400)
    keep = {k: v for k, v in metrics.items()
            if k in wanted or k.startswith(("l1tex__t_sectors_pipe_lsu_mem_global", "lts__t_sectors_srcunit_tex",
                                            "dram__bytes_", "l1tex__data_", STALL_PREFIX))}
    return {"source": source, "tool": "Nsight Compute (ncu --csv --page raw)", "id": info.get("ID"),
            "kernel": info.get("Kernel Name"), "grid": info.get("Grid Size"), "block": info.get("Block Size"),
            "device": info.get("Device"), "cache_state": "as profiled (ncu flushes caches before each replay "
                                                          "pass unless --cache-control none)",
            "metrics": keep, "stall_fractions": ncu_stall_fractions(metrics)}


def ncu_baseline(path: str | Path, workload, size: int) -> dict:
    """Read `path` and pick the launch of `workload` at problem size `size` (its spec's grid and block)."""
    grid, block, _ = workload.geometry(size)
    kernels = read_ncu_csv(path)
    launch = pick_launch(kernels, workload.kernel, grid, block, str(path))
    return measured_block(launch, str(path))
