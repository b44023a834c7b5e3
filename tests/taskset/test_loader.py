"""Loading task files: errors name file:line:col or the field path; selection by pool and set."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.errors import FarmError
from farm.taskset.loader import load_taskset, select_tasks
from farm.taskset.model import AnswerRegex, Task, goal_for_channel
from tests.helpers.taskset import TaskSetBuilder, minimal_task


def test_loaded_task_knows_its_directory_and_hash(taskset: TaskSetBuilder) -> None:
    loaded = {lt.task.id: lt for lt in load_taskset(taskset.root)}
    assert loaded["sys-0"].directory == "read/system"
    assert loaded["sys-0"].path == taskset.path("sys-0")
    assert len(loaded["sys-0"].sha256) == 64
    assert loaded["sys-0"].sha256 != loaded["sys-1"].sha256


def test_malformed_json_raises_with_line_and_column(taskset: TaskSetBuilder) -> None:
    path = taskset.root / "write" / "bad.json"
    path.write_text('{"id": "bad",\n "goal": }', encoding="utf-8")
    with pytest.raises(FarmError) as info:
        load_taskset(taskset.root)
    assert info.value.line().startswith(f"{path}:2:10: json: malformed JSON: Expecting value")


def test_wrong_type_raises_with_field_path(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("write-1", checks=[{"type": "screen_has", "marker": True, "packageName": 7}])
    with pytest.raises(FarmError) as info:
        load_taskset(taskset.root)
    assert info.value.line() == f"{path}: checks[0].packageName: Input should be a valid string, got int"


def test_top_level_must_be_an_object(taskset: TaskSetBuilder) -> None:
    path = taskset.root / "write" / "list.json"
    path.write_text("[]", encoding="utf-8")
    with pytest.raises(FarmError, match="a task file holds one JSON object"):
        load_taskset(taskset.root)
    assert path.exists()


def test_missing_directory_is_a_farm_error(tmp_path: Path) -> None:
    with pytest.raises(FarmError, match="task directory not found"):
        load_taskset(tmp_path / "nope")


def test_select_without_prefix_skips_special_sets(taskset: TaskSetBuilder) -> None:
    chosen = select_tasks(taskset.root, "all", None)
    assert chosen and not any(lt.directory in ("skills", "memory") for lt in chosen)
    assert len(chosen) == 70


def test_select_by_split(taskset: TaskSetBuilder) -> None:
    holdout = select_tasks(taskset.root, "holdout", None)
    assert holdout and all(lt.task.partition == "holdout" for lt in holdout)
    tune = select_tasks(taskset.root, "tune", None)
    assert len(tune) + len(holdout) == 70


def test_select_by_directory_or_id_prefix(taskset: TaskSetBuilder) -> None:
    assert {lt.directory for lt in select_tasks(taskset.root, "all", "read")} == {
        "read/system", "read/content", "read/shopping"}
    assert [lt.task.id for lt in select_tasks(taskset.root, "all", "read/system/")][:1] == ["sys-0"]
    assert {lt.directory for lt in select_tasks(taskset.root, "all", "skills")} == {"skills"}
    assert {lt.task.id for lt in select_tasks(taskset.root, "all", "barrier-")} == {"barrier-0", "barrier-1"}


def test_task_round_trips_camel_case() -> None:
    raw = minimal_task("write", 3) | {"probesBefore": ["date"], "acceptTakeoverOn": []}
    task = Task.model_validate(raw)
    assert task.max_steps == 10 and task.accept_takeover_on == []
    assert Task.model_validate(task.model_dump(by_alias=True)) == task
    assert Task(id="x", goal="g", category="read", expect="succeeded", max_steps=3).max_steps == 3


def test_answer_regex_with_probe_placeholder_compiles() -> None:
    check = AnswerRegex(pattern=r"^{probe:android_version}\b")
    assert check.pattern.startswith("^{probe:")


def test_requires_prefix_is_validated() -> None:
    with pytest.raises(ValueError, match="must be one of installed:<name>"):
        Task.model_validate(minimal_task("read/shopping", 1) | {"requires": ["com.taobao.taobao"]})


def test_goal_for_channel_prefixes_web_once() -> None:
    assert goal_for_channel("查一下长城有多长", "web") == "用网页查一下长城有多长"
    assert goal_for_channel("用网页查一下长城有多长", "web") == "用网页查一下长城有多长"
    assert goal_for_channel("查一下长城有多长", "app") == "查一下长城有多长"
    assert goal_for_channel("查一下长城有多长", None) == "查一下长城有多长"
