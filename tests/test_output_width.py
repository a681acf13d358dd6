"""Tables stay readable when redirected and on narrow terminals: no cell is cut."""

import os
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from gpusim.console import make_console, print_table

ROOT = Path(__file__).resolve().parent.parent


def _kernels(columns=None):
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["PYTHONPATH"] = str(ROOT)
    if columns:
        env["COLUMNS"] = str(columns)
    out = subprocess.run([sys.executable, "-m", "gpusim", "kernels"], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_redirected_output_is_not_squeezed():
    text = _kernels()  # stdout is a pipe here
    assert "…" not in text
    assert "64,128,256,512,1024,2048,4096,8192,16384" in text and "dgemm_unroll_db_128b_prefsmem" in text


def test_narrow_terminal_prints_whole_cells():
    text = _kernels(60)
    assert "…" not in text and max(len(ln) for ln in text.splitlines()) <= 60
    assert "dgemm_unroll_db_128b_prefsmem" in text and "16384" in text  # long cells wrap, none is cut


def test_print_table_fallback_and_key_value_wrap():
    table = Table(title="t")
    for c in ("alpha", "beta", "gamma"):
        table.add_column(c)
    table.add_row("a" * 30, "b" * 30, "c" * 30)
    console = Console(width=50, record=True, file=open(os.devnull, "w"))
    print_table(console, table)
    text = console.export_text()
    assert "a" * 30 in text and "c" * 30 in text and "…" not in text
    kv = Table()
    kv.add_column("metric")
    kv.add_column("value")
    kv.add_row("time", "0.0171 ms at 1980 MHz, a long value that does not fit")
    console = Console(width=30, record=True, file=open(os.devnull, "w"))
    print_table(console, kv)
    assert "…" not in console.export_text()


def test_make_console_is_wide_when_redirected(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert make_console().width > 1000  # pytest captures stdout: not a terminal
