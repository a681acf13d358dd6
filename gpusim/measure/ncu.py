"""Nsight Compute counters of one launch per (workload, size): the per-event ground truth.

The metrics (instruction counts, shared-memory wavefronts and bank conflicts, global sectors, L2 and
DRAM bytes, cycles, warp-stall breakdown) are the quantities the simulator counts itself, so they are
compared one to one. Names are those checked on H100 with ncu 2025.3 (shared/reference/interop.md);
`lts__t_bytes.sum` was not on that list and sits in its own group. ncu profiles a child process
(`python3 -m gpusim.measure.run --single W --size N1,N2`) that uploads the inputs with plain copies
and launches the kernel once per size, so `-k regex:<basename> -c <number of sizes>` can only catch
our launches, in size order (one child and one ncu start per workload, not per size). `--clock-control
none` leaves the clocks alone; ncu's default cache flush before each replay pass stays (cold L2).

If ncu rejects a metric the whole run fails: then the rest without the names ncu's error names is
retried, failing that each group alone, a failing group bisected down to the bad names (unless the
first two groups fail as well: then the problem is not a name). Rejected names are remembered in
DIR/ncu_rejected_metrics.json, so later runs of the session skip them at once.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path

from gpusim.measure.backend import PRIME_KERNEL
from gpusim.measure.procs import run_group

STALL_REASONS = ("barrier", "branch_resolving", "dispatch_stall", "drain", "gmma", "imc_miss", "lg_throttle",
                 "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction",
                 "not_selected", "selected", "short_scoreboard", "sleeping", "tex_throttle", "wait")

METRIC_GROUPS: dict[str, tuple[str, ...]] = {
    "cycles": ("gpu__time_duration.sum", "gpc__cycles_elapsed.max", "gpc__cycles_elapsed.avg.per_second",
               "sm__cycles_elapsed.avg", "sm__cycles_elapsed.max", "sm__cycles_elapsed.avg.per_second",
               "sm__cycles_active.avg", "sm__cycles_active.max", "smsp__cycles_active.avg"),
    "launch": ("launch__registers_per_thread", "launch__occupancy_limit_registers",
               "launch__occupancy_limit_shared_mem", "launch__occupancy_limit_warps", "launch__occupancy_limit_blocks",
               "launch__shared_mem_per_block_static", "launch__grid_size", "launch__block_size",
               "launch__waves_per_multiprocessor", "sm__ctas_launched.sum"),
    "instructions": ("smsp__inst_executed.sum", "smsp__inst_issued.sum", "smsp__thread_inst_executed.sum",
                     "smsp__issue_active.avg.pct_of_peak_sustained_active",
                     "smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum",
                     "smsp__inst_executed_op_global_ld.sum", "smsp__inst_executed_op_global_st.sum",
                     "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
                     "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum"),
    "shared": ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
               "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
               "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
               "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"),
    "memory": ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
               "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
               "l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate.pct",
               "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_write.sum",
               "lts__t_sector_op_read_hit_rate.pct", "dram__bytes_read.sum", "dram__bytes_write.sum",
               "dram__cycles_elapsed.avg.per_second"),
    "occupancy": ("sm__warps_active.avg.pct_of_peak_sustained_active",
                  "smsp__average_warp_latency_per_inst_issued.ratio"),
    "stalls": tuple(f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio" for r in STALL_REASONS),
    "unverified": ("lts__t_bytes.sum",),
}
ALL_METRICS = tuple(m for g in METRIC_GROUPS.values() for m in g)

# `--ncu-metrics`: which metrics one profile collects. "all": every group above (Nsight replays the
# kernel over several dozen passes, restoring the memory it writes before each). "dram": DRAM bytes
# and cycles alone, one pass. The replay adds DRAM writes of its own: a read-only kernel of 64 MiB
# showed 2.26 MiB written with the full set and 0.06 MiB with a one-pass set, and a write-then-read
# kernel 7.45 against 6.55 MiB (validation/h100/micro/dram_writes_h100.json, ncu_full_metrics vs ncu)
METRIC_SETS: dict[str, tuple[str, ...] | None] = {
    "all": None,
    "dram": ("gpc__cycles_elapsed.max", "gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum"),
    # the L1 data stage's work by memory space: does a global load cost its lines there (as at the tag
    # stage) or fewer wavefronts? (bench/micro/README.md, memory22 `l1wf`)
    "l1": ("gpc__cycles_elapsed.max", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
           "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
           "l1tex__data_pipe_lsu_wavefronts_mem_lgds_cmd_read.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_cmd_read.sum",
           "l1tex__data_pipe_lsu_wavefronts.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_gds_op_ld.sum",
           "l1tex__data_bank_reads.sum", "smsp__inst_executed_op_global_ld.sum", "smsp__inst_executed_op_shared_ld.sum"),
    # the L2's traffic by source: the SMs (tex) and the other partition (ltcfabric: the GH100's L2 is two
    # partitions; is a line read from the far one kept a second time, as bench/micro/l2_policy_fit.py's
    # two_halves policy says?), with DRAM's bytes and the sectors filled from it, in one profile
    "l2": ("gpc__cycles_elapsed.max", "dram__bytes_read.sum", "dram__bytes_write.sum", "lts__d_sectors_fill_device.sum",
           "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum",
           "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum", "lts__t_sectors_srcunit_tex_op_write.sum",
           "lts__t_sectors_srcunit_ltcfabric.sum", "lts__t_sectors_srcunit_ltcfabric_op_read_lookup_hit.sum",
           "lts__t_sectors_srcunit_ltcfabric_op_read_lookup_miss.sum", "lts__t_sectors_srcunit_ltcfabric_op_write.sum"),
}
IDENTITY = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
            "Block Size", "Grid Size", "Device", "CC")
FATAL = re.compile(r"ERR_NVGPUCTRPERM|LibraryNotLoaded|Failed to initialize the profiler|device (is )?not supported"
                   r"|no CUDA-capable device", re.I)


# ---- CSV ------------------------------------------------------------------------------------
def parse_value(text: str):
    """'1,234' -> 1234, '12.5' -> 12.5, '' / 'n/a' -> None, anything else stays text."""
    t = (text or "").strip()
    if t == "" or t.lower() in ("n/a", "nan"):
        return None
    if re.fullmatch(r"[-+]?\d{1,3}(,\d{3})+(\.\d*)?([eE][-+]?\d+)?|[-+]?\d+(\.\d*)?([eE][-+]?\d+)?|[-+]?\.\d+", t):
        t = t.replace(",", "")
        return int(t) if re.fullmatch(r"[-+]?\d+", t) else float(t)
    return t


def parse_csv(text: str) -> list[dict]:
    """Profiled kernels of ncu `--csv` output: [{'info': {identity columns}, 'metrics': {name: {value, unit}}}].

    Handles the raw page (header row of metric names, a units row, one row per kernel) and the details
    page (one row per metric with 'Metric Name'/'Metric Unit'/'Metric Value'); lines that are not CSV
    rows (==PROF== messages, the application's output) are skipped."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if not rows:
        return []
    header, body = rows[0], [r for r in rows[1:] if len(r) == len(rows[0])]
    if "Metric Name" in header and "Metric Value" in header:
        col = {h: i for i, h in enumerate(header)}
        kernels: dict[str, dict] = {}
        for r in body:
            k = kernels.setdefault(r[col["ID"]], {"info": {h: r[col[h]] for h in IDENTITY if h in col}, "metrics": {}})
            unit = r[col["Metric Unit"]] if "Metric Unit" in col else ""
            k["metrics"][r[col["Metric Name"]]] = {"value": parse_value(r[col["Metric Value"]]), "unit": unit}
        return list(kernels.values())
    units, out, seen = None, [], set()
    for r in body:
        if r == header:  # the same output read twice (log file and stdout)
            continue
        if not r[0].strip().isdigit():  # the units row: ID column empty
            units = units or r
            continue
        if r[0] in seen:
            continue
        seen.add(r[0])
        info = {h: v for h, v in zip(header, r) if h in IDENTITY}
        metrics = {h: {"value": parse_value(v), "unit": u}
                   for h, u, v in zip(header, units or [""] * len(header), r) if h not in IDENTITY}
        out.append({"info": info, "metrics": metrics})
    return out


# ---- running ncu ----------------------------------------------------------------------------
def command(ncu: str, metrics: list[str], kernel_base: str, log_file: str, child: list[str],
            count: int = 1) -> list[str]:
    """ncu profiling the first `count` launches whose function name matches `kernel_base`, after the
    child's `PRIME_KERNEL` launch (profiled too, so that it is Nsight's first profiled launch in the
    process: see `CupyDevice.prime`; `parse_csv`'s callers drop its row)."""
    return [ncu, "--csv", "--page", "raw", "--print-units", "base", "--clock-control", "none",
            "--target-processes", "application-only", "--metrics", ",".join(metrics),
            "--kernel-name-base", "function", "-k", f"regex:{kernel_base}|^{PRIME_KERNEL}$", "-c", str(count + 1),
            "--log-file", log_file, *child]


def named_metrics(output: str, metrics: list[str]) -> list[str]:
    """Metrics of `metrics` that ncu's error lines name, e.g. '==ERROR== Failed to find metric regex:^x\\.(sum|...)$'."""
    errors = "\n".join(ln for ln in output.splitlines() if "ERROR" in ln).replace("\\.", ".")
    tokens = set(re.findall(r"[A-Za-z0-9]+__[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*", errors))
    return [m for m in metrics if m in tokens or m.split(".")[0] in tokens]


class NcuProfiler:
    """Runs ncu on a child measurement process; remembers rejected metric names in `rejected_file`."""

    def __init__(self, ncu: str, out_dir: Path, timeout: float = 600, env: dict | None = None, runner=None,
                 metric_set: str = "all"):
        self.ncu, self.timeout, self.env = ncu, timeout, env
        chosen = METRIC_SETS[metric_set]
        self.groups = METRIC_GROUPS if chosen is None else {metric_set: chosen}
        self.dir = Path(out_dir) / "ncu"
        self.rejected_file = Path(out_dir) / "ncu_rejected_metrics.json"
        self.rejected: set[str] = set(json.loads(self.rejected_file.read_text())) if self.rejected_file.exists() else set()
        self.disabled: str | None = None
        self._failures_in_a_row = 0
        self._runner = runner or self._subprocess

    def _subprocess(self, cmd: list[str], log_file: Path) -> tuple[int, str]:
        rc, out, err = run_group(cmd, self.timeout, env=self.env)
        return rc, (log_file.read_text(errors="replace") if log_file.exists() else "") + "\n" + out + err

    def _attempt(self, metrics: list[str], kernel_base: str, child: list[str], count: int, tag: str,
                 stem: str) -> dict:
        self.dir.mkdir(parents=True, exist_ok=True)
        log = self.dir / f"{stem}{'.' + tag if tag else ''}.csv"
        log.unlink(missing_ok=True)
        cmd = command(self.ncu, metrics, kernel_base, str(log), child, count)
        rc, text = self._runner(cmd, log)
        kernels = [k for k in parse_csv(text) if k["info"].get("Kernel Name") != PRIME_KERNEL]
        tail = "\n".join(ln for ln in text.splitlines() if not ln.startswith('"'))[-1500:]
        return {"ok": rc == 0 and bool(kernels), "rc": rc, "kernels": kernels, "cmd": cmd, "tail": tail,
                "log": str(log)}

    def profile(self, stem: str, kernel_base: str, child: list[str], count: int = 1) -> dict:
        """Profile the first `count` launches of `kernel_base` by `child`.

        Returns {'kernels': [{'info': {...}, 'metrics': {name: {value, unit}}}] in launch order,
        'commands': [...], 'logs': [...], 'rejected': [...], 'error': str or None}."""
        result = {"kernels": [], "commands": [], "logs": [], "rejected": [], "error": None}
        if self.disabled:
            result["error"] = f"ncu disabled for this session: {self.disabled}"
            return result

        def attempt(metrics, tag):
            a = self._attempt(metrics, kernel_base, child, count, tag, stem)
            result["commands"].append(" ".join(a["cmd"]))
            result["logs"].append(a["log"])
            if a["ok"]:  # merge by launch index: groups of metrics may come from different ncu runs
                for i, k in enumerate(a["kernels"]):
                    if i == len(result["kernels"]):
                        result["kernels"].append({"info": k["info"], "metrics": {}})
                    result["kernels"][i]["metrics"].update(k["metrics"])
            return a

        wanted = [m for g in self.groups.values() for m in g if m not in self.rejected]
        a = attempt(wanted, "")
        if not a["ok"] and FATAL.search(a["tail"]) is None:
            named = named_metrics(a["tail"], wanted)
            if named:  # drop the names ncu complained about and try the rest once
                self._reject(named)
                a = attempt([m for m in wanted if m not in self.rejected], "retry")
            if not a["ok"]:
                a = self._by_group(attempt)
        if result["kernels"]:
            self._failures_in_a_row = 0
            if len(result["kernels"]) < count:
                result["error"] = f"ncu profiled {len(result['kernels'])} of {count} launches"
        else:
            result["error"] = f"ncu failed (rc {a['rc']}): " + " | ".join(a["tail"].strip().splitlines()[-4:])
            self._failures_in_a_row += 1
            if FATAL.search(a["tail"]) or self._failures_in_a_row >= 3:
                self.disabled = result["error"]
        result["rejected"] = sorted(self.rejected)
        return result

    def _by_group(self, attempt) -> dict:
        """Each metric group alone; then each failing group is bisected down to the names ncu rejects.
        If the first two groups fail as well, the problem is not a metric name: stop, reject nothing."""
        outcome = {"ok": False, "rc": -1, "tail": "no group ran"}
        any_ok, failed = False, []

        def bisect(metrics: list[str], tag: str, failure: dict | None = None):
            nonlocal outcome, any_ok
            if failure is None:  # not yet run
                failure = outcome = attempt(metrics, tag)
                any_ok |= outcome["ok"]
                if outcome["ok"] or FATAL.search(outcome["tail"]):
                    return
            named = named_metrics(failure["tail"], metrics)
            if named:
                self._reject(named)
                rest = [m for m in metrics if m not in named]
                if rest:
                    bisect(rest, tag + "r")
            elif len(metrics) == 1:
                self._reject(metrics)
            else:
                half = len(metrics) // 2
                bisect(metrics[:half], tag + "a")
                bisect(metrics[half:], tag + "b")

        for i, (name, group) in enumerate(self.groups.items()):
            if i == 2 and not any_ok:
                return outcome
            group = [m for m in group if m not in self.rejected]
            if not group:
                continue
            outcome = attempt(group, f"group-{name}")
            any_ok |= outcome["ok"]
            if FATAL.search(outcome["tail"]):
                return outcome
            if not outcome["ok"]:
                failed.append((name, group, outcome))
        for name, group, failure in failed:
            bisect(group, f"group-{name}-", failure)
        return {**outcome, "ok": any_ok}

    def _reject(self, names: list[str]) -> None:
        self.rejected.update(names)
        self.rejected_file.parent.mkdir(parents=True, exist_ok=True)
        self.rejected_file.write_text(json.dumps(sorted(self.rejected), indent=1))


def child_env(repo_root: Path) -> dict:
    """The environment of the profiled child: this one, with the repository on PYTHONPATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(repo_root)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env
