"""The versioned desktop-v1 suite: ids, acceptance strings, and the guard against silent edits."""

from __future__ import annotations

import json
from pathlib import Path

from farm.desktop.tasks import SUITE, TASKS, get_task
from tests.helpers.desktop import farm, planned_batch


def test_suite_has_the_six_fixed_tasks_and_acceptance_strings() -> None:
    assert SUITE == "desktop-v1"
    assert {task.id: task.expected for task in TASKS if task.id != "textedit-type"} == {
        "calculator-add": "30244",
        "calculator-chain": "225",
        "textedit-replace": "alpha BETA gamma",
        "browser-form": "Deskhand | Team | agreed",
        "browser-delayed": "Details verified",
    }
    assert all(task.setup and task.verify and task.goal for task in TASKS)


def test_textedit_type_expects_an_english_and_a_chinese_line() -> None:
    task = get_task("textedit-type")
    assert task is not None
    english, chinese = task.expected.split("\n")
    assert english.isascii() and english in task.goal
    assert any("\u4e00" <= ch <= "\u9fff" for ch in chinese) and chinese in task.goal


def test_a_batch_planned_with_other_task_definitions_is_refused(tmp_path: Path) -> None:
    _, b0 = planned_batch(tmp_path)
    data = json.loads(b0.read_text(encoding="utf-8"))
    data["tasksSha256"] = "f" * 64
    b0.write_text(json.dumps(data), encoding="utf-8")
    outcome = farm("desktop", "report", b0)
    assert outcome.code == 2
    assert "task definitions changed since this batch was planned" in outcome.stderr


def test_tasks_command_lists_every_task() -> None:
    outcome = farm("desktop", "tasks")
    assert outcome.code == 0
    assert all(task.id in outcome.stdout for task in TASKS)
