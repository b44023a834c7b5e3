"""`farm tasks` commands through the console script and typer's runner."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from farm.taskset.loader import load_taskset
from tests.helpers.taskset import TaskSetBuilder, tasks_cli

FARM = Path(sys.executable).with_name("farm")
REPO = Path(__file__).resolve().parents[2]


def test_shipped_task_set_passes() -> None:
    proc = subprocess.run([str(FARM), "tasks", "check", "tasks/"], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ok: " in proc.stdout


def test_shipped_tasks_explain_themselves() -> None:
    tasks = load_taskset(REPO / "tasks")
    assert len(tasks) >= 90
    assert [lt.task.id for lt in tasks if not (lt.task.note or "").strip()] == []


def test_console_script_exit_2_on_violation(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("sys-3", id="sys-33")
    proc = subprocess.run([str(FARM), "tasks", "check", str(taskset.root)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert proc.stdout.splitlines()[0] == (f"{path}: id: id 'sys-33' differs from the file name 'sys-3' — "
                                           "rename the file to sys-33.json or set id to 'sys-3'")
    assert "Traceback" not in proc.stderr


def test_console_script_lists_every_new_rule(taskset: TaskSetBuilder) -> None:
    card = taskset.edit("irrev-3", checks=[{"type": "confirmation_shows", "action": "发送", "target": "张三",
                                            "content": "测试 3"}])
    builtin = taskset.edit("content-5", apps=["com.android.calculator2"])
    local = taskset.edit("content-6", note="答案在 /sdcard/a.txt")
    account = taskset.edit("irrev-4", note=None)
    pair = taskset.add("skills", {**taskset.read("skills-0"), "id": "skills-9", "pair": None, "split": None})
    proc = subprocess.run([str(FARM), "tasks", "check", str(taskset.root)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(str(taskset.root))]
    assert sorted(ln.split(" — ")[0] for ln in lines) == sorted([
        f"{builtin}: apps[0]: com.android.calculator2 is the phone's own calculator app written as a package",
        f"{local}: note: note contains a local path ('/sdcard')",
        f"{account}: note: task requires 'signedIn:dev.agentfarm.messenger' but has no note",
        f"{card}: checks[0].target: '发送' goes to '张三', not to the user",
        f"{pair}: pair: task in skills/ has no pair",
    ])


def test_missing_directory_is_one_line(tmp_path: Path) -> None:
    proc = subprocess.run([str(FARM), "tasks", "check", str(tmp_path / "none")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith(f"error: {tmp_path / 'none'}: task directory not found")
    assert "Traceback" not in proc.stderr


def test_list_filters_by_split_and_set(taskset: TaskSetBuilder) -> None:
    result = CliRunner().invoke(tasks_cli(), ["tasks", "list", "--dir", str(taskset.root), "--split", "holdout",
                                              "--set", "read/system"])
    assert result.exit_code == 0, result.output
    header, *rows = result.output.splitlines()  # not a terminal: tab-separated, one line per task
    assert header.split("\t")[0] == "id"
    assert [row.split("\t")[0] for row in rows] == taskset.ids("read/system", "holdout")


def test_list_refuses_unknown_split(taskset: TaskSetBuilder) -> None:
    proc = subprocess.run([str(FARM), "tasks", "list", "--dir", str(taskset.root), "--split", "train"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "--split: 'train' is not a pool" in proc.stderr


def test_show_prints_json_and_path(taskset: TaskSetBuilder) -> None:
    result = CliRunner().invoke(tasks_cli(), ["tasks", "show", "write-2", "--dir", str(taskset.root)])
    assert result.exit_code == 0, result.output
    first, _, body = result.output.partition("\n")
    assert first == f"# {taskset.path('write-2')}"
    data = json.loads(body)
    assert data["marker"] == "AF-{run}-w2" and data["checks"][0]["packageName"] == "{app:notes}"
