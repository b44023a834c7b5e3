"""`farm desktop attach`: the batch joins a run manifest and its reports land in runs/<run>/desktop/."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from farm.desktop.batch import record_result
from farm.manifest import Manifest, load
from farm.results.store import RunStore
from tests.helpers.desktop import farm, planned_batch, write_result
from tests.helpers.records import run_of_other_lanes


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
