"""Recovering WebVoyager runs end to end: a killed scheduler, judge reset and re-judging, backfill, HAR replay,
re-runs, outages, and the dry run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from farm.errors import FarmError
from farm.llm.stub import ModelStub, StubReply
from tests.helpers.cli import ENTRY
from tests.helpers.wv_lane import SIX, STAND_IN, Scenario, run, wv_data, wv_stub
from web_bench.webvoyager import backfill, reset_judge, revisions, run_tree
from web_bench.webvoyager.model import AgentResult

__all__ = ["wv_data", "wv_stub"]


def _summary(root: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((root / "summary.json").read_text())
    return loaded


def test_a_killed_scheduler_resumes_and_registers_what_its_worker_wrote(
    tmp_path: Path, wv_data: Path, wv_stub: tuple[ModelStub, Scenario],
) -> None:
    stub, scenario = wv_stub
    # The second task's model reply is slow, so the scheduler can be killed while that worker runs.
    scenario.agent_override = lambda url, body: (StubReply(text="The Allrecipes page.", delay_s=3.0)
                                                 if "allrecipes" in url and len(scenario.agent_requests) > 2 else None)
    runs = tmp_path / "runs"
    args = ["webvoyager", "run", "--run", "wv-k", "--runs-dir", str(runs), "--data", str(wv_data),
            "--ids", ",".join(SIX[:3]), "--headless", "--stand-in", str(STAND_IN), "--timeout-ms", "60000",
            "--max-rounds", "6"]
    proc = subprocess.Popen([sys.executable, "-c", ENTRY, *args], env=dict(os.environ), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    root = runs / "wv-k" / "webvoyager"
    deadline = time.monotonic() + 90
    while not (root / "Allrecipes--1" / "task.json").exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)  # the scheduler only: its worker lives on in its own session
    proc.wait()
    while not (root / "Allrecipes--1" / "result.json").exists():
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert "Allrecipes--1" not in revisions.current(run_tree.RunTree(root))
    resumed = run(tmp_path, wv_data, run_id="wv-k", ids=SIX[:3], resume=True, concurrency=1)
    assert resumed.exit_status == 0, resumed.lines
    assert not (root / "Allrecipes--1" / "attempts").exists()  # recovered, not run again
    assert [(i.task_id, i.kind) for i in resumed.plan.items] == [("Allrecipes--1", "judge"), ("Amazon--0", "new")]
    assert _summary(root)["passed"] == 3


def test_reset_judge_then_judge_only_rejudges_every_saved_result(
    tmp_path: Path, wv_data: Path, wv_stub: tuple[ModelStub, Scenario],
) -> None:
    stub, scenario = wv_stub
    first = run(tmp_path, wv_data, ids=SIX[:3])
    root = first.root
    kept = {p: p.read_bytes() for name in ("session.json", "trace.ndjson", "result.json")
            for p in root.glob(f"*/{name}")}
    plan = reset_judge.plan(root)
    assert not plan.empty()
    reset_judge.execute(root, plan)
    assert not list(root.glob("*/judge-*.ndjson"))
    assert all(v.judge is None for v in revisions.current(run_tree.RunTree(root)).values())
    assert {p: p.read_bytes() for p in kept} == kept
    scenario.judged.clear()
    scenario.judge_override = lambda body: None
    again = run(tmp_path, wv_data, ids=SIX[:3], judge_only=True)
    assert sorted(scenario.judged) == sorted(SIX[:3])
    assert scenario.agent_requests.count("") == 0 and again.plan.agent_items() == []
    assert (root / "judged-reference.json").is_file()
    assert _summary(root)["passed"] == 3


def test_a_judge_format_error_leaves_the_task_unjudged_not_failed(
    tmp_path: Path, wv_data: Path, wv_stub: tuple[ModelStub, Scenario],
) -> None:
    stub, scenario = wv_stub
    scenario.judge_override = lambda body: StubReply(text="PASS, looks fine")
    outcome = run(tmp_path, wv_data, ids=SIX[:1])
    summary = _summary(outcome.root)
    assert (summary["failed"], summary["unjudged"], summary["scoring_complete"]) == (0, 1, False)
    assert outcome.exit_status == 3
    scenario.judge_override = lambda body: None
    fixed = run(tmp_path, wv_data, ids=SIX[:1], judge_only=True)
    assert fixed.exit_status == 0 and _summary(outcome.root)["passed"] == 1


def test_backfill_extends_a_three_task_run_to_six_without_touching_the_three(
    tmp_path: Path, wv_data: Path, wv_stub: tuple[ModelStub, Scenario],
) -> None:
    from web_bench.webvoyager import dataset

    stub, scenario = wv_stub
    first = run(tmp_path, wv_data, ids=["Allrecipes--0", "Amazon--0", "Apple--0"])
    root = first.root
    before = {p: p.read_bytes() for p in (root / "Allrecipes--0").rglob("*") if p.is_file()}
    target = dataset.select(dataset.load_tasks(wv_data), SIX, None)
    plan = backfill.audit(root, target)
    assert plan.protected_task_ids == ["Allrecipes--0", "Amazon--0", "Apple--0"]
    assert plan.pending == ["Allrecipes--1", "Amazon--1", "Apple--1"]
    backfill.execute(root, target, plan)
    assert (root / "manifest-before-backfill.json").is_file()
    scenario.agent_requests.clear()
    resumed = run(tmp_path, wv_data, ids=None, resume=True)
    assert [i.task_id for i in resumed.plan.items] == plan.pending
    assert len(scenario.agent_requests) == 2 * 3
    assert {p: p.read_bytes() for p in before} == before
    summary = _summary(root)
    assert (summary["selected"], summary["passed"], summary["mixed_provenance"]) == (6, 6, True)
    lines = (root / "results.ndjson").read_text().splitlines()
    order = list(dict.fromkeys(json.loads(ln)["task_id"] for ln in lines))
    assert order[:3] == ["Allrecipes--0", "Amazon--0", "Apple--0"]  # rebuilt in the target's order
    assert sorted(order[3:]) == sorted(plan.pending)


def test_backfill_refuses_a_target_that_reorders_the_old_run(
    tmp_path: Path, wv_data: Path, wv_stub: tuple[ModelStub, Scenario],
) -> None:
    from web_bench.webvoyager import dataset

    first = run(tmp_path, wv_data, ids=["Allrecipes--0", "Amazon--0"])
    tasks = {t.task_id: t for t in dataset.load_tasks(wv_data)}
    with pytest.raises(FarmError):
        backfill.audit(first.root, [tasks["Amazon--0"], tasks["Allrecipes--0"], tasks["Apple--0"]])


def test_har_record_then_replay_gives_the_same_verdicts_offline(
    tmp_path: Path, wv_data: Path, wv_stub: tuple[ModelStub, Scenario],
) -> None:
    har = tmp_path / "har"
    recorded = run(tmp_path, wv_data, run_id="wv-rec", ids=SIX[:3], record_har=har)
    assert sorted(p.name for p in har.glob("*.har")) == sorted(f"{t}.har" for t in SIX[:3])
    replayed = run(tmp_path, wv_data, run_id="wv-rep", ids=SIX[:3], replay_har=har, stand_in=None)
    verdicts = [{t: v.judge.passed if v.judge else None
                 for t, v in revisions.current(run_tree.RunTree(o.root)).items()} for o in (recorded, replayed)]
    assert verdicts[0] == verdicts[1] == dict.fromkeys(SIX[:3], True)
    manifest = json.loads((replayed.root / "manifest.json").read_text())
    assert manifest["har_mode"] == "replay"


def test_a_replay_without_the_recording_fails_visibly(
    tmp_path: Path, wv_data: Path, wv_stub: tuple[ModelStub, Scenario],
) -> None:
    har = tmp_path / "har"
    har.mkdir()
    outcome = run(tmp_path, wv_data, ids=SIX[:1], replay_har=har, stand_in=None)
    result = AgentResult.model_validate_json((outcome.root / SIX[0] / "result.json").read_text())
    assert result.status == "error" or result.har_misses > 0
    assert _summary(outcome.root)["passed"] == 0


def test_a_service_outage_stops_dispatch_and_resume_runs_the_rest(
    tmp_path: Path, wv_data: Path, wv_stub: tuple[ModelStub, Scenario], monkeypatch: pytest.MonkeyPatch,
) -> None:
    stub, scenario = wv_stub
    down = {"on": True}
    # A valid Retry-After comes first, so the five retries wait 0 s here instead of the 0.5–10 s backoff.
    scenario.agent_override = lambda url, body: (StubReply(status=503, retry_after=0, error_message="unavailable")
                                                 if down["on"] and "amazon" in url else None)
    first = run(tmp_path, wv_data, ids=["Allrecipes--0", "Amazon--0", "Apple--0"], concurrency=1)
    assert first.halted == "service_unavailable" and first.exit_status == 3
    views = revisions.current(run_tree.RunTree(first.root))
    assert views["Amazon--0"].agent.error_kind == "service_unavailable"
    assert views["Amazon--0"].agent.retry_count == 5
    assert "Apple--0" not in views
    down["on"] = False
    resumed = run(tmp_path, wv_data, ids=["Allrecipes--0", "Amazon--0", "Apple--0"], resume=True, concurrency=1)
    assert [(i.task_id, i.kind) for i in resumed.plan.items] == [("Amazon--0", "service_retry"), ("Apple--0", "new")]
    assert resumed.exit_status == 0


def test_rerun_ids_makes_one_new_attempt_and_a_repeat_does_not(
    tmp_path: Path, wv_data: Path, wv_stub: tuple[ModelStub, Scenario],
) -> None:
    first = run(tmp_path, wv_data, ids=SIX[:2])
    dry = run(tmp_path, wv_data, ids=SIX[:2], rerun_ids=["Allrecipes--1"], dry_run=True)
    assert [(i.task_id, i.kind, i.attempt) for i in dry.plan.items] == [("Allrecipes--1", "rerun", 2)]
    assert not (first.root / "Allrecipes--1" / "attempts").exists()
    run(tmp_path, wv_data, ids=SIX[:2], rerun_ids=["Allrecipes--1"])
    assert (first.root / "Allrecipes--1" / "attempts" / "2" / "result.json").is_file()
    again = run(tmp_path, wv_data, ids=SIX[:2], rerun_ids=["Allrecipes--1"])
    assert again.plan.agent_items() == [] and not (first.root / "Allrecipes--1" / "attempts" / "3").exists()
    third = run(tmp_path, wv_data, ids=SIX[:2], rerun_ids=["Allrecipes--1"], new_rerun=True)
    assert [i.attempt for i in third.plan.agent_items()] == [3]
    view = revisions.current(run_tree.RunTree(first.root))["Allrecipes--1"]
    assert (view.agent.attempt, view.superseded_attempts) == (3, [1, 2])


def test_a_dry_run_reads_no_credential_and_writes_nothing(tmp_path: Path, wv_data: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith(("EVAL_", "FARM_LLM_"))]:
        monkeypatch.delenv(name)
    outcome = run(tmp_path, wv_data, dry_run=True, ids=None)
    assert len(outcome.plan.items) == 126 and outcome.exit_status == 0
    assert outcome.lines[0].startswith("126 tasks selected")
    assert not (tmp_path / "runs").exists()


def test_retry_from_recovers_an_old_run_into_a_new_one_read_only(
    tmp_path: Path, wv_data: Path, wv_stub: tuple[ModelStub, Scenario],
) -> None:
    stub, scenario = wv_stub
    scenario.agent_override = lambda url, body: StubReply.quota(status=429, code=2056) if "amazon" in url else None
    old = run(tmp_path, wv_data, run_id="wv-old", ids=["Allrecipes--0", "Amazon--0", "Apple--0"], concurrency=1)
    before = {p: p.read_bytes() for p in old.root.rglob("*") if p.is_file()}
    scenario.agent_override = lambda url, body: None
    new = run(tmp_path, wv_data, run_id="wv-new", ids=["Allrecipes--0", "Amazon--0", "Apple--0"],
              retry_from=old.root.parent)
    assert {p: p.read_bytes() for p in old.root.rglob("*") if p.is_file()} == before
    assert [(i.task_id, i.kind) for i in new.plan.items] == [("Amazon--0", "quota_retry"), ("Apple--0", "new")]
    summary = _summary(new.root)
    assert (summary["passed"], summary["mixed_provenance"]) == (3, True)


def _cli(runs: Path, data: Path, run_id: str, ids: list[str]) -> subprocess.Popen[bytes]:
    args = ["webvoyager", "run", "--run", run_id, "--runs-dir", str(runs), "--data", str(data),
            "--ids", ",".join(ids), "--headless", "--stand-in", str(STAND_IN), "--timeout-ms", "60000",
            "--max-rounds", "6", "--preflight-timeout", "10000"]
    return subprocess.Popen([sys.executable, "-c", ENTRY, *args], env=dict(os.environ), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)


def _wait_for(path: Path, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + 90
    while not path.exists():
        assert time.monotonic() < deadline and (proc is None or proc.poll() is None)
        time.sleep(0.1)


def test_ctrl_c_stops_the_queue_records_the_running_task_and_resume_reruns_it(
    tmp_path: Path, wv_data: Path, wv_stub: tuple[ModelStub, Scenario],
) -> None:
    stub, scenario = wv_stub
    scenario.agent_override = lambda url, body: StubReply(text="The Allrecipes page.", delay_s=20.0)
    runs = tmp_path / "runs"
    proc = _cli(runs, wv_data, "wv-c", SIX[:2])
    root = runs / "wv-c" / "webvoyager"
    _wait_for(root / "Allrecipes--0" / "task.json", proc)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(60) == 130
    result = AgentResult.model_validate_json((root / "Allrecipes--0" / "result.json").read_text())
    assert result.error_kind == "interrupted"
    assert not (root / "Allrecipes--1").exists()
    assert [e.task_id for e in run_tree.load_recovery(run_tree.RunTree(root)).service_retry] == ["Allrecipes--0"]
    scenario.agent_override = lambda url, body: None
    resumed = run(tmp_path, wv_data, run_id="wv-c", ids=SIX[:2], resume=True, concurrency=1)
    assert [(i.task_id, i.kind) for i in resumed.plan.items] == [("Allrecipes--0", "service_retry"),
                                                                 ("Allrecipes--1", "new")]
    assert resumed.exit_status == 0


def test_a_second_scheduler_on_the_same_run_is_refused(
    tmp_path: Path, wv_data: Path, wv_stub: tuple[ModelStub, Scenario],
) -> None:
    stub, scenario = wv_stub
    scenario.agent_override = lambda url, body: StubReply(text="The Allrecipes page.", delay_s=3.0)
    runs = tmp_path / "runs"
    proc = _cli(runs, wv_data, "wv-l", SIX[:1])
    try:
        _wait_for(runs / "wv-l" / "webvoyager" / "Allrecipes--0" / "task.json", proc)
        with pytest.raises(FarmError, match="already running"):
            run(tmp_path, wv_data, run_id="wv-l", ids=SIX[:1], resume=True, concurrency=1)
    finally:
        assert proc.wait(60) == 0
