"""The web lane joining a run other lanes already wrote: their records and manifest entries stay. One scripted
one-task run on Playwright serves every test (they only read it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from farm.manifest import load
from tests.helpers.shared_run import OTHER_LANES, run_of_other_lanes
from web_bench.paired.lane import ModelChoice, run_lane
from web_bench.paired.matrix import plan


@dataclass(frozen=True)
class Joined:
    run_dir: Path
    before: bytes
    """records.jsonl as the other lanes left it."""


@pytest.fixture(scope="module")
def joined(tmp_path_factory: pytest.TempPathFactory) -> Joined:
    runs = tmp_path_factory.mktemp("web-shared") / "runs"
    store = run_of_other_lanes(runs, "shared")
    before = store.records.read_bytes()
    run_lane(plan(["order_lookup"], [1], 1, ["playwright"]), run_id="shared", runs_dir=runs, output=None,
             policy_kind="scripted", choice=ModelChoice(), timeout_ms=60_000)
    return Joined(store.run_dir, before)


def test_the_other_lanes_records_stay_byte_for_byte_before_the_web_record(joined: Joined) -> None:
    after = (joined.run_dir / "records.jsonl").read_bytes()
    assert after.startswith(joined.before)
    assert len(after.splitlines()) == len(joined.before.splitlines()) + 1


def test_the_manifest_keeps_the_other_lanes_entries_and_adds_the_web_lane(joined: Joined) -> None:
    assert [lane.lane for lane in load(joined.run_dir).lanes] == [*OTHER_LANES, "web"]
