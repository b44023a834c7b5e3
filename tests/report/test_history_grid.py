"""The task × night grid of `farm history`: a row per task, a cell per night, links to reports and run records."""

from __future__ import annotations

from pathlib import Path

from farm.report.history_data import History, build_history, load_history
from farm.report.history_grid import GRID_NIGHTS, MAX_CELL_UNITS, MAX_TASK_ROWS, evidence_link
from farm.report.history_model import TaskRow
from tests.helpers.history_nights import history, mem_night, name, on_phones, passes
from tests.helpers.nights import night_records, write_night


def _row(h: History, task: str) -> TaskRow:
    (row,) = [t for t in h.tasks if t.task_id == task]
    return row


def _counts(row: TaskRow) -> list[tuple[str, int, int, int, int]]:
    return [(c.run_id, c.passed, c.judged, c.errors, c.skipped) for c in row.cells]


def test_a_row_per_task_and_a_cell_per_night_count_passed_of_judged() -> None:
    h = history(passes("t", 5), on_phones("t", [True, "error", "skipped", False]))
    assert h.task_nights == ["n1", "n2"]
    assert _counts(_row(h, "t")) == [("n1", 5, 6, 0, 0), ("n2", 1, 2, 1, 1)]
    assert (h.tasks_more, _row(h, "t").category) == (0, "read/system")


def test_a_night_without_the_task_has_an_empty_cell() -> None:
    h = history(passes("t", 6), passes("u", 6))
    assert _counts(_row(h, "u")) == [("n1", 0, 0, 0, 0), ("n2", 6, 6, 0, 0)]


def test_flaky_and_regressed_tasks_come_first_then_by_task_id() -> None:
    steady = {**passes("a-ok", 6), **passes("b-ok", 0)}
    h = history({**steady, **passes("z-reg", 6), **passes("y-flaky", 3)},
                {**steady, **passes("z-reg", 5), **passes("y-flaky", 3)})
    assert [(t.task_id, t.flaky, t.regressed) for t in h.tasks] == [
        ("y-flaky", True, False), ("z-reg", True, True), ("a-ok", False, False), ("b-ok", False, False)]


def test_a_cell_lists_the_units_that_did_not_pass_by_phone() -> None:
    h = history(on_phones("t", [True, [False, True], "error"]))
    (cell,) = _row(h, "t").cells
    assert [(u.phone, u.repeat, u.status, u.reason) for u in cell.units] == [
        (name("S2"), 1, "failed", "failed"), (name("S3"), 1, "error", "error on S3")]


def test_a_night_built_in_memory_links_nothing() -> None:
    h = history(passes("t", 3))
    assert (h.nights[0].run_dir, h.nights[0].report) == (None, None)
    assert {u.evidence for u in h.tasks[0].cells[0].units} == {None}


def test_units_link_their_run_record_under_the_nights_run_directory(tmp_path: Path) -> None:
    night = mem_night("n1", passes("t", 5), run_dir=tmp_path / "n1")
    h = build_history([night], runs_dir=str(tmp_path))
    (unit,) = h.tasks[0].cells[0].units
    assert unit.evidence == "n1/android/S6/t/run"


def test_a_cell_lists_at_most_max_cell_units_units_and_counts_the_rest() -> None:
    h = history({("t", "S1"): [False] * (MAX_CELL_UNITS + 2)})
    (cell,) = h.tasks[0].cells
    assert (len(cell.units), cell.units_more) == (MAX_CELL_UNITS, 2)
    assert [u.repeat for u in cell.units] == list(range(1, MAX_CELL_UNITS + 1))


def test_an_evidence_path_going_up_absolute_or_with_control_characters_is_not_linked() -> None:
    for bad in ("../other/run", "a/../../x", "/etc/passwd", "a\\..\\..\\x", "a/\nb", ""):
        assert evidence_link("n1", bad) is None, bad
    assert evidence_link("n1", "android/P 1/t 'x\"/run") == "n1/android/P 1/t 'x\"/run"
    assert evidence_link(None, "android/P1/t/run") is None


def test_at_most_max_task_rows_tasks_are_shown_and_the_rest_counted() -> None:
    verdicts = {(f"t{i:04d}", "S1"): True for i in range(MAX_TASK_ROWS + 2)}
    h = history(verdicts, {**verdicts, ("t0501", "S1"): False})
    assert (len(h.tasks), h.tasks_more) == (MAX_TASK_ROWS, 2)
    # The regressed task sorts first though its id is last.
    assert [t.task_id for t in h.tasks[:2]] == ["t0501", "t0000"]


def test_the_columns_are_the_last_grid_nights_or_k_when_more() -> None:
    nights = [passes("t", 6)] * (GRID_NIGHTS + 3)
    assert history(*nights).task_nights == [f"n{i}" for i in range(4, GRID_NIGHTS + 4)]
    h = history(*nights, flaky_nights=GRID_NIGHTS + 2)
    assert len(h.task_nights) == len(h.tasks[0].cells) == GRID_NIGHTS + 2


def test_a_night_row_links_its_report_only_when_it_has_one(tmp_path: Path) -> None:
    for day in (1, 2):
        write_night(tmp_path, f"n{day}", night_records(f"n{day}", {("t", "G1"): True}), day=day)
    (tmp_path / "n2" / "report.html").write_text("<html></html>", encoding="utf-8")
    h = load_history(tmp_path)
    assert [(n.run_dir, n.report) for n in h.nights] == [("n1", None), ("n2", "n2/report.html")]


def test_history_read_from_disk_links_each_failed_unit_to_its_run_record(tmp_path: Path) -> None:
    write_night(tmp_path, "n1", night_records("n1", {("t", "G1"): True, ("t", "P1"): "error"}), day=1)
    write_night(tmp_path, "n2", night_records("n2", {("t", "G1"): False}), day=2)
    cells = load_history(tmp_path).tasks[0].cells
    assert [(u.phone, u.status, u.evidence) for c in cells for u in c.units] == [
        ("Pixel 8 · P1", "error", "n1/android/P1/t/run"), ("Galaxy S24 · G1", "failed", "n2/android/G1/t/run")]


def test_a_cell_opens_its_first_failure_else_its_first_error_else_its_first_pass(tmp_path: Path) -> None:
    write_night(tmp_path, "n1", night_records("n1", {("a", "G1"): True, ("a", "P1"): "error", ("a", "P2"): False,
                                                     ("b", "G1"): True, ("b", "P1"): "error",
                                                     ("c", "P1"): True, ("c", "P2"): True}), day=1)
    h = load_history(tmp_path)
    assert [_row(h, t).cells[0].unit for t in "abc"] == [
        "n1/android/P2/a/run", "n1/android/P1/b/run", "n1/android/P1/c/run"]
