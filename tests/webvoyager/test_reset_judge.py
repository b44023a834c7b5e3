"""reset-judge: a dry run that changes nothing, then an execute that removes every verdict and keeps the agent's
work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.errors import FarmError
from tests.helpers.webvoyager import (
    build_run,
    make_agent_result,
    make_task,
    make_tasks,
    make_verdict,
    make_view,
    tree_digest,
    write_attempt_files,
)
from web_bench.webvoyager import reset_judge, revisions
from web_bench.webvoyager.run_tree import Recovery, RecoveryEntry, RunTree, load_recovery, save_recovery

IDS = ["Allrecipes--0", "Amazon--0", "Apple--0"]
KEPT = ("task.json", "session.json", "trace.ndjson", "result.json")


@pytest.fixture
def judged_run(tmp_path: Path) -> RunTree:
    """Three judged tasks; Amazon--0 also has a second attempt (judged), a screenshot and a quota re-judge owed;
    derived tables, a judged-*.json and an old chain kept aside exist."""
    tree = build_run(tmp_path / "run", make_tasks(IDS))
    second = make_agent_result("Amazon--0", attempt=2)
    verdict = make_verdict(2, passed=False)
    write_attempt_files(tree.attempt_dir("Amazon--0", 2), make_task("Amazon--0"), second, judge=verdict)
    (tree.task_dir("Amazon--0") / "final-0123456789abcdef.png").write_bytes(b"\x89PNG fake")
    view = make_view("Amazon--0", agent=second, judged=False, superseded=[1])
    revisions.commit(tree, view, "rerun")
    revisions.commit(tree, view.model_copy(update={"judge": verdict}), "judge")
    for name in ("summary.json", "report.md", "task-metrics.md", "task-metrics.csv", "task-metrics.json",
                 "judged-reference.json"):
        (tree.root / name).write_text("{}")
    (tree.root / "result-revisions.old-20260101T000000Z").mkdir()
    (tree.root / "result-revisions.old-20260101T000000Z" / "00000001.json").write_text("{}")
    entry = RecoveryEntry(task_id="Apple--0", attempt=1, reason="quota 2056", recorded_at="t")
    keep = RecoveryEntry(task_id="Allrecipes--0", attempt=1, reason="quota", recorded_at="t")
    save_recovery(tree, Recovery(quota_rejudge=[entry], quota_retry=[keep]))
    return tree


def test_dry_run_changes_nothing(judged_run: RunTree) -> None:
    before = tree_digest(judged_run.root)
    reset_judge.plan(judged_run.root)
    assert tree_digest(judged_run.root) == before


def test_dry_run_lists_every_judge_file_and_derived_file(judged_run: RunTree) -> None:
    plan = reset_judge.plan(judged_run.root)
    assert plan.files == [
        "judged-reference.json",
        "Allrecipes--0/judge-reference.ndjson",
        "Amazon--0/judge-reference.ndjson",
        "Amazon--0/attempts/2/judge-reference.ndjson",
        "Apple--0/judge-reference.ndjson",
        "summary.json", "report.md", "task-metrics.md", "task-metrics.csv", "task-metrics.json",
    ]
    assert plan.old_revision_dirs == ["result-revisions.old-20260101T000000Z"]
    assert plan.rebuild and plan.revisions == 8
    assert plan.task_ids == IDS
    assert plan.judged_task_ids == IDS
    assert plan.quota_rejudge_task_ids == ["Apple--0"]
    assert any("rebuild result-revisions/ (8 revisions)" in line for line in plan.lines())


def test_execute_removes_every_verdict_and_judge_file(judged_run: RunTree) -> None:
    root = judged_run.root
    reset_judge.execute(root, reset_judge.plan(root))
    assert not list(root.rglob("judge-*.ndjson")) and not list(root.rglob("judged-*.json"))
    assert not list(root.glob("result-revisions.old-*"))
    for name in ("summary.json", "report.md", "task-metrics.md", "task-metrics.csv", "task-metrics.json"):
        assert not (root / name).exists()
    assert all(v.judge is None for v in revisions.current(judged_run).values())
    assert all(json.loads(line)["judge"] is None for line in judged_run.results.read_text().splitlines())


def test_execute_rebuilds_the_chain_from_the_latest_agent_attempts_in_selection_order(judged_run: RunTree) -> None:
    reset_judge.execute(judged_run.root, reset_judge.plan(judged_run.root))
    chain = revisions.read_chain(judged_run)
    assert [(r.seq, r.task_id, r.reason) for r in chain] == [(1, "Allrecipes--0", "reset"), (2, "Amazon--0", "reset"),
                                                             (3, "Apple--0", "reset")]
    amazon = chain[1].view
    assert amazon.agent.attempt == 2 and amazon.superseded_attempts == [1]
    assert not (judged_run.revisions_dir / "00000004.json").exists()


def test_execute_keeps_sessions_traces_screenshots_results_and_attempts(judged_run: RunTree) -> None:
    root = judged_run.root
    kept_paths = [p for p in tree_digest(root) if p.split("/")[-1] in KEPT or p.endswith(".png")]
    kept = {p: tree_digest(root)[p] for p in kept_paths}
    assert len(kept) == 17  # 4 files in each of 4 attempt directories, and the screenshot
    reset_judge.execute(root, reset_judge.plan(root))
    after = tree_digest(root)
    assert {p: after.get(p) for p in kept} == kept
    assert "Amazon--0/attempts/2/" in after


def test_execute_clears_only_quota_rejudge(judged_run: RunTree) -> None:
    reset_judge.execute(judged_run.root, reset_judge.plan(judged_run.root))
    recovery = load_recovery(judged_run)
    assert recovery.quota_rejudge == []
    assert [e.task_id for e in recovery.quota_retry] == ["Allrecipes--0"]


def test_execute_leaves_nothing_to_reset(judged_run: RunTree) -> None:
    left = reset_judge.execute(judged_run.root, reset_judge.plan(judged_run.root))
    assert left.empty()
    assert left.lines() == ["nothing to reset: the run holds no verdicts or judge files"]


def test_execute_is_idempotent(judged_run: RunTree) -> None:
    root = judged_run.root
    reset_judge.execute(root, reset_judge.plan(root))
    after_first = tree_digest(root)
    reset_judge.execute(root, reset_judge.plan(root))
    assert tree_digest(root) == after_first


def test_execute_refuses_a_plan_the_run_has_outgrown(judged_run: RunTree) -> None:
    plan = reset_judge.plan(judged_run.root)
    (judged_run.task_dir("Apple--0") / "judge-evidence.ndjson").write_text("{}\n")
    before = tree_digest(judged_run.root)
    with pytest.raises(FarmError, match="changed since the dry run"):
        reset_judge.execute(judged_run.root, plan)
    assert tree_digest(judged_run.root) == before


def test_a_damaged_chain_is_refused_before_anything_is_removed(judged_run: RunTree) -> None:
    (judged_run.revisions_dir / "00000003.json").unlink()
    before = tree_digest(judged_run.root)
    with pytest.raises(FarmError, match="00000003.json: revision missing"):
        reset_judge.plan(judged_run.root)
    assert tree_digest(judged_run.root) == before


def test_an_unjudged_run_needs_no_rebuild(tmp_path: Path) -> None:
    tree = build_run(tmp_path / "run", make_tasks(IDS), judged=False)
    plan = reset_judge.plan(tree.root)
    assert plan.empty()
    assert not plan.rebuild


def test_a_judge_line_left_in_results_ndjson_is_rebuilt_away(tmp_path: Path) -> None:
    tree = build_run(tmp_path / "run", make_tasks(IDS), judged=False)
    with tree.results.open("a") as handle:  # a verdict line whose revision never came (revision wins)
        handle.write(make_view("Apple--0").model_dump_json(by_alias=True) + "\n")
    plan = reset_judge.plan(tree.root)
    assert plan.rebuild and plan.judged_task_ids == []
    reset_judge.execute(tree.root, plan)
    assert all(json.loads(line)["judge"] is None for line in tree.results.read_text().splitlines())
