"""The `gpusim` command line (typer). Each command is a thin layer over the package's functions;
defaults live in configs and specs, not here. Errors caused by input print one line and exit nonzero."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from gpusim.console import make_console, print_table
from gpusim.errors import GpusimError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="gpusim: replay real SASS of GEMM kernels through a model of NVIDIA SMs.")
console = make_console()  # wide when redirected; print_table keeps tables whole on narrow terminals
CACHE_DIR_HELP = "cache a spec's SASS listings here instead of beside the spec (or set GPUSIM_CACHE_DIR)"


def _emit_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, indent=2) + "\n")


@app.command()
def kernels(as_json: bool = typer.Option(False, "--json", help="print machine-readable JSON")):
    """List the workloads shipped in traces/workloads with their sizes and architectures."""
    from gpusim.workloads import list_workloads
    from gpusim.toolchain.listings import listing_path

    rows = []
    for wl in list_workloads():
        rows.append({"name": wl.name, "kernel": wl.kernel, "description": wl.description, "sizes": wl.sizes,
                     "archs": wl.archs, "source": str(wl.source_path.relative_to(wl.spec_path.parent.parent.parent)),
                     "listings": {a: listing_path(wl.name, a).exists() for a in wl.archs}})
    if as_json:
        _emit_json(rows)
        return
    table = Table(title="gpusim workloads")
    for col in ("name", "kernel", "sizes", "archs (listing committed)"):
        table.add_column(col)
    for r in rows:
        archs = " ".join(f"{a}{'' if ok else '(missing)'}" for a, ok in r["listings"].items())
        table.add_row(r["name"], r["kernel"], ",".join(map(str, r["sizes"])), archs)
    print_table(console, table)


@app.command()
def parse(listing: Path = typer.Argument(..., help="nvdisasm -hex listing (e.g. traces/sass/sm_52/X.sass)"),
          kernel: Optional[str] = typer.Option(None, help="mangled kernel name if the listing has several"),
          as_json: bool = typer.Option(False, "--json", help="print machine-readable JSON")):
    """Parse a SASS listing and print the Program summary."""
    from gpusim.isa.parser import parse_listing

    summary = parse_listing(listing, kernel).summary()
    if as_json:
        _emit_json(summary)
        return
    table = Table(title=f"{listing}")
    table.add_column("field")
    table.add_column("value")
    for k, v in summary.items():
        if k != "opcodes":
            table.add_row(k, str(v))
    table.add_row("opcodes", ", ".join(f"{k}:{v}" for k, v in summary["opcodes"].items()))
    print_table(console, table)


@app.command()
def compile(workload: str = typer.Argument(..., help="workload name or path of a spec YAML"),
            arch: str = typer.Option(..., "--arch", help="sm_35, sm_52 or sm_90"),
            out: Optional[Path] = typer.Option(None, "-o", "--out",
                                               help="listing path (default: traces/sass/<arch>/<name>.sass for "
                                                    "the suite, the spec's listing cache otherwise)"),
            as_json: bool = typer.Option(False, "--json", help="print machine-readable JSON"),
            cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help=CACHE_DIR_HELP),
            compare: Optional[Path] = typer.Option(None, "--compare", help="your binary (.cubin/executable) or its "
                                                   "`cuobjdump -sass` output: warn at the first instruction that "
                                                   "differs from gpusim's build")):
    """Compile a workload's kernel to a cubin and write its SASS listing (needs the CUDA toolchain)."""
    from gpusim.toolchain.workspace import compile_spec, set_cache_dir
    from gpusim.workloads import find_workload

    set_cache_dir(cache_dir)
    result = compile_spec(find_workload(workload), arch, out, compare)
    if as_json:
        _emit_json(result)
    else:
        console.print(f"[green]wrote[/green] {result['listing']} ({result['instructions']} instructions, "
                      f"{result['registers']} registers, toolchain {result['toolchain']})")
    if "compare" in result:
        from gpusim.toolchain.importsass import compare_line

        line = compare_line(result["compare"])
        sys.stderr.write(f"gpusim: {'' if result['compare']['identical'] else 'warning: '}{line}\n")


@app.command()
def emulate(workload: str = typer.Argument(..., help="workload name or path of a spec YAML"),
            arch: str = typer.Option(..., "--arch", help="sm_35, sm_52 or sm_90"),
            size: int = typer.Option(..., "--size", help="problem size n"),
            check: bool = typer.Option(False, "--check", help="compare the outputs with the numpy reference"),
            as_json: bool = typer.Option(False, "--json", help="print machine-readable JSON"),
            cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help=CACHE_DIR_HELP)):
    """Run the kernel's real SASS in the functional emulator; print the dynamic instruction mix."""
    import time

    from gpusim.emu.run import check as check_outputs, emulate as run_emulation
    from gpusim.toolchain.workspace import set_cache_dir
    from gpusim.workloads import find_workload

    set_cache_dir(cache_dir)

    wl = find_workload(workload)
    _check_size(wl, size)
    t0 = time.perf_counter()
    emu, inputs = run_emulation(wl, arch, size)
    wall = time.perf_counter() - t0
    mix: dict[str, int] = {}
    for pc, warps in zip(emu.log.pcs, emu.log.warps):
        opc = emu.program.instructions[pc].opcode
        mix[opc] = mix.get(opc, 0) + len(warps)
    result = {"workload": wl.name, "arch": arch, "size": size, "kernel": emu.program.kernel,
              "ctas": len(emu.ctas), "warp_instructions": emu.warp_instructions, "wall_seconds": round(wall, 3),
              "opcode_mix": dict(sorted(mix.items(), key=lambda kv: -kv[1]))}
    if check:
        result["check"] = check_outputs(wl, emu, inputs, size)
    if as_json:
        _emit_json(result)
    else:
        console.print(f"{wl.name} on {arch}, n={size}: {emu.warp_instructions:,} warp-instructions "
                      f"over {len(emu.ctas)} CTAs in {wall:.2f} s")
        console.print(", ".join(f"{k} {v:,}" for k, v in list(result["opcode_mix"].items())[:12]))
        for name, c in result.get("check", {}).items():
            colour = "green" if c["passed"] else "red"
            console.print(f"[{colour}]check {name}: relative error {c['rel_error']:.3g} "
                          f"(tolerance {c['tolerance']:g}) {'passed' if c['passed'] else 'FAILED'}[/{colour}]")
    if check and not all(c["passed"] for c in result["check"].values()):
        raise typer.Exit(1)


@app.command()
def trace(workload: str = typer.Argument(..., help="workload name or path of a spec YAML"),
          arch: str = typer.Option(..., "--arch", help="sm_35, sm_52 or sm_90"),
          size: int = typer.Option(..., "--size", help="problem size n"),
          out: Path = typer.Option(..., "-o", "--out", help="trace file (.npz) or folder (accelsim)"),
          fmt: str = typer.Option("npz", "--format", help="npz (gpusim's format) or accelsim"),
          as_json: bool = typer.Option(False, "--json", help="print machine-readable JSON"),
          cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help=CACHE_DIR_HELP),
          check: bool = typer.Option(True, "--check/--no-check", help="compare the outputs with the numpy "
                                                                      "reference first (default: on)")):
    """Emulate the kernel, check its outputs and write its dynamic warp trace."""
    from gpusim.emu.run import emulate as run_emulation, verify
    from gpusim.toolchain.workspace import set_cache_dir
    from gpusim.trace import DynamicTrace
    from gpusim.trace.accelsim import export_accelsim
    from gpusim.workloads import find_workload

    set_cache_dir(cache_dir)

    if fmt not in ("npz", "accelsim"):
        from gpusim.errors import GpusimError

        raise GpusimError(f"--format must be npz or accelsim, not '{fmt}'")
    wl = find_workload(workload)
    _check_size(wl, size)
    emu, inputs = run_emulation(wl, arch, size)
    report = verify(wl, emu, inputs, size) if check else None  # a wrong result: one line, no trace
    dyn = DynamicTrace.from_emulator(emu, workload=wl.name, size=size)
    path = dyn.save(out) if fmt == "npz" else export_accelsim(dyn, emu.program, out)
    result = {"workload": wl.name, "arch": arch, "size": size, "format": fmt, "path": str(path),
              "warp_instructions": dyn.n_warp_instructions, "checked": check, "check": report}
    if as_json:
        _emit_json(result)
    else:
        console.print(f"wrote {fmt} trace {path}: {dyn.n_warp_instructions:,} warp-instructions")
        console.print(_check_line(check, report))


@app.command()
def run(workload: Optional[str] = typer.Argument(None, help="workload name or path of a spec YAML (optional "
                                                               "with --trace)"),
        gpu: str = typer.Option(..., "--gpu", help="card id (k20x, k40, gtx780, k80, gtx970, gtx980, titanx, h100, "
                                                   "m2090) or a GPU config YAML"),
        size: Optional[int] = typer.Option(None, "--size", help="problem size n (required without --trace)"),
        json_path: Optional[Path] = typer.Option(None, "--json", help="write the full result JSON here"),
        mode: str = typer.Option("detailed", "--mode", help="detailed (every CTA) or sampled"),
        set_: list[str] = typer.Option([], "--set", help="override a config field: --set sm.register_file.banks=8"),
        honour_control_codes: Optional[bool] = typer.Option(None, "--control-codes/--scoreboard",
                                                            help="use the compiler's control codes or a "
                                                                 "hardware register scoreboard"),
        timeline_ctas: Optional[str] = typer.Option(None, "--timeline-ctas",
                                                    help="record a timeline for these CTAs (e.g. 0,1) for gpusim viz"),
        timeline_cycles: str = typer.Option("0:50000", "--timeline-cycles",
                                            help="cycle window of the timeline, FIRST:LAST"),
        cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help=CACHE_DIR_HELP),
        ncu: Optional[Path] = typer.Option(None, "--ncu", help="Nsight Compute raw CSV (ncu --csv --page raw) of "
                                                               "this kernel: show its counters beside the simulated"),
        trace_path: Optional[Path] = typer.Option(None, "--trace", help="simulate this saved trace instead: a "
                                                  "gpusim .npz or an Accel-Sim trace directory"),
        check: bool = typer.Option(True, "--check/--no-check", help="compare the emulated outputs with the "
                                                                    "numpy reference before timing (default: on)")):
    """Simulate a workload on a GPU config and print where the cycles went."""
    from gpusim.errors import SpecError
    from gpusim.timing.driver import run_trace, run_workload
    from gpusim.toolchain.workspace import set_cache_dir

    set_cache_dir(cache_dir)

    window = None
    if timeline_ctas is not None:
        try:
            lo, hi = (float(x) for x in timeline_cycles.split(":"))
            ctas = None if timeline_ctas == "all" else [int(c) for c in timeline_ctas.split(",")]
        except ValueError:
            raise SpecError("--timeline-ctas takes 'all' or ids like 0,1; --timeline-cycles takes FIRST:LAST") from None
        window = (lo, hi, ctas)
    measured = None
    if trace_path is not None:
        if mode != "detailed" or size is not None:
            raise SpecError("--trace simulates the saved trace as it is: no --size or --mode with it")
        if ncu is not None:
            raise SpecError("--ncu compares a workload run at a size with its Nsight row: not with --trace")
        result = run_trace(trace_path, gpu, overrides=_parse_sets(set_), honour_control_codes=honour_control_codes,
                           window=window, workload=workload)
    else:
        if workload is None or size is None:
            raise SpecError("gpusim run needs a WORKLOAD and --size (or --trace FILE)")
        if ncu is not None:  # read and match before simulating: a wrong file fails at once
            from gpusim.measure.compare import ncu_baseline
            from gpusim.workloads import find_workload

            wl = find_workload(workload)
            _check_size(wl, size)
            measured = ncu_baseline(ncu, wl, size)
        result = run_workload(workload, gpu, size, mode=mode, overrides=_parse_sets(set_),
                              honour_control_codes=honour_control_codes, window=window, check=check)
    if json_path:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        if measured is None:
            json_path.write_text(result.model_dump_json(indent=2))
        else:
            json_path.write_text(json.dumps({**json.loads(result.model_dump_json()), "measured": measured}, indent=2))
    _print_result(result)
    if measured is not None:
        _print_measured(result, measured)
        if str(_parse_sets(set_).get("memory.l2.initial", "")) == "warm":
            console.print("[yellow]note: this run started with a warm L2; Nsight Compute's counters are of a launch "
                          "after a cache flush (cold)[/yellow]")


@app.command()
def viz(results: list[Path] = typer.Argument(..., help="result JSON files written by `gpusim run --json`"),
        outdir: Path = typer.Option(..., "-o", "--out", help="folder for report.html, timeline.json and plots/"),
        bucket: Optional[float] = typer.Option(None, "--bucket", help="cycles per point of the utilisation plot"),
        as_json: bool = typer.Option(False, "--json", help="print the written paths as JSON")):
    """Write a Perfetto timeline, stall plots and a self-contained HTML report of timing results."""
    from gpusim.viz.load import load_with_measured
    from gpusim.viz.report import write_outputs

    loaded = [load_with_measured(p) for p in results]
    try:
        written = write_outputs([r for r, _ in loaded], outdir, bucket=bucket, measured=[m for _, m in loaded])
    except OSError as exc:
        raise GpusimError(f"cannot write the report: {exc.strerror or exc}", str(outdir)) from None
    summary = {"report": str(written["report"]), "timeline": str(written["timeline"]) if written["timeline"] else None,
               "plots": [str(p) for p in written["plots"]], "config_differences": written.get("differences", [])}
    if as_json:
        _emit_json(summary)
        return
    for d in summary["config_differences"]:  # what the compared runs were computed from, where it differs
        console.print(f"differs: {d['field']}: " + " | ".join(map(str, d["values"])), markup=False,
                      highlight=False)
    console.print(f"[green]wrote[/green] {summary['report']} ({len(summary['plots'])} plot files in "
                  f"{outdir / 'plots'})")
    if summary["timeline"]:
        console.print(f"timeline: {summary['timeline']} (open it at https://ui.perfetto.dev; 1 µs there = 1 cycle)")
    else:
        console.print("no timeline recorded (`gpusim run ... --timeline-ctas 0,1` records one)")


@app.command()
def study(file: Path = typer.Argument(..., help="study file (configs/studies/*.yaml)"),
          out: Optional[Path] = typer.Option(None, "--out", help="output folder (default out/studies/<name>/)"),
          dask: Optional[str] = typer.Option(None, "--dask", help="run the points on this Dask scheduler "
                                                                    "(tcp://host:8786) instead of local processes"),
          workers: Optional[int] = typer.Option(None, "--workers", min=1,
                                                help="local worker processes (default: all cores)"),
          dask_timeout: float = typer.Option(10.0, "--dask-timeout", min=0.1,
                                             help="seconds to wait for the Dask scheduler's answer"),
          as_json: bool = typer.Option(False, "--json", help="print a machine-readable summary")):
    """Sweep config fields over workloads (a study file); write a table, plots and summary.md."""
    from gpusim.study import load_study, run_study

    spec = load_study(file)  # validates every point's config before anything runs
    try:
        outcome = run_study(spec, out_dir=out, dask=dask, workers=workers, progress=True,
                            console=Console(stderr=True), dask_timeout=dask_timeout)
    except BaseException as exc:
        from gpusim.interrupt import Interrupted, leave

        if not isinstance(exc, (Interrupted, KeyboardInterrupt)):
            raise
        leave("gpusim", exc, "study interrupted; finished points are cached, run the same command to resume")
    fails = outcome.failures
    summary = {"study": spec.spec.name, "out": str(outcome.out_dir), "points": len(spec.points),
               "failed": len(fails), "computed": len(outcome.computed), "cached": len(outcome.cached),
               "wall_s": round(outcome.wall_s, 2), "files": outcome.files, "failures": fails}
    if as_json:
        _emit_json(summary)
    else:
        colour = "red" if fails else "green"
        console.print(f"[{colour}]{spec.spec.name}: {len(spec.points) - len(fails)}/{len(spec.points)} points ok"
                      f"[/{colour}] ({len(outcome.computed)} computed, {len(outcome.cached)} cached, "
                      f"{outcome.wall_s:.1f} s) -> {outcome.out_dir}/summary.md")
        for f in fails[:10]:
            console.print(f"[red]failed[/red] {f['workload']} n={f['size']} {f['card']} {f['coords']}: {f['error']}")
    if fails:
        raise SystemExit(1)  # (typer.Exit's code is lost under standalone_mode=False)


@app.command()
def validate(gpu: Optional[str] = typer.Option(None, "--gpu", help="only this card: its validation/<card>/ data, or "
                                                                   "the seed check gtx970 / m2090 (default: all)"),
             as_json: bool = typer.Option(False, "--json", help="print machine-readable JSON (same figures)"),
             quick: bool = typer.Option(False, "--quick", help="sizes <= 1024 only (fast check)"),
             workers: int = typer.Option(2, "--workers", min=1, help="simulation processes for uncached cases")):
    """Compare simulated and measured times/counters (validation/ and the seeds' tables); exits 0."""
    from gpusim.validate import run_validation, summary_lines

    err = Console(stderr=True)
    report = run_validation(gpu=gpu, quick=quick, workers=workers, console=err, progress=True)
    report["summary_lines"] = summary_lines(report)
    if as_json:
        _emit_json(report)
        return
    _print_validation(report)


def _print_validation(report: dict) -> None:
    def pct(v):
        return "-" if v is None else f"{v:+.1f}%"

    def num(v):
        return "-" if v is None else f"{v:,.0f}"

    table = Table(title="gpusim validate: predicted vs measured (time: CUDA events vs warm-L2 simulation, at the "
                        "measured clock; ncu columns: Nsight Compute vs cold-L2 simulation)")
    for col in ("workload", "n", "card", "mode", "pred ms", "meas ms", "time err (warm)", "ncu cyc",
                "cyc err (cold)", "inst err", "bank confl p/m", "DRAM rd/wr err", "stall dist",
                "top stall pred / meas"):
        table.add_column(col, justify="left" if col in ("workload", "card", "mode", "top stall pred / meas")
                         else "right")
    for r in report["rows"]:
        if r.get("predicted_time_ms") is None:
            table.add_row(r["workload"], str(r["size"]), r["card"], r["mode"], "failed", f"{r['measured_time_ms']:.4g}",
                          *["-"] * 8)
            continue
        e = r["time_error_pct"]
        colour = "green" if abs(e) <= 20 else "yellow" if abs(e) <= 50 else "red"
        ps = r["predicted_top_stalls"][0][0] if r.get("predicted_top_stalls") else "-"
        ms = r["measured_top_stalls"][0][0] if r.get("measured_top_stalls") else "-"
        bc = ("-" if r.get("measured_shared_bank_conflicts") is None else
              f"{num(r['predicted_shared_bank_conflicts'])}/{num(r['measured_shared_bank_conflicts'])}")
        write = pct(r.get("dram_write_error_pct")) if r.get("predicted_dram_write_bytes") is not None else "n/a"
        dram = "-" if not r.get("ncu_record") else f"{pct(r.get('dram_read_error_pct'))}/{write}"
        dist = "-" if r.get("stall_distance") is None else f"{r['stall_distance']:.2f}"
        table.add_row(r["workload"], str(r["size"]), r["card"], r["mode"], f"{r['predicted_time_ms']:.4g}",
                      f"{r['measured_time_ms']:.4g}", f"[{colour}]{pct(e)}[/{colour}]", num(r.get("ncu_cycles")),
                      pct(r.get("cycles_error_pct_vs_ncu")), pct(r.get("instructions_error_pct")), bc, dram, dist,
                      f"{ps} / {ms}" if r.get("measured_top_stalls") else ps)
    print_table(console, table)
    rk = report["summary"]["rankings"]
    if rk:
        t = Table(title="family rankings (fastest first)")
        for col in ("family", "card", "n", "match", "tau", "meas spread", "measured order", "predicted order"):
            t.add_column(col)
        for x in rk:
            t.add_row(x["family"], x["card"], str(x["size"]), "yes" if x["match"] else "[red]no[/red]",
                      str(x["kendall_tau"]), f"{x['measured_spread_pct']:.1f}%", " < ".join(x["measured_order"]),
                      " < ".join(x["predicted_order"]))
        print_table(console, t)
    g = (report.get("seeds") or {}).get("gtx970_dgemm")
    if g:
        t = Table(title="seed: GTX 970 DGEMM, seconds per GEMM")
        for col in ("workload", "n", "measured s", "predicted s @1178", "err", "err @1268"):
            t.add_column(col)
        for e in g["entries"]:
            t.add_row(e["workload"], str(e["size"]), f"{e['measured_s']:.5f}",
                      "-" if e.get("predicted_s") is None else f"{e['predicted_s']:.5f}", pct(e.get("error_pct")),
                      pct(e.get("error_pct_at_1268")))
        print_table(console, t)
        console.print(f"[dim]{g['clock_note']}[/dim]")
    m = (report.get("seeds") or {}).get("m2090_aat")
    if m:
        console.print(f"[dim]{m['note']}[/dim]")
    for line in report["summary_lines"]:
        console.print(line)


def _parse_sets(items: list[str]) -> dict:
    import yaml

    from gpusim.errors import SpecError

    out = {}
    for item in items:
        if "=" not in item:
            raise SpecError(f"--set expects FIELD=VALUE, got '{item}'")
        key, value = item.split("=", 1)
        out[key.strip()] = yaml.safe_load(value)
    return out


def _print_result(r) -> None:
    table = Table(title=f"{r.workload} n={r.size} on {r.card} ({r.arch}, {r.mode})")
    table.add_column("metric")
    table.add_column("value", justify="right")
    rows = [("cycles", f"{r.cycles:,.0f}"), ("time", f"{r.time_s * 1e3:.4f} ms at {r.clock_mhz:.0f} MHz"),
            ("warp-instructions", f"{r.warp_instructions:,}"), ("IPC per SM", f"{r.ipc:.2f}"),
            ("SMs used / CTAs / waves", f"{r.sms_used} / {r.ctas} / {r.waves:.2f}"),
            ("occupancy", f"{r.occupancy['ctas_per_sm']} CTAs/SM ({r.occupancy['limiter']})"),
            ("shared wavefronts / conflicts", f"{r.shared['wavefronts']:,} / {r.shared['bank_conflicts']:,}"),
            ("register-bank conflict cycles", f"{r.registers['bank_conflict_cycles']:,}"),
            ("DRAM bytes", f"{r.memory['dram_bytes']:,}")]
    rows += [(f"stall: {k}", f"{v:.1%}") for k, v in r.top_stalls(5)]
    rows += [(f"pipe {k}", f"{v:.1%}") for k, v in r.pipe_utilisation.items()]
    for k, v in rows:
        table.add_row(k, v)
    print_table(console, table)
    console.print(_check_line(r.checked, r.check))
    for note in r.notes:
        console.print(f"note: {note}")


def _print_measured(r, measured: dict) -> None:
    """Nsight Compute's counters of the same launch beside the simulated ones (its baseline view)."""
    from gpusim.measure.compare import compare

    c = compare({"cycles": r.cycles, "clock_mhz": r.clock_mhz, "warp_instructions": r.warp_instructions,
                 "memory": r.memory, "shared": r.shared, "stalls": r.stalls}, measured)

    def fmt(v):
        return "n/a" if v is None else f"{v:,.0f}"

    table = Table(title=f"measured (Nsight Compute, launch ID {measured.get('id')} of {measured.get('source')}: "
                        f"grid {measured.get('grid')} block {measured.get('block')}) vs simulated")
    for col in ("counter", "simulated", "measured", "difference"):
        table.add_column(col, justify="left" if col == "counter" else "right")
    for x in c["counters"]:
        table.add_row(x["name"], fmt(x["simulated"]), fmt(x["measured"]),
                      "n/a" if x["error_pct"] is None else f"{x['error_pct']:+.1f}%")
    for x in c["stalls"]:
        if x["simulated"] >= 0.0005 or (x["measured"] or 0) >= 0.0005:
            table.add_row(f"stall: {x['reason']}", f"{x['simulated']:.1%}",
                          "n/a" if x["measured"] is None else f"{x['measured']:.1%}", "")
    console.print(table)
    t = c["top_reason"]
    dist = "n/a" if c["stall_distance"] is None else f"{c['stall_distance']:.3f}"
    console.print(f"stall distance (half the L1 distance of the stall fractions) {dist}; top stall simulated "
                  f"{t['simulated']}, measured {t['measured']}. Nsight Compute flushes caches before the profiled "
                  "launch: compare with a cold-L2 run (memory.l2.initial=cold).")


def _check_line(checked: bool, report: dict | None) -> str:
    """The result's line on the output check."""
    if not checked:
        return "output check: skipped (--no-check, or a saved trace: no outputs to compare)"
    parts = [f"{name} {c['elements']:,}/{c['of']:,} elements" + (" exact" if c["tolerance"] == 0 else
             f" rel. error {c['rel_error']:.2g}") for name, c in (report or {}).items()]
    return "output check: passed against the numpy reference (" + ", ".join(parts) + ")"


def _check_size(wl, size: int) -> None:
    wl.check_size(size)  # listed in sizes, or satisfying the spec's constraints


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def measure(ctx: typer.Context,
            out: Path = typer.Option(..., "--out", help="folder for one JSON per (workload, size) and summary.csv"),
            workloads: Optional[str] = typer.Option(None, "--workloads", help="comma-separated names (default all)"),
            ncu: bool = typer.Option(False, "--ncu", help="also collect Nsight Compute counters on one launch")):
    """Measure the suite on this machine's NVIDIA GPU: build with the committed nvcc flags, check
    against numpy, time with CUDA events, record clocks, optionally profile with Nsight Compute.
    Further options pass through to `python -m gpusim.measure.run` (see its --help)."""
    from gpusim.errors import GpusimError
    from gpusim.measure.run import main as measure_main

    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("no CUDA device")
    except Exception as exc:  # no cupy, no driver, no GPU: say so in one line
        raise GpusimError(f"gpusim measure needs an NVIDIA GPU and cupy ({type(exc).__name__}: {exc}); "
                          "see validation/README.md for how the committed data was measured") from None
    argv = ["--out", str(out)] + (["--workloads", workloads] if workloads else []) + (["--ncu"] if ncu else [])
    rc = measure_main(argv + list(ctx.args))
    if rc:
        raise typer.Exit(rc)


@app.command("import-sass")
def import_sass(file: Path = typer.Argument(..., help="your binary (.cubin, object or executable) or its "
                                            "`cuobjdump -sass [-res-usage]` output"),
                workload: str = typer.Argument(..., help="the spec (YAML) of the kernel in it"),
                arch: str = typer.Option("sm_90", "--arch", help="sm_35, sm_52 or sm_90"),
                out: Optional[Path] = typer.Option(None, "-o", "--out", help="listing path (default: the spec's "
                                                   "listing cache)"),
                cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help=CACHE_DIR_HELP),
                as_json: bool = typer.Option(False, "--json", help="print machine-readable JSON")):
    """Take a kernel's SASS from your own binary; `sass: FILE` in the spec makes run/emulate use it."""
    from gpusim.isa.parser import parse_listing
    from gpusim.toolchain.importsass import import_listing, imported_listing
    from gpusim.toolchain.workspace import set_cache_dir
    from gpusim.workloads import find_workload

    set_cache_dir(cache_dir)
    wl = find_workload(workload)
    if out is None:
        path = imported_listing(wl, arch, file)
    else:
        text, _ = import_listing(wl, arch, file)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        path = out
    program = parse_listing(path)
    result = {"workload": wl.name, "arch": arch, "from": str(file), "listing": str(path), "kernel": program.kernel,
              "instructions": len(program), "registers": program.registers}
    if as_json:
        _emit_json(result)
    else:
        console.print(f"[green]wrote[/green] {path} ({len(program)} instructions, {program.registers} registers, "
                      f"from {file}); add `sass: {file}` to {workload} to run it")


spec_app = typer.Typer(no_args_is_help=True, help="Write workload specs.")
app.add_typer(spec_app, name="spec")


@spec_app.command("init")
def spec_init(source: Path = typer.Argument(..., help="the .cu file with the kernel"),
              kernel: str = typer.Option(..., "--kernel", help="the kernel's name (without template arguments)"),
              out: Optional[Path] = typer.Option(None, "-o", "--out", help="spec path (default <kernel>.yaml "
                                                 "in the current folder)"),
              archs: str = typer.Option("sm_90", "--archs", help="comma-separated architectures"),
              force: bool = typer.Option(False, "--force", help="overwrite an existing spec")):
    """Write a spec skeleton from the kernel's parameter list (fill in its TODOs)."""
    from gpusim.errors import SpecError
    from gpusim.workloads.scaffold import skeleton

    if not source.is_file():
        raise SpecError("no such source file", str(source))
    out = out or Path(f"{kernel}.yaml")
    if out.exists() and not force:
        raise SpecError("exists already; pass --force to overwrite it", str(out))
    text = skeleton(source, kernel, out.resolve().parent, [a.strip() for a in archs.split(",") if a.strip()])
    try:
        out.write_text(text)
    except OSError as exc:
        raise SpecError(f"cannot write the spec: {exc.strerror or exc}", str(out)) from None
    console.print(f"[green]wrote[/green] {out}: fill in its TODOs (launch, shapes, reference), then "
                  f"`gpusim run {out} --gpu h100 --size N`")


def main() -> None:
    from gpusim.interrupt import Interrupted, handle_signals, leave

    handle_signals()  # Ctrl-C and SIGTERM raise Interrupted: one line, exit 130 / 143
    try:
        rc = app(standalone_mode=False)  # typer returns (not raises) the code of `raise typer.Exit(n)`
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except GpusimError as exc:
        sys.stderr.write(f"gpusim: error: {exc}\n")
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.stderr.write("gpusim: aborted\n")
        sys.exit(130)
    except (Interrupted, KeyboardInterrupt) as exc:  # worker pools end their workers on the way out
        leave("gpusim", exc)
    except Exception as exc:  # click usage errors and the like
        if _is_click_error(exc):
            sys.stderr.write(f"gpusim: error: {exc.format_message()} (see gpusim --help)\n")
            sys.exit(exc.exit_code)
        raise


def _is_click_error(exc: Exception) -> bool:
    """A usage error from click, or from the copy of click that typer >= 0.20 vendors (typer._click)."""
    import click

    kinds = [click.exceptions.ClickException]
    try:
        from typer._click.exceptions import ClickException as TyperClickException
        kinds.append(TyperClickException)
    except ImportError:
        pass
    return isinstance(exc, tuple(kinds))


if __name__ == "__main__":
    main()
