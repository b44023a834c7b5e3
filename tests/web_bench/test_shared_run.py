"""The web lane joining a run other lanes already wrote: their records and manifest entries stay, and the run's
current report is rebuilt to count the web unit (the one before archived). One scripted one-task run on
Playwright serves every test (they only read it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from farm.lane_plugins import current_report
from farm.manifest import load
from farm.report.headline import read_headline
from tests.helpers.shared_run import OTHER_LANES, run_of_other_lanes
from web_bench.paired.lane import ModelChoice, run_lane
from web_bench.paired.matrix import plan


@dataclass(frozen=True)
class Joined:
    run_dir: Path
    before: bytes
    """records.jsonl as the other lanes left it."""
    earlier: str
    """report.md as the other lanes left it."""


@pytest.fixture(scope="module")
def joined(tmp_path_factory: pytest.TempPathFactory) -> Joined:
    runs = tmp_path_factory.mktemp("web-shared") / "runs"
    store = run_of_other_lanes(runs, "shared")
    before = store.records.read_bytes()
    current_report(store.run_dir)  # the report the other lanes left
    earlier = (store.run_dir / "report.md").read_text(encoding="utf-8")
    run_lane(plan(["order_lookup"], [1], 1, ["playwright"]), run_id="shared", runs_dir=runs, output=None,
             policy_kind="scripted", choice=ModelChoice(), timeout_ms=60_000)
    return Joined(store.run_dir, before, earlier)


def test_the_other_lanes_records_stay_byte_for_byte_before_the_web_record(joined: Joined) -> None:
    after = (joined.run_dir / "records.jsonl").read_bytes()
    assert after.startswith(joined.before)
    assert len(after.splitlines()) == len(joined.before.splitlines()) + 1


def test_the_manifest_keeps_the_other_lanes_entries_and_adds_the_web_lane(joined: Joined) -> None:
    assert [lane.lane for lane in load(joined.run_dir).lanes] == [*OTHER_LANES, "web"]


def test_the_runs_current_report_counts_the_web_unit_beside_the_other_lanes(joined: Joined) -> None:
    written = read_headline(joined.run_dir)
    assert written is not None
    assert (written.overall.planned, written.overall.attempted) == (3, 3)
    report = (joined.run_dir / "report.md").read_text(encoding="utf-8")
    assert written.text in report and "order_lookup" in report
    assert (joined.run_dir / "web" / "results.report.md").is_file()  # the lane's own report stays


def test_the_report_before_the_web_lane_joined_is_archived_under_reports(joined: Joined) -> None:
    (archived,) = (joined.run_dir / "reports").iterdir()
    assert (archived / "report.md").read_text(encoding="utf-8") == joined.earlier
    assert "planned 2 ·" in joined.earlier and (archived / "headline.json").is_file()
