"""Output written to a pipe stays whole: no table cut at 80 columns, no `…` in place of an id."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers.cli import farm, farm_on_terminal
from tests.helpers.records import SMALL_TASKS, record, write_run, write_tasks

LONG_ID = "calc-" + "x" * 110 + "-long"
"""A 120-character task id."""


def _long_task() -> tuple[str, dict[str, Any]]:
    directory, task = SMALL_TASKS[1]
    return directory, {**task, "id": LONG_ID}


def test_tasks_list_piped_keeps_a_120_character_id_whole(tmp_path: Path) -> None:
    assert len(LONG_ID) == 120
    write_tasks(tmp_path / "t", [*SMALL_TASKS, _long_task()])
    proc = farm(tmp_path, "tasks", "list", "--tasks-dir", "t", COLUMNS="40")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split("\t") == ["id", "directory", "partition", "expect", "requires"]
    rows = [line.split("\t") for line in lines[1:]]
    assert [LONG_ID, "read/content", "tune", "succeeded", "app:calculator"] in rows
    assert len(rows) == len(SMALL_TASKS) + 1
    assert "…" not in proc.stdout and "│" not in proc.stdout


def test_query_table_piped_keeps_long_values_whole_one_row_per_line(tmp_path: Path) -> None:
    answer = "the answer is " + "long " * 60 + "\tand\nsplit"
    write_run(tmp_path / "runs", "r1", [record(LONG_ID, run="r1", answer=answer), record("b", run="r1")])
    proc = farm(tmp_path, "query", "select task_id, answer from records order by task_id desc", COLUMNS="40")
    assert proc.returncode == 0, proc.stderr
    escaped = answer.replace("\t", "\\t").replace("\n", "\\n")
    assert proc.stdout.splitlines() == ["task_id\tanswer", f"{LONG_ID}\t{escaped}", "b\t"]


def test_task_check_table_piped_is_tab_separated(tmp_path: Path) -> None:
    write_tasks(tmp_path / "t")
    proc = farm(tmp_path, "tasks", "check", "--tasks-dir", "t")
    # The small set is below the directory minimums: the violations, then the table, then the verdict.
    assert proc.returncode == 2
    header = next(line for line in proc.stdout.splitlines() if line.startswith("directory\t"))
    assert header.split("\t") == ["directory", "count", "tune", "holdout", "holdout allowed", "minimum"]
    assert "read/system\t2\t1\t1\t" in proc.stdout


def test_at_a_terminal_a_long_id_is_folded_never_elided(tmp_path: Path) -> None:
    write_tasks(tmp_path / "t", [*SMALL_TASKS, _long_task()])
    code, shown, _out, _err = farm_on_terminal(tmp_path, "tasks", "list", "--tasks-dir", "t", columns=60)
    assert code == 0, shown
    assert "…" not in shown and "task(s)" in shown
    # Folded over lines inside its cell: every piece of the id is there, in order.
    pieces = [line.split("│")[1].strip() for line in shown.splitlines() if line.count("│") > 2]
    assert LONG_ID in "".join(p for p in pieces if p and set(p) <= set(LONG_ID))
