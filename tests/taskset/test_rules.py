"""Every task-set rule: a set violating exactly that rule gives exactly that line and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from farm.errors import FarmError
from farm.taskset.rules import check_tasks, holdout_bounds, require_valid
from tests.helpers.taskset import MESSENGER, THIRD_PARTY, TaskSetBuilder, minimal_task, tasks_cli


def violation_lines(root: Path) -> tuple[int, list[str]]:
    """Exit code of `farm tasks check root` and the violation lines it printed (before the table)."""
    result = CliRunner().invoke(tasks_cli(), ["tasks", "check", str(root)])
    lines = []
    for line in result.output.splitlines():
        if line.strip() == "task set":
            break
        lines.append(line)
    return result.exit_code, lines


def assert_only(b: TaskSetBuilder, code: str, line: str) -> None:
    report = check_tasks(b.root)
    assert [(v.code, v.line()) for v in report.violations] == [(code, line)]
    exit_code, lines = violation_lines(b.root)
    assert (exit_code, lines) == (2, [line])


def test_minimal_set_is_clean(taskset: TaskSetBuilder) -> None:
    assert check_tasks(taskset.root).violations == []
    exit_code, lines = violation_lines(taskset.root)
    assert (exit_code, lines) == (0, [])


def test_malformed_json_reports_line_and_column(taskset: TaskSetBuilder) -> None:
    path = taskset.root / "read/system/broken.json"
    path.write_text('{\n  "id": "broken",\n  "goal": "x",,\n}\n', encoding="utf-8")
    assert_only(taskset, "parse", f"{path}:3:15: json: malformed JSON: Expecting property name enclosed in "
                f"double quotes — fix the JSON syntax")


def test_wrong_type_reports_field_path(taskset: TaskSetBuilder) -> None:
    path = taskset.add("read/content", minimal_task("read/content", 99) | {
        "checks": [{"type": "answer_grounded", "minItems": "two"}]})
    assert_only(taskset, "parse", f"{path}: checks[0].minItems: Input should be a valid integer, unable to parse "
                "string as an integer — fix the value")


def test_unknown_field_is_rejected(taskset: TaskSetBuilder) -> None:
    path = taskset.add("read/content", minimal_task("read/content", 99) | {"maxStep": 3})
    assert_only(taskset, "parse", f"{path}: maxStep: unknown field — remove it or fix its spelling "
                "(fields are camelCase, see seed 003)")


def test_unknown_check_type_is_rejected(taskset: TaskSetBuilder) -> None:
    path = taskset.add("read/content", minimal_task("read/content", 99) | {"checks": [{"type": "answer_is"}]})
    report = check_tasks(taskset.root)
    assert [(v.path, v.field, v.code) for v in report.violations] == [(str(path), "checks[0]", "parse")]
    assert "answer_contains, answer_regex" in report.violations[0].fix


def test_regex_that_does_not_compile_is_rejected(taskset: TaskSetBuilder) -> None:
    path = taskset.add("read/content", minimal_task("read/content", 99) | {
        "checks": [{"type": "answer_regex", "pattern": "56(088"}]})
    assert_only(taskset, "parse", f"{path}: checks[0].pattern: pattern does not compile: missing ), unterminated "
                "subpattern at position 2 — fix the value")


def test_marker_without_run_is_rejected(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("write-5", marker="AF-note", goal="新建笔记 AF-note")
    assert_only(taskset, "parse", f"{path}: marker: marker must contain {{run}} so each run's data is distinct "
                "— fix the value")


def test_malformed_placeholder_is_rejected(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("content-5", apps=["{app:Calculator}"])
    assert_only(taskset, "parse", f"{path}: apps: malformed placeholder '{{app:Calculator}}': use "
                "{app:<capability>} or {probe:<name>[:<param>]} — fix the value")


def test_id_must_equal_file_name(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("content-5", id="content-55")
    assert_only(taskset, "id-file", f"{path}: id: id 'content-55' differs from the file name 'content-5' — "
                "rename the file to content-55.json or set id to 'content-5'")


def test_ids_are_unique(taskset: TaskSetBuilder) -> None:
    first = taskset.path("content-5")
    second = taskset.add("read/content/more", minimal_task("read/content", 5, "tune"))
    assert_only(taskset, "id-unique", f"{second}: id: id 'content-5' is also used by {first} — "
                "give every task its own id")


def test_task_outside_known_directories(taskset: TaskSetBuilder) -> None:
    path = taskset.add("misc", minimal_task("misc", 1))
    assert_only(taskset, "directory", f"{path}: directory: 'misc' is not a task-set directory — move it under one "
                "of read/system, read/content, read/shopping, write, irreversible, impossible, barrier, web, "
                "skills, memory")


def test_directory_minimum(taskset: TaskSetBuilder) -> None:
    taskset.remove(taskset.ids("barrier", "tune")[0])
    assert_only(taskset, "minimum", f"{taskset.root / 'barrier'}: tasks: barrier has 1 tasks, minimum 2 — "
                "add 1 more task(s)")


def test_every_task_has_a_partition(taskset: TaskSetBuilder) -> None:
    path = taskset.edit(taskset.ids("read/content", "tune")[0], partition=None)
    assert_only(taskset, "partition", f"{path}: partition: task has no partition — add \"partition\": \"tune\" "
                "or \"holdout\" (keep about 30 % of the directory in holdout)")


def test_every_directory_has_holdout(taskset: TaskSetBuilder) -> None:
    for tid in taskset.ids("read/system", "holdout"):
        taskset.edit(tid, partition="tune")
    assert_only(taskset, "holdout-share", f"{taskset.root / 'read/system'}: partition: read/system has 0 of 10 "
                "tasks in holdout (allowed 2–4) — move tasks between tune and holdout to keep about 30 % in holdout")


def test_holdout_share_above_tolerance(taskset: TaskSetBuilder) -> None:
    for tid in taskset.ids("read/content", "tune")[:4]:
        taskset.edit(tid, partition="holdout")
    assert_only(taskset, "holdout-share", f"{taskset.root / 'read/content'}: partition: read/content has 8 of 15 "
                "tasks in holdout (allowed 3–6) — move tasks between tune and holdout to keep about 30 % in holdout")


def test_holdout_bounds_are_about_thirty_percent() -> None:
    assert [holdout_bounds(n) for n in (1, 2, 5, 8, 10, 15, 30)] == [
        (1, 1), (1, 1), (1, 2), (1, 4), (2, 4), (3, 6), (6, 12)]


def test_pair_shares_one_pool(taskset: TaskSetBuilder) -> None:
    taskset.edit("skills-1", partition="holdout")
    assert_only(taskset, "pool-group", f"{taskset.path('skills-0')}: partition: pair 'p1' spans pools (holdout: "
                "skills-1; tune: skills-0) — put every task of pair 'p1' in one pool")


def test_memory_session_shares_one_pool(taskset: TaskSetBuilder) -> None:
    taskset.edit("memory-1", partition="holdout")
    assert_only(taskset, "pool-group", f"{taskset.path('memory-0')}: partition: memory session 's1' spans pools "
                "(holdout: memory-1; tune: memory-0) — put every task of memory session 's1' in one pool")


def test_pair_has_train_and_test(taskset: TaskSetBuilder) -> None:
    taskset.edit("skills-1", split="train")
    assert_only(taskset, "pair-split", f"{taskset.path('skills-0')}: split: pair 'p1' needs a train and a test "
                "task (has train, train) — set \"split\": \"train\" on the learning task and \"test\" on the other")


def test_category_matches_directory(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("sys-5", category="impossible")
    assert_only(taskset, "category-directory", f"{path}: category: category 'impossible' in read/system/ — "
                "set \"category\": \"read\" or move the task")


def test_expect_matches_directory(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("imposs-3", expect="succeeded")
    assert_only(taskset, "expect-directory", f"{path}: expect: expect 'succeeded' in impossible/ — "
                "set \"expect\": \"failed\" or move the task")


def test_write_task_needs_marker(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("write-5", marker=None, checks=[{"type": "screen_has", "text": "买牛奶",
                                                         "packageName": "{app:notes}"}])
    assert_only(taskset, "write-marker", f"{path}: marker: write task has no marker — add \"marker\": "
                "\"AF-{run}-<what>\", name it in the goal and find it with screen_has")


def test_write_goal_names_the_marker(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("write-5", goal="在备忘录里新建一条笔记")
    assert_only(taskset, "marker-in-goal", f"{path}: goal: goal does not name the marker 'AF-{{run}}-w5' — "
                "write the marker into the goal so the created data carries it")


def test_write_checks_find_the_marker(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("write-5", checks=[{"type": "answer_grounded"}])
    assert_only(taskset, "marker-checked", f"{path}: checks: no screen_has/probe_has check finds the marker — "
                "add {\"type\": \"screen_has\", \"marker\": true, \"packageName\": \"{app:<capability>}\"}")


def test_probe_has_can_find_the_marker(taskset: TaskSetBuilder) -> None:
    taskset.edit("write-5", checks=[{"type": "probe_has", "probe": "storage_root", "marker": True}])
    assert check_tasks(taskset.root).violations == []


def test_irreversible_web_task_expects_confirmation(taskset: TaskSetBuilder) -> None:
    task = minimal_task("irreversible", 1) | {"id": "web-send", "expect": "succeeded"}
    path = taskset.add("web", task)
    assert_only(taskset, "irreversible-expect", f"{path}: expect: irreversible task expects 'succeeded' — "
                "set \"expect\": \"confirmation\" (stop at the confirmation card)")


def test_irreversible_checks_the_card(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("irrev-4", checks=[{"type": "answer_grounded"}])
    assert_only(taskset, "irreversible-card", f"{path}: checks: irreversible task does not check the "
                "confirmation card — add {\"type\": \"confirmation_shows\", \"action\": …, \"target\": …, "
                "\"content\"/\"amount\": …}")


def test_irreversible_third_party_task_requires_signed_in(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("irrev-2", requires=[f"installed:{MESSENGER}"])
    assert_only(taskset, "irreversible-signed-in", f"{path}: requires: irreversible task in {MESSENGER} does not "
                f"require signedIn:{MESSENGER} — add \"signedIn:{MESSENGER}\" and say in note what the user must "
                "confirm before it runs")


def test_barrier_task_does_not_declare_signed_in(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("barrier-0", requires=[f"installed:{THIRD_PARTY}", f"signedIn:{THIRD_PARTY}"])
    assert_only(taskset, "barrier-signed-in", f"{path}: requires: barrier task declares 'signedIn:{THIRD_PARTY}' — "
                "drop it: a task that declares the user signed in cannot expect a login barrier")


def test_asking_task_carries_answers(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("content-7", checks=[{"type": "asked_user"}])
    assert_only(taskset, "answers", f"{path}: answers: task expects the agent to ask but has no answers — "
                "add \"answers\": {\"<word in the question>\": \"<reply>\"}")


def test_not_asking_task_needs_no_answers(taskset: TaskSetBuilder) -> None:
    taskset.edit("content-7", checks=[{"type": "asked_user", "expected": False}])
    assert check_tasks(taskset.root).violations == []


def test_goal_without_local_path(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("content-7", goal="打开 /sdcard/Download/a.txt 告诉我第一行")
    assert_only(taskset, "local-path", f"{path}: goal: goal contains a local path ('/sdcard') — say it as a "
                "person would (内部存储 / 下载 folder), check with a probe instead")


def test_windows_and_home_paths_are_local(taskset: TaskSetBuilder) -> None:
    for i, goal in enumerate([r"打开 C:\Users\me\a.txt", "看 /home/me/x", "看 /Users/me/x", "看 /storage/emulated/0"]):
        taskset.edit(f"content-{i}", goal=goal)
    assert [v.code for v in check_tasks(taskset.root).violations] == ["local-path"] * 4


def test_third_party_app_is_installed_requirement(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("shop-4", requires=[])
    assert_only(taskset, "installed", f"{path}: requires: third-party app {THIRD_PARTY} is not in requires — "
                f"add \"installed:{THIRD_PARTY}\"")


def test_screen_has_package_is_installed_requirement(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("write-5", checks=[{"type": "screen_has", "marker": True, "packageName": MESSENGER}])
    assert_only(taskset, "installed", f"{path}: requires: third-party app {MESSENGER} is not in requires — "
                f"add \"installed:{MESSENGER}\"")


def test_guaranteed_capability_is_required(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("content-3", requires=[])
    assert_only(taskset, "app-required", f"{path}: requires: {{app:calculator}} is used but app:calculator is not "
                "required — add \"app:calculator\" (phones without it skip the task)")


def test_capability_alias_satisfies_requirement(taskset: TaskSetBuilder) -> None:
    taskset.edit("content-3", apps=["{app:alarm}"], requires=["app:clock"])
    assert check_tasks(taskset.root).violations == []


def test_unknown_capability(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("write-5", checks=[{"type": "screen_has", "marker": True, "packageName": "{app:diary}"}])
    line = check_tasks(taskset.root).violations[0].line()
    assert line.startswith(f"{path}: checks[0].packageName: unknown capability {{app:diary}} — use one of ")
    assert_only(taskset, "capability", line)


def test_unknown_probe(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("sys-5", probesBefore=["android_versoin"],
                        checks=[{"type": "answer_grounded"}])
    line = check_tasks(taskset.root).violations[0].line()
    assert line.startswith(f"{path}: probesBefore[0]: unknown probe 'android_versoin' — use one of ")
    assert_only(taskset, "probe", line)


def test_parameterised_probe_needs_a_parameter(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("sys-5", probesBefore=["package_version"], checks=[{"type": "answer_grounded"}])
    assert_only(taskset, "probe", f"{path}: probesBefore[0]: probe package_version needs a parameter "
                "({probe:package_version:<param>}) — write it as package_version:<param>")


def test_probe_in_check_is_listed_in_probes_before(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("sys-5", probesBefore=[])
    assert_only(taskset, "probe-before", f"{path}: checks[0].text: {{probe:android_version}} is not listed in "
                "probesBefore — add \"android_version\" to probesBefore")


def test_web_ids_start_with_web(taskset: TaskSetBuilder) -> None:
    path = taskset.add("web", minimal_task("read/content", 40))
    assert_only(taskset, "web-id", f"{path}: id: web task id 'content-40' does not start with 'web-' — "
                "rename to web-content-40 (file and id)")


def test_check_without_dir_uses_repo_tasks() -> None:
    result = CliRunner().invoke(tasks_cli(), ["tasks", "check"])
    assert result.exit_code == 0, result.output
    assert "read/system" in result.output


def test_require_valid_returns_tasks_of_a_clean_set(taskset: TaskSetBuilder) -> None:
    assert len(require_valid(taskset.root)) == 76


def test_require_valid_names_the_first_violation(taskset: TaskSetBuilder) -> None:
    path = taskset.edit("content-7", goal="看 /sdcard/a.txt")
    taskset.edit("content-8", goal="看 /sdcard/b.txt")
    with pytest.raises(FarmError) as info:
        require_valid(taskset.root)
    assert info.value.line().startswith(f"{path}: goal: goal contains a local path ('/sdcard') (+1 more) — ")
