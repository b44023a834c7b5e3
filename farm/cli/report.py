"""`farm report` and `farm query`: aggregate runs, write reports, run SQL on the records."""

from __future__ import annotations

from pathlib import Path

import typer

# Light (no DuckDB, no pydantic): the help text states the real defaults.
from farm.results.query_limits import DEFAULT_MAX_ROWS, DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S

RunsDir = typer.Option(None, "--runs-dir", metavar="DIR",
                       help="Where run directories are (default farm.yaml runs_dir, else runs/).")
Config = typer.Option(None, "--config", metavar="FILE", help="farm.yaml (default ./farm.yaml if present).")


def report(
    runs: list[str] = typer.Argument(..., metavar="RUN",
                                     help="Run id(s) under --runs-dir (two: paired comparison A B)."),
    runs_dir: Path | None = RunsDir,
    config: Path | None = Config,
    include_holdout: bool | None = typer.Option(
        None, "--include-holdout/--hide-holdout",
        help="Count holdout-pool results, or hide them (default: counted when the run planned them)."),
    overrides: list[Path] = typer.Option([], "--overrides", metavar="FILE",
                                         help="overrides.yaml with human re-judgements (repeatable)."),
    out: Path | None = typer.Option(None, "--out", metavar="DIR",
                                    help="Directory for the reports (must not hold reports)."),
    as_json: bool = typer.Option(False, "--json",
                                 help="Print the written paths and the headline numbers as one JSON object."),
) -> None:
    """Aggregate run(s) into report.md, report.html, junit.xml and scores.csv."""
    from farm.cli.paths import check_output_dir, runs_dir_setting
    from farm.lane_plugins import install
    from farm.report.build import build, resolve_run_dir

    install()
    if out is not None:
        check_output_dir(out, "--out")
    root = runs_dir_setting(runs_dir, config).value
    dirs = [resolve_run_dir(r, root) for r in runs]
    built = build(dirs, include_holdout=include_holdout, overrides=overrides, out_dir=out, on_warning=_warn)
    if as_json:
        from farm.report.summary import report_summary

        print(report_summary(dirs, built.paths, built.data).model_dump_json(indent=2))
        return
    for path in built.paths:
        print(path)


def _warn(text: str) -> None:
    from farm.cli import err_console

    err_console.print(f"warning: {text}", markup=False)


def query(
    sql: str = typer.Argument(..., metavar="SQL", help="One SELECT over the views records, runs, devices (read-only)."),
    runs_dir: Path | None = RunsDir,
    config: Path | None = Config,
    run: list[str] = typer.Option([], "--run", metavar="RUN",
                                  help="Limit to this run (repeatable; default: every run under --runs-dir)."),
    output_format: str = typer.Option("table", "--format", metavar="table|csv|json",
                                      help="table (tab-separated when stdout is not a terminal), csv or json."),
    as_json: bool = typer.Option(False, "--json", help="Same as --format json."),
    timeout: float | None = typer.Option(
        None, "--timeout", metavar="SECONDS",
        help=f"Stop the query after this long, from the start of the SQL (default {DEFAULT_TIMEOUT_S:g}, farm.yaml "
             f"query.timeout_s; at most {MAX_TIMEOUT_S:g}); exit 2 naming the limit."),
    memory_mb: int | None = typer.Option(
        None, "--memory-mb", metavar="MB",
        help=f"DuckDB's memory limit (default {DEFAULT_MEMORY_MB} or half the RAM, farm.yaml query.memory_mb); "
             "nothing spills to disk, a query past it is refused (exit 2)."),
    max_rows: int | None = typer.Option(
        None, "--max-rows", metavar="N",
        help=f"Print the first N rows (default {DEFAULT_MAX_ROWS}, farm.yaml query.max_rows); stderr says how many "
             "more."),
    all_rows: bool = typer.Option(False, "--all", help="Print every row (still within --timeout and --memory-mb)."),
) -> None:
    """Run one read-only SELECT on the records of every run and print the rows whole (never cut to fit).

    Bounded: the query stops at --timeout (exit 2), DuckDB keeps to --memory-mb and farm.yaml query.threads,
    at most --max-rows rows are printed (the rest are counted on stderr; --all prints them), and Ctrl-C or
    SIGTERM stops it (exit 130). Example: `farm query "select task_id, count(*) as n from records group by 1
    order by n desc" --timeout 30 --all`.
    """
    from farm.cli.paths import runs_dir_setting
    from farm.config import load_config
    from farm.errors import FarmError
    from farm.report.build import resolve_run_dir
    from farm.results import duck
    from farm.results.damage import damage_text
    from farm.results.query_limits import query_bounds, run_query
    from farm.results.query_output import FORMATS, cell_text, query_result, to_csv

    if output_format not in FORMATS:
        raise FarmError(f"--format {output_format}: unknown format", hint="use table, csv or json")
    if as_json and output_format not in ("table", "json"):
        raise FarmError(f"--json and --format {output_format} both given", hint="pass one of them")
    chosen = "json" if as_json else output_format
    duck.check_query(sql)
    setting = runs_dir_setting(runs_dir, config)
    bounds = query_bounds(load_config(setting.config).query, timeout_s=timeout, memory_mb=memory_mb,
                          max_rows=max_rows, all_rows=all_rows)
    dirs = [resolve_run_dir(r, setting.value) for r in run] if run else duck.run_dirs_under(setting.value)
    got = run_query(dirs, sql, bounds)
    for path, damage in got.damaged:
        for line in damage_text(path, damage):
            _warn(line)
    result = query_result(got.columns, got.rows)
    if chosen == "json":
        print(result.model_dump_json(indent=2))
    elif chosen == "csv":
        typer.echo(to_csv(result), nl=False)
    else:
        from farm.cli.tables import print_table

        print_table(result.columns, [[cell_text(v) for v in row] for row in result.rows])
    more = got.more_text(bounds)
    if more is not None:
        _warn(more)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.command("report")(report)
    app.command("query")(query)
