"""Readable tables at any terminal width and when the output goes to a file or a pipe.

* Redirected (not a terminal): rich would assume 80 columns and squeeze a wide table to a few
  characters per cell; here the console is as wide as the widest table needs (lines never wrap).
* A terminal narrower than a table's natural width: a table of three or more columns is printed
  as one small `column  value` block per row instead of squeezed cells; a key/value table wraps
  its cells. Nothing is cut.
COLUMNS still sets the width, as rich documents.
"""

from __future__ import annotations

import os

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

UNLIMITED = 10_000  # "no wrapping" width of a redirected console


def make_console(stderr: bool = False) -> Console:
    """A rich Console: the terminal's width on a terminal, unlimited when redirected (unless COLUMNS is set)."""
    probe = Console(stderr=stderr)
    if probe.is_terminal or os.environ.get("COLUMNS"):
        return probe
    return Console(stderr=stderr, width=UNLIMITED)


def print_table(console: Console, table: Table) -> None:
    """Print `table` whole: as it is when it fits, else one `column  value` block per row."""
    natural = Measurement.get(console, console.options.update_width(UNLIMITED), table).maximum
    if natural <= console.width or len(table.columns) <= 2:  # a key/value table: wrap its cells, cut none
        for column in table.columns:
            column.overflow = "fold"
        console.print(table)
        return
    if table.title:
        console.print(table.title, style="bold")
    names = [str(c.header) for c in table.columns]
    columns = [list(c.cells) for c in table.columns]
    for i in range(table.row_count):
        block = Table.grid(padding=(0, 2))
        block.add_column(style="dim", no_wrap=True)
        block.add_column(overflow="fold")
        for name, cells in zip(names, columns):
            block.add_row(name, cells[i] if i < len(cells) else "")
        console.print(block)
        console.print()
