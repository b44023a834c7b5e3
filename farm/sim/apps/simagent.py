"""The simulated on-device agent: deterministic attempts and the `eval/<run>/` tree it writes.

Nothing here operates a model: outcomes, durations and token counts are drawn from the profile's
agent seed (+ run + task id) and pass rate, and every record says `execution: simulated`. The tree is
the agent-app contract's reference (docs/agent-app.md): each attempt's run record — steps with screen
text, screenshots, calls, messages and tokens, and final.json's evidence — is written by `simagent_run`.
"""

from __future__ import annotations

import json
import os
import posixpath
import random
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from farm.sim import rootfs
from farm.sim.apps.simagent_run import RunWriter
from farm.taskset.model import goal_for_channel

if TYPE_CHECKING:
    from farm.sim.phone import PhoneState

FAILURE_CATEGORIES = ("perception", "route", "barrier", "app_state")


@dataclass
class EvalOptions:
    """What `am instrument -e …` asked for."""

    run: str
    split: str | None = None
    eval_set: str | None = None
    tasks_path: str | None = None
    price_in: float | None = None
    price_out: float | None = None
    price_cached: float | None = None
    allow_irreversible: bool = False
    channel: str | None = None
    on_takeover: str = "cancel"
    flags: str | None = None
    learn_skills: bool = False
    memory: bool = False
    extras: dict[str, str] = field(default_factory=dict)


@dataclass
class Attempt:
    """One simulated task attempt."""

    task: dict[str, Any]
    record: dict[str, Any]
    status: int
    """Instrumentation status code: 0 passed, -2 failed, -3 ignored, -4 assumption failure."""
    sim_seconds: float
    reason: str = ""


def task_directory(task: dict[str, Any]) -> str:
    """The task-set directory of a bundled task (`directory`, else `category`)."""
    return str(task.get("directory") or task.get("category") or "")


def select(tasks: list[dict[str, Any]], opts: EvalOptions) -> list[dict[str, Any]]:
    """evalSplit / evalSet filtering; without evalSet the special sets skills/ and memory/ are left out."""
    out = []
    for t in tasks:
        d, tid = task_directory(t), str(t.get("id", ""))
        if opts.split in ("tune", "holdout") and t.get("partition") != opts.split:
            continue
        if opts.eval_set:
            p = opts.eval_set.rstrip("/")
            if not (d == p or d.startswith(p + "/") or tid.startswith(p)):
                continue
        elif d.split("/")[0] in ("skills", "memory"):
            continue
        out.append(t)
    return out


def _signed_in(phone: PhoneState, files_dir: str) -> set[str]:
    names = set(phone.profile.signed_in)
    try:
        names |= {line.strip() for line in phone.read_text(f"{files_dir}/eval/logged-in.txt").splitlines()}
    except (OSError, ValueError):
        pass
    return names


def _unmet(phone: PhoneState, task: dict[str, Any], signed_in: set[str]) -> str | None:
    for req in task.get("requires") or []:
        kind, _, value = str(req).partition(":")
        if kind == "installed" and phone.profile.package(value) is None:
            return f"未安装 {value}"
        if kind in ("signedIn", "login", "site") and value not in signed_in:
            return "未登录"
    return None


def attempt(phone: PhoneState, task: dict[str, Any], opts: EvalOptions, files_dir: str) -> Attempt:
    """Decide (deterministically) how the simulated agent does on `task`."""
    agent = phone.profile.agent
    tid = str(task.get("id", ""))
    rng = random.Random(f"{agent.seed}:{opts.run}:{tid}")
    expect = str(task.get("expect") or "succeeded")
    irreversible = task_directory(task).split("/")[0] == "irreversible"
    if irreversible and not opts.allow_irreversible:
        return _skipped(task, opts, -3, "不可逆类题,未加 evalAllowIrreversible,未运行")
    unmet = _unmet(phone, task, _signed_in(phone, files_dir))
    if unmet:
        return _skipped(task, opts, -4, unmet)
    passed = rng.random() < agent.pass_rate
    if passed:
        outcome = expect
    else:
        outcome = {"succeeded": "failed", "failed": "succeeded", "confirmation": "failed",
                   "takeover": "failed"}.get(expect, "failed")
    # A task's length is its own (the same in every run), as a real task's is: schedulers learn it from history.
    sim_seconds = task_duration(agent.task_seconds, tid)
    steps = max(1, min(int(task.get("maxSteps") or 30), rng.randint(3, 18)))
    inp, cached = rng.randint(4_000, 20_000) * steps // 4, rng.randint(0, 60_000) * steps // 4
    tokens = {"input": inp, "cacheRead": cached, "cacheWrite": rng.randint(0, 4_000),
              "output": rng.randint(200, 900) * steps}
    cost = None
    if opts.price_in is not None and opts.price_out is not None:
        cached_price = opts.price_cached if opts.price_cached is not None else opts.price_in
        cost = round((tokens["input"] * opts.price_in + tokens["cacheWrite"] * opts.price_in
                      + tokens["cacheRead"] * cached_price + tokens["output"] * opts.price_out) / 1e6, 6)
    total_ms = round(sim_seconds * 1000)
    model_ms = round(total_ms * rng.uniform(0.55, 0.75))
    screen_ms = round(total_ms * rng.uniform(0.08, 0.15))
    action_ms = round(total_ms * rng.uniform(0.05, 0.12))
    metrics = {"firstFeedbackMs": round(rng.uniform(800, 4000)), "roundTrips": steps, "modelMs": model_ms,
               "screenReadMs": screen_ms, "actionMs": action_ms,
               "otherMs": max(0, total_ms - model_ms - screen_ms - action_ms), "totalMs": total_ms}
    marker = str(task.get("marker") or "").replace("{run}", opts.run)
    reason = "" if passed else "模拟失败:未在步数内完成"
    # How the attempt ended, as a real agent's transcript says it: a failure here ran out of steps.
    end_reason = {"succeeded": "answer", "failed": "give_up", "confirmation": "confirm",
                  "takeover": "takeover"}.get(outcome, "answer") if passed else "max_steps"
    apps = [str(a) for a in task.get("apps") or []]
    used = leave_marker(phone, task, marker) if passed and marker and outcome == "succeeded" else None
    if passed and outcome == "succeeded":
        change_settings(phone, task)
    answer = _answer(task, passed, marker) if end_reason in ("answer", "give_up") else None
    record: dict[str, Any] = {
        "id": tid, "category": task_directory(task), "partition": task.get("partition"), "expect": expect,
        "outcome": outcome, "passed": passed,
        "checks": [{"type": str(c.get("type", "")), "passed": passed, "detail": "simulated"}
                   for c in task.get("checks") or [] if isinstance(c, dict)],
        "answer": answer, "reason": reason,
        "failureCategory": None if passed else rng.choice(FAILURE_CATEGORIES),
        "takeoverKind": "login" if outcome == "takeover" else None, "endReason": end_reason,
        "steps": steps, "tokens": tokens, "costUsd": cost, "metrics": metrics,
        "markers": [marker] if marker else [], "execution": "simulated",
        "appPackage": used or (apps[0] if apps else None),
    }
    return Attempt(task, record, 0 if passed else -2, sim_seconds, reason)


def task_duration(task_seconds: float, task_id: str) -> float:
    """Simulated seconds a task takes: 0.4–1.6 × `task_seconds`, fixed per task on every phone and in every run."""
    return task_seconds * (0.4 + 1.2 * random.Random(f"duration:{task_id}").random())


SIM_APPS = {"notes": "dev.agentfarm.notes", "clock": "com.android.deskclock", "calendar": "com.android.calendar",
            "contacts": "com.android.contacts", "files": "com.android.documentsui"}
"""The virtual phone's app for a capability the bundle could leave unresolved (`notes` has no standard intent)."""


def _target_package(task: dict[str, Any]) -> str | None:
    for check in task.get("checks") or []:
        if isinstance(check, dict) and check.get("type") == "screen_has" and check.get("packageName"):
            package = str(check["packageName"])
            return SIM_APPS.get(package[5:-1]) if package.startswith("{app:") else package
    apps = [str(a) for a in task.get("apps") or []]
    return apps[0] if apps else None


def _wanted_texts(task: dict[str, Any]) -> list[str]:
    """The texts the task's screen_has checks look for besides the marker: what a competent agent wrote."""
    return [str(c["text"]) for c in task.get("checks") or []
            if isinstance(c, dict) and c.get("type") == "screen_has" and isinstance(c.get("text"), str)]


def _alarm_time(task: dict[str, Any], now: datetime) -> str:
    # A task verified by the clock's upcoming-alarm notification wants an alarm within two hours: one hour on.
    if _state_wheres(task, "notifications", ""):
        return f"{now + timedelta(hours=1):%H:%M}"
    for text in _wanted_texts(task):
        found = re.fullmatch(r"(\d{1,2}):(\d{2})", text.strip())
        if found:
            return f"{int(found.group(1)):02d}:{found.group(2)}"
    return "07:00"


def _state_wheres(task: dict[str, Any], probe: str, marker: str) -> list[tuple[str, dict[str, str]]]:
    """(parameter, `where` with the marker filled in) of each state check of `task` that reads probe `probe`."""
    out = []
    for check in task.get("checks") or []:
        if not isinstance(check, dict) or check.get("type") != "state":
            continue
        name, _, param = str(check.get("probe", "")).partition(":")
        where = check.get("where")
        if name == probe and isinstance(where, dict):
            out.append((param, {str(k): marker if v == "{marker}" else str(v) for k, v in where.items()}))
    return out


def _file_texts(task: dict[str, Any], path: str, marker: str) -> list[str]:
    """The texts the task's `file_head` state checks of `path` (relative to shared storage) want the file to hold."""
    out = []
    for check in task.get("checks") or []:
        if not isinstance(check, dict) or check.get("type") != "state" or check.get("op") not in ("contains", "equals"):
            continue
        name, _, param = str(check.get("probe", "")).partition(":")
        if name == "file_head" and posixpath.normpath(param) == posixpath.normpath(path):
            out.append(marker if check.get("marker") else str(check.get("value") or ""))
    return out


def change_settings(phone: PhoneState, task: dict[str, Any]) -> None:
    """What a passed setting task's state checks look for, done as the agent would in Settings: the switch that writes
    a checked key is tapped once (goalState keeps a phone already in the goal from running the task), and a volume a
    check compares is stepped up or down once."""
    from farm.sim import audio
    from farm.sim.apps.settings import SettingsApp, switch_for

    tapped: set[str] = set()
    for check in task.get("checks") or []:
        if not isinstance(check, dict) or check.get("type") != "state":
            continue
        name, _, param = str(check.get("probe", "")).partition(":")
        where = check.get("where")
        stream = str(where.get("stream", audio.MUSIC)) if isinstance(where, dict) else audio.MUSIC
        if name == "volumes" and check.get("op") in ("increased", "decreased"):
            audio.adjust(phone, stream, 1 if check.get("op") == "increased" else -1)
            continue
        switch = "深色主题" if name == "night_mode" else switch_for(name.removeprefix("setting_"), param)
        if switch is not None and switch not in tapped:
            SettingsApp(phone.ui).flip(switch)
            tapped.add(switch)


def leave_marker(phone: PhoneState, task: dict[str, Any], marker: str) -> str | None:
    """Create the marked data a passed write task made, in the app a fresh look will check; the package."""
    import time
    import uuid

    from farm.sim.apps import app_class

    package = _target_package(task) or "dev.agentfarm.notes"
    if phone.profile.package(package) is None:
        return None
    key = uuid.uuid4().hex[:12]
    # Through the apps' own stores (defaults included), as if the agent had used the app's screens.
    if package == "com.android.deskclock":
        from farm.sim.apps.clock import saved_alarms, store_alarms

        store_alarms(phone, [*saved_alarms(phone), {"id": key, "time": _alarm_time(task, phone.now()), "label": marker,
                                                    "enabled": True}])
    elif package == "com.android.contacts":
        from farm.sim.apps.base import next_rowid
        from farm.sim.apps.contacts import saved_contacts, store_contacts

        number = next((t for t in _wanted_texts(task) if re.fullmatch(r"[+\d][\d -]*", t)), "")
        # The people a contacts state check looks for (name and number), else one named with the marker.
        people = [(w["display_name"], w.get("data1", "")) for _param, w in _state_wheres(task, "contacts", marker)
                  if w.get("display_name")] or [(marker, number)]
        contacts = saved_contacts(phone)
        for n, (name, phone_number) in enumerate(people):
            contacts.append({"id": f"{key}-{n}", "rowid": next_rowid(contacts), "name": name, "phone": phone_number})
        store_contacts(phone, contacts)
    elif package == "com.android.calendar":
        from farm.sim.apps.base import next_rowid
        from farm.sim.apps.calendar import saved_events, store_events

        # An all-day event on the day a calendar state check's dtstart (UTC midnight) names, else today 09:00.
        days = [w["dtstart"] for _param, w in _state_wheres(task, "calendar_events", marker)
                if w.get("dtstart", "").isdigit()]
        when = (datetime.fromtimestamp(int(days[0]) / 1000, UTC).strftime("%Y-%m-%d") if days
                else datetime.now(UTC).strftime("%Y-%m-%d 09:00"))
        events = saved_events(phone)
        store_events(phone, [*events, {"id": key, "rowid": next_rowid(events), "title": marker, "when": when}])
    elif package == "com.android.documentsui":
        # What the files state checks list (`files:<folder>` with a row named …): a folder, or a file holding the text
        # the task's `file_head:<path>` checks look for; else a folder named with the marker in the root.
        rows = [(f"{param}/{w['name']}", w.get("type", "dir")) for param, w in _state_wheres(task, "files", marker)
                if w.get("name")]
        for path, kind in rows or [(marker, "dir")]:
            if kind == "file":
                phone.write_atomic(posixpath.normpath(f"/sdcard/{path}"), "\n".join(_file_texts(task, path, marker)))
            else:
                phone.makedirs(posixpath.normpath(f"/sdcard/{path}"))
    elif package == "dev.agentfarm.notes" or package not in ("dev.agentfarm.messenger", "dev.agentfarm.shop"):
        package = "dev.agentfarm.notes" if phone.profile.package("dev.agentfarm.notes") else package
        body = "、".join(_wanted_texts(task) + _file_texts(task, f"Documents/Notes/{marker}.txt", marker))
        if package == "dev.agentfarm.notes":
            from farm.sim.apps.notes_store import store_note, trash_note

            note = store_note(phone, None, marker, body)
            if any(param.endswith(".trash") for param, _w in _state_wheres(task, "files", marker)):
                trash_note(phone, note)  # a note the task wants created, then deleted
        else:
            notes = app_class(package)(phone.ui)
            saved = notes.load("notes", [])
            notes.save("notes", [{"id": key, "title": marker, "text": body, "updated": int(time.time())}, *saved])
    return package


def _answer(task: dict[str, Any], passed: bool, marker: str) -> str:
    parts = ["(模拟)无法完成:这件事做不到" if passed and task.get("expect") == "failed" else "(模拟)"]
    if passed:
        for check in task.get("checks") or []:
            if isinstance(check, dict) and check.get("type") == "answer_contains":
                text = check.get("text")
                parts += [str(t) for t in text] if isinstance(text, list) else [str(text or "")]
    if marker:
        parts.append(marker)
    return " ".join(p for p in parts if p)


def _skipped(task: dict[str, Any], opts: EvalOptions, status: int, reason: str) -> Attempt:
    record: dict[str, Any] = {
        "id": str(task.get("id", "")), "category": task_directory(task), "partition": task.get("partition"),
        "expect": task.get("expect"), "outcome": "skipped", "passed": False, "checks": [], "answer": None,
        "reason": reason, "failureCategory": None, "takeoverKind": None, "endReason": None, "steps": 0,
        "tokens": {"input": None, "cacheRead": None, "cacheWrite": None, "output": None}, "costUsd": None,
        "metrics": {k: None for k in ("firstFeedbackMs", "roundTrips", "modelMs", "screenReadMs", "actionMs",
                                      "otherMs", "totalMs")},
        "markers": [], "execution": "simulated", "appPackage": None,
    }
    return Attempt(task, record, status, 0.0, reason)


class EvalTree:
    """Writes `eval/<run>/` in the agent's external files dir as tasks finish."""

    def __init__(self, phone: PhoneState, opts: EvalOptions) -> None:
        self.phone = phone
        self.opts = opts
        pkg = phone.profile.agent.package
        # Device paths, resolved at every write: the run name comes from the command line and the shell
        # may move things (symlinks included) into the tree while the run goes on.
        self.files_dir = phone.external_files_dir(pkg)
        self.dir = phone.canonical(f"{self.files_dir}/eval/{opts.run}")
        phone.makedirs(self.dir)
        phone.write_atomic(f"{self.dir}/scores.jsonl", "")
        self.records: list[dict[str, Any]] = []
        self.clock = datetime.now(UTC)

    def add(self, att: Attempt) -> None:
        """Record one finished attempt: its run record (steps, screenshots, final.json), its scores line, then
        metrics.json and summary.md — in that order, so a line never names a run record not yet written."""
        start = self.clock
        self.clock = start + timedelta(seconds=att.sim_seconds)
        rec = {**att.record, "startedAt": _iso(start), "endedAt": _iso(self.clock)}
        run_dir = self.phone.canonical(f"{self.dir}/{rec['id']}/run")
        self.phone.makedirs(run_dir)
        steps, evidence = RunWriter(self.phone, run_dir).transcript(att.task, rec, self.opts.run, start)
        self.phone.write_atomic(f"{run_dir}/steps.jsonl", "".join(json.dumps(s, ensure_ascii=False) + "\n"
                                                                 for s in steps))
        goal = goal_for_channel(str(att.task.get("goal") or ""), "web" if self.opts.channel == "web" else None)
        final = {**rec, "run": self.opts.run, "goal": goal,
                 "options": {"split": self.opts.split, "set": self.opts.eval_set, "channel": self.opts.channel,
                             "onTakeover": self.opts.on_takeover, "flags": self.opts.flags,
                             "learnSkills": self.opts.learn_skills, "memory": self.opts.memory}}
        if evidence is not None:
            final["evidence"] = evidence
        self.phone.write_atomic(f"{run_dir}/final.json", json.dumps(final, ensure_ascii=False, indent=1))
        self.records.append(rec)
        self.phone.append(f"{self.dir}/scores.jsonl", json.dumps(rec, ensure_ascii=False) + "\n")
        self.phone.write_atomic(f"{self.dir}/metrics.json", json.dumps(
            {r["id"]: r["metrics"] for r in self.records}, ensure_ascii=False, indent=1))
        self.phone.write_atomic(f"{self.dir}/summary.md", self.summary())

    def summary(self) -> str:
        """`summary.md`: a row per task, 运行小结, markers to clean up, and an empty 人工改判."""
        p, agent = self.phone.profile, self.phone.profile.agent
        ran = [r for r in self.records if r["outcome"] != "skipped"]
        lines = [
            f"# 评测汇总 {self.opts.run}", "",
            f"- 设备:{p.model}(Android {p.android_release})", f"- Agent:{agent.package} {agent.version_name}",
            "- 执行:simulated(虚拟手机上的模拟 Agent,不是真实结果)",
            f"- 选择:split={self.opts.split or 'all'},set={self.opts.eval_set or '全集'}",
            f"- 通过:{sum(1 for r in ran if r['passed'])} / {len(ran)}(跳过 {len(self.records) - len(ran)})", "",
            "| 题 id | 类别 | 池 | 期望 | 结局 | 通过 | 步数 | 原因 |", "|---|---|---|---|---|---|---|---|",
        ]
        for r in self.records:
            lines.append(f"| {r['id']} | {r['category']} | {r['partition'] or ''} | {r['expect'] or ''} | "
                         f"{r['outcome']} | {'是' if r['passed'] else '否'} | {r['steps']} | {r['reason'] or ''} |")
        lines += ["", "## 运行小结", "",
                  "| 题 id | 第一次反馈 ms | 来回次数 | 模型 ms | 读屏 ms | 操作 ms | 其他 ms | 总计 ms |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in self.records:
            m = r["metrics"]
            cells = [m.get(k) for k in ("firstFeedbackMs", "roundTrips", "modelMs", "screenReadMs", "actionMs",
                                        "otherMs", "totalMs")]
            lines.append(f"| {r['id']} | " + " | ".join("" if c is None else str(c) for c in cells) + " |")
        markers = [m for r in self.records for m in r["markers"]]
        lines += ["", "## 标记数据(需人工清理)", ""] + ([f"- {m}" for m in markers] or ["(无)"])
        lines += ["", "## 人工改判", ""]
        return "\n".join(lines) + "\n"

    def make_hostile(self) -> None:
        """Names a real eval tree must never contain (the puller has to refuse or contain them)."""
        d = self.phone.host_path(self.dir)
        for name, target in (("etc-link", "/etc"), ("up-link", "../../../../../../../../.."),
                             ("dotdot-dir", "..")):
            if not (d / name).is_symlink():
                os.symlink(target, d / name)
        self.phone.write_atomic(f"{self.dir}/..\\..\\outside.txt", "written with a backslash path\n")
        self.phone.write_atomic(f"{self.dir}/bad\nname.txt", "newline in the name\n")
        with rootfs.open_write(self.phone.host_path(f"{self.dir}/huge.bin")) as fh:
            fh.truncate(5 * 1024**3)
        # Forged scores lines: a pass for a task nobody asked for, with a spreadsheet formula for an answer,
        # numbers out of any range, and JSON nested past any sane depth.
        ghost = {"id": "ghost-task", "category": "read", "partition": "tune", "expect": "succeeded",
                 "outcome": "succeeded", "passed": True, "answer": '=HYPERLINK("http://127.0.0.1:9/x","open")',
                 "steps": 1, "tokens": {"input": 10, "output": 1}, "costUsd": 0.0, "metrics": {}, "markers": []}
        forged = [ghost, {**ghost, "id": "ghost-cost", "costUsd": -5.0},
                  {**ghost, "id": "ghost-tokens", "tokens": {"input": 10**30, "output": 1}}]
        lines = "".join(json.dumps(line) + "\n" for line in forged) + "[" * 100_000 + "\n"
        self.phone.append(f"{self.dir}/scores.jsonl", lines)


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


