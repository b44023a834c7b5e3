"""The task-selection flags of `farm run`, `farm sweep` and `farm tasks list`, and the warning (and question)
before irreversible tasks really run."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from farm.errors import FarmError

if TYPE_CHECKING:
    from farm.android.options import AgentOptions
    from farm.cli.paths import DirSetting
    from farm.taskset.loader import LoadedTask, SplitChoice
    from farm.taskset.select import TaskSelection

SetNames = Annotated[list[str] | None, typer.Option(
    "--set", metavar="NAME",
    help="Task directory or id prefix (e.g. read/system); repeat to take several. skills/ and memory/ only this way.",
)]
Keyword = Annotated[str | None, typer.Option(
    "-k", metavar="EXPR",
    help="Only tasks whose id, directory or category holds these words: and, or, not, parentheses "
         "(e.g. -k 'calculator and not percent'); quote a word that is an operator.",
)]
Exclude = Annotated[list[str] | None, typer.Option(
    "--exclude", metavar="ID_OR_GLOB", help="Leave out a task id or a pattern such as 'write/*' (repeatable).",
)]
OnlyFailedFrom = Annotated[str | None, typer.Option(
    "--only-failed-from", metavar="RUN",
    help="Only the tasks whose final verdict in RUN was fail or error (on any phone).",
)]
Yes = Annotated[bool, typer.Option(
    "--yes", "-y", help="With --allow-irreversible: do not ask before running irreversible tasks.",
)]

def warn(text: str) -> None:
    """`warning: text` on stderr."""
    from farm.cli import err_console

    err_console.print(f"warning: {text}", markup=False)


def task_selection(
    sets: list[str], keyword: str | None, exclude: list[str], only_failed_from: str | None, runs_dir: Path,
) -> TaskSelection | None:
    """The selection the flags ask for (None when they ask for nothing); a bad `-k`, an empty `--exclude`, or an
    `--only-failed-from` run that does not exist or has no records is a one-line FarmError."""
    from farm.taskset.keyword import parse_keyword
    from farm.taskset.select import TaskSelection

    if keyword is not None:
        parse_keyword(keyword)
    for pattern in exclude:
        if not pattern.strip("/ "):
            raise FarmError(f"--exclude {pattern!r}: empty", hint="pass a task id or a pattern such as 'write/*'")
    only_ids: list[str] | None = None
    if only_failed_from is not None:
        from farm.report.failed import failed_tasks, find_run

        only_ids = failed_tasks(find_run(only_failed_from, runs_dir)).task_ids
    if not sets and keyword is None and not exclude and only_ids is None:
        return None
    return TaskSelection(sets=sets, keyword=keyword, exclude=exclude, only_ids=only_ids, only_from=only_failed_from)


def warn_missing(missing_ids: list[str], tasks: DirSetting) -> None:
    """`--only-failed-from`: the failed tasks the task set no longer has, naming the task set read and where that
    directory came from (`--tasks-dir`, a farm.yaml, or the default), so the warning and the run agree."""
    if missing_ids:
        warn(f"--only-failed-from: {len(missing_ids)} task(s) no longer in {tasks.value} ({tasks.what()}): "
             + ", ".join(missing_ids))


def nothing_failed(selection: TaskSelection | None) -> bool:
    """Whether `--only-failed-from` found nothing to do again (then nothing is run, and that is no error)."""
    if selection is None or selection.only_ids is None or selection.only_ids:
        return False
    warn(f"--only-failed-from {selection.only_from}: no unit failed or errored there; nothing to run")
    return True


def preview(
    tasks: DirSetting, split: SplitChoice, selection: TaskSelection | None, *, allow_irreversible: bool, yes: bool,
) -> None:
    """Before a new run: the selection's tasks, chosen as the run will choose them, so that a selection matching
    nothing, a `--exclude` matching nothing and (with --allow-irreversible) the irreversible tasks are named
    before any phone is reached. Asks for confirmation of irreversible tasks when stdin is a terminal."""
    from farm.taskset.rules import require_valid
    from farm.taskset.select import TaskSelection, select

    if selection is None and not allow_irreversible:
        return
    tasks_dir = tasks.value
    chosen = select(require_valid(tasks_dir, whole_set=False), split, selection or TaskSelection())
    for pattern in chosen.unmatched_excludes:
        warn(f"--exclude {pattern}: matches no task")
    warn_missing(chosen.missing_ids, tasks)
    if not chosen.tasks:
        what = selection.describe() if selection is not None else ""
        raise FarmError(f"{tasks_dir}: no task matches --split {split} {what}".rstrip(),
                        hint="see `farm tasks list` with the same flags")
    if allow_irreversible:
        confirm_irreversible(chosen.tasks, yes=yes)


def for_run(
    agent: AgentOptions, *, sets: list[str] | None, keyword: str | None, exclude: list[str] | None,
    only_failed_from: str | None, runs_dir: Path | None, tasks_dir: Path | None, config: Path | None,
    resume: str | None, allow_irreversible: bool, yes: bool,
) -> tuple[AgentOptions, TaskSelection | None] | None:
    """`farm run` / `farm sweep`: the agent options and request selection the flags ask for, checked and previewed
    before any phone is reached; None when `--only-failed-from` leaves nothing to run."""
    from farm.cli import agent_flags as af
    from farm.cli.paths import runs_dir_setting, tasks_dir_setting

    runs = runs_dir_setting(runs_dir, config).value
    selection = task_selection(sets or [], keyword, exclude or [], only_failed_from, runs)
    if nothing_failed(selection):
        return None
    if resume is None:
        preview(tasks_dir_setting(tasks_dir, config), agent.split, selection, allow_irreversible=allow_irreversible,
                yes=yes)
    return af.with_selection(agent, selection)


def confirm_irreversible(tasks: list[LoadedTask], *, yes: bool) -> None:
    """Name the irreversible tasks about to really act, on stderr; ask (stdin a terminal, no --yes) and refuse
    with a one-line FarmError unless the answer is yes."""
    from farm.taskset.select import irreversible

    acting = irreversible(tasks)
    if not acting:
        return
    warn(f"--allow-irreversible: {len(acting)} irreversible task(s) will really send, delete or order on the "
         f"phones: {', '.join(t.task.id for t in acting)}")
    if yes or not sys.stdin.isatty():
        return
    sys.stderr.write("Run them for real? [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline()
    if answer.strip().lower() not in ("y", "yes"):
        raise FarmError("--allow-irreversible: not confirmed, nothing was run", hint="answer y, or pass --yes")
