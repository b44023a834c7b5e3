"""A task that expects `succeeded` or `confirmation` has a check that can fail; otherwise any answer passes.
`farm tasks check` names the file and the rule, and `farm run` / `farm sweep` refuse such a task in their
selection like any other invalid task. Set-wide violations do not refuse a small set, but are named."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from farm.taskset.rules import InvalidTaskSet, check_tasks, select_valid_tasks
from farm.taskset.select import TaskSelection
from tests.helpers.cli import farm
from tests.helpers.phones import FarmFactory
from tests.helpers.records import write_tasks
from tests.helpers.sweep import scripted_tasks
from tests.helpers.taskset import TaskSetBuilder, minimal_task
from tests.taskset.test_rules import assert_only

READ_FIX = ('add {"type": "answer_contains", "text": …} or {"type": "answer_regex", "pattern": …} for a fixed '
            'answer, {"type": "answer_grounded", "minItems": N} for one that varies')


def test_a_read_task_without_checks_is_refused_by_tasks_check(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("content-7", checks=[])
    assert_only(taskset, "can-fail", f"{path}: checks: expect 'succeeded' with no checks: any answer passes — "
                f"{READ_FIX}")


def test_a_read_task_without_checks_is_refused_by_run_selection(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("content-7", checks=[])
    selection = TaskSelection(sets=["read/content"])
    with pytest.raises(InvalidTaskSet) as info:
        select_valid_tasks(taskset.root, "all", whole_set=False, selection=selection)
    assert [v.code for v in info.value.violations] == ["can-fail"]
    assert str(path) in info.value.line() and "any answer passes" in info.value.line()


@pytest.mark.parametrize("pattern", [".*", ".", r"\d*", "^", "|", "x?", "(?s)."])
def test_a_task_whose_only_check_matches_every_answer_is_refused(taskset: TaskSetBuilder, pattern: str) -> None:
    path = taskset.edit("content-7", checks=[{"type": "answer_regex", "pattern": pattern}])
    assert_only(taskset, "can-fail", f"{path}: checks: expect 'succeeded' but no check can fail (checks[0] "
                f"answer_regex matches every answer): any answer passes — {READ_FIX}")


def test_asking_is_no_check_of_the_result(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("content-7", checks=[{"type": "asked_user", "expected": False}])
    assert_only(taskset, "can-fail", f"{path}: checks: expect 'succeeded' but no check can fail (checks[0] "
                f"asked_user does not check the result): any answer passes — {READ_FIX}")


def test_an_always_passing_pattern_beside_real_checks_is_named(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("content-7", checks=[{"type": "answer_regex", "pattern": r"\b8\b"},
                                             {"type": "answer_regex", "pattern": ".*"}])
    assert_only(taskset, "always-passes", f"{path}: checks[1].pattern: answer_regex '.*' matches every answer, so "
                "this check never fails — write the pattern of the expected answer, or drop the check")


def test_a_probe_placeholder_pattern_can_fail(taskset: TaskSetBuilder) -> None:
    # `{probe:…}` alone is a value the phone fills in: it can be missing from the answer.
    taskset.edit("content-7", probesBefore=["android_version"],
                 checks=[{"type": "answer_regex", "pattern": "{probe:android_version}"}])
    assert check_tasks(taskset.root).violations == []


def test_impossible_and_barrier_tasks_need_no_check(taskset: TaskSetBuilder) -> None:
    # Seed 003: `failed` passes only when the agent says the task cannot be done; `takeover` is judged from the
    # hand-over. Neither needs a check (the builder's impossible/ and barrier/ tasks have `"checks": []`).
    assert check_tasks(taskset.root).violations == []
    assert all(not lt.task.checks for lt in check_tasks(taskset.root).tasks
               if lt.task.category in ("impossible", "barrier"))


def test_write_and_irreversible_tasks_keep_their_own_rule(taskset: TaskSetBuilder) -> None:
    write = taskset.edit("write-3", checks=[])
    card = taskset.edit("irrev-3", checks=[])
    codes = sorted((v.path, v.code) for v in check_tasks(taskset.root).violations)
    assert codes == [(str(card), "irreversible-card"), (str(write), "marker-checked")]


def test_a_confirmation_task_outside_irreversible_needs_the_card_check(taskset: TaskSetBuilder) -> None:
    task = minimal_task("web", 40) | {"expect": "confirmation", "checks": [{"type": "asked_user"}],
                                      "answers": {"哪个": "第一个"}}
    path = taskset.add("web", task)
    assert_only(taskset, "can-fail", f"{path}: checks: expect 'confirmation' but no check can fail (checks[0] "
                "asked_user does not check the result): any answer passes — add {\"type\": \"confirmation_shows\", "
                "\"action\": …, \"target\": …, \"content\"/\"amount\": …}")


def test_the_shipped_task_set_passes() -> None:
    root = Path(__file__).resolve().parents[2] / "tasks"
    assert [v.line() for v in check_tasks(root).violations] == []


def test_set_wide_note_names_what_a_small_set_breaks(tmp_path: Path) -> None:
    from farm.taskset.rules import set_wide_note

    root = write_tasks(tmp_path / "t")
    note = set_wide_note(root)
    assert note is not None and "\n" not in note
    assert note.startswith(f"task set {root}: 12 set-wide violation(s) (farm tasks check {root} lists them): "
                           "read/system has 2 tasks, minimum 10; ")
    assert note.endswith(" (+7 more)")
    assert set_wide_note(Path(__file__).resolve().parents[2] / "tasks") is None


def test_a_run_of_a_small_set_names_its_set_wide_violations(virtual_farm: FarmFactory, tmp_path: Path) -> None:
    from farm import manifest as mf

    (phone,) = virtual_farm(1)
    scripted_tasks(tmp_path / "tasks", ("read/system/calculator-multiply",))
    # Named: a phone an earlier test stopped may still be listed by the adb server for a moment.
    proc = farm(tmp_path, "run", "--executor", "host", "--policy", "scripted", "--split", "all", "--run", "small",
                "--device", phone.serial, "--quiet", timeout=300,
                ANDROID_ADB_SERVER_PORT=os.environ["ANDROID_ADB_SERVER_PORT"],
                ADBUTILS_ADB_PATH=os.environ.get("ADBUTILS_ADB_PATH", "/usr/bin/adb"))
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("warning: task set ")]
    assert len(lines) == 1 and "set-wide violation(s)" in lines[0]
    note = lines[0].removeprefix("warning: ")
    assert note.startswith("task set tasks: 9 set-wide violation(s) (farm tasks check tasks lists them): ")
    assert note in mf.load(tmp_path / "runs" / "small").notes
    assert note in (tmp_path / "runs" / "small" / "report.md").read_text(encoding="utf-8")
