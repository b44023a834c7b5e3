"""The registry of lane report sections knows no lane: nothing of a lane is imported with the report, and a
run whose lane has sections but no registered builder is refused, naming the lane and the missing call."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from farm.manifest import LaneEntry, Manifest, utc_now
from farm.report import lanes
from farm.results.store import RunStore


def _run_with_lane(runs: Path, lane: str) -> Path:
    manifest = Manifest(run_id="r", created_at=utc_now(), lanes=[LaneEntry.model_validate({"lane": lane})])
    return RunStore.create(runs, manifest).run_dir


def test_building_a_report_imports_no_lane() -> None:
    code = ("import sys, farm.report.build, farm.report.writers, farm.report.lanes; "
            "print(sorted(m for m in sys.modules if m.startswith(('web_bench', 'farm.desktop', 'farm.lane_plugins'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_lane_with_sections_and_no_registered_builder_is_refused(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lanes, "_BUILDERS", {})
    run_dir = _run_with_lane(tmp_path, "webvoyager")
    with pytest.raises(lanes.LaneSectionsNotInstalled, match=r"'webvoyager'.*farm\.lane_plugins\.install\(\)"):
        lanes.lane_sections([run_dir])


def test_a_lane_without_sections_needs_no_builder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lanes, "_BUILDERS", {})
    assert lanes.lane_sections([_run_with_lane(tmp_path, "android")]) == []


def test_install_registers_every_lane_that_has_sections() -> None:
    from farm.lane_plugins import install

    install()
    assert lanes.SECTIONED_LANES <= set(lanes._BUILDERS)
