"""`farm history`: night over night for runs of one label."""

from __future__ import annotations

from pathlib import Path

import typer


def history(
    label: str | None = typer.Option(None, "--label", metavar="LABEL",
                                     help="Only runs with this manifest label (e.g. nightly)."),
    last: int = typer.Option(14, "--last", min=1, max=10000, metavar="N",
                             help="Show the last N runs, by creation time."),
    runs_dir: Path | None = typer.Option(None, "--runs-dir", metavar="DIR",
                                         help="Where run directories are (default: farm.yaml)."),
    out: Path | None = typer.Option(
        None, "--out", metavar="DIR",
        help="Directory for history.md and history.html (default <runs-dir>/history/<label>-<newest>/).",
    ),
    include_holdout: bool = typer.Option(False, "--include-holdout", help="Count holdout-pool results."),
    config: Path | None = typer.Option(None, "--config", metavar="FILE",
                                       help="farm.yaml (default ./farm.yaml if present)."),
) -> None:
    """Pass rate per night, regressions and fixes against the previous night, flaky tasks, phone health."""
    from farm.cli.agent_flags import runs_dir_source
    from farm.cli.paths import check_input_dir, check_output_dir
    from farm.config import load_config
    from farm.report.history import default_out_dir, write_history
    from farm.report.history_data import load_history

    root = runs_dir if runs_dir is not None else Path(load_config(config).runs_dir)
    check_input_dir(root, "--runs-dir" if runs_dir is not None else runs_dir_source(config),
                    hint="pass --runs-dir DIR, the directory holding the runs")
    if out is not None:
        check_output_dir(out, "--out")
    result = load_history(root, label=label, last=last, include_holdout=include_holdout)
    if result.warnings:
        from farm.cli import err_console

        for warning in result.warnings:
            err_console.print(f"warning: {warning}", markup=False)
    for path in write_history(result, out or default_out_dir(root, label, result.newest or "none")):
        print(path)


def register(app: typer.Typer) -> None:
    """Add this module's command to the root app."""
    app.command("history")(history)
