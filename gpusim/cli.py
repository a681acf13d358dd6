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


def main() -> None:
    try:
        app(standalone_mode=False)
    except GpusimError as exc:
        sys.stderr.write(f"gpusim: error: {exc}\n")
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.stderr.write("gpusim: aborted\n")
        sys.exit(130)
    except Exception as exc:  # click usage errors and the like
        import click

        if isinstance(exc, click.exceptions.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        raise


if __name__ == "__main__":
    main()
