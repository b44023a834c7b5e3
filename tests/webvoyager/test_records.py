"""A finished WebVoyager run in the farm: its manifest entry, its records, `farm report` and the run report's
section. One two-task run serves the tests of a real run (they only read it); `to_record` and the readers of an
unjudged check are tested on built views, without a browser."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from farm.manifest import load
from farm.report.build import build
from farm.results.record import CheckResult, Record
from farm.results.store import read_records
from farm.view.app import create_app
from tests.helpers.cli import farm
from tests.helpers.lane_plugins import lane_plugins
from tests.helpers.records import record, write_run
from tests.helpers.webvoyager import make_agent_result, make_task, make_verdict, make_view
from tests.helpers.wv_lane import KEY, SIX, run, stub_models, wv_data
from tests.view.builders import EVIDENCE, RUN, make_run
from web_bench.webvoyager.lane import RunOutcome
from web_bench.webvoyager.model import JudgeMode, TaskView
from web_bench.webvoyager.records import to_record

__all__ = ["lane_plugins", "wv_data"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory, wv_data: Path) -> Iterator[RunOutcome]:
    """A finished two-task run (both pass)."""
    tmp = tmp_path_factory.mktemp("wv-join")
    with pytest.MonkeyPatch.context() as monkeypatch, stub_models(monkeypatch):
        outcome = run(tmp, wv_data, ids=SIX[:2])
    assert outcome.exit_status == 0, outcome.lines
    yield outcome


def test_the_run_joins_the_farm_manifest_and_records(finished: RunOutcome) -> None:
    run_dir = finished.root.parent
    assert [lane.lane for lane in load(run_dir).lanes] == ["webvoyager"]
    records = read_records(run_dir / "records.jsonl")
    assert [(r.task_id, r.lane, r.outcome) for r in records] == [(t, "webvoyager", "succeeded") for t in SIX[:2]]
    assert [(c.type, c.passed) for c in records[0].checks] == [("llm_judge", True)]
    assert records[0].checks[0].detail.startswith("reference judge: ")


def test_no_file_of_the_run_holds_the_key(finished: RunOutcome) -> None:
    texts = [p.read_text(errors="replace") for p in finished.root.parent.rglob("*") if p.is_file()
             and p.suffix in (".json", ".ndjson", ".jsonl", ".md", ".csv", ".log")]
    assert texts and not any(KEY in text for text in texts)


def test_farm_report_reads_the_run(finished: RunOutcome, tmp_path: Path) -> None:
    built = farm(tmp_path, "report", str(finished.root.parent), "--out", str(tmp_path / "out"), "--json")
    assert built.returncode == 0, built.stderr
    headline = json.loads(built.stdout)["headline"]
    assert (headline["attempted"], headline["passed"], headline["errors"]) == (2, 2, 0)


def test_the_run_report_has_the_webvoyager_section(finished: RunOutcome, tmp_path: Path) -> None:
    paths = build([finished.root.parent], out_dir=tmp_path / "out").paths
    markdown = next(p for p in paths if p.suffix == ".md").read_text()
    section = markdown.split("WebVoyager: LLM-judged browser tasks", 1)[1]
    assert "| Allrecipes | 2 | 2 | 0 | 0 | 0 | 0 | 100.0% |" in section.replace("  ", " ")
    assert "scoring is complete" in section


def test_the_lane_report_is_rebuilt_from_the_revisions(finished: RunOutcome, tmp_path: Path, wv_data: Path) -> None:
    rebuilt = farm(tmp_path, "webvoyager", "report", "--run", "wv-t", "--runs-dir", str(finished.root.parent.parent),
                   "--data", str(wv_data))
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert (finished.root / "report.md").read_text().count("Allrecipes--") >= 2


def _record(view: TaskView | None, judge_mode: JudgeMode | None = None) -> Record:
    # Written the way the lane writes records.jsonl (nulls dropped) and read back, so the line round-trips.
    built = to_record("wv-r", make_task(view.task_id if view else "Allrecipes--0"), view, judge_mode)
    return Record.model_validate_json(built.model_dump_json(exclude_none=True))


def test_a_passing_verdict_goes_through_the_registry_check() -> None:
    rec = _record(make_view(passed=True))
    assert (rec.outcome, rec.passed, rec.failure_kind) == ("succeeded", True, None)
    assert rec.checks == [CheckResult(type="llm_judge", passed=True, detail="reference judge: built verdict")]


def test_a_failing_verdict_is_an_agent_failure() -> None:
    rec = _record(make_view(passed=False))
    assert (rec.outcome, rec.passed, rec.failure_kind, [c.passed for c in rec.checks]) == (
        "failed", False, "agent", [False])


def test_an_unjudged_verdict_is_an_error_with_an_unjudged_check() -> None:
    rec = _record(make_view(passed=None))
    assert (rec.outcome, rec.passed, rec.failure_kind, rec.failure_category) == (
        "error", False, "infrastructure", "unjudged")
    assert rec.checks == [CheckResult(type="llm_judge", passed=None, detail="reference judge: format error")]


def test_a_configured_judge_without_a_verdict_leaves_an_unjudged_check() -> None:
    rec = _record(make_view(judged=False), judge_mode="evidence")
    assert (rec.outcome, rec.failure_category) == ("error", "unjudged")
    assert [(c.passed, c.detail) for c in rec.checks] == [(None, "evidence judge: no evidence verdict was recorded")]
    assert rec.reasons == ["evidence judge: no evidence verdict was recorded"]


@pytest.mark.parametrize("judge_mode", [None, "none"])
def test_no_verdict_and_no_judge_gives_no_check(judge_mode: JudgeMode | None) -> None:
    rec = _record(make_view(judged=False), judge_mode=judge_mode)
    assert (rec.outcome, rec.failure_category, rec.checks) == ("error", "unjudged", [])


def test_a_verdict_of_another_judge_than_the_runs_is_not_used() -> None:
    rec = _record(make_view(passed=True), judge_mode="evidence")
    assert (rec.outcome, rec.passed, [c.passed for c in rec.checks]) == ("error", False, [None])


def test_an_infrastructure_error_stays_one_even_when_the_judge_passed_it() -> None:
    agent = make_agent_result(status="error", error_kind="quota")
    view = TaskView(task_id=agent.task_id, site="Allrecipes", agent=agent, judge=make_verdict(passed=True))
    rec = _record(view)
    assert (rec.outcome, rec.passed, rec.failure_category) == ("error", False, "quota")


def test_a_missing_task_stays_a_missing_error() -> None:
    rec = _record(None)
    assert (rec.outcome, rec.failure_category, rec.checks) == ("error", "missing", [])


def test_the_farm_reports_count_an_unjudged_record_as_an_error_not_a_failure(tmp_path: Path) -> None:
    records = [_record(make_view("Allrecipes--0", passed=None)), _record(make_view("Allrecipes--1", passed=True))]
    run_dir = write_run(tmp_path / "runs", "wv-r", records)
    assert [c.passed for c in read_records(run_dir / "records.jsonl")[0].checks] == [None]
    paths = build([run_dir], out_dir=tmp_path / "out").paths
    junit = next(p for p in paths if p.suffix == ".xml").read_text()
    assert 'failures="0" errors="1"' in junit and "<failure" not in junit
    assert '<error type="infrastructure.unjudged"' in junit


def test_the_viewer_shows_an_unjudged_check_as_unjudged_not_failed(tmp_path: Path) -> None:
    unjudged = CheckResult(type="llm_judge", passed=None, detail="reference judge: reply was cut off")
    rec = record("calc", run=RUN, passed=False, outcome="error", evidence=EVIDENCE, checks=[unjudged])
    make_run(tmp_path / "runs", records=[rec])
    client = TestClient(create_app(tmp_path / "runs"), base_url="http://127.0.0.1")
    page = client.get(f"/runs/{RUN}/units/calc.SER1.a1")
    assert page.status_code == 200
    table = page.text.split('<table class="checks">', 1)[1].split("</table>", 1)[0]
    assert '<span class="badge v-error">unjudged</span>' in table and "v-fail" not in table
