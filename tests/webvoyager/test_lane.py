"""The WebVoyager lane end to end: real Chromium per task on the stand-in sites, the loopback stub as agent and
judge, worker processes, and every file the seed names."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from farm.errors import FarmError
from farm.llm.stub import ModelStub, StubReply
from tests.helpers.wv_lane import SIX, Scenario, run, wv_data, wv_stub
from web_bench.webvoyager import revisions, run_tree
from web_bench.webvoyager.model import AgentResult

__all__ = ["wv_data", "wv_stub"]


def test_six_tasks_run_end_to_end_with_every_file(tmp_path: Path, wv_data: Path,
                                                  wv_stub: tuple[ModelStub, Scenario]) -> None:
    outcome = run(tmp_path, wv_data)
    root = outcome.root
    assert outcome.exit_status == 0, outcome.lines
    summary = json.loads((root / "summary.json").read_text())
    assert (summary["selected"], summary["passed"], summary["scoring_complete"]) == (6, 6, True)
    for task_id in SIX:
        task_dir = root / task_id
        for name in ("task.json", "trace.ndjson", "session.json", "result.json", "judge-reference.ndjson"):
            assert (task_dir / name).stat().st_size > 0, f"{task_id}/{name}"
        result = AgentResult.model_validate_json((task_dir / "result.json").read_text())
        assert result.status == "completed" and result.steps == 1 and result.model_rounds == 2
        assert result.final_screenshot is not None and (task_dir / result.final_screenshot).is_file()
        assert result.usage.cost_usd is not None and result.usage.cost_usd > 0
    csv_text = (root / "task-metrics.csv").read_bytes()
    assert csv_text.startswith(b"\xef\xbb\xbf")
    rows = list(csv.reader(io.StringIO(csv_text.decode("utf-8-sig"))))
    assert len(rows) == 1 + 6 + 1 and len(rows[0]) == 10
    assert [r[0] for r in rows[1:7]] == SIX
    preflight = (root / "preflight.ndjson").read_text().splitlines()
    assert len(preflight) == 1 and json.loads(preflight[0])["role"] == "preflight"


def test_a_quota_failure_is_kept_for_resume_and_resume_retries_it_first(
    tmp_path: Path, wv_data: Path, wv_stub: tuple[ModelStub, Scenario],
) -> None:
    stub, scenario = wv_stub
    quota = {"on": True}

    def agent(url: str, body: dict[str, object]) -> StubReply | None:
        if quota["on"] and "amazon" in url:
            return StubReply.quota(status=200, code=2056)
        return None

    scenario.agent_override = agent
    three = ["Allrecipes--0", "Amazon--0", "Apple--0"]
    first = run(tmp_path, wv_data, ids=three, concurrency=1)
    summary = json.loads((first.root / "summary.json").read_text())
    assert first.halted == "quota" and first.exit_status == 3
    assert summary["quota_retry_task_ids"] == ["Amazon--0"]
    assert summary["failed"] == 0 and summary["scoring_complete"] is False
    recovery = run_tree.load_recovery(run_tree.RunTree(first.root))
    assert [e.task_id for e in recovery.quota_retry] == ["Amazon--0"]
    views = revisions.current(run_tree.RunTree(first.root))
    assert set(views) == {"Allrecipes--0", "Amazon--0"}  # dispatch stopped at the quota

    # Still out of quota: the preflight says so and no attempt is created.
    scenario.preflight_reply = StubReply.quota(status=200, code=2056)
    blocked = run(tmp_path, wv_data, ids=three, concurrency=1, resume=True)
    assert blocked.exit_status == 3 and not (first.root / "Amazon--0" / "attempts").exists()
    assert [e.task_id for e in run_tree.load_recovery(run_tree.RunTree(first.root)).quota_retry] == ["Amazon--0"]

    quota["on"] = False
    scenario.preflight_reply = None
    resumed = run(tmp_path, wv_data, ids=three, concurrency=1, resume=True)
    assert resumed.exit_status == 0, resumed.lines
    assert [i.task_id for i in resumed.plan.items][:1] == ["Amazon--0"]
    assert resumed.plan.items[0].kind == "quota_retry" and resumed.plan.items[0].attempt == 2
    second = AgentResult.model_validate_json((first.root / "Amazon--0" / "attempts" / "2" / "result.json").read_text())
    assert second.status == "completed"
    assert (first.root / "Amazon--0" / "result.json").is_file()  # the first attempt is kept
    final = json.loads((first.root / "summary.json").read_text())
    assert (final["passed"], final["quota_retry_task_ids"], final["superseded_attempts"]) == (3, [], 1)


def test_the_pinned_prompt_is_refused_before_any_credential(tmp_path: Path, wv_data: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    data = tmp_path / "data"
    shutil.copytree(wv_data, data)
    prompt = data / "judge-prompt.md"
    prompt.write_bytes(prompt.read_bytes() + b"\n")
    for name in ("EVAL_API_KEY", "EVAL_MODEL", "EVAL_PROVIDER", "FARM_LLM_PROVIDER", "FARM_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(FarmError, match="judge-prompt.md") as exc:
        run(tmp_path, data)
    assert "key" not in str(exc.value).lower()
    assert not (tmp_path / "runs").exists()


def test_a_refused_preflight_dispatches_nothing_and_the_same_command_runs_later(
    tmp_path: Path, wv_data: Path, wv_stub: tuple[ModelStub, Scenario],
) -> None:
    stub, scenario = wv_stub
    scenario.preflight_reply = StubReply.quota(status=429, code=2056)
    refused = run(tmp_path, wv_data, ids=SIX[:1])
    assert (refused.exit_status, refused.halted) == (3, "preflight")
    assert scenario.agent_requests == [] and not (refused.root / "manifest.json").exists()
    assert json.loads((refused.root / "preflight.ndjson").read_text())["outcome"] == "quota"
    scenario.preflight_reply = None
    again = run(tmp_path, wv_data, ids=SIX[:1])
    assert again.exit_status == 0, again.lines
    assert len((again.root / "preflight.ndjson").read_text().splitlines()) == 2


def test_a_refused_key_is_exit_status_2_before_any_task(
    tmp_path: Path, wv_data: Path, wv_stub: tuple[ModelStub, Scenario],
) -> None:
    stub, scenario = wv_stub
    stub.api_key = "another-key"
    refused = run(tmp_path, wv_data, ids=SIX[:1])
    assert (refused.exit_status, refused.halted) == (2, "auth")
    assert scenario.agent_requests == [] and not (refused.root / SIX[0]).exists()


def test_headed_without_a_display_is_refused_before_the_preflight(
    tmp_path: Path, wv_data: Path, wv_stub: tuple[ModelStub, Scenario], monkeypatch: pytest.MonkeyPatch,
) -> None:
    stub, scenario = wv_stub
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    with pytest.raises(FarmError, match="--headless"):
        run(tmp_path, wv_data, ids=SIX[:1], headed=True)
    assert scenario.preflights == 0


def test_a_restricted_site_is_website_unavailable_counted_apart_and_kept_in_the_denominator(
    tmp_path: Path, wv_data: Path, wv_stub: tuple[ModelStub, Scenario],
) -> None:
    stub, scenario = wv_stub

    def agent(url: str, body: dict[str, object]) -> StubReply | None:
        if "allrecipes" not in url:
            return None
        return StubReply(tool_calls=[("browser_navigate", {"url": "https://www.allrecipes.com/restricted/"})])

    scenario.agent_override = agent
    outcome = run(tmp_path, wv_data, ids=["Allrecipes--0", "Apple--0"])
    views = revisions.current(run_tree.RunTree(outcome.root))
    blocked = views["Allrecipes--0"].agent
    assert (blocked.status, blocked.error_kind, blocked.restricted_results) == ("error", "website_unavailable", 3)
    summary = json.loads((outcome.root / "summary.json").read_text())
    assert (summary["selected"], summary["website_unavailable"], summary["passed"]) == (2, 1, 1)
    assert summary["provisional_rate"] == 0.5


def test_a_timeout_that_hid_a_quota_refusal_is_kept_for_a_rerun(
    tmp_path: Path, wv_data: Path, wv_stub: tuple[ModelStub, Scenario],
) -> None:
    stub, scenario = wv_stub

    def agent(url: str, body: dict[str, object]) -> StubReply | None:
        if "amazon" not in url:
            return None
        # The provider stalls once its quota is gone; only a later request says so.
        scenario.preflight_reply = StubReply.quota(status=429, code=2056)
        return StubReply(text="late", delay_s=30.0)

    scenario.agent_override = agent
    outcome = run(tmp_path, wv_data, ids=["Amazon--0", "Apple--0"], timeout_ms=6000, concurrency=1)
    views = revisions.current(run_tree.RunTree(outcome.root))
    amazon = views["Amazon--0"].agent
    assert (amazon.status, amazon.error_kind) == ("timeout", "quota")
    assert outcome.halted == "quota" and "Apple--0" not in views
    summary = json.loads((outcome.root / "summary.json").read_text())
    assert (summary["quota_retry_task_ids"], summary["failed"]) == (["Amazon--0"], 0)


def test_a_plain_timeout_stays_a_timeout_when_the_service_answers(
    tmp_path: Path, wv_data: Path, wv_stub: tuple[ModelStub, Scenario],
) -> None:
    stub, scenario = wv_stub
    scenario.agent_override = lambda url, body: StubReply(text="late", delay_s=30.0)
    outcome = run(tmp_path, wv_data, ids=["Amazon--0"], timeout_ms=5000)
    agent = revisions.current(run_tree.RunTree(outcome.root))["Amazon--0"].agent
    assert (agent.status, agent.error_kind) == ("timeout", None)
    assert scenario.preflights == 2  # the run's check and the one after the stalled request
    assert outcome.halted is None and run_tree.load_recovery(run_tree.RunTree(outcome.root)).quota_retry == []
