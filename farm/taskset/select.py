"""Which tasks a command takes: the pool (`--split`), then `--set`, `-k`, `--exclude` and `--only-failed-from`.

One selection for `farm run`, `farm sweep` and `farm tasks list`, so the three always agree on what a
set of flags means. Repeated `--set` values are a union; `-k`, `--exclude` and the failed-task list of
`--only-failed-from` narrow that down. `skills/` and `memory/` are taken only when a `--set` names
them or a task of theirs is named by id (the failed list), as seed 003 asks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from pydantic import BaseModel, ConfigDict, Field, field_validator

from farm.errors import FarmError
from farm.taskset.keyword import parse_keyword
from farm.taskset.loader import LoadedTask, SplitChoice, in_set, is_special

IRREVERSIBLE = "irreversible"
"""The category of tasks that really send, delete or order (`--allow-irreversible`)."""


class TaskSelection(BaseModel):
    """The selection flags of a command that runs or lists tasks, beyond the pool."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sets: list[str] = Field(default_factory=list)
    """`--set NAME` (repeatable): task directories or id prefixes, taken together (a union); empty = every
    task except the special sets skills/ and memory/."""
    keyword: str | None = None
    """`-k EXPR`: words matched in the task's id, directory and category, joined by and / or / not."""
    exclude: list[str] = Field(default_factory=list)
    """`--exclude ID_OR_GLOB` (repeatable): task ids or shell patterns (`*`, `?`, `[…]`), matched against the id
    and against `<directory>/<id>`."""
    only_ids: list[str] | None = None
    """`--only-failed-from RUN`: only these task ids (those whose final verdict in RUN was fail or error);
    null = no such limit."""
    only_from: str | None = None
    """The run `only_ids` came from."""

    @field_validator("keyword")
    @classmethod
    def _parses(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_keyword(value)
            except FarmError as exc:
                raise ValueError(exc.line()) from None
        return value

    def single_set(self) -> str | None:
        """The one `--set` value when that is all the selection says (what the agent app's `evalSet` can
        express), else None."""
        plain = self.keyword is None and not self.exclude and self.only_ids is None
        return self.sets[0] if plain and len(self.sets) == 1 else None

    def describe(self) -> str:
        """The selection as flags, for messages (`--set a --set b -k 'x'`)."""
        parts = [f"--set {s}" for s in self.sets]
        if self.keyword is not None:
            parts.append(f"-k {self.keyword!r}")
        parts += [f"--exclude {e}" for e in self.exclude]
        if self.only_from is not None:
            parts.append(f"--only-failed-from {self.only_from}")
        return " ".join(parts)


@dataclass
class Selected:
    """The chosen tasks, and what in the selection matched nothing (for warnings)."""

    tasks: list[LoadedTask]
    unmatched_excludes: list[str] = field(default_factory=list)
    """`--exclude` values that matched no task of the task set."""
    missing_ids: list[str] = field(default_factory=list)
    """`only_ids` not in the task set (tasks removed or renamed since that run)."""


def keyword_names(loaded: LoadedTask) -> tuple[str, str, str]:
    """What a `-k` word is looked for in: the id, the directory and the category."""
    return loaded.task.id, loaded.directory, loaded.task.category


def excluded_by(loaded: LoadedTask, pattern: str) -> bool:
    """Whether `--exclude pattern` names this task (its id, or `<directory>/<id>`, as a shell pattern)."""
    tid = loaded.task.id
    return fnmatchcase(tid, pattern) or fnmatchcase(f"{loaded.directory}/{tid}".lstrip("/"), pattern.strip("/"))


def select(tasks: Sequence[LoadedTask], split: SplitChoice, selection: TaskSelection | None) -> Selected:
    """The tasks of `split` that `selection` takes, in task-set order.

    A `--set` value that matches no task at all is a FarmError (a typo would otherwise just shrink the run).
    """
    sel = selection or TaskSelection()
    for prefix in sel.sets:
        if not prefix.strip("/"):
            raise FarmError(f"--set {prefix!r}: empty", hint="pass a task directory or id prefix, e.g. read/system")
        if not any(in_set(t, prefix) for t in tasks):
            raise FarmError(f"--set {prefix}: no task matches it",
                            hint="pass a task directory or id prefix; see `farm tasks list`")
    expr = parse_keyword(sel.keyword) if sel.keyword is not None else None
    only = set(sel.only_ids) if sel.only_ids is not None else None
    chosen: list[LoadedTask] = []
    for t in tasks:
        named = only is not None and t.task.id in only
        if sel.sets:
            if not any(in_set(t, s) for s in sel.sets):
                continue
        elif is_special(t) and not named:
            continue
        if split != "all" and t.task.partition != split:
            continue
        if expr is not None and not expr.matches(keyword_names(t)):
            continue
        if any(excluded_by(t, pattern) for pattern in sel.exclude):
            continue
        if only is not None and not named:
            continue
        chosen.append(t)
    known = {t.task.id for t in tasks}
    return Selected(
        tasks=chosen,
        unmatched_excludes=[p for p in sel.exclude if not any(excluded_by(t, p) for t in tasks)],
        missing_ids=sorted(only - known) if only is not None else [],
    )


def irreversible(tasks: Sequence[LoadedTask]) -> list[LoadedTask]:
    """The tasks that really act (send, delete, order) when `--allow-irreversible` lets them."""
    return [t for t in tasks if t.task.category == IRREVERSIBLE]
