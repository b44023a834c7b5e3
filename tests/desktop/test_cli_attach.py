"""`farm desktop attach`: the batch joins a run manifest, its reports land in runs/<run>/desktop/ and the run's
current report is rebuilt to show it."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from farm.desktop.batch import record_result
from farm.lane_plugins import current_report
from farm.manifest import Manifest, load
from farm.report.headline import read_headline
from farm.results.store import RunStore
from tests.helpers.desktop import farm, planned_batch, write_result
from tests.helpers.records import record, run_of_other_lanes, write_run


def _batch(tmp_path: Path) -> Path:
    directory, b0 = planned_batch(tmp_path)
    out = directory / "batch-001.json"
    record_result(b0, "calculator-add/1", write_result(directory / "r.json"), out)
    return out


def test_attach_creates_the_run_and_adds_the_desktop_lane(tmp_path: Path) -> None:
    batch = _batch(tmp_path)
    runs = tmp_path / "runs"
    outcome = farm("desktop", "attach", "night-1", batch, "--runs-dir", runs)
    assert outcome.code == 0, outcome.stderr
    manifest = load(runs / "night-1")
    lane = next(entry for entry in manifest.lanes if entry.lane == "desktop")
    assert lane.outputs == [
        "desktop/batch-001.report.md", "desktop/batch-001.report.json", "desktop/batch-001.report.html"
    ]
    detail = lane.detail["batch/batch-001"]
    assert isinstance(detail, dict)
    assert detail["status"] == "interim" and detail["chainVerified"] is True and detail["recorded"] == 1
    markdown = (runs / "night-1" / "desktop" / "batch-001.report.md").read_text(encoding="utf-8")
    assert "阶段性结果" in markdown
    report = json.loads((runs / "night-1" / "desktop" / "batch-001.report.json").read_text(encoding="utf-8"))
    assert report["overall"]["success"] == 1


def test_attach_adds_to_an_existing_run(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    now = dt.datetime.now(dt.UTC).isoformat()
    RunStore.create(runs, Manifest(run_id="r1", created_at=now, notes=["android lane ran first"]))
    outcome = farm("desktop", "attach", "r1", _batch(tmp_path), "--runs-dir", runs)
    assert outcome.code == 0, outcome.stderr
    manifest = load(runs / "r1")
    assert manifest.notes == ["android lane ran first"]
    assert [entry.lane for entry in manifest.lanes] == ["desktop"]


def test_attach_keeps_every_record_of_the_run_it_joins(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    before = run_of_other_lanes(runs, "r1", ["android", "web", "webvoyager"])
    outcome = farm("desktop", "attach", "r1", _batch(tmp_path), "--runs-dir", runs)
    assert outcome.code == 0, outcome.stderr
    assert (runs / "r1" / "records.jsonl").read_bytes() == before
    assert [entry.lane for entry in load(runs / "r1").lanes] == ["android", "web", "webvoyager", "desktop"]


def test_attach_refuses_the_same_batch_twice(tmp_path: Path) -> None:
    batch = _batch(tmp_path)
    runs = tmp_path / "runs"
    assert farm("desktop", "attach", "r1", batch, "--runs-dir", runs).code == 0
    before = (runs / "r1" / "desktop" / "batch-001.report.md").read_bytes()
    outcome = farm("desktop", "attach", "r1", batch, "--runs-dir", runs)
    assert outcome.code == 2 and "already attached" in outcome.stderr
    assert (runs / "r1" / "desktop" / "batch-001.report.md").read_bytes() == before


def test_attach_refuses_a_run_id_with_a_path(tmp_path: Path) -> None:
    outcome = farm("desktop", "attach", "../escape", _batch(tmp_path), "--runs-dir", tmp_path / "runs")
    assert outcome.code == 2 and "not a plain directory name" in outcome.stderr
    assert not (tmp_path / "escape").exists()


def test_attach_rebuilds_the_runs_current_report_with_the_batch_and_archives_the_one_before(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run_dir = write_run(runs, "r1", [record("calc-add", run="r1"), record("notes-new", run="r1", passed=False)],
                        phones=[("SER1", "Pixel 7")])
    current_report(run_dir)  # the android run's report
    outcome = farm("desktop", "attach", "r1", _batch(tmp_path), "--runs-dir", runs)
    assert outcome.code == 0, outcome.stderr
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    assert "Desktop batch batch-001" in report and "calc-add" in report
    (archived,) = (run_dir / "reports").iterdir()
    assert (archived / "headline.json").is_file() and (archived / "report.md").is_file()
    written = read_headline(run_dir)
    # The batch's slots are its section's numbers: attaching writes no record, so the headline is the records'.
    assert written is not None and (written.overall.planned, written.overall.attempted) == (2, 2)
    assert outcome.stdout.splitlines()[-5:] == [f"run r1: {written.text}", *(str(run_dir / name) for name in (
        "report.md", "report.html", "junit.xml", "scores.csv"))]
