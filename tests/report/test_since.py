"""What changed since the previous comparable run (the line under a run report's headline)."""

from pathlib import Path

from pydantic import JsonValue

from farm import manifest
from farm.report.since import previous_comparable, since_previous
from tests.helpers.compare_runs import android, set_lanes, set_tasks
from tests.helpers.nights import night_records, write_night


def _night(runs: Path, run_id: str, day: int, verdicts: dict[tuple[str, str], bool | str], **kw: object) -> Path:
    return write_night(runs, run_id, night_records(run_id, verdicts), day=day, **kw)  # type: ignore[arg-type]


def _set_lane(run_dir: Path, **detail: JsonValue) -> None:
    set_lanes(run_dir, android(**detail))


HOLDOUT_PLANNED: dict[str, JsonValue] = {"tune": 1, "holdout": 1}
"""A run of split all that planned holdout units."""


def test_the_newest_older_run_is_the_previous_one(tmp_path: Path) -> None:
    _night(tmp_path, "n1", 1, {("a", "P1"): True})
    _night(tmp_path, "n2", 2, {("a", "P1"): True})
    _night(tmp_path, "n4", 4, {("a", "P1"): True})  # newer than the run reported on: never its "previous"
    now = _night(tmp_path, "n3", 3, {("a", "P1"): True})
    found = previous_comparable(now)
    assert found is not None and found[1].run_id == "n2"


def test_regressions_and_fixes_are_counted_and_named(tmp_path: Path) -> None:
    _night(tmp_path, "n1", 1, {("a", "P1"): True, ("b", "P1"): False, ("c", "P1"): True})
    now = _night(tmp_path, "n2", 2, {("a", "P1"): False, ("b", "P1"): True, ("c", "P1"): True})
    since = since_previous(now)
    assert since is not None
    assert (since.previous_run, since.paired, since.regressions, since.fixes) == ("n1", 3, 1, 1)
    assert since.regressed == ["a on Pixel 8 · P1"] and since.fixed == ["b on Pixel 8 · P1"]
    assert (since.previous.attempted, since.previous.passed) == (3, 2)


def test_an_error_or_skip_is_neither_a_regression_nor_a_fix(tmp_path: Path) -> None:
    _night(tmp_path, "n1", 1, {("a", "P1"): True, ("b", "P1"): "skipped"})
    now = _night(tmp_path, "n2", 2, {("a", "P1"): "error", ("b", "P1"): True})
    since = since_previous(now)
    assert since is not None and (since.regressions, since.fixes, since.paired) == (0, 0, 0)


def test_another_label_is_not_comparable(tmp_path: Path) -> None:
    _night(tmp_path, "n1", 1, {("a", "P1"): True}, label="weekly")
    now = _night(tmp_path, "n2", 2, {("a", "P1"): False})
    assert previous_comparable(now) is None and since_previous(now) is None


def test_another_split_or_executor_is_not_comparable(tmp_path: Path) -> None:
    old = _night(tmp_path, "n1", 1, {("a", "P1"): True})
    now = _night(tmp_path, "n2", 2, {("a", "P1"): False})
    _set_lane(old, split="tune", executor="host")
    _set_lane(now, split="tune", executor="instrument")
    assert previous_comparable(now) is None
    _set_lane(old, split="tune", executor="instrument")
    assert previous_comparable(now) is not None


def test_a_run_with_no_task_in_common_is_not_comparable(tmp_path: Path) -> None:
    old = _night(tmp_path, "n1", 1, {("a", "P1"): True})
    now = _night(tmp_path, "n2", 2, {("b", "P1"): True})
    manifest.update(old, lambda m: setattr(m, "tasks", [manifest.TaskEntry(id="a", sha256="0" * 64)]))
    manifest.update(now, lambda m: setattr(m, "tasks", [manifest.TaskEntry(id="b", sha256="1" * 64)]))
    assert previous_comparable(now) is None


def test_a_damaged_neighbour_is_passed_over(tmp_path: Path) -> None:
    _night(tmp_path, "n1", 1, {("a", "P1"): True})
    broken = _night(tmp_path, "n2", 2, {("a", "P1"): True})
    manifest.manifest_path(broken).write_text("{not json", encoding="utf-8")
    now = _night(tmp_path, "n3", 3, {("a", "P1"): True})
    found = previous_comparable(now)
    assert found is not None and found[1].run_id == "n1"


def test_the_first_run_has_no_previous(tmp_path: Path) -> None:
    now = _night(tmp_path, "n1", 1, {("a", "P1"): True})
    assert since_previous(now) is None


def test_another_host_policy_is_not_comparable(tmp_path: Path) -> None:
    old = _night(tmp_path, "n1", 1, {("a", "P1"): True})
    now = _night(tmp_path, "n2", 2, {("a", "P1"): False})
    _set_lane(old, executor="host", request={"host": {"policy": "scripted"}})
    _set_lane(now, executor="host", request={"host": {"policy": "model", "model": "m1"}})
    assert previous_comparable(now) is None and since_previous(now) is None


def test_another_task_selection_is_not_comparable(tmp_path: Path) -> None:
    old = _night(tmp_path, "n1", 1, {("a", "P1"): True})
    now = _night(tmp_path, "n2", 2, {("a", "P1"): False})
    _set_lane(old, split="tune", request={"selection": None})
    _set_lane(now, split="tune", request={"selection": {"sets": ["read"], "only_ids": ["a"], "only_from": "n1"}})
    assert previous_comparable(now) is None


def test_another_suite_version_is_not_comparable(tmp_path: Path) -> None:
    old = _night(tmp_path, "n1", 1, {("a", "P1"): True})
    now = _night(tmp_path, "n2", 2, {("a", "P1"): False})
    set_lanes(old, manifest.LaneEntry(lane="web", detail={"suiteVersion": 1, "policy": "scripted"}))
    set_lanes(now, manifest.LaneEntry(lane="web", detail={"suiteVersion": 2, "policy": "scripted"}))
    assert previous_comparable(now) is None


def test_another_holdout_policy_is_not_comparable(tmp_path: Path) -> None:
    old = _night(tmp_path, "n1", 1, {("a", "P1"): True})
    now = _night(tmp_path, "n2", 2, {("a", "P1"): False})
    for run in (old, now):
        _set_lane(run, split="all", planned_units=HOLDOUT_PLANNED)
    # Both reports count the holdout pool each planned: comparable.
    assert previous_comparable(now) is not None
    # This report hides it, the previous run's own report counted it: not the same numbers.
    assert previous_comparable(now, include_holdout=False) is None
    assert since_previous(now, include_holdout=False) is None


def test_a_run_that_planned_no_holdout_is_not_comparable_with_one_that_did(tmp_path: Path) -> None:
    old = _night(tmp_path, "n1", 1, {("a", "P1"): True})
    now = _night(tmp_path, "n2", 2, {("a", "P1"): False})
    _set_lane(old, split="all", planned_units={"tune": 1})
    _set_lane(now, split="all", planned_units=HOLDOUT_PLANNED)
    assert previous_comparable(now) is None


def test_the_row_says_what_it_compared(tmp_path: Path) -> None:
    old = _night(tmp_path, "n1", 1, {("a", "P1"): True})
    now = _night(tmp_path, "n2", 2, {("a", "P1"): False})
    for run in (old, now):
        _set_lane(run, split="all", set="read", executor="instrument", planned_units=HOLDOUT_PLANNED)
    since = since_previous(now)
    assert since is not None
    assert since.compared == ("same label nightly; lane android: executor instrument, split all, set read;"
                              " holdout counted")


def test_a_task_whose_file_changed_is_not_paired(tmp_path: Path) -> None:
    old = _night(tmp_path, "n1", 1, {("a", "P1"): True, ("b", "P1"): True})
    now = _night(tmp_path, "n2", 2, {("a", "P1"): False, ("b", "P1"): False})
    set_tasks(old, {"a": "0", "b": "0"})
    set_tasks(now, {"a": "0", "b": "1"})
    since = since_previous(now)
    assert since is not None
    assert (since.paired, since.regressions, since.regressed, since.tasks_changed) == (1, 1, ["a on Pixel 8 · P1"], 1)


def test_a_run_with_no_task_in_common_at_the_same_version_is_not_comparable(tmp_path: Path) -> None:
    old = _night(tmp_path, "n1", 1, {("a", "P1"): True})
    now = _night(tmp_path, "n2", 2, {("a", "P1"): False})
    set_tasks(old, {"a": "0"})
    set_tasks(now, {"a": "1"})
    assert previous_comparable(now) is None
