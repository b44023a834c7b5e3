"""A finished WebVoyager run in the farm: its manifest entry, its records, `farm report` and the run report's
section. One two-task run serves every test of the module (they only read it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from farm.manifest import load
from farm.report.build import build_reports
from farm.results.store import read_records
from tests.helpers.cli import farm
from tests.helpers.wv_lane import KEY, SIX, run, stub_models, wv_data
from web_bench.webvoyager.lane import RunOutcome

__all__ = ["wv_data"]


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
    assert [c.type for c in records[0].checks] == ["llm_judge_reference"]


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
    paths = build_reports([finished.root.parent], out_dir=tmp_path / "out")
    markdown = next(p for p in paths if p.suffix == ".md").read_text()
    section = markdown.split("WebVoyager: LLM-judged browser tasks", 1)[1]
    assert "| Allrecipes | 2 | 2 | 0 | 0 | 0 | 0 | 100.0% |" in section.replace("  ", " ")
    assert "scoring is complete" in section


def test_the_lane_report_is_rebuilt_from_the_revisions(finished: RunOutcome, tmp_path: Path, wv_data: Path) -> None:
    rebuilt = farm(tmp_path, "webvoyager", "report", "--run", "wv-t", "--runs-dir", str(finished.root.parent.parent),
                   "--data", str(wv_data))
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert (finished.root / "report.md").read_text().count("Allrecipes--") >= 2
