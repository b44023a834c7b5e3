"""Backfill: extend a finished 3-task run to 6 tasks, running only the missing ones."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from farm.errors import FarmError
from tests.helpers.webvoyager import build_run, make_manifest, make_task, make_tasks, make_view, tree_digest
from web_bench.webvoyager import backfill, revisions
from web_bench.webvoyager.run_tree import RunTree, read_manifest, read_manifest_file, write_manifest

OLD = ["Allrecipes--0", "Amazon--0", "Apple--0"]
TARGET = ["Allrecipes--0", "Allrecipes--1", "Amazon--0", "Amazon--1", "Apple--0", "Apple--1"]
NEW = ["Allrecipes--1", "Amazon--1", "Apple--1"]
SMALLER = ["Allrecipes--0", "Allrecipes--1", "Amazon--0", "Apple--0"]


@pytest.fixture
def old_run(tmp_path: Path) -> RunTree:
    return build_run(tmp_path / "run", make_tasks(OLD))


def test_audit_keeps_the_old_tasks_and_queues_the_missing_ones_in_target_order(old_run: RunTree) -> None:
    plan = backfill.audit(old_run.root, make_tasks(TARGET))
    assert plan.protected_task_ids == OLD
    assert plan.missing_task_ids == NEW
    assert plan.pending == NEW


def test_audit_changes_nothing(old_run: RunTree) -> None:
    before = tree_digest(old_run.root)
    backfill.audit(old_run.root, make_tasks(TARGET))
    assert tree_digest(old_run.root) == before


def test_an_old_task_missing_from_the_target_is_refused(old_run: RunTree) -> None:
    target = [i for i in TARGET if i != "Amazon--0"]
    with pytest.raises(FarmError, match="manifest.json: task Amazon--0 of the old run is not in the target"):
        backfill.audit(old_run.root, make_tasks(target))


def test_a_reordered_target_is_refused(old_run: RunTree) -> None:
    target = ["Allrecipes--0", "Apple--0", "Amazon--0", "Allrecipes--1"]
    with pytest.raises(FarmError, match="task Apple--0 comes before .*reordered"):
        backfill.audit(old_run.root, make_tasks(target))


def test_a_changed_task_text_is_refused(old_run: RunTree) -> None:
    target = make_tasks(TARGET)
    target[2] = make_task("Amazon--0", text="A different question.")
    with pytest.raises(FarmError, match="task Amazon--0 has other content"):
        backfill.audit(old_run.root, target)


def test_a_target_naming_a_task_twice_is_refused(old_run: RunTree) -> None:
    with pytest.raises(FarmError, match="twice"):
        backfill.audit(old_run.root, make_tasks([*TARGET, "Apple--1"]))


def test_a_missing_session_is_refused_naming_task_and_file(old_run: RunTree) -> None:
    (old_run.task_dir("Amazon--0") / "session.json").unlink()
    with pytest.raises(FarmError, match="Amazon--0/session.json: missing for protected task Amazon--0"):
        backfill.audit(old_run.root, make_tasks(TARGET))


@pytest.mark.parametrize("content", ["", "  \n", "{}", "null", '{"events": ['])
def test_an_empty_or_unparseable_session_is_refused(old_run: RunTree, content: str) -> None:
    (old_run.task_dir("Apple--0") / "session.json").write_text(content)
    with pytest.raises(FarmError, match="Apple--0/session.json: .*protected task Apple--0"):
        backfill.audit(old_run.root, make_tasks(TARGET))


def test_an_empty_trace_is_refused(old_run: RunTree) -> None:
    (old_run.task_dir("Allrecipes--0") / "trace.ndjson").write_text("")
    with pytest.raises(FarmError, match="Allrecipes--0/trace.ndjson: empty for protected task Allrecipes--0"):
        backfill.audit(old_run.root, make_tasks(TARGET))


def test_a_trace_with_a_torn_line_is_refused(old_run: RunTree) -> None:
    with (old_run.task_dir("Apple--0") / "trace.ndjson").open("a") as handle:
        handle.write('{"event": "req')
    with pytest.raises(FarmError, match="Apple--0/trace.ndjson:3: not valid JSON"):
        backfill.audit(old_run.root, make_tasks(TARGET))


def test_a_missing_result_is_refused(old_run: RunTree) -> None:
    (old_run.task_dir("Apple--0") / "result.json").unlink()
    with pytest.raises(FarmError, match="Apple--0/result.json: missing"):
        backfill.audit(old_run.root, make_tasks(TARGET))


def test_a_task_json_of_another_task_is_refused(old_run: RunTree) -> None:
    (old_run.task_dir("Apple--0") / "task.json").write_text(make_task("Apple--1").model_dump_json())
    with pytest.raises(FarmError, match="Apple--0/task.json: differs from the target task Apple--0"):
        backfill.audit(old_run.root, make_tasks(TARGET))


def test_an_unjudged_protected_task_is_refused(old_run: RunTree) -> None:
    revisions.commit(old_run, make_view("Amazon--0", passed=None), "judge")
    with pytest.raises(FarmError, match="protected task Amazon--0 has no decided verdict"):
        backfill.audit(old_run.root, make_tasks(TARGET))


def test_a_never_judged_protected_task_is_refused(tmp_path: Path) -> None:
    tree = build_run(tmp_path / "run", make_tasks(OLD), judged=False)
    with pytest.raises(FarmError, match="protected task Allrecipes--0 has no decided verdict"):
        backfill.audit(tree.root, make_tasks(TARGET))


def test_a_failed_verdict_still_counts_as_decided(tmp_path: Path) -> None:
    tree = build_run(tmp_path / "run", make_tasks(OLD), passed=False)
    assert backfill.audit(tree.root, make_tasks(TARGET)).protected_task_ids == OLD


def test_a_protected_task_without_a_result_is_refused(tmp_path: Path) -> None:
    tree = build_run(tmp_path / "run", make_tasks(OLD))
    # A 4-task manifest whose last task never ran.
    write_manifest(tree, make_manifest(make_tasks([*OLD, "Apple--1"])))
    with pytest.raises(FarmError, match="results.ndjson: protected task Apple--1 has no result"):
        backfill.audit(tree.root, make_tasks(TARGET))


def test_a_damaged_revision_chain_is_refused(old_run: RunTree) -> None:
    (old_run.revisions_dir / "00000002.json").unlink()
    with pytest.raises(FarmError, match="00000002.json: revision missing"):
        backfill.audit(old_run.root, make_tasks(TARGET))


def test_execute_keeps_the_old_manifest_and_writes_the_target_one(old_run: RunTree) -> None:
    old_text = old_run.manifest.read_text()
    backfill.execute(old_run.root, make_tasks(TARGET), backfill.audit(old_run.root, make_tasks(TARGET)))
    assert old_run.manifest_before_backfill.read_text() == old_text
    manifest = read_manifest(old_run)
    assert manifest.task_ids == TARGET
    assert manifest.protected_task_ids == OLD
    assert manifest.provenance == "mixed"
    assert manifest.agent == read_manifest_file(old_run.manifest_before_backfill).agent


def test_execute_rebuilds_results_and_revisions_in_target_order(tmp_path: Path) -> None:
    # The old run finished its tasks out of selection order.
    tree = build_run(tmp_path / "run", make_tasks(OLD))
    revisions.commit(tree, make_view("Allrecipes--0", passed=False), "judge")
    backfill.execute(tree.root, make_tasks(TARGET), backfill.audit(tree.root, make_tasks(TARGET)))
    lines = [json.loads(line) for line in tree.results.read_text().splitlines()]
    assert [line["task_id"] for line in lines] == OLD
    assert lines[0]["judge"]["pass"] is False
    chain = revisions.read_chain(tree)
    assert [(r.task_id, r.reason) for r in chain] == [(i, "backfill") for i in OLD]
    (aside,) = tree.root.glob("result-revisions.old-*")
    assert len(list(aside.glob("*.json"))) == 7
    assert len((aside / "results.ndjson").read_text().splitlines()) == 7


def test_execute_never_touches_protected_task_directories(old_run: RunTree) -> None:
    before = {i: tree_digest(old_run.task_dir(i)) for i in OLD}
    backfill.execute(old_run.root, make_tasks(TARGET), backfill.audit(old_run.root, make_tasks(TARGET)))
    assert {i: tree_digest(old_run.task_dir(i)) for i in OLD} == before


def test_execute_twice_changes_nothing_the_second_time(old_run: RunTree) -> None:
    targets = make_tasks(TARGET)
    backfill.execute(old_run.root, targets, backfill.audit(old_run.root, targets))
    after_first = tree_digest(old_run.root)
    backfill.execute(old_run.root, targets, backfill.audit(old_run.root, targets))
    assert tree_digest(old_run.root) == after_first


def test_after_execute_a_task_that_ran_leaves_the_pending_list(old_run: RunTree) -> None:
    targets = make_tasks(TARGET)
    backfill.execute(old_run.root, targets, backfill.audit(old_run.root, targets))
    revisions.commit(old_run, make_view("Amazon--1"), "agent")
    plan = backfill.audit(old_run.root, targets)
    assert plan.protected_task_ids == OLD
    assert plan.missing_task_ids == NEW
    assert plan.pending == ["Allrecipes--1", "Apple--1"]


def test_execute_refuses_a_stale_plan(old_run: RunTree) -> None:
    plan = backfill.audit(old_run.root, make_tasks(TARGET))
    revisions.commit(old_run, make_view("Apple--0", passed=None), "judge")
    with pytest.raises(FarmError, match="no decided verdict"):
        backfill.execute(old_run.root, make_tasks(TARGET), plan)
    assert not old_run.manifest_before_backfill.exists()


def test_execute_refuses_a_plan_for_another_target(old_run: RunTree) -> None:
    plan = backfill.audit(old_run.root, make_tasks(SMALLER))
    with pytest.raises(FarmError, match="changed since the audit"):
        backfill.execute(old_run.root, make_tasks(TARGET), plan)
    assert not old_run.manifest_before_backfill.exists()


def test_a_second_extension_to_another_selection_is_refused(old_run: RunTree) -> None:
    first = make_tasks(SMALLER)
    backfill.execute(old_run.root, first, backfill.audit(old_run.root, first))
    with pytest.raises(FarmError, match="manifest-before-backfill.json: the run was already extended"):
        backfill.audit(old_run.root, make_tasks(TARGET))


def test_execute_with_nothing_missing_is_refused(old_run: RunTree) -> None:
    targets = make_tasks(OLD)
    with pytest.raises(FarmError, match="already selects every target task"):
        backfill.execute(old_run.root, targets, backfill.audit(old_run.root, targets))
    assert not old_run.manifest_before_backfill.exists()


def test_execute_finishes_after_a_crash_before_the_rebuild(old_run: RunTree) -> None:
    targets = make_tasks(TARGET)
    plan = backfill.audit(old_run.root, targets)
    backfill.execute(old_run.root, targets, plan)
    # Put back the old chain as if the crash came right after the manifest was written.
    (aside,) = old_run.root.glob("result-revisions.old-*")
    shutil.rmtree(old_run.revisions_dir)
    (aside / "results.ndjson").rename(old_run.results)
    aside.rename(old_run.revisions_dir)
    assert revisions.read_chain(old_run)[0].reason == "agent"
    backfill.execute(old_run.root, targets, backfill.audit(old_run.root, targets))
    assert [r.reason for r in revisions.read_chain(old_run)] == ["backfill"] * 3
