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

from gpusim.errors import GpusimError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="gpusim: replay real SASS of GEMM kernels through a model of NVIDIA SMs.")
console = Console()


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
    console.print(table)


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
    console.print(table)


@app.command()
def compile(workload: str = typer.Argument(..., help="workload name or path of a spec YAML"),
            arch: str = typer.Option(..., "--arch", help="sm_35, sm_52 or sm_90"),
            out: Optional[Path] = typer.Option(None, "-o", "--out",
                                               help="listing path (default traces/sass/<arch>/<name>.sass)"),
            as_json: bool = typer.Option(False, "--json", help="print machine-readable JSON")):
    """Compile a workload's kernel to a cubin and write its SASS listing (needs the CUDA toolchain)."""
    from gpusim.toolchain.compile import compile_workload
    from gpusim.workloads import find_workload

    result = compile_workload(find_workload(workload), arch, out)
    if as_json:
        _emit_json(result)
    else:
        console.print(f"[green]wrote[/green] {result['listing']} ({result['instructions']} instructions, "
                      f"{result['registers']} registers, toolchain {result['toolchain']})")


@app.command()
def emulate(workload: str = typer.Argument(..., help="workload name or path of a spec YAML"),
            arch: str = typer.Option(..., "--arch", help="sm_35, sm_52 or sm_90"),
            size: int = typer.Option(..., "--size", help="problem size n"),
            check: bool = typer.Option(False, "--check", help="compare the outputs with the numpy reference"),
            as_json: bool = typer.Option(False, "--json", help="print machine-readable JSON")):
    """Run the kernel's real SASS in the functional emulator; print the dynamic instruction mix."""
    import time

    from gpusim.emu.run import check as check_outputs, emulate as run_emulation
    from gpusim.workloads import find_workload

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
          check: bool = typer.Option(True, "--check/--no-check", help="compare the outputs with the numpy "
                                                                      "reference first (default: on)")):
    """Emulate the kernel, check its outputs and write its dynamic warp trace."""
    from gpusim.emu.run import emulate as run_emulation, verify
    from gpusim.trace import DynamicTrace
    from gpusim.trace.accelsim import export_accelsim
    from gpusim.workloads import find_workload

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
def run(workload: str = typer.Argument(..., help="workload name or path of a spec YAML"),
        gpu: str = typer.Option(..., "--gpu", help="card id (k20x, k40, gtx780, k80, gtx970, gtx980, titanx, h100, "
                                                   "m2090) or a GPU config YAML"),
        size: int = typer.Option(..., "--size", help="problem size n"),
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
        check: bool = typer.Option(True, "--check/--no-check", help="compare the emulated outputs with the "
                                                                    "numpy reference before timing (default: on)")):
    """Simulate a workload on a GPU config and print where the cycles went."""
    from gpusim.errors import SpecError
    from gpusim.timing.driver import run_workload

    window = None
    if timeline_ctas is not None:
        try:
            lo, hi = (float(x) for x in timeline_cycles.split(":"))
            ctas = None if timeline_ctas == "all" else [int(c) for c in timeline_ctas.split(",")]
        except ValueError:
            raise SpecError("--timeline-ctas takes 'all' or ids like 0,1; --timeline-cycles takes FIRST:LAST") from None
        window = (lo, hi, ctas)
    result = run_workload(workload, gpu, size, mode=mode, overrides=_parse_sets(set_),
                          honour_control_codes=honour_control_codes, window=window, check=check)
    if json_path:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(result.model_dump_json(indent=2))
    _print_result(result)


@app.command()
def viz(results: list[Path] = typer.Argument(..., help="result JSON files written by `gpusim run --json`"),
        outdir: Path = typer.Option(..., "-o", "--out", help="folder for report.html, timeline.json and plots/"),
        bucket: Optional[float] = typer.Option(None, "--bucket", help="cycles per point of the utilisation plot"),
        as_json: bool = typer.Option(False, "--json", help="print the written paths as JSON")):
    """Write a Perfetto timeline, stall plots and a self-contained HTML report of timing results."""
    from gpusim.viz.load import load_result
    from gpusim.viz.report import write_outputs

    loaded = [load_result(p) for p in results]
    try:
        written = write_outputs(loaded, outdir, bucket=bucket)
    except OSError as exc:
        raise GpusimError(f"cannot write the report: {exc.strerror or exc}", str(outdir)) from None
    summary = {"report": str(written["report"]), "timeline": str(written["timeline"]) if written["timeline"] else None,
               "plots": [str(p) for p in written["plots"]]}
    if as_json:
        _emit_json(summary)
        return
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
          as_json: bool = typer.Option(False, "--json", help="print a machine-readable summary")):
    """Sweep config fields over workloads (a study file); write a table, plots and summary.md."""
    from gpusim.study import load_study, run_study

    spec = load_study(file)  # validates every point's config before anything runs
    try:
        outcome = run_study(spec, out_dir=out, dask=dask, workers=workers, progress=True,
                            console=Console(stderr=True))
    except KeyboardInterrupt:
        sys.stderr.write("gpusim: study interrupted; finished points are cached, run the same command to resume\n")
        raise SystemExit(130) from None
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

    table = Table(title="gpusim validate: predicted vs measured (time at the measured clock)")
    for col in ("workload", "n", "card", "mode", "pred ms", "meas ms", "time err", "pred cyc", "meas cyc",
                "ncu cyc", "inst err", "bank confl p/m", "DRAM err", "top stall pred / meas"):
        table.add_column(col, justify="left" if col in ("workload", "card", "mode", "top stall pred / meas")
                         else "right")
    for r in report["rows"]:
        if r.get("predicted_time_ms") is None:
            table.add_row(r["workload"], str(r["size"]), r["card"], r["mode"], "failed", f"{r['measured_time_ms']:.4g}",
                          *["-"] * 8)
            continue
        e = r["time_error_pct"]
        colour = "green" if abs(e) <= 20 else "yellow" if abs(e) <= 50 else "red"
        ps = r["predicted_top_stalls"][0][0] if r["predicted_top_stalls"] else "-"
        ms = r["measured_top_stalls"][0][0] if r["measured_top_stalls"] else "-"
        bc = ("-" if r.get("measured_shared_bank_conflicts") is None else
              f"{num(r['predicted_shared_bank_conflicts'])}/{num(r['measured_shared_bank_conflicts'])}")
        table.add_row(r["workload"], str(r["size"]), r["card"], r["mode"], f"{r['predicted_time_ms']:.4g}",
                      f"{r['measured_time_ms']:.4g}", f"[{colour}]{pct(e)}[/{colour}]", num(r["predicted_cycles"]),
                      num(r["measured_cycles"]), num(r.get("ncu_cycles")), pct(r.get("instructions_error_pct")), bc,
                      pct(r.get("dram_error_pct")), f"{ps} / {ms}" if r["measured_top_stalls"] else ps)
    console.print(table)
    rk = report["summary"]["rankings"]
    if rk:
        t = Table(title="family rankings (fastest first)")
        for col in ("family", "card", "n", "match", "tau", "meas spread", "measured order", "predicted order"):
            t.add_column(col)
        for x in rk:
            t.add_row(x["family"], x["card"], str(x["size"]), "yes" if x["match"] else "[red]no[/red]",
                      str(x["kendall_tau"]), f"{x['measured_spread_pct']:.1f}%", " < ".join(x["measured_order"]),
                      " < ".join(x["predicted_order"]))
        console.print(t)
    g = (report.get("seeds") or {}).get("gtx970_dgemm")
    if g:
        t = Table(title="seed: GTX 970 DGEMM, seconds per GEMM")
        for col in ("workload", "n", "measured s", "predicted s @1178", "err", "err @1268"):
            t.add_column(col)
        for e in g["entries"]:
            t.add_row(e["workload"], str(e["size"]), f"{e['measured_s']:.5f}",
                      "-" if e.get("predicted_s") is None else f"{e['predicted_s']:.5f}", pct(e.get("error_pct")),
                      pct(e.get("error_pct_at_1268")))
        console.print(t)
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
    console.print(table)
    console.print(_check_line(r.checked, r.check))


def _check_line(checked: bool, report: dict | None) -> str:
    """The result's line on the output check."""
    if not checked:
        return "output check: skipped (--no-check)"
    parts = [f"{name} {c['elements']:,}/{c['of']:,} elements" + (" exact" if c["tolerance"] == 0 else
             f" rel. error {c['rel_error']:.2g}") for name, c in (report or {}).items()]
    return "output check: passed against the numpy reference (" + ", ".join(parts) + ")"


def _check_size(wl, size: int) -> None:
    if size not in wl.sizes:
        from gpusim.errors import SpecError

        raise SpecError(f"size {size} is not among the sizes workload {wl.name} supports: {wl.sizes}")


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


def main() -> None:
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
