"""`farm webvoyager` through the real entry point: the data and the dry run."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.cli import farm
from tests.helpers.shared_data import shared_data


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
