"""Hostile task files: deep nesting, huge files, not text. Each is one error naming the file, and `farm tasks check`
lists it as a violation instead of crashing."""

from __future__ import annotations

import json

import pytest

from farm.errors import FarmError
from farm.taskset.loader import MAX_TASK_DEPTH, TaskFileError, json_depth_over, load_taskset, read_task_json
from farm.taskset.rules import check_tasks, select_valid_tasks
from tests.helpers.taskset import TaskSetBuilder


@pytest.mark.parametrize("content", [b"[" * 100_000, b'{"a":' * 50_000, b'{"id": "x", "checks": ' + b"[" * 5000])
def test_deep_nesting_is_one_error_naming_the_file(taskset: TaskSetBuilder, content: bytes) -> None:
    path = taskset.root / "write" / "deep.json"
    path.write_bytes(content)
    with pytest.raises(TaskFileError) as caught:
        load_taskset(taskset.root)
    line = caught.value.line()
    assert line.startswith(f"{path}:1:") and f"nested deeper than {MAX_TASK_DEPTH} levels" in line


def test_a_deep_file_does_not_break_tasks_check(taskset: TaskSetBuilder) -> None:
    deep = taskset.root / "write" / "deep.json"
    deep.write_bytes(b"[" * 100_000)
    report = check_tasks(taskset.root)
    mine = [v for v in report.violations if v.line().startswith(str(deep))]
    assert len(mine) == 1 and "nested deeper" in mine[0].line()
    with pytest.raises(FarmError, match="deep.json"):
        select_valid_tasks(taskset.root)


def test_nesting_is_counted_outside_strings_only() -> None:
    quoted = json.dumps({"goal": "[[[[{{{{" * 100 + '"\\' * 10})
    assert json_depth_over(quoted, 2) is None
    assert json_depth_over('{"a": [[1]], "b": "]]]]]]"}', 3) is None
    assert json_depth_over('{"a": [[[1]]]}', 3) == (1, 9)
    assert json_depth_over('{\n  "a": [\n   [', 2) == (3, 4)
    # An unterminated string hides nothing after it: the file is malformed and json reports it.
    assert json_depth_over('{"a": "[[[[', 1) is None


def test_the_shipped_nesting_is_well_within_the_limit(taskset: TaskSetBuilder) -> None:
    for path in sorted(taskset.root.rglob("*.json")):
        _data, raw = read_task_json(path)
        assert isinstance(raw, dict)
        assert json_depth_over(path.read_text(encoding="utf-8"), 4) is None


@pytest.mark.parametrize(("content", "problem"), [
    (b'{"id": "' + b"x" * (300 << 10) + b'"}', "larger than 256 KiB"),
    (bytes(range(256)), "not UTF-8"),
    (b'{"id": "caf\xe9"}', "not UTF-8 (byte 11)"),
    (b"", "malformed JSON"),
])
def test_files_that_are_no_task_are_named(taskset: TaskSetBuilder, content: bytes, problem: str) -> None:
    path = taskset.root / "write" / "odd.json"
    path.write_bytes(content)
    with pytest.raises(TaskFileError) as caught:
        load_taskset(taskset.root)
    assert caught.value.line().startswith(str(path)) and problem in caught.value.line()
    assert [v for v in check_tasks(taskset.root).violations if problem in v.line()]
