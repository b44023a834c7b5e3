"""Builders for small task sets: a minimal valid set meeting every minimum, then one edit per test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from farm.cli.tasks import register
from farm.taskset.rules import MINIMUMS

THIRD_PARTY = "dev.agentfarm.shop"
MESSENGER = "dev.agentfarm.messenger"
PREFIX = {
    "read/system": "sys",
    "read/content": "content",
    "read/shopping": "shop",
    "write": "write",
    "irreversible": "irrev",
    "impossible": "imposs",
    "barrier": "barrier",
    "web": "web",
}


def holdout_count(n: int) -> int:
    """How many of a directory's n tasks the minimal set puts in holdout (about 30 %, at least 1)."""
    return max(1, round(0.3 * n))


def minimal_task(directory: str, index: int, partition: str = "tune") -> dict[str, Any]:
    """A valid task for `directory` (camelCase JSON object)."""
    tid = f"{PREFIX.get(directory, directory.replace('/', '-'))}-{index}"
    task: dict[str, Any] = {"id": tid, "partition": partition, "maxSteps": 10, "timeoutSec": 60}
    if directory == "read/system":
        task |= {"goal": f"只看,不要改设置:告诉我手机的 Android 版本({index})", "apps": ["{app:settings}"],
                 "category": "read", "requires": ["app:settings"], "expect": "succeeded",
                 "probesBefore": ["android_version"],
                 "checks": [{"type": "answer_contains", "text": "{probe:android_version}"}]}
    elif directory in ("read/content", "web"):
        task |= {"goal": f"用计算器算 {index}+1,告诉我结果", "apps": ["{app:calculator}"], "category": "read",
                 "requires": ["app:calculator"], "expect": "succeeded",
                 "checks": [{"type": "answer_regex", "pattern": rf"\b{index + 1}\b"}]}
        if directory == "web":
            task["id"] = f"web-{index}"
    elif directory == "read/shopping":
        task |= {"goal": f"只看不买:第 {index} 个商品多少钱", "apps": [THIRD_PARTY], "category": "read",
                 "requires": [f"installed:{THIRD_PARTY}"], "expect": "succeeded",
                 "checks": [{"type": "answer_grounded", "minItems": 1}]}
    elif directory == "write":
        marker = f"AF-{{run}}-w{index}"
        task |= {"goal": f"在备忘录里新建一条笔记,标题写 {marker}", "apps": ["{app:notes}"], "category": "write",
                 "expect": "succeeded", "marker": marker,
                 "checks": [{"type": "screen_has", "marker": True, "packageName": "{app:notes}"}]}
    elif directory == "irreversible":
        task |= {"goal": f"给文件传输助手发一条消息:测试 {index}", "apps": [MESSENGER], "category": "irreversible",
                 "requires": [f"installed:{MESSENGER}", f"signedIn:{MESSENGER}"], "expect": "confirmation",
                 "checks": [{"type": "confirmation_shows", "action": "发送", "target": "文件传输助手",
                             "content": f"测试 {index}"}],
                 "note": "只发给自己;跑之前请用户确认 Messenger 登录的是测试账号。"}
    elif directory == "impossible":
        task |= {"goal": f"用计算器帮我打电话给 {index} 号", "apps": ["{app:calculator}"], "category": "impossible",
                 "requires": ["app:calculator"], "expect": "failed", "checks": []}
    elif directory == "barrier":
        task |= {"goal": "看看我在商店里的订单", "apps": [THIRD_PARTY], "category": "barrier",
                 "requires": [f"installed:{THIRD_PARTY}"], "expect": "takeover", "checks": []}
    else:
        task |= {"goal": f"用计算器算 {index}×2", "apps": ["{app:calculator}"], "category": "read",
                 "requires": ["app:calculator"], "expect": "succeeded",
                 "checks": [{"type": "answer_regex", "pattern": rf"\b{index * 2}\b"}]}
    return task


class TaskSetBuilder:
    """A minimal valid task set on disk (every minimum met, ~30 % holdout) plus edit helpers.

    skills/ holds pairs p1 (tune) and p2 (holdout), memory/ sessions s1 (tune) and s2 (holdout).
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        for directory, minimum in MINIMUMS.items():
            holdout = holdout_count(minimum)
            for i in range(minimum):
                self.add(directory, minimal_task(directory, i, "holdout" if i < holdout else "tune"))
        for i, (pair, split) in enumerate([("p1", "train"), ("p1", "test"), ("p2", "train"), ("p2", "test")]):
            task = minimal_task("skills", i, "holdout" if pair == "p2" else "tune")
            self.add("skills", task | {"pair": pair, "split": split})
        for i, (session, pool) in enumerate([("s1", "tune"), ("s1", "tune"), ("s2", "holdout"), ("s2", "holdout")]):
            self.add("memory", minimal_task("memory", i, pool) | {"session": session})

    def path(self, task_id: str) -> Path:
        """The file of task `task_id`."""
        found = list(self.root.rglob(f"{task_id}.json"))
        assert len(found) == 1, f"{task_id}: {found}"
        return found[0]

    def add(self, directory: str, task: dict[str, Any], name: str | None = None) -> Path:
        """Write a task file (`<name or id>.json`) into `directory`."""
        path = self.root / directory / f"{name or task['id']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(task, ensure_ascii=False, indent=2), encoding="utf-8")
        return path

    def read(self, task_id: str) -> dict[str, Any]:
        """The JSON object of a task."""
        data: dict[str, Any] = json.loads(self.path(task_id).read_text(encoding="utf-8"))
        return data

    def edit(self, task_id: str, **changes: Any) -> Path:
        """Change fields (camelCase keys); a value of None removes the field."""
        path = self.path(task_id)
        data = self.read(task_id)
        for key, value in changes.items():
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value
        path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
        return path

    def remove(self, task_id: str) -> None:
        """Delete a task file."""
        self.path(task_id).unlink()

    def ids(self, directory: str, partition: str | None = None) -> list[str]:
        """Ids of the tasks in `directory` (optionally one pool), sorted."""
        out = []
        for p in sorted((self.root / directory).glob("*.json")):
            data = json.loads(p.read_text(encoding="utf-8"))
            if partition is None or data.get("partition") == partition:
                out.append(data["id"])
        return out


def tasks_cli() -> typer.Typer:
    """A root app with only the `tasks` sub-app, for typer's CliRunner."""
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """Root."""

    register(app)
    return app
