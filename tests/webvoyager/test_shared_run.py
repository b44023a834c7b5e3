"""The WebVoyager lane joining a run other lanes already wrote: their records stay the exact prefix of
records.jsonl, the manifest keeps their entries, and every later `finish` (a re-judge, a report rebuild) only
appends superseding lines, which `farm report` reads as one unit per task (the later line wins); each `finish`
rebuilds the run's current report, archiving the one before.

One module run serves every test (they only read its snapshots): the lane runs one task that passes, the
judge is reset and the task re-judged as failing, then the lane report is rebuilt."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from farm.llm.stub import StubReply
from farm.manifest import load
from farm.report.headline import read_headline
from tests.helpers.cli import farm
from tests.helpers.shared_run import OTHER_LANES, run_of_other_lanes
from tests.helpers.wv_lane import SIX, run, stub_models, wv_data
from web_bench.webvoyager import reset_judge
from web_bench.webvoyager.lane import rebuild_report

__all__ = ["wv_data"]

_TASK = SIX[0]


@dataclass(frozen=True)
class Snapshots:
    run_dir: Path
    others: bytes
    """records.jsonl as the other lanes left it."""
    ran: bytes
    """After the lane's run."""
    rejudged: bytes
    """After the judge was reset and the task re-judged (failing)."""
    rebuilt: bytes
    """After `farm webvoyager report` rebuilt the lane's files."""


def _fail(body: dict[str, object]) -> StubReply:
    return StubReply(text=json.dumps([{"task_id": _TASK, "pass": False, "reason": "re-judged as failing"}]))


@pytest.fixture(scope="module")
def snaps(tmp_path_factory: pytest.TempPathFactory, wv_data: Path) -> Iterator[Snapshots]:
    tmp = tmp_path_factory.mktemp("wv-shared")
    store = run_of_other_lanes(tmp / "runs", "wv-t")
    others = store.records.read_bytes()
    with pytest.MonkeyPatch.context() as monkeypatch, stub_models(monkeypatch) as (_stub, scenario):
        first = run(tmp, wv_data, ids=[_TASK])
        assert first.exit_status == 0, first.lines
        ran = store.records.read_bytes()
        reset_judge.execute(first.root, reset_judge.plan(first.root))
        scenario.judge_override = _fail
        again = run(tmp, wv_data, ids=[_TASK], judge_only=True)
        assert again.exit_status == 1, again.lines
        rejudged = store.records.read_bytes()
        rebuild_report(first.root, wv_data)
    yield Snapshots(store.run_dir, others, ran, rejudged, store.records.read_bytes())


def test_the_other_lanes_records_stay_the_exact_prefix(snaps: Snapshots) -> None:
    for later in (snaps.ran, snaps.rejudged, snaps.rebuilt):
        assert later.startswith(snaps.others)
    assert len(snaps.ran.splitlines()) == len(snaps.others.splitlines()) + 1


def test_the_manifest_keeps_the_other_lanes_entries_and_adds_webvoyager(snaps: Snapshots) -> None:
    assert [lane.lane for lane in load(snaps.run_dir).lanes] == [*OTHER_LANES, "webvoyager"]


def test_a_rejudge_appends_one_superseding_line(snaps: Snapshots) -> None:
    assert snaps.rejudged.startswith(snaps.ran)
    (added,) = snaps.rejudged[len(snaps.ran):].splitlines()
    line = json.loads(added)
    assert (line["lane"], line["task_id"], line["outcome"]) == ("webvoyager", _TASK, "failed")


def test_a_rebuild_of_unchanged_views_appends_nothing_and_never_shortens(snaps: Snapshots) -> None:
    assert snaps.rebuilt == snaps.rejudged


def test_farm_report_counts_the_task_once_with_its_latest_line(snaps: Snapshots, tmp_path: Path) -> None:
    built = farm(tmp_path, "report", str(snaps.run_dir), "--out", str(tmp_path / "out"), "--json")
    assert built.returncode == 0, built.stderr
    headline = json.loads(built.stdout)["headline"]
    # android passed, desktop failed, the WebVoyager task failed on its re-judge (its first line passed).
    assert (headline["attempted"], headline["passed"]) == (3, 1)


def test_the_runs_current_report_counts_the_task_with_its_latest_verdict(snaps: Snapshots) -> None:
    written = read_headline(snaps.run_dir)
    assert written is not None
    # android passed, desktop failed, the WebVoyager task failed on its re-judge: as `farm report` counts them.
    assert (written.overall.planned, written.overall.attempted, written.overall.passed) == (3, 3, 1)
    assert written.text in (snaps.run_dir / "report.md").read_text(encoding="utf-8")


def test_each_finish_archives_the_current_report_before_it(snaps: Snapshots) -> None:
    # The run, the re-judge and the rebuild each wrote one: the first two are archived.
    archived = sorted((snaps.run_dir / "reports").iterdir())
    assert len(archived) == 2 and all((a / "report.md").is_file() for a in archived)
