"""`farm tasks …`: check, list and show the Android task set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console
from rich.table import Table

tasks_app = typer.Typer(help="The Android task set: check the rules, list and show tasks.", no_args_is_help=True)
console = Console(highlight=False, soft_wrap=True)


@tasks_app.command("check")
def check(
    directory: Annotated[
        Path | None, typer.Argument(help="Task-set directory (default: the repo's tasks/).")
    ] = None,
) -> None:
    """Check every task-set rule of seed 003; one line per violation, exit 2 when any."""
    from farm.taskset.loader import default_tasks_root
    from farm.taskset.rules import check_tasks, holdout_bounds

    report = check_tasks(directory or default_tasks_root())
    for v in report.violations:
        console.print(v.line(), markup=False)
    table = Table(title="task set")
    for col in ("directory", "count", "tune", "holdout", "holdout allowed", "minimum"):
        table.add_column(col, justify="left" if col == "directory" else "right")
    for row in report.directories:
        low, high = holdout_bounds(row.count)
        allowed = f"{low}–{high}" if row.minimum is not None and row.count else "-"
        minimum = str(row.minimum) if row.minimum is not None else "-"
        table.add_row(row.directory, str(row.count), str(row.tune), str(row.holdout), allowed, minimum)
    console.print(table)
    if report.violations:
        # The listing above is the report (stdout); the verdict is the one error line on stderr.
        Console(stderr=True, highlight=False, soft_wrap=True).print(
            f"error: {len(report.violations)} violation(s) in {len(report.tasks)} task(s) — fix the lines listed "
            "above", markup=False)
        raise typer.Exit(2)
    console.print(f"ok: {len(report.tasks)} tasks", markup=False)


@tasks_app.command("list")
def list_tasks(
    split: Annotated[str, typer.Option(help="Pool: tune, holdout or all.")] = "all",
    set_prefix: Annotated[
        str | None, typer.Option("--set", help="Directory or id prefix (skills/ and memory/ only this way).")
    ] = None,
    directory: Annotated[Path | None, typer.Option("--dir", help="Task-set directory.")] = None,
) -> None:
    """List tasks: id, directory, partition, expect, requires."""
    from farm.errors import FarmError
    from farm.taskset.loader import default_tasks_root, select_tasks

    if split not in ("tune", "holdout", "all"):
        raise FarmError(f"--split: {split!r} is not a pool", hint="use tune, holdout or all")
    choice: Literal["tune", "holdout", "all"] = split  # type: ignore[assignment]
    chosen = select_tasks(directory or default_tasks_root(), choice, set_prefix)
    table = Table(title=f"{len(chosen)} task(s)")
    for col in ("id", "directory", "partition", "expect", "requires"):
        table.add_column(col)
    for lt in chosen:
        t = lt.task
        table.add_row(t.id, lt.directory, t.partition or "-", t.expect, ", ".join(t.requires))
    console.print(table)


@tasks_app.command("show")
def show(
    task_id: Annotated[str, typer.Argument(metavar="ID", help="Task id.")],
    directory: Annotated[Path | None, typer.Option("--dir", help="Task-set directory.")] = None,
) -> None:
    """Print one task as JSON and the file it comes from."""
    from farm.errors import FarmError
    from farm.taskset.loader import default_tasks_root, load_taskset

    for lt in load_taskset(directory or default_tasks_root()):
        if lt.task.id == task_id:
            console.print(f"# {lt.path}", markup=False)
            body = lt.task.model_dump(mode="json", by_alias=True, exclude_none=True)
            console.print(json.dumps(body, ensure_ascii=False, indent=2), markup=False)
            return
    raise FarmError(f"task {task_id!r} not found", hint="see `farm tasks list` for the ids")


def register(app: typer.Typer) -> None:
    """Add the `tasks` sub-app to the root app."""
    app.add_typer(tasks_app, name="tasks")
