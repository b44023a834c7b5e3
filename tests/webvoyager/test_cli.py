"""`farm webvoyager` through the real entry point: data, the dry run, and the farm report of a finished run."""

from __future__ import annotations

import json
from pathlib import Path

from farm.llm.stub import ModelStub
from tests.helpers.cli import farm
from tests.helpers.shared_data import shared_data
from tests.helpers.wv_lane import SIX, Scenario, run, wv_data, wv_stub

__all__ = ["wv_data", "wv_stub"]


def test_data_from_a_local_copy_then_a_dry_run_prints_the_plan(tmp_path: Path) -> None:
    source = shared_data("webvoyager")
    copied = farm(tmp_path, "webvoyager", "data", "--from", str(source), "--data", "d")
    assert copied.returncode == 0, copied.stderr
    rows = [line.split("\t") for line in copied.stdout.splitlines()[1:6]]
    assert [r[1:] for r in rows] == [["yes", "ok"]] * 5
    dry = farm(tmp_path, "webvoyager", "run", "--dry-run", "--data", "d", "--count", "3")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines()[:4] == [
        "3 tasks selected; 0 already done",
        "new           Allrecipes--0  run attempt 1",
        "new           Allrecipes--1  run attempt 1",
        "new           Allrecipes--2  run attempt 1",
    ]
    assert not (tmp_path / "runs").exists()


def test_data_status_without_files_says_what_is_missing_with_status_2(tmp_path: Path) -> None:
    shown = farm(tmp_path, "webvoyager", "data", "--data", "empty")
    assert shown.returncode == 2
    assert "WebVoyager_data.json" in shown.stdout and "judge-prompt.md" in shown.stdout


def test_the_farm_report_reads_a_webvoyager_run(tmp_path: Path, wv_data: Path,
                                                 wv_stub: tuple[ModelStub, Scenario]) -> None:
    outcome = run(tmp_path, wv_data, ids=SIX[:2])
    run_dir = outcome.root.parent
    built = farm(tmp_path, "report", str(run_dir), "--json")
    assert built.returncode == 0, built.stderr
    headline = json.loads(built.stdout)["headline"]
    assert (headline["attempted"], headline["passed"], headline["errors"]) == (2, 2, 0)
    rebuilt = farm(tmp_path, "webvoyager", "report", "--run", "wv-t", "--runs-dir", str(run_dir.parent),
                   "--data", str(wv_data))
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert (outcome.root / "report.md").read_text().count("Allrecipes--") >= 2


def test_the_farm_report_has_the_webvoyager_section(tmp_path: Path, wv_data: Path,
                                                    wv_stub: tuple[ModelStub, Scenario]) -> None:
    from farm.report.build import build_reports

    outcome = run(tmp_path, wv_data, ids=SIX[:2])
    paths = build_reports([outcome.root.parent], out_dir=tmp_path / "out")
    markdown = next(p for p in paths if p.suffix == ".md").read_text()
    section = markdown.split("WebVoyager: LLM-judged browser tasks", 1)[1]
    assert "| Allrecipes | 2 | 2 | 0 | 0 | 0 | 0 | 100.0% |" in section.replace("  ", " ")
    assert "scoring is complete" in section
