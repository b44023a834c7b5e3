"""Tables on stdout that stay whole: drawn for a person at a terminal, plain tab-separated text otherwise.

A rich table written to a pipe is cut to 80 columns and elides what does not fit (`…`), so
`farm tasks list | grep` would see half an id. When stdout is not a terminal the same rows go out as a
header line and one line per row, cells separated by tabs (tabs and line breaks inside a cell escaped).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def stdout_is_terminal() -> bool:
    """Whether a person is reading stdout (not a pipe, a file or a test runner)."""
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def print_table(columns: Sequence[str], rows: Sequence[Sequence[str]], *, title: str | None = None) -> None:
    """Print `rows` under `columns`: a rich table (cells folded, never elided) at a terminal, else tab-separated
    text without the title."""
    if not stdout_is_terminal():
        # Imported here: every `farm` command asks `stdout_is_terminal`, and this import brings in pydantic.
        from farm.results.query_output import to_tsv

        sys.stdout.write(to_tsv(columns, rows))
        sys.stdout.flush()
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title)
    for name in columns:
        table.add_column(name, overflow="fold")
    for row in rows:
        # Text, not markup: a cell holding `[red]` is shown as written.
        table.add_row(*(Text(cell) for cell in row))
    Console(highlight=False).print(table)
