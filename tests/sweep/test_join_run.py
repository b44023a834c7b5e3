"""`farm run --run R` on a run other lanes made: the android lane joins it and every record there stays."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm import manifest as mf
from farm.android.options import AgentOptions
from farm.errors import FarmError
from farm.report.headline import read_headline
from farm.results.store import RunStore
from farm.sweep.dev_run import run, run_request
from tests.helpers.records import run_of_other_lanes, write_tasks


def _request(tmp_path: Path, run_id: str) -> object:
    tasks = tmp_path / "tasks"
    if not tasks.exists():
        write_tasks(tasks)
    return run_request(agent=AgentOptions(split="tune"), run_id=run_id, tasks_dir=tasks, runs_dir=tmp_path / "runs",
                       show_progress=False, config=None, idle_timeout_s=60)


def test_an_android_run_joins_a_run_of_other_lanes_and_keeps_their_records(virtual_farm, tmp_path: Path) -> None:
    virtual_farm(1)
    before = run_of_other_lanes(tmp_path / "runs", "R", ["web", "webvoyager", "desktop"])
    result = run(_request(tmp_path, "R"))  # type: ignore[arg-type]
    store = RunStore(result.run_dir)
    assert store.records.read_bytes().startswith(before)
    lanes = [r.lane for r in store.iter_records()]
    assert lanes[:3] == ["web", "webvoyager", "desktop"] and set(lanes[3:]) == {"android"}
    manifest = store.manifest()
    assert [e.lane for e in manifest.lanes] == ["web", "webvoyager", "desktop", "android"]
    assert manifest.status == "finished" and manifest.tasks and manifest.phones
    # One number per run: the rate `farm run` reports is the run's headline, every lane's units in it.
    written = read_headline(result.run_dir)
    assert written is not None and result.rate == written.overall.rate
    assert written.overall.planned == len(lanes)


def test_a_run_that_already_has_the_android_lane_is_refused(virtual_farm, tmp_path: Path) -> None:
    virtual_farm(1)
    before = run_of_other_lanes(tmp_path / "runs", "R", ["android", "web"])
    with pytest.raises(FarmError, match="run already exists"):
        run(_request(tmp_path, "R"))  # type: ignore[arg-type]
    assert (tmp_path / "runs" / "R" / "records.jsonl").read_bytes() == before
    assert [e.lane for e in mf.load(tmp_path / "runs" / "R").lanes] == ["android", "web"]
