"""`farm tasks …`: check, list and show the Android task set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.console import Console

from farm.cli import selection as sel

if TYPE_CHECKING:
    from farm.cli.paths import DirSetting

tasks_app = typer.Typer(help="The Android task set: check the rules, list and show tasks.", no_args_is_help=True)
console = Console(highlight=False, soft_wrap=True)

TasksDir = Annotated[Path | None, typer.Option("--tasks-dir", metavar="DIR",
                                               help="Task-set directory (default farm.yaml tasks_dir, else tasks/).")]
DirAlias = Annotated[Path | None, typer.Option("--dir", metavar="DIR", hidden=True, help="Old name of --tasks-dir.")]
Config = Annotated[Path | None, typer.Option("--config", metavar="FILE",
                                             help="farm.yaml (default ./farm.yaml if present).")]


def _setting(tasks_dir: Path | None, dir_alias: Path | None, config: Path | None,
             positional: Path | None = None) -> DirSetting:
    """The task-set directory from `--tasks-dir`, its old name `--dir` or a positional DIR, else farm.yaml's
    `tasks_dir`, else tasks/ — what `farm run` reads with the same flags and farm.yaml."""
    from farm.cli.aliases import either
    from farm.cli.paths import tasks_dir_setting

    chosen, flag = either(tasks_dir, dir_alias, "--tasks-dir", "--dir")
    root, _ = either(chosen, positional, flag, "DIR")
    return tasks_dir_setting(root, config)


def _root(tasks_dir: Path | None, dir_alias: Path | None, config: Path | None, positional: Path | None = None) -> Path:
    return _setting(tasks_dir, dir_alias, config, positional).value


@tasks_app.command("check")
def check(
    directory: Annotated[Path | None, typer.Argument(metavar="DIR", show_default=False,
                                                     help="Task-set directory (default farm.yaml tasks_dir, "
                                                          "else tasks/).")] = None,
    tasks_dir: TasksDir = None,
    config: Config = None,
) -> None:
    """Check every task-set rule of seed 003; one line per violation, exit 2 when any."""
    from farm.cli.tables import print_table
    from farm.taskset.rules import check_tasks, holdout_bounds

    report = check_tasks(_root(tasks_dir, None, config, directory))
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
        from farm.exits import EXIT_BAD_INPUT

        raise typer.Exit(EXIT_BAD_INPUT)
    console.print(f"ok: {len(report.tasks)} tasks", markup=False)


@tasks_app.command("list")
def list_tasks(
    split: Annotated[str, typer.Option("--split", metavar="tune|holdout|all", help="Task pool.")] = "all",
    sets: sel.SetNames = None,
    keyword: sel.Keyword = None,
    exclude: sel.Exclude = None,
    only_failed_from: sel.OnlyFailedFrom = None,
    runs_dir: Annotated[Path | None, typer.Option(
        "--runs-dir", metavar="DIR",
        help="Where --only-failed-from finds RUN (default farm.yaml runs_dir, else runs/).")] = None,
    tasks_dir: TasksDir = None,
    dir_alias: DirAlias = None,
    config: Config = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the tasks as one JSON object.")] = False,
) -> None:
    """List tasks (id, directory, partition, expect, requires), chosen as `farm run` with the same flags would."""
    from farm.cli.paths import runs_dir_setting
    from farm.cli.tables import print_table
    from farm.errors import FarmError
    from farm.taskset.listing import task_listing
    from farm.taskset.loader import load_taskset
    from farm.taskset.select import select

    if split not in ("tune", "holdout", "all"):
        raise FarmError(f"--split: {split!r} is not a pool", hint="use tune, holdout or all")
    choice: Literal["tune", "holdout", "all"] = split  # type: ignore[assignment]
    selection = sel.task_selection(sets or [], keyword, exclude or [], only_failed_from,
                                   runs_dir_setting(runs_dir, config).value)
    tasks = _setting(tasks_dir, dir_alias, config)
    chosen = select(load_taskset(tasks.value), choice, selection)
    for pattern in chosen.unmatched_excludes:
        sel.warn(f"--exclude {pattern}: matches no task")
    sel.warn_missing(chosen.missing_ids, tasks)
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
    config: Config = None,
) -> None:
    """Print one task as JSON and the file it comes from."""
    from farm.errors import FarmError
    from farm.taskset.loader import load_taskset

    for lt in load_taskset(_root(tasks_dir, dir_alias, config)):
        if lt.task.id == task_id:
            console.print(f"# {lt.path}", markup=False)
            body = lt.task.model_dump(mode="json", by_alias=True, exclude_none=True)
            console.print(json.dumps(body, ensure_ascii=False, indent=2), markup=False)
            return
    raise FarmError(f"task {task_id!r} not found", hint="see `farm tasks list` for the ids")


def register(app: typer.Typer) -> None:
    """Add the `tasks` sub-app to the root app."""
    app.add_typer(tasks_app, name="tasks")
