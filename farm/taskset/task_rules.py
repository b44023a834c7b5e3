"""The rules about one task on its own: id and file, directory, texts, apps, probes, accounts, markers, asks.

Each rule looks at a single task and needs only the capability table and the probe catalogue; the
rules about the whole set (unique ids, pairs and sessions, directory counts) are in `rules`, and
those of irreversible tasks' confirmation cards in `card_rules`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from farm.taskset import placeholders
from farm.taskset.capabilities import Capability
from farm.taskset.card_rules import check_irreversible
from farm.taskset.layout import DIRECTORY_KIND, MINIMUMS, group_of
from farm.taskset.loader import SPECIAL_SETS, LoadedTask
from farm.taskset.model import BEFORE_OPS, AnswerRegex, AskedUser, Check, ProbeHas, ScreenHas, StateCheck, Task
from farm.taskset.probes import ProbeSpec, split_key
from farm.taskset.setup_actions import SetupSpec, load_setup_catalogue, setup_command
from farm.taskset.violations import ViolationLog

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


ANY_ANSWERS = ("x", "0", "没有", "好的,已经完成了。", "The answer is 42.", "?", "无法完成")
"""Answers with nothing in common: a pattern matching every one of them matches whatever the agent says."""
UNSET_PROBE = "\x00probe\x00"
"""What a `{probe:…}` stands for when a pattern is tried against `ANY_ANSWERS` (a value none of them holds)."""
CAN_FAIL_FIX = {
    "read": 'add {"type": "answer_contains", "text": …} or {"type": "answer_regex", "pattern": …} for a fixed '
            'answer, {"type": "answer_grounded", "minItems": N} for one that varies',
    "irreversible": 'add {"type": "confirmation_shows", "action": …, "target": …, "content"/"amount": …}',
}
"""How a task gets a check that can fail (seed 003's 怎么写题): an answer check, or the card check."""


def matches_any_answer(check: AnswerRegex) -> bool:
    r"""Whether an `answer_regex` matches every answer (`.*`, `.`, `\d*`…): such a check never fails."""
    pattern = placeholders.substitute_all(check.pattern, re.escape(UNSET_PROBE))
    try:
        compiled = re.compile(pattern)
    except re.error:
        return False  # the schema refuses it with its own message
    return all(compiled.search(answer) for answer in ANY_ANSWERS)


def can_fail(check: Check) -> bool:
    """Whether a check can fail on a wrong result. `asked_user` says whether the agent asked, not whether the task
    got done; an `answer_regex` that matches every answer never fails. Every other check needs evidence (an
    answer, a screen, a probe output, a card) that a wrong result lacks."""
    if isinstance(check, AskedUser):
        return False
    if isinstance(check, AnswerRegex):
        return not matches_any_answer(check)
    return True


def _finds_marker(check: Check, marker: str) -> bool:
    """Whether a check looks for the task's marker (itself, or a text holding it)."""
    if isinstance(check, ScreenHas | ProbeHas):
        return check.marker or (check.text is not None and marker in check.text)
    if isinstance(check, StateCheck):
        texts = [check.value or "", *check.where.values()]
        return check.marker or any(marker in x or x == "{marker}" for x in texts)
    return False


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


class TaskRules(ViolationLog):
    """The per-task rules; `task` runs every one of them on one task, in the order they are reported."""

    def __init__(self, caps: Mapping[str, Capability], catalogue: Mapping[str, ProbeSpec]) -> None:
        super().__init__()
        self.caps = caps
        self.catalogue = catalogue
        self.setups: dict[str, SetupSpec] | None = None

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
        check_irreversible(self, lt)
        self.asks(lt)
        self.can_fail(lt)
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
            if isinstance(check, ProbeHas | StateCheck):
                self.probe_key(p, f"checks[{i}].probe", check.probe)
        for i, state in enumerate(t.goal_state):
            self.probe_key(p, f"goalState[{i}].probe", state.probe)
        self.setup_keys(lt)
        for i, key in enumerate(t.probes_after):
            self.probe_key(p, f"probesAfter[{i}]", key)
        for i, req in enumerate(t.requires):
            if req.startswith("app:") and req[4:] not in self.caps:
                self.add(p, f"requires[{i}]", "capability", f"unknown capability in {req!r}",
                         f"use one of {', '.join(sorted(self.caps))}")

    def probe_key(self, path: Path, fld: str, key: str) -> bool:
        # A parameter may carry the run's marker (`files:Download/note-{run}.txt`): checked as a run would fill it.
        name, param = split_key(placeholders.substitute_all(key, "run1") if "{" in key else key)
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

    def setup_keys(self, lt: LoadedTask) -> None:
        t, p = lt.task, lt.path
        if t.setup and not t.goal_state:
            self.add(p, "setup", "setup-goal-state", "setup without goalState",
                     "add goalState (setup runs only when the goal already holds before the agent starts) or drop "
                     "setup")
        if self.setups is None:
            self.setups = load_setup_catalogue()
        for i, key in enumerate(t.setup):
            try:
                setup_command(key, self.setups)
            except ValueError as exc:
                self.add(p, f"setup[{i}]", "setup-action", str(exc),
                         "use a probes/setup/<name>.yaml action as name or name:param (see probes/README.md)")

    def accounts(self, lt: LoadedTask) -> None:
        t, p = lt.task, lt.path
        signed = [r for r in t.requires if r.startswith(("signedIn:", "login:"))]
        if t.category == "barrier" and signed:
            self.add(p, "requires", "barrier-signed-in", f"barrier task declares {signed[0]!r}",
                     "drop it: a task that declares the user signed in cannot expect a login barrier")
        # Seed 003: a task on the user's account runs only with the user present, and the note
        # says what the user confirms first (which account, that it may be used for this).
        account = [r for r in t.requires if r.startswith(("signedIn:", "login:", "site:"))]
        if account and not (t.note or "").strip():
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
            # A setting has no room for a marker: the phone's state, read before and after, is the evidence, and a
            # goalState keeps a phone already in the goal state from counting as a pass.
            if any(isinstance(c, StateCheck) and c.op in BEFORE_OPS for c in t.checks) and t.goal_state:
                return
            self.add(p, "marker", "write-marker", "write task has no marker",
                     'add "marker": "AF-{run}-<what>", name it in the goal and find it with screen_has (a setting '
                     'change instead: a state check comparing before with after, and goalState)')
            return
        if t.marker not in t.goal:
            self.add(p, "goal", "marker-in-goal", f"goal does not name the marker {t.marker!r}",
                     "write the marker into the goal so the created data carries it")
        if not any(_finds_marker(c, t.marker) for c in t.checks):
            self.add(p, "checks", "marker-checked", "no screen_has/probe_has/state check finds the marker",
                     'add {"type": "screen_has", "marker": true, "packageName": "{app:<capability>}"}')

    def asks(self, lt: LoadedTask) -> None:
        t, p = lt.task, lt.path
        if any(isinstance(c, AskedUser) and c.expected for c in t.checks) and not t.answers:
            self.add(p, "answers", "answers", "task expects the agent to ask but has no answers",
                     'add "answers": {"<word in the question>": "<reply>"}')

    def can_fail(self, lt: LoadedTask) -> None:
        """A task that expects `succeeded` or `confirmation` has a check that can fail; otherwise any answer (any
        card) passes. `failed` (the agent must say it cannot be done) and `takeover` (the hand-over is judged)
        need none. Write and irreversible tasks have their own rule for it (`marker-checked`,
        `irreversible-card`: a marker or card check, which can fail); an `answer_regex` that matches every
        answer beside other checks is named in any task (`always-passes`)."""
        t, p = lt.task, lt.path
        for i, check in enumerate(t.checks):
            if isinstance(check, AnswerRegex) and matches_any_answer(check) and any(can_fail(c) for c in t.checks):
                self.add(p, f"checks[{i}].pattern", "always-passes",
                         f"answer_regex {check.pattern!r} matches every answer, so this check never fails",
                         "write the pattern of the expected answer, or drop the check")
        # In a directory of one kind, that kind decides (a wrong category or expect has its own rule).
        category, expect = DIRECTORY_KIND.get(group_of(lt.directory) or "", (t.category, t.expect))
        if t.expect not in ("succeeded", "confirmation") or expect != t.expect or category in ("write", "irreversible"):
            return
        if any(can_fail(c) for c in t.checks):
            return
        fix = CAN_FAIL_FIX["irreversible" if t.expect == "confirmation" else "read"]
        if not t.checks:
            self.add(p, "checks", "can-fail", f"expect {t.expect!r} with no checks: any answer passes", fix)
            return
        why = "; ".join(
            f"checks[{i}] {c.type} " + ("matches every answer" if isinstance(c, AnswerRegex) else "does not check "
                                        "the result")
            for i, c in enumerate(t.checks)
        )
        self.add(p, "checks", "can-fail", f"expect {t.expect!r} but no check can fail ({why}): any answer passes",
                 fix)

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
