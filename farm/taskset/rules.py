"""The task-set rules of seed 003's TaskSetTest: one Violation per broken rule, never an exception.

Holdout tolerance: a directory of n tasks has h holdout tasks with
`max(1, floor(0.2 n)) <= h <= max(1, ceil(0.4 n))` — about 30 %, at least one. In `skills/` and
`memory/` the unit is a pair or a session (they move between pools whole), not a task.
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
from farm.taskset.loader import (
    SPECIAL_SETS,
    LoadedTask,
    SplitChoice,
    TaskFileError,
    choose_tasks,
    parse_task_file,
    task_files,
)
from farm.taskset.model import AnswerGrounded, AskedUser, ConfirmationShows, ProbeHas, ScreenHas, Task
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
GROUP_HOME = {"pair": "skills", "session": "memory"}
"""The only directory a `pair` / a `session` may be used in."""
GROUP_FIX = {
    "pair": 'add "pair": "<key shared with its partner>" and "split": "train" or "test"',
    "session": 'add "session": "<key shared by the tasks of one conversation>"',
}
UNIT_LABEL = {"skills": "pairs", "memory": "sessions"}
# A task is what a person says and what a reviewer reads; a local path in any of its texts only
# works on one machine. A Unix path must start a word (not continue a URL such as
# `https://host/home/x`, nor a longer path); a drive letter must not follow a backslash (regex
# escapes such as `\s:\d`) and lead to a name of two characters free of regex syntax (`\d+` is no path).
_STARTS = r"(?<![A-Za-z0-9_.:/\\~-])"
LOCAL_PATH = re.compile(
    _STARTS + r"(?:/sdcard\b|/storage/|/data/|/home/|/Users/|/mnt/|/tmp/|/root/|~/)"
    r"|(?<![A-Za-z0-9_])(?:file|content)://"
    r"|(?<![A-Za-z0-9_\\])[A-Za-z]:(?:\\{1,2}|/(?!/))[^\s\\+*?{}()\[\]|^$]{2}",
    re.IGNORECASE,
)
"""Local paths and device-local URIs (`/sdcard`, `/storage/`, `/data/`, `~/`, `C:\\`, `file://`…)."""
BUILTIN_PACKAGES: dict[str, str] = {
    "com.android.deskclock": "clock",
    "com.google.android.deskclock": "clock",
    "com.sec.android.app.clockpackage": "clock",
    "com.coloros.alarmclock": "clock",
    "com.oneplus.deskclock": "clock",
    "com.android.calendar": "calendar",
    "com.google.android.calendar": "calendar",
    "com.samsung.android.calendar": "calendar",
    "com.coloros.calendar": "calendar",
    "com.android.calculator2": "calculator",
    "com.google.android.calculator": "calculator",
    "com.sec.android.app.popupcalculator": "calculator",
    "com.miui.calculator": "calculator",
    "com.coloros.calculator": "calculator",
    "com.android.contacts": "contacts",
    "com.google.android.contacts": "contacts",
    "com.samsung.android.app.contacts": "contacts",
    "com.android.documentsui": "files",
    "com.google.android.documentsui": "files",
    "com.google.android.apps.nbu.files": "files",
    "com.android.fileexplorer": "files",
    "com.sec.android.app.myfiles": "files",
    "com.coloros.filemanager": "files",
    "com.miui.weather2": "weather",
    "com.huawei.android.totemweather": "weather",
    "com.miui.notes": "notes",
    "com.samsung.android.app.notes": "notes",
    "com.example.android.notepad": "notes",
    "com.android.settings": "settings",
}
"""Packages of the phone's own apps (AOSP, Google, Samsung, Xiaomi, OPPO/OnePlus, Huawei) → capability.

The capability table resolves apps by intent and lists no packages, so this short list names the
common builds; seed 003 wants these apps written `{app:<capability>}` so a task runs on any phone.
"""
# Confirmation cards (seed 003: 「做什么 / 对谁 / 内容 / 多少」). The kind of action decides which
# fields the card check must name; it is read from `action`, else from the goal.
_PAY = re.compile(r"提交订单|下单|支付|付款|购买|结算|转账|红包")
_DELETE = re.compile(r"删|移除|清空")
_SEND = re.compile(r"发|评论|回复|分享|留言|私信")
SELF_TARGETS = ("文件传输助手", "我的电脑", "仅自己可见")
"""Who a send/post task may address: the user themself (seed 003: 对象只用自己)."""
# An amount names a price or a count: a digit, a currency sign, or a probed value.
_AMOUNT = re.compile(r"[0-9¥￥$€元]|\{probe:")
_AMOUNT_VALUE = re.compile(r"[0-9]|\{probe:")


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


def _all_text_fields(task: Task) -> list[tuple[str, str]]:
    """Every text a task carries, as (field path, text): what the agent, a check or a reviewer reads."""
    out = _text_fields(task)
    if task.note:
        out.append(("note", task.note))
    out += [(f"requires[{i}]", r) for i, r in enumerate(task.requires)]
    out += [(f"probesBefore[{i}]", k) for i, k in enumerate(task.probes_before)]
    for key, reply in task.answers.items():
        out += [("answers", key), (f"answers[{key!r}]", reply)]
    return out


def card_kind(action: str, goal: str) -> str:
    """What an irreversible action is — `pay`, `delete`, `send` or `other` — from its action, else the goal."""
    for text in (action, goal):
        for kind, pattern in (("pay", _PAY), ("delete", _DELETE), ("send", _SEND)):
            if pattern.search(text):
                return kind
    return "other"


def _blank(value: str | None) -> bool:
    return value is None or not value.strip()


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
        self.local_paths(lt)
        self.builtin(lt)
        self.requires(lt)

    def local_paths(self, lt: LoadedTask) -> None:
        for fld, text in _all_text_fields(lt.task):
            found = LOCAL_PATH.search(text)
            if found is not None:
                self.add(lt.path, fld, "local-path", f"{fld} contains a local path ({found.group(0)!r})",
                         "say it as a person would (内部存储 / 下载 folder), check with a probe instead")

    def builtin(self, lt: LoadedTask) -> None:
        """The phone's own apps are written `{app:<capability>}`, never as one phone's package."""
        t, p = lt.task, lt.path
        found = [(f"apps[{i}]", a) for i, a in enumerate(t.apps)]
        found += [(f"checks[{i}].packageName", c.package_name) for i, c in enumerate(t.checks)
                  if isinstance(c, ScreenHas)]
        for fld, pkg in found:
            cap = BUILTIN_PACKAGES.get(pkg)
            if cap is not None:
                self.add(p, fld, "builtin-package", f"{pkg} is the phone's own {cap} app written as a package",
                         f'write "{{app:{cap}}}" so the task runs on any phone')
        for i, req in enumerate(t.requires):
            cap = BUILTIN_PACKAGES.get(req.removeprefix("installed:")) if req.startswith("installed:") else None
            if cap is None:
                continue
            every = self.caps.get(cap)
            fix = (f'replace it by "app:{cap}"' if every is not None and every.required_on_every_phone
                   else f'drop it (the phone\'s {cap} app is found through {{app:{cap}}})')
            self.add(p, f"requires[{i}]", "builtin-package", f"{req!r} names the phone's own {cap} app by package",
                     fix)

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
        # Seed 003: a task on the user's account runs only with the user present, and the note
        # says what the user confirms first (which account, that it may be used for this).
        account = [r for r in t.requires if r.startswith(("signedIn:", "login:", "site:"))]
        if account and _blank(t.note):
            self.add(p, "note", "signed-in-note", f"task requires {account[0]!r} but has no note",
                     'add "note": what the user must confirm before it runs (which account, that it may be used)')
        if t.category != "irreversible":
            return
        for pkg in (a for a in t.apps if not placeholders.find(a) and a not in BUILTIN_PACKAGES):
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
        for i, check in enumerate(t.checks):
            if isinstance(check, ConfirmationShows):
                self.card(lt, i, check)

    def card(self, lt: LoadedTask, index: int, check: ConfirmationShows) -> None:
        """A card check names what (action), who (target), and the content or amount its kind needs.

        Every card check names a non-blank `target` (对谁: the recipient, the shop, the visibility,
        the deleted item). By kind (from `action`, else the goal — see `card_kind`):

        - pay (提交订单 / 下单 / 支付 / 购买 / 转账…): `target` is the shop or payee and `amount` names
          the price: a number or `{probe:…}` value; a bare currency sign (`¥`) only with an
          `answer_grounded` check, so the price the agent reports was read on screen.
        - send (发送 / 发布 / 发表 / 评论 / 回复…): `content` names what goes out, and `target` is the
          user themself (文件传输助手 / 我的电脑 / 仅自己可见) or the task's marked data.
        - delete (删除 / 移除 / 清空): `target` is the task's own marker — it deletes only data it created.
        - other: `target` alone; the seed's content and amount apply only where the action has them.

        The action wins over the goal, so 「删掉刚发的那条」 with action 删除 is a delete.
        """
        t, p = lt.task, lt.path
        where = f"checks[{index}]"
        kind = card_kind(check.action, t.goal)
        # Without a marker, only a value carrying {run} can be data this run created.
        marker = t.marker or "{run}"
        target = check.target or ""
        if not target.strip():
            created = t.marker or "AF-{run}-<what>"
            fix = {
                "pay": '"target": "<shop name as the order page shows it>"',
                "send": '"target": "文件传输助手" (or 我的电脑 / 仅自己可见)',
                "delete": f'"target": "{created}" (the data the task created)',
            }.get(kind, '"target": "<who or what the action is on>"')
            self.add(p, f"{where}.target", "card-target", f"card check of {check.action!r} does not say whom (target)",
                     f"add {fix}")
        elif kind == "send" and not any(s in target for s in SELF_TARGETS) and marker not in target:
            self.add(p, f"{where}.target", "card-self", f"{check.action!r} goes to {target!r}, not to the user",
                     f"address the user themself ({' / '.join(SELF_TARGETS)}) or the task's marked data")
        elif kind == "delete" and marker not in target:
            self.add(p, f"{where}.target", "card-marked", f"deletes {target!r}, not data the task created",
                     'create marked data first and delete it: "marker": "AF-{run}-<what>", "target": the marker')
        if kind == "send" and _blank(check.content):
            self.add(p, f"{where}.content", "card-content", f"card check of {check.action!r} does not say what "
                     "goes out (content)", 'add "content": "<the text sent, e.g. the marker>"')
        if kind != "pay":
            return
        amount = check.amount or ""
        if not _AMOUNT.search(amount):
            self.add(p, f"{where}.amount", "card-amount",
                     f"card check of {check.action!r} names no amount ({check.amount!r})" if check.amount
                     else f"card check of {check.action!r} does not say how much (amount)",
                     'add "amount": "<price, e.g. 39.90>" (or "¥" with an answer_grounded check when it varies)')
        elif not _AMOUNT_VALUE.search(amount) and not any(isinstance(c, AnswerGrounded) for c in t.checks):
            self.add(p, f"{where}.amount", "card-grounded", f"amount {amount!r} names no value and nothing grounds "
                     "the price", 'write the price, or add {"type": "answer_grounded", "minItems": 1}')

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
        # A built-in package is refused by `builtin` with its own fix; `installed:` would be the wrong one.
        for pkg in (q for q in dict.fromkeys(packages) if q not in BUILTIN_PACKAGES):
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


def select_valid_tasks(
    root: Path, split: SplitChoice = "all", set_prefix: str | None = None, *, whole_set: bool = True
) -> list[LoadedTask]:
    """`select_tasks` over a set that passes `require_valid`: what `farm run` loads."""
    return choose_tasks(require_valid(root, whole_set=whole_set), split, set_prefix)
