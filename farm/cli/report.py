"""`farm report` and `farm query`: aggregate runs, write reports, run SQL on the records."""

from __future__ import annotations

from pathlib import Path

import typer


def report(
    runs: list[str] = typer.Argument(..., help="Run id(s) under --runs-dir (two: paired comparison A B)."),
    runs_dir: Path = typer.Option(Path("runs"), "--runs-dir", help="Where run directories are."),
    include_holdout: bool = typer.Option(False, "--include-holdout", help="Show holdout-pool results."),
    overrides: list[Path] = typer.Option([], "--overrides", help="overrides.yaml with human re-judgements."),
    out: Path | None = typer.Option(None, "--out", help="Directory for the reports (must not hold reports)."),
) -> None:
    """Aggregate run(s) into report.md, report.html, junit.xml and scores.csv."""
    from farm.cli.paths import check_output_dir
    from farm.report.build import build_reports, resolve_run_dir

    if out is not None:
        check_output_dir(out, "--out")
    dirs = [resolve_run_dir(r, runs_dir) for r in runs]
    for path in build_reports(dirs, include_holdout=include_holdout, overrides=overrides, out_dir=out,
                              on_warning=_warn):
        print(path)


def _warn(text: str) -> None:
    from farm.cli import err_console

    err_console.print(f"warning: {text}", markup=False)


def query(
    sql: str = typer.Argument(..., help="One SELECT over the views records, runs, devices (read-only)."),
    runs_dir: Path = typer.Option(Path("runs"), "--runs-dir", help="Where run directories are."),
    run: list[str] = typer.Option([], "--run", help="Limit to these runs (default: all under --runs-dir)."),
) -> None:
    """Run one read-only SELECT on the records of every run and print a table."""
    from rich.console import Console
    from rich.table import Table

    from farm.report.build import resolve_run_dir
    from farm.results import duck
    from farm.results.damage import damage_text

    duck.check_query(sql)
    dirs = [resolve_run_dir(r, runs_dir) for r in run] if run else duck.run_dirs_under(runs_dir)
    for path, damage in duck.damaged_lines(dirs):
        for line in damage_text(path, damage):
            _warn(line)
    con = duck.query_connection(dirs)
    names, rows = duck.query(con, sql)
    table = Table(*names)
    for row in rows:
        table.add_row(*("" if v is None else str(v) for v in row))
    Console(soft_wrap=True).print(table)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.command("report")(report)
    app.command("query")(query)
