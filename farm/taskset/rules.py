"""The task-set check of seed 003's TaskSetTest: one Violation per broken rule, never an exception.

This module holds the rules about the whole set (unique ids, pairs and sessions, directory minimums,
holdout shares), the report `farm tasks check` prints, and the refusal commands that run tasks raise.
The rules about one task are in `task_rules` (confirmation cards in `card_rules`), the directory
layout and holdout tolerance in `layout`; their public names are re-exported here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from farm.errors import FarmError
from farm.taskset.capabilities import Capability, load_capabilities
from farm.taskset.card_rules import SELF_TARGETS, card_kind
from farm.taskset.layout import DIRECTORY_KIND, HOLDOUT_HIGH, HOLDOUT_LOW, MINIMUMS, group_of, holdout_bounds
from farm.taskset.loader import (
    SPECIAL_SETS,
    LoadedTask,
    SplitChoice,
    TaskFileError,
    choose_tasks,
    parse_task_file,
    read_task_json,
    task_files,
)
from farm.taskset.probes import ProbeSpec, load_catalogue
from farm.taskset.select import TaskSelection, select
from farm.taskset.task_rules import BUILTIN_PACKAGES, LOCAL_PATH, TaskRules
from farm.taskset.violations import Violation

__all__ = [
    "BUILTIN_PACKAGES",
    "DIRECTORY_KIND",
    "GROUP_FIX",
    "GROUP_HOME",
    "HOLDOUT_HIGH",
    "HOLDOUT_LOW",
    "LOCAL_PATH",
    "MINIMUMS",
    "SELF_TARGETS",
    "SET_CODES",
    "SHOWN",
    "UNIT_LABEL",
    "DirectoryCount",
    "InvalidTaskSet",
    "TaskSetReport",
    "Violation",
    "card_kind",
    "check_tasks",
    "group_of",
    "holdout_bounds",
    "require_valid",
    "select_valid_tasks",
    "set_wide_note",
]

GROUP_HOME = {"pair": "skills", "session": "memory"}
"""The only directory a `pair` / a `session` may be used in."""
GROUP_FIX = {
    "pair": 'add "pair": "<key shared with its partner>" and "split": "train" or "test"',
    "session": 'add "session": "<key shared by the tasks of one conversation>"',
}
UNIT_LABEL = {"skills": "pairs", "memory": "sessions"}


@dataclass(frozen=True)
class DirectoryCount:
    """Size and pools of one directory."""

    directory: str
    count: int
    tune: int
    holdout: int
    minimum: int | None


@dataclass
class TaskSetReport:
    """Everything `farm tasks check` prints."""

    tasks: list[LoadedTask] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    directories: list[DirectoryCount] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No violation."""
        return not self.violations


class _Checker(TaskRules):
    """The per-task rules of `TaskRules` plus the rules about the whole set under `root`."""

    def __init__(self, root: Path, caps: Mapping[str, Capability], catalogue: Mapping[str, ProbeSpec]) -> None:
        super().__init__(caps, catalogue)
        self.root = root

    def ids(self, tasks: Iterable[LoadedTask]) -> None:
        seen: dict[str, Path] = {}
        for lt in tasks:
            if lt.task.id in seen:
                self.add(lt.path, "id", "id-unique", f"id {lt.task.id!r} is also used by {seen[lt.task.id]}",
                         "give every task its own id")
            else:
                seen[lt.task.id] = lt.path

    def groups(self, tasks: list[LoadedTask]) -> None:
        for key, label in (("pair", "pair"), ("session", "memory session")):
            home = GROUP_HOME[key]
            members: dict[str, list[LoadedTask]] = defaultdict(list)
            for lt in tasks:
                value = getattr(lt.task, key)
                if value is not None:
                    members[value].append(lt)
                # Pairs and sessions run only as their own set (`--set skills`): a member elsewhere
                # would run in the full set without its partner, and a loose task in the set tests nothing.
                if value is not None and group_of(lt.directory) != home:
                    self.add(lt.path, key, "group-directory", f"{label} {value!r} outside {home}/",
                             f"move the task to {home}/ or drop {key}")
                elif value is None and group_of(lt.directory) == home:
                    self.add(lt.path, key, f"{key}-missing", f"task in {home}/ has no {key}", GROUP_FIX[key])
            for value, group in sorted(members.items()):
                pools = sorted({lt.task.partition or "none" for lt in group})
                if len(pools) > 1:
                    listing = "; ".join(
                        f"{pool}: {', '.join(lt.task.id for lt in group if (lt.task.partition or 'none') == pool)}"
                        for pool in pools
                    )
                    self.add(group[0].path, "partition", "pool-group",
                             f"{label} {value!r} spans pools ({listing})",
                             f"put every task of {label} {value!r} in one pool")
                if key == "pair" and {lt.task.split for lt in group} != {"train", "test"}:
                    self.add(group[0].path, "split", "pair-split",
                             f"pair {value!r} needs a train and a test task "
                             f"(has {', '.join(sorted(str(lt.task.split) for lt in group))})",
                             'set "split": "train" on the learning task and "test" on the other')
                if key == "session" and len(group) < 2:
                    self.add(group[0].path, "session", "session-size",
                             f"memory session {value!r} has one task ({group[0].task.id})",
                             "add the task that recalls what this one tells (same session, same pool)")
        for lt in tasks:
            if lt.task.split is not None and lt.task.pair is None:
                self.add(lt.path, "split", "pair-split", "split is set but the task has no pair",
                         'add "pair": "<key shared with its partner>" or drop split')

    def directories(self, tasks: list[LoadedTask], broken: list[Path]) -> list[DirectoryCount]:
        # A file that does not parse still counts (with the partition it declares, if readable),
        # so one broken file gives one violation rather than a cascade of count violations.
        by_dir: dict[str, list[str | None]] = defaultdict(list)
        # In skills/ and memory/ a pair or a session moves between pools whole, so the holdout share
        # counts those units; a task without pair/session is its own unit.
        units: dict[str, dict[str, set[str | None]]] = defaultdict(lambda: defaultdict(set))
        for lt in tasks:
            group = group_of(lt.directory)
            if group is not None:
                by_dir[group].append(lt.task.partition)
                t = lt.task
                unit = f"pair:{t.pair}" if t.pair else f"session:{t.session}" if t.session else f"task:{lt.path}"
                units[group][unit].add(lt.task.partition)
        for path in broken:
            group = group_of(path.parent.relative_to(self.root).as_posix())
            if group is not None:
                by_dir[group].append(_declared_partition(path))
                units[group][f"task:{path}"].add(_declared_partition(path))
        rows = []
        for directory in [*MINIMUMS, *SPECIAL_SETS]:
            members = by_dir.get(directory, [])
            if directory in SPECIAL_SETS and not members:
                continue
            tune = members.count("tune")
            holdout = members.count("holdout")
            minimum = MINIMUMS.get(directory)
            rows.append(DirectoryCount(directory, len(members), tune, holdout, minimum))
            where = self.root / directory
            if minimum is not None and len(members) < minimum:
                self.add(where, "tasks", "minimum", f"{directory} has {len(members)} tasks, minimum {minimum}",
                         f"add {minimum - len(members)} more task(s)")
            if directory in SPECIAL_SETS and members:
                pools = list(units[directory].values())
                held = sum(1 for pool in pools if pool == {"holdout"})
                low, high = holdout_bounds(len(pools))
                if not low <= held <= high:
                    label = UNIT_LABEL[directory]
                    self.add(where, "partition", "holdout-share",
                             f"{directory} has {held} of {len(pools)} {label} in holdout (allowed {low}–{high})",
                             f"move whole {label} between tune and holdout to keep about 30 % in holdout")
            if minimum is not None and members:
                low, high = holdout_bounds(len(members))
                if not low <= holdout <= high:
                    self.add(where, "partition", "holdout-share",
                             f"{directory} has {holdout} of {len(members)} tasks in holdout (allowed {low}–{high})",
                             "move tasks between tune and holdout to keep about 30 % in holdout")
        return rows


def _declared_partition(path: Path) -> str | None:
    try:
        _data, raw = read_task_json(path)
    except TaskFileError:
        return None
    value = raw.get("partition") if isinstance(raw, dict) else None
    return value if value in ("tune", "holdout") else None


def check_tasks(
    root: Path,
    *,
    capabilities: Mapping[str, Capability] | None = None,
    catalogue: Mapping[str, ProbeSpec] | None = None,
) -> TaskSetReport:
    """Run every task-set rule over `root`; parse errors become violations too."""
    checker = _Checker(root, capabilities or load_capabilities(), catalogue or load_catalogue())
    tasks: list[LoadedTask] = []
    broken: list[Path] = []
    for path in task_files(root):
        try:
            tasks.append(parse_task_file(path, root))
        except TaskFileError as exc:
            checker.add(exc.where, exc.field, "parse", exc.problem, exc.hint or "fix the value")
            broken.append(path)
    checker.ids(tasks)
    for lt in tasks:
        checker.task(lt)
    checker.groups(tasks)
    rows = checker.directories(tasks, broken)
    return TaskSetReport(tasks=tasks, violations=checker.out, directories=rows)


SET_CODES = frozenset({"minimum", "holdout-share"})
"""Rules about the whole set's coverage (directory minimums, pool shares), not about any task."""
SHOWN = 5
"""How many violations a refusal names on its one line (`farm tasks check` lists them all)."""


class InvalidTaskSet(FarmError):
    """The task set breaks rules; `violations` holds every one (exit status 2 like every FarmError)."""

    def __init__(self, root: Path, violations: list[Violation]) -> None:
        self.root = root
        self.violations = violations
        shown = "; ".join(v.line() for v in violations[:SHOWN])
        more = f" (+{len(violations) - SHOWN} more)" if len(violations) > SHOWN else ""
        super().__init__(f"{root}: {len(violations)} task-set violation(s): {shown}{more}",
                         hint=f"fix them; `farm tasks check {root}` lists every one")


def require_valid(root: Path, *, whole_set: bool = True) -> list[LoadedTask]:
    """The tasks of `root` when every rule holds; InvalidTaskSet (a FarmError, exit 2) listing the violations.

    For commands that run tasks: schema validation alone (`load_taskset`) does not check probe and
    capability names, pools, markers or confirmation cards. `whole_set=False` skips only the
    coverage rules (`SET_CODES`: directory minimums, holdout shares) for a deliberately small set;
    every rule about a task, its id and its pair or session still holds.
    """
    report = check_tasks(root)
    violations = [v for v in report.violations if whole_set or v.code not in SET_CODES]
    if violations:
        raise InvalidTaskSet(root, violations)
    return report.tasks


def set_wide_note(root: Path) -> str | None:
    """One line naming what `farm tasks check root` finds about the whole set (`SET_CODES`: directory minimums,
    holdout shares), or None when the set keeps them. A run of a deliberately small set is not refused for
    them (`require_valid(whole_set=False)`), but says so on stderr and in its manifest notes: its numbers
    come from a set that breaks seed 003's coverage or stratification."""
    found = [v for v in check_tasks(root).violations if v.code in SET_CODES]
    if not found:
        return None
    shown = "; ".join(v.rule for v in found[:SHOWN])
    more = f" (+{len(found) - SHOWN} more)" if len(found) > SHOWN else ""
    return f"task set {root}: {len(found)} set-wide violation(s) (farm tasks check {root} lists them): {shown}{more}"


def select_valid_tasks(
    root: Path, split: SplitChoice = "all", set_prefix: str | None = None, *, whole_set: bool = True,
    selection: TaskSelection | None = None,
) -> list[LoadedTask]:
    """`select_tasks` over a set that passes `require_valid`: what `farm run` loads. A `selection` (repeated
    `--set`, `-k`, `--exclude`, `--only-failed-from`) replaces `set_prefix`."""
    valid = require_valid(root, whole_set=whole_set)
    if selection is not None:
        return select(valid, split, selection).tasks
    return choose_tasks(valid, split, set_prefix)
