"""`farm run`, `farm devices`, `farm pull`, `farm instrument parse`: the android lane's commands."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from farm.errors import FarmError

instrument_app = typer.Typer(help="Tools for `am instrument` output.", no_args_is_help=True)


@instrument_app.command("parse")
def instrument_parse(
    file: Path = typer.Argument(..., help="A captured `am instrument -w -r` output."),
) -> None:
    """Print the parsed events of a capture as JSON lines."""
    from farm.android.instrument_parser import InstrumentParser

    try:
        data = file.read_bytes()
    except OSError as exc:
        raise FarmError(f"{file}: cannot read ({exc.strerror})") from None
    parser = InstrumentParser()
    parser.feed(data.decode("utf-8", "replace"))
    parser.close()
    for event in parser.events:
        print(json.dumps(event.as_json(), ensure_ascii=False, separators=(",", ":")))


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.add_typer(instrument_app, name="instrument")
