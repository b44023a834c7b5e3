"""records.jsonl: append-only, a torn last line reported and skipped, duplicates recognised by attempt key."""

from pathlib import Path

import pytest

from farm.errors import FarmError
from farm.results.store import ReadProblems, append_records, new_records, read_records
from tests.helpers.records import record


def test_torn_last_line_is_reported_and_skipped(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    append_records(path, [record("t1"), record("t2")])
    with path.open("a", encoding="utf-8") as fh:
        fh.write('{"run": "run-a", "lane": "andr')
    problems = ReadProblems()
    assert [r.task_id for r in read_records(path, problems)] == ["t1", "t2"]
    assert problems.torn == [f"{path}:3: torn last line (a crash mid-append), skipped"]


def test_corrupt_line_in_the_middle_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    append_records(path, [record("t1")])
    with path.open("a", encoding="utf-8") as fh:
        fh.write("not json\n")
    append_records(path, [record("t2")])
    with pytest.raises(FarmError, match=r"records.jsonl:2: corrupt record"):
        read_records(path)


def test_append_after_a_torn_line_keeps_the_new_records_whole(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text('{"run": "x"', encoding="utf-8")
    assert append_records(path, [record("t1")]) == 1
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == '{"run": "x"' and '"task_id":"t1"' in lines[1]


def test_new_records_leaves_out_attempts_already_written(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    append_records(path, [record("t1"), record("t2")])
    fresh, dropped = new_records(path, [record("t1"), record("t3"), record("t3"), record("t1", attempt=2)])
    assert [(r.task_id, r.attempt) for r in fresh] == [("t3", 1), ("t1", 2)]
    assert dropped == 2


def test_units_differ_by_instance_and_repeat() -> None:
    a, b, c = record("t1"), record("t1").model_copy(update={"instance": "7"}), record("t1").model_copy(
        update={"repeat": 2})
    assert len({a.unit_key(), b.unit_key(), c.unit_key()}) == 3


def test_a_collecting_reader_skips_and_lists_a_corrupt_middle_line(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text('{"run": "x"', encoding="utf-8")
    append_records(path, [record("t1")])
    problems = ReadProblems()
    assert [r.task_id for r in read_records(path, problems)] == ["t1"]
    assert problems.corrupt == [f"{path}:1: corrupt record line skipped"] and not problems.torn
