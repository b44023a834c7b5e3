"""Builders for runs whose manifests record what they measured (lanes and their settings, planned units, task
versions), for the comparison and "since" tests."""

from __future__ import annotations

from pathlib import Path

from pydantic import JsonValue

from farm import manifest
from farm.results.record import Record
from tests.helpers.records import record, write_run

PHONES = [("SER1", "Pixel 8"), ("SER2", "Galaxy")]


def set_lanes(run_dir: Path, *lanes: manifest.LaneEntry) -> Path:
    """Replace the run's lanes in its manifest."""
    manifest.update(run_dir, lambda m: setattr(m, "lanes", list(lanes)))
    return run_dir


def android(**detail: JsonValue) -> manifest.LaneEntry:
    """An android lane entry with these detail settings."""
    return manifest.LaneEntry(lane="android", detail=dict(detail))


def set_tasks(run_dir: Path, versions: dict[str, str]) -> Path:
    """The run's task selection: task id → a one-character content version (the hash is that character × 64)."""
    tasks = [manifest.TaskEntry(id=t, sha256=v * 64) for t, v in versions.items()]
    manifest.update(run_dir, lambda m: setattr(m, "tasks", tasks))
    return run_dir


def mixed_records(run: str, *, flip: bool = False) -> list[Record]:
    """A run with something of every kind in its headline: passes, failures, an error, a skip and a hidden-able
    holdout unit; `flip` turns the failures into passes and back."""
    return [
        record("p1", run=run, device="SER1", passed=not flip), record("p2", run=run, device="SER2", passed=flip),
        record("p3", run=run, device="SER1"), record("e1", run=run, device="SER2", passed=False, outcome="error",
                                                     reasons=["adb lost"]),
        record("s1", run=run, device="SER1", passed=False, outcome="skipped", reasons=["capability missing"]),
        record("h1", run=run, device="SER1", partition="holdout", passed=flip),
    ]


def mixed_run(runs: Path, run_id: str, detail: dict[str, JsonValue], *, flip: bool = False,
              planned: dict[str, JsonValue] | None = None) -> Path:
    """A run of `mixed_records` whose android lane records `detail` and planned `planned` units per pool (more
    than it has records for: the rest are unfinished)."""
    run_dir: Path = write_run(runs, run_id, mixed_records(run_id, flip=flip), PHONES)
    lane_detail: dict[str, JsonValue] = {**detail}
    if planned is not None:
        lane_detail["planned_units"] = planned
    return set_lanes(run_dir, android(**lane_detail))


def impossible_pair(runs: Path, detail_a: dict[str, JsonValue] | None = None,
                    detail_b: dict[str, JsonValue] | None = None) -> tuple[Path, Path]:
    """Two runs of one impossible task (expected outcome: failed). In A the agent reports failed and passes; in B
    it reports failed too and does not pass (a check failed): the outcome stays, the verdict regressed."""
    a = write_run(runs, "ra", [record("imp", run="ra", category="impossible", expect="failed", outcome="failed",
                                      passed=True)], PHONES)
    b = write_run(runs, "rb", [record("imp", run="rb", category="impossible", expect="failed", outcome="failed",
                                      passed=False, reasons=["did not say it is impossible"])], PHONES)
    return set_lanes(a, android(**(detail_a or {}))), set_lanes(b, android(**(detail_b or {})))
