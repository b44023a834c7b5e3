"""`farm tasks …`: check, list and show the Android task set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console

from farm.cli import selection as sel

tasks_app = typer.Typer(help="The Android task set: check the rules, list and show tasks.", no_args_is_help=True)
console = Console(highlight=False, soft_wrap=True)

TasksDir = Annotated[Path | None, typer.Option("--tasks-dir", metavar="DIR",
                                               help="Task-set directory (default: the repo's tasks/).")]
DirAlias = Annotated[Path | None, typer.Option("--dir", metavar="DIR", hidden=True, help="Old name of --tasks-dir.")]


def _root(tasks_dir: Path | None, dir_alias: Path | None, positional: Path | None = None) -> Path:
    """The task-set directory from `--tasks-dir`, its old name `--dir` or a positional DIR."""
    from farm.cli.aliases import either
    from farm.taskset.loader import default_tasks_root

    chosen, flag = either(tasks_dir, dir_alias, "--tasks-dir", "--dir")
    root, _ = either(chosen, positional, flag, "DIR")
    return root or default_tasks_root()


@tasks_app.command("check")
def check(
    directory: Annotated[Path | None, typer.Argument(metavar="DIR", show_default=False,
                                                     help="Task-set directory (default: the repo's tasks/).")] = None,
    tasks_dir: TasksDir = None,
) -> None:
    """Check every task-set rule of seed 003; one line per violation, exit 2 when any."""
    from farm.cli.tables import print_table
    from farm.taskset.rules import check_tasks, holdout_bounds

    report = check_tasks(_root(tasks_dir, None, directory))
    for v in report.violations:
        console.print(v.line(), markup=False)
    rows = []
    for row in report.directories:
        low, high = holdout_bounds(row.count)
        allowed = f"{low}–{high}" if row.minimum is not None and row.count else "-"
        minimum = str(row.minimum) if row.minimum is not None else "-"
        rows.append([row.directory, str(row.count), str(row.tune), str(row.holdout), allowed, minimum])
    print_table(("directory", "count", "tune", "holdout", "holdout allowed", "minimum"), rows, title="task set")
    if report.violations:
        # The listing above is the report (stdout); the verdict is the one error line on stderr.
        Console(stderr=True, highlight=False, soft_wrap=True).print(
            f"error: {len(report.violations)} violation(s) in {len(report.tasks)} task(s) — fix the lines listed "
            "above", markup=False)
        raise typer.Exit(2)
    console.print(f"ok: {len(report.tasks)} tasks", markup=False)


@tasks_app.command("list")
def list_tasks(
    split: Annotated[str, typer.Option("--split", metavar="tune|holdout|all", help="Task pool.")] = "all",
    sets: sel.SetNames = None,
    keyword: sel.Keyword = None,
    exclude: sel.Exclude = None,
    only_failed_from: sel.OnlyFailedFrom = None,
    runs_dir: Annotated[Path, typer.Option("--runs-dir", metavar="DIR",
                                           help="Where --only-failed-from finds RUN.")] = Path("runs"),
    tasks_dir: TasksDir = None,
    dir_alias: DirAlias = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the tasks as one JSON object.")] = False,
) -> None:
    """List tasks (id, directory, partition, expect, requires), chosen as `farm run` with the same flags would."""
    from farm.cli.tables import print_table
    from farm.errors import FarmError
    from farm.taskset.listing import task_listing
    from farm.taskset.loader import load_taskset
    from farm.taskset.select import select

    if split not in ("tune", "holdout", "all"):
        raise FarmError(f"--split: {split!r} is not a pool", hint="use tune, holdout or all")
    choice: Literal["tune", "holdout", "all"] = split  # type: ignore[assignment]
    selection = sel.task_selection(sets or [], keyword, exclude or [], only_failed_from, runs_dir)
    root = _root(tasks_dir, dir_alias)
    chosen = select(load_taskset(root), choice, selection)
    for pattern in chosen.unmatched_excludes:
        sel.warn(f"--exclude {pattern}: matches no task")
    if chosen.missing_ids:
        sel.warn(f"--only-failed-from: {len(chosen.missing_ids)} task(s) no longer in {root}: "
                 + ", ".join(chosen.missing_ids))
    listing = task_listing(chosen.tasks)
    if as_json:
        print(listing.model_dump_json(indent=2))
        return
    rows = [[t.id, t.directory, t.partition or "-", t.expect, ", ".join(t.requires)] for t in listing.tasks]
    print_table(("id", "directory", "partition", "expect", "requires"), rows, title=f"{len(rows)} task(s)")


@tasks_app.command("show")
def show(
    task_id: Annotated[str, typer.Argument(metavar="ID", help="Task id.")],
    tasks_dir: TasksDir = None,
    dir_alias: DirAlias = None,
) -> None:
    """Print one task as JSON and the file it comes from."""
    from farm.errors import FarmError
    from farm.taskset.loader import load_taskset

    for lt in load_taskset(_root(tasks_dir, dir_alias)):
        if lt.task.id == task_id:
            console.print(f"# {lt.path}", markup=False)
            body = lt.task.model_dump(mode="json", by_alias=True, exclude_none=True)
            console.print(json.dumps(body, ensure_ascii=False, indent=2), markup=False)
            return
    raise FarmError(f"task {task_id!r} not found", hint="see `farm tasks list` for the ids")


def register(app: typer.Typer) -> None:
    """Add the `tasks` sub-app to the root app."""
    app.add_typer(tasks_app, name="tasks")
