"""`farm history`: night over night for runs of one label."""

from __future__ import annotations

from pathlib import Path

import typer

DEFAULT_FLAKY_NIGHTS = 5
"""`farm.report.history_grid.DEFAULT_FLAKY_NIGHTS`, spelled here so `farm --help` imports no report code."""
MAX_FLAKY_NIGHTS = 60
"""Two months of nightly runs: the grid shows every night flakiness is judged over, so K bounds its width."""


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
    include_holdout: bool | None = typer.Option(
        None, "--include-holdout/--hide-holdout",
        help="Count holdout-pool results, or hide them (default: counted when the runs planned them)."),
    config: Path | None = typer.Option(None, "--config", metavar="FILE",
                                       help="farm.yaml (default ./farm.yaml if present)."),
    flaky_nights: int = typer.Option(
        DEFAULT_FLAKY_NIGHTS, "--flaky-nights", min=2, max=MAX_FLAKY_NIGHTS, metavar="K",
        help="A task is flaky when its judged units passed and failed over the last K nights (at most the nights"
             " read)."),
    as_json: bool = typer.Option(False, "--json", help="Print the history as one JSON object (nothing written)."),
) -> None:
    """Pass rate per night, a task × night grid linking each night's report, regressions and fixes per task × phone
    against the previous night, flaky tasks, phone health."""
    from farm.cli.paths import check_input_dir, check_output_dir, runs_dir_setting
    from farm.report.history import default_out_dir, write_history
    from farm.report.history_data import load_history

    found = runs_dir_setting(runs_dir, config)
    root = check_input_dir(found.value, found.what(), hint="pass --runs-dir DIR, the directory holding the runs")
    if out is not None:
        check_output_dir(out, "--out")
    result = load_history(root, label=label, last=last, include_holdout=include_holdout, flaky_nights=flaky_nights)
    if result.warnings:
        from farm.cli import err_console

        for warning in result.warnings:
            err_console.print(f"warning: {warning}", markup=False)
    if as_json:
        print(result.model_dump_json(indent=2))
        return
    # The label's own folder is rewritten (a sweep just wrote it); a folder given with --out must be new.
    written = write_history(result, out, own=False) if out is not None else \
        write_history(result, default_out_dir(root, label, result.newest or "none"), own=True)
    for path in written:
        print(path)


def register(app: typer.Typer) -> None:
    """Add this module's command to the root app."""
    app.command("history")(history)
