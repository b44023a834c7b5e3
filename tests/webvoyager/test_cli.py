"""`farm webvoyager` through the real entry point: the data, the dry run and the report."""

from __future__ import annotations

from pathlib import Path

from farm.report.headline import read_headline
from tests.helpers.cli import farm
from tests.helpers.shared_data import shared_data
from tests.helpers.webvoyager import joined_run, make_tasks
from tests.helpers.wv_lane import SIX, wv_data

__all__ = ["wv_data"]


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


def test_report_rebuilds_the_lanes_files_and_the_current_report_of_a_run_it_is_alone_in(
        tmp_path: Path, wv_data: Path) -> None:
    tree = joined_run(tmp_path / "runs", "r1", make_tasks(SIX[:2]))
    run_dir = tmp_path / "runs" / "r1"
    proc = farm(tmp_path, "webvoyager", "report", "--run", "r1", "--data", str(wv_data))
    assert proc.returncode == 0, proc.stderr
    written = read_headline(run_dir)
    assert written is not None and (written.overall.attempted, written.overall.passed) == (2, 2)
    assert proc.stdout.splitlines()[:3] == [f"report: {tree.report.relative_to(tmp_path)}", f"run r1: {written.text}",
                                            "runs/r1/report.md"]
    assert "WebVoyager: LLM-judged browser tasks" in (run_dir / "report.md").read_text(encoding="utf-8")
    assert tree.report.is_file()  # the lane's own report, rebuilt beside the run's
