"""What the unit page says about the task and the phone: the task as the run ran it (goal, expected outcome, checks,
partition, apps and how each resolved), and the phone's versions as the manifest recorded them.

The task is read from its file in the task set only when the file's bytes still hash to what the run recorded
(`farm.view.goals`): a task edited since the run would show words the agent never saw, so the page says the file
changed instead. Apps are shown as the task names them; an `{app:<capability>}` is resolved with what the harness
recorded for this attempt (`Evidence.app_choices`, the apps used), never guessed.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from farm import manifest as mf
from farm.errors import FarmError
from farm.scoring.evidence import Evidence
from farm.taskset.capabilities import load_capabilities
from farm.taskset.loader import read_task_json
from farm.taskset.model import Task
from farm.view.goals import task_roots

_TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}")
"""A task id that can name a file: looked for under the task set as it is (no glob, no path)."""
MAX_FILES_LOOKED = 50
"""Files of one task id looked at under a task-set root (a task set holds one each)."""


class CheckSpec(BaseModel):
    """One check as the task file states it."""

    model_config = ConfigDict(extra="forbid")

    type: str
    spec: str
    """Its settings (everything but the type) as compact JSON."""


class AppView(BaseModel):
    """One app the task names, and what it was on this phone."""

    model_config = ConfigDict(extra="forbid")

    named: str
    """As the task names it: a package or `{app:<capability>}`."""
    package: str | None = None
    """The package: the task's own, or the one the harness recorded for a capability; null when not recorded."""
    about: str = ""
    """For a capability, what app it stands for."""
    version: str | None = None
    """The package's version on the phone before the run (`versionName (versionCode)`), when recorded."""


class TaskView(BaseModel):
    """The task of a unit, as its page shows it."""

    model_config = ConfigDict(extra="forbid")

    found: bool = False
    """Whether the task file the run ran was found (byte for byte)."""
    note: str = ""
    """Why it was not found, or what is off."""
    goal: str | None = None
    expect: str | None = None
    partition: str | None = None
    checks: list[CheckSpec] = Field(default_factory=list)
    apps: list[AppView] = Field(default_factory=list)
    max_steps: int | None = None
    timeout_sec: int | None = None
    remark: str | None = None
    """The task's `note` for reviewers."""
    task: Task | None = None
    """The parsed task (its checks give the texts highlighted on the page)."""


class PhoneFacts(BaseModel):
    """The phone of a unit as the run's manifest recorded it."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    android: str | None = None
    agent_version: str | None = None
    status: str | None = None
    reason: str | None = None
    apps: list[mf.AppVersion] = Field(default_factory=list)


def version_text(app: mf.AppVersion) -> str:
    """`8.0.51 (2841)`; `?` parts when the phone's package block lacked them."""
    code = f" ({app.version_code})" if app.version_code is not None else ""
    return f"{app.version_name or '?'}{code}"


def phone_facts(manifest: mf.Manifest | None, device: str) -> PhoneFacts | None:
    """The manifest's entry of `device`, or None when it lists no such phone."""
    for phone in manifest.phones if manifest is not None else []:
        if phone.serial == device:
            return PhoneFacts(model=phone.model, android=phone.android, agent_version=phone.agent_version,
                              status=phone.status, reason=phone.reason, apps=list(phone.apps))
    return None


def _task_file(roots: list[Path], task_id: str, sha256: str) -> tuple[bytes, object] | None:
    for root in roots:
        try:
            paths = sorted(root.rglob(f"{task_id}.json"))[:MAX_FILES_LOOKED]
        except OSError:
            continue
        for path in paths:
            try:
                data, raw = read_task_json(path)
            except FarmError:
                continue
            if hashlib.sha256(data).hexdigest() == sha256:
                return data, raw
    return None


def _apps(task: Task, evidence: Evidence | None, phone: PhoneFacts | None) -> list[AppView]:
    versions = {a.package: version_text(a) for a in phone.apps} if phone is not None else {}
    capabilities = load_capabilities()
    chosen = list(evidence.app_choices.values()) if evidence is not None else []
    out: list[AppView] = []
    for named in task.apps:
        if named.startswith("{app:") and named.endswith("}"):
            cap = capabilities.get(named[5:-1])
            package = chosen[0] if len(chosen) == 1 else None
            out.append(AppView(named=named, package=package, about=cap.description if cap else "",
                               version=versions.get(package) if package else None))
        else:
            out.append(AppView(named=named, package=named, version=versions.get(named)))
    return out


def task_view(runs_dir: Path, manifest: mf.Manifest | None, task_id: str, tasks_dir: Path | None,
              evidence: Evidence | None, phone: PhoneFacts | None) -> TaskView:
    """The task `task_id` as the run ran it (see the module docstring)."""
    entry = next((t for t in manifest.tasks if t.id == task_id), None) if manifest is not None else None
    if entry is None:
        return TaskView(note="the run's manifest does not list this task (its file is not known)")
    if not _TASK_ID.fullmatch(task_id):
        return TaskView(note=f"{task_id!r} is not a task file's name (not looked for)")
    roots = task_roots(runs_dir, manifest, tasks_dir)
    if not roots:
        return TaskView(note="no task set is known for this run (start the viewer with --tasks)")
    found = _task_file(roots, task_id, entry.sha256)
    if found is None:
        return TaskView(note=f"{task_id}.json is not in the task set as the run ran it (changed or moved since)")
    raw = found[1]
    try:
        task = Task.model_validate(raw)
    except ValidationError as exc:
        goal = raw.get("goal") if isinstance(raw, dict) else None
        return TaskView(found=True, goal=goal if isinstance(goal, str) else None,
                        note=f"the task file no longer reads as a task ({exc.error_count()} errors)")
    checks = [CheckSpec(type=c.type, spec=json.dumps(c.model_dump(mode="json", by_alias=True, exclude={"type"},
                                                                  exclude_defaults=True), ensure_ascii=False))
              for c in task.checks]
    return TaskView(found=True, goal=task.goal, expect=task.expect, partition=task.partition, checks=checks,
                    apps=_apps(task, evidence, phone), max_steps=task.max_steps, timeout_sec=task.timeout_sec,
                    remark=task.note, task=task)
