"""`farm config show`: the settings every command uses, and where each came from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

config_app = typer.Typer(help="The settings commands use: farm.yaml, flags and defaults.", no_args_is_help=True)


@config_app.command("show")
def show(
    runs_dir: Annotated[Path | None, typer.Option(
        "--runs-dir", metavar="DIR", help="Show what this flag would do to the commands that take it.")] = None,
    tasks_dir: Annotated[Path | None, typer.Option(
        "--tasks-dir", metavar="DIR", help="Show what this flag would do to the commands that take it.")] = None,
    config: Annotated[Path | None, typer.Option(
        "--config", metavar="FILE", help="farm.yaml to read (default ./farm.yaml if present).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the settings as one JSON object.")] = False,
) -> None:
    """Print the runs and tasks directories every command uses, and where each came from.

    Each of `runs_dir` and `tasks_dir` comes from the first of: the flag (`--runs-dir`, `--tasks-dir`) given to
    the command; the farm.yaml read (`--config FILE`, else ./farm.yaml in the working directory when it
    exists); the default (runs/, tasks/). Relative paths are relative to the working directory. `farm run`,
    `sweep`, `report`, `query`, `view`, `pull`, `history` and `tasks check/list/show` all resolve them this way.

    Example: `farm config show --config /etc/agent-farm/farm.yaml` prints the directories a nightly sweep with
    that file writes to and reads from; add `--runs-dir DIR` to see that a flag wins over farm.yaml.
    """
    from farm.cli.paths import runs_dir_setting, tasks_dir_setting
    from farm.cli.tables import print_table

    settings = [runs_dir_setting(runs_dir, config), tasks_dir_setting(tasks_dir, config)]
    found = settings[0].config
    if as_json:
        body = {
            "config": str(found) if found is not None else None,
            "settings": {s.key: {"value": str(s.value), "source": s.source, "from": s.origin, "flag": s.flag}
                         for s in settings},
        }
        print(json.dumps(body, indent=2))
        return
    rows = [[s.key, str(s.value), s.origin] for s in settings]
    print_table(("setting", "value", "from"), rows, title="settings")
    read = f"farm.yaml read: {found}" if found is not None else "farm.yaml read: none (no --config, no ./farm.yaml)"
    print(read)


def register(app: typer.Typer) -> None:
    """Add the `config` sub-app to the root app."""
    app.add_typer(config_app, name="config")
