"""The `farm` command: thin typer sub-apps that parse, call the library and print."""

from __future__ import annotations

import sys

import typer
from rich.console import Console

from farm.errors import FarmError

app = typer.Typer(
    name="farm",
    help=(
        "Evaluate AI agents on phones, browsers and desktops.\n\n"
        "Typical use: `farm sim up` (or plug in a phone), `farm devices`, "
        "`farm run --split tune`, then open the report path it prints."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

err_console = Console(stderr=True, highlight=False, soft_wrap=True)


@app.callback()
def _root() -> None:
    """Evaluate AI agents on phones, browsers and desktops."""


@app.command("version")
def version() -> None:
    """Print the agent-farm version."""
    from farm import __version__

    print(__version__)


def _register() -> None:
    # Each module adds its own commands or sub-app; the order is the order of `farm --help`.
    from farm.cli import android, desktop, history, report, sim, sweep, tasks, web

    for module in (tasks, sim, android, sweep, report, history, web, desktop):
        module.register(app)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: FarmError becomes one line on stderr and exit status 2."""
    _register()
    try:
        app(args=argv, standalone_mode=True)
    except FarmError as exc:
        err_console.print(f"error: {exc.line()}", markup=False)
        sys.exit(exc.exit_code)
