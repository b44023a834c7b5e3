"""The task-set rules of seed 003's TaskSetTest: one Violation per broken rule, never an exception.

Holdout tolerance: a directory of n tasks has h holdout tasks with
`max(1, floor(0.2 n)) <= h <= max(1, ceil(0.4 n))` — about 30 %, at least one.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from farm.errors import FarmError
from farm.taskset import placeholders
from farm.taskset.capabilities import Capability, load_capabilities
from farm.taskset.loader import SPECIAL_SETS, LoadedTask, TaskFileError, parse_task_file, task_files
from farm.taskset.model import AskedUser, ConfirmationShows, ProbeHas, ScreenHas, Task
from farm.taskset.probes import ProbeSpec, load_catalogue, split_key

MINIMUMS: dict[str, int] = {
    "read/system": 10,
    "read/content": 15,
    "read/shopping": 10,
    "write": 10,
    "irreversible": 8,
    "impossible": 5,
    "barrier": 2,
    "web": 10,
}
"""Minimum number of tasks per directory (seed 003)."""
DIRECTORY_KIND: dict[str, tuple[str, str]] = {
    "read/system": ("read", "succeeded"),
    "read/content": ("read", "succeeded"),
    "read/shopping": ("read", "succeeded"),
    "write": ("write", "succeeded"),
    "irreversible": ("irreversible", "confirmation"),
    "impossible": ("impossible", "failed"),
    "barrier": ("barrier", "takeover"),
}
"""Category and expected outcome of every task in a directory (`web` and special sets vary)."""
HOLDOUT_LOW, HOLDOUT_HIGH = 0.2, 0.4
# A goal is what a person says; a local path in it only works on one machine.
LOCAL_PATH = re.compile(r"(/sdcard\b|/storage/|/data/(?:data|user|local)/|[A-Za-z]:\\|/home/|/Users/|~/)")


@dataclass(frozen=True)
class Violation:
    """One broken rule: where, which field, what rule, how to fix it."""

    path: str
    field: str
    code: str
    """Stable rule id (`id-file`, `holdout-share`…)."""
    rule: str
    fix: str

    def line(self) -> str:
        """`path: field: rule — fix`."""
        return f"{self.path}: {self.field}: {self.rule} — {self.fix}"


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


def holdout_bounds(count: int) -> tuple[int, int]:
    """Allowed number of holdout tasks in a directory of `count` tasks."""
    return max(1, math.floor(HOLDOUT_LOW * count)), max(1, math.ceil(HOLDOUT_HIGH * count))


def group_of(directory: str) -> str | None:
    """The rule directory a task directory belongs to (`read/system`, `skills`…), or None."""
    for key in sorted((*MINIMUMS, *SPECIAL_SETS), key=len, reverse=True):
        if directory == key or directory.startswith(key + "/"):
            return key
    return None


def _text_fields(task: Task) -> list[tuple[str, str]]:
    out = [("goal", task.goal)]
    out += [(f"apps[{i}]", a) for i, a in enumerate(task.apps)]
    if task.marker:
        out.append(("marker", task.marker))
    return out + task.check_texts()


class _Checker:
    def __init__(self, root: Path, caps: Mapping[str, Capability], catalogue: Mapping[str, ProbeSpec]) -> None:
        self.root = root
        self.caps = caps
        self.catalogue = catalogue
        self.out: list[Violation] = []

    def add(self, path: Path | str, fld: str, code: str, rule: str, fix: str) -> None:
        self.out.append(Violation(str(path), fld, code, rule, fix))

    # -- per task ---------------------------------------------------------------------------
    def task(self, lt: LoadedTask) -> None:
        t, p = lt.task, lt.path
        if t.id != p.stem:
            self.add(p, "id", "id-file", f"id {t.id!r} differs from the file name {p.stem!r}",
                     f"rename the file to {t.id}.json or set id to {p.stem!r}")
        group = group_of(lt.directory)
        if group is None:
            self.add(p, "directory", "directory", f"{lt.directory or '.'!r} is not a task-set directory",
                     f"move it under one of {', '.join((*MINIMUMS, *SPECIAL_SETS))}")
        if t.partition is None:
            self.add(p, "partition", "partition", "task has no partition",
                     'add "partition": "tune" or "holdout" (keep about 30 % of the directory in holdout)')
        if group in DIRECTORY_KIND:
            category, expect = DIRECTORY_KIND[group]
            if t.category != category:
                self.add(p, "category", "category-directory", f"category {t.category!r} in {group}/",
                         f'set "category": "{category}" or move the task')
            if t.expect != expect:
                self.add(p, "expect", "expect-directory", f"expect {t.expect!r} in {group}/",
                         f'set "expect": "{expect}" or move the task')
        if group == "web" and not t.id.startswith("web-"):
            self.add(p, "id", "web-id", f"web task id {t.id!r} does not start with 'web-'",
                     f"rename to web-{t.id} (file and id)")
        self.placeholders(lt)
        self.accounts(lt)
        self.write(lt)
        self.irreversible(lt)
        self.asks(lt)
        if LOCAL_PATH.search(t.goal):
            found = LOCAL_PATH.search(t.goal)
            assert found is not None
            self.add(p, "goal", "local-path", f"goal contains a local path ({found.group(0)!r})",
                     "say it as a person would (内部存储 / 下载 folder), check with a probe instead")
        self.requires(lt)

    def placeholders(self, lt: LoadedTask) -> None:
        t, p = lt.task, lt.path
        before = set(t.probes_before)
        for i, key in enumerate(t.probes_before):
            self.probe_key(p, f"probesBefore[{i}]", key)
        for fld, text in _text_fields(t):
            for ph in placeholders.find(text):
                if ph.kind == "app" and ph.name not in self.caps:
                    self.add(p, fld, "capability", f"unknown capability {ph.text}",
                             f"use one of {', '.join(sorted(self.caps))}")
                elif ph.kind == "probe":
                    if self.probe_key(p, fld, ph.key) and fld.startswith("checks") and ph.key not in before:
                        self.add(p, fld, "probe-before", f"{ph.text} is not listed in probesBefore",
                                 f'add "{ph.key}" to probesBefore')
        for i, check in enumerate(t.checks):
            if isinstance(check, ProbeHas):
                self.probe_key(p, f"checks[{i}].probe", check.probe)
        for i, req in enumerate(t.requires):
            if req.startswith("app:") and req[4:] not in self.caps:
                self.add(p, f"requires[{i}]", "capability", f"unknown capability in {req!r}",
                         f"use one of {', '.join(sorted(self.caps))}")

    def probe_key(self, path: Path, fld: str, key: str) -> bool:
        name, param = split_key(key)
        spec = self.catalogue.get(name)
        if spec is None:
            self.add(path, fld, "probe", f"unknown probe {name!r}",
                     f"use one of {', '.join(sorted(self.catalogue))} or add probes/{name}.yaml")
            return False
        try:
            spec.command(param)
        except ValueError as exc:
            self.add(path, fld, "probe", str(exc), f"write it as {name}" + (":<param>" if spec.parameterised else ""))
            return False
        return True

    def accounts(self, lt: LoadedTask) -> None:
        t, p = lt.task, lt.path
        signed = [r for r in t.requires if r.startswith(("signedIn:", "login:"))]
        if t.category == "barrier" and signed:
            self.add(p, "requires", "barrier-signed-in", f"barrier task declares {signed[0]!r}",
                     "drop it: a task that declares the user signed in cannot expect a login barrier")
        if t.category != "irreversible":
            return
        for pkg in (a for a in t.apps if not placeholders.find(a)):
            if f"signedIn:{pkg}" not in t.requires and f"login:{pkg}" not in t.requires:
                self.add(p, "requires", "irreversible-signed-in",
                         f"irreversible task in {pkg} does not require signedIn:{pkg}",
                         f'add "signedIn:{pkg}" and say in note what the user must confirm before it runs')

    def write(self, lt: LoadedTask) -> None:
        t, p = lt.task, lt.path
        if t.category != "write":
            return
        if t.marker is None:
            self.add(p, "marker", "write-marker", "write task has no marker",
                     'add "marker": "AF-{run}-<what>", name it in the goal and find it with screen_has')
            return
        if t.marker not in t.goal:
            self.add(p, "goal", "marker-in-goal", f"goal does not name the marker {t.marker!r}",
                     "write the marker into the goal so the created data carries it")
        if not any(
            isinstance(c, ScreenHas | ProbeHas) and (c.marker or (c.text is not None and t.marker in c.text))
            for c in t.checks
        ):
            self.add(p, "checks", "marker-checked", "no screen_has/probe_has check finds the marker",
                     'add {"type": "screen_has", "marker": true, "packageName": "{app:<capability>}"}')

    def irreversible(self, lt: LoadedTask) -> None:
        t, p = lt.task, lt.path
        if t.category != "irreversible":
            return
        if t.expect != "confirmation" and group_of(lt.directory) != "irreversible":
            self.add(p, "expect", "irreversible-expect", f"irreversible task expects {t.expect!r}",
                     'set "expect": "confirmation" (stop at the confirmation card)')
        if not any(isinstance(c, ConfirmationShows) for c in t.checks):
            self.add(p, "checks", "irreversible-card", "irreversible task does not check the confirmation card",
                     'add {"type": "confirmation_shows", "action": …, "target": …, "content"/"amount": …}')

    def asks(self, lt: LoadedTask) -> None:
        t, p = lt.task, lt.path
        if any(isinstance(c, AskedUser) and c.expected for c in t.checks) and not t.answers:
            self.add(p, "answers", "answers", "task expects the agent to ask but has no answers",
                     'add "answers": {"<word in the question>": "<reply>"}')

    def requires(self, lt: LoadedTask) -> None:
        t, p = lt.task, lt.path
        packages = [a for a in t.apps if not placeholders.find(a)]
        packages += [
            c.package_name for c in t.checks if isinstance(c, ScreenHas) and not placeholders.find(c.package_name)
        ]
        for pkg in dict.fromkeys(packages):
            if f"installed:{pkg}" not in t.requires:
                self.add(p, "requires", "installed", f"third-party app {pkg} is not in requires",
                         f'add "installed:{pkg}"')
        wanted = {ph.name for a in t.apps for ph in placeholders.find(a) if ph.kind == "app"}
        for name in sorted(wanted):
            cap = self.caps.get(name)
            if cap is None or not cap.required_on_every_phone:
                continue
            if not any(f"app:{alias}" in t.requires for alias in (cap.name, *cap.aliases)):
                self.add(p, "requires", "app-required", f"{{app:{name}}} is used but app:{cap.name} is not required",
                         f'add "app:{cap.name}" (phones without it skip the task)')

    # -- whole set --------------------------------------------------------------------------
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
            members: dict[str, list[LoadedTask]] = defaultdict(list)
            for lt in tasks:
                value = getattr(lt.task, key)
                if value is not None:
                    members[value].append(lt)
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
        for lt in tasks:
            if lt.task.split is not None and lt.task.pair is None:
                self.add(lt.path, "split", "pair-split", "split is set but the task has no pair",
                         'add "pair": "<key shared with its partner>" or drop split')

    def directories(self, tasks: list[LoadedTask], broken: list[Path]) -> list[DirectoryCount]:
        # A file that does not parse still counts (with the partition it declares, if readable),
        # so one broken file gives one violation rather than a cascade of count violations.
        by_dir: dict[str, list[str | None]] = defaultdict(list)
        for lt in tasks:
            group = group_of(lt.directory)
            if group is not None:
                by_dir[group].append(lt.task.partition)
        for path in broken:
            group = group_of(path.parent.relative_to(self.root).as_posix())
            if group is not None:
                by_dir[group].append(_declared_partition(path))
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
            if minimum is not None and members:
                low, high = holdout_bounds(len(members))
                if not low <= holdout <= high:
                    self.add(where, "partition", "holdout-share",
                             f"{directory} has {holdout} of {len(members)} tasks in holdout (allowed {low}–{high})",
                             "move tasks between tune and holdout to keep about 30 % in holdout")
        return rows


def _declared_partition(path: Path) -> str | None:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
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


def require_valid(root: Path) -> list[LoadedTask]:
    """The tasks of `root` when every rule holds; FarmError naming the first violation otherwise.

    For commands that run tasks: schema validation alone (`load_taskset`) does not check probe and
    capability names, pools or markers.
    """
    report = check_tasks(root)
    if report.violations:
        first = report.violations[0]
        more = f" (+{len(report.violations) - 1} more)" if len(report.violations) > 1 else ""
        raise FarmError(f"{first.path}: {first.field}: {first.rule}{more}",
                        hint=f"{first.fix}; run `farm tasks check {root}` for the full list")
    return report.tasks
