"""A run's units: readable unique keys, the latest try, and which unit a report link names."""

from __future__ import annotations

from pathlib import Path

from farm.results.store import RECORDS_FILE, append_records
from farm.view.units import load_units
from tests.helpers.records import record, write_run


def test_keys_are_readable_unique_and_safe_as_one_url_segment(tmp_path: Path) -> None:
    recs = [record("calc", run="r", device="127.0.0.1:5555"), record("calc", run="r", device="127.0.0.1_5555"),
            record("calc", run="r", device="127.0.0.1:5555", repeat=2, instance="7"),
            record("../../etc", run="r", device="a/b")]
    run_dir = write_run(tmp_path, "r", recs)
    keys = [u.key for u in load_units(run_dir).units]
    assert keys == ["calc.127.0.0.1_5555.a1", "calc.127.0.0.1_5555.a1-2", "calc.127.0.0.1_5555.i7.r2.a1",
                    "etc.a_b.a1"]


def test_an_attempt_written_twice_is_one_unit_with_the_later_line(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, "r", [record("calc", run="r", passed=False)])
    append_records(run_dir / RECORDS_FILE, [record("calc", run="r", passed=True)])
    units = load_units(run_dir).units
    assert [(u.key, u.verdict) for u in units] == [("calc.SER1.a1", "pass")]


def test_an_earlier_try_is_not_the_latest_and_errors_are_their_own_verdict(tmp_path: Path) -> None:
    recs = [record("calc", run="r", outcome="error", passed=False), record("calc", run="r", attempt=2)]
    units = load_units(write_run(tmp_path, "r", recs)).units
    assert [(u.verdict, u.latest) for u in units] == [("error", False), ("pass", True)]


def test_a_link_to_a_run_record_its_try_directory_or_a_file_in_it_names_that_unit_only(tmp_path: Path) -> None:
    recs = [record("a", run="r", evidence="android/S/units/a.try1/a/run"),
            record("b", run="r", evidence="android/S/units/b.try1/b/run")]
    run_dir = write_run(tmp_path, "r", recs)
    for rec in recs:
        Path(run_dir, str(rec.evidence)).mkdir(parents=True)
    index = load_units(run_dir)
    named = {rel: [u.record.task_id for u in index.under(rel)] for rel in (
        "android/S/units/a.try1/a/run", "android/S/units/a.try1", "android/S/units/a.try1/a/run/steps.jsonl",
        "android/S/units/a.try10", "android/S/units", "")}
    assert named == {"android/S/units/a.try1/a/run": ["a"], "android/S/units/a.try1": ["a"],
                     "android/S/units/a.try1/a/run/steps.jsonl": ["a"], "android/S/units/a.try10": [],
                     "android/S/units": ["a", "b"], "": []}


def test_a_torn_records_line_is_a_problem_and_the_other_units_load(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, "r", [record("calc", run="r")])
    with (run_dir / RECORDS_FILE).open("a", encoding="utf-8") as fh:
        fh.write('{"schema_version": 1, "run": "r", "lane": "andr')
    index = load_units(run_dir)
    assert [u.key for u in index.units] == ["calc.SER1.a1"]
    assert len(index.problems) == 1 and "torn last line" in index.problems[0]


def test_a_link_opens_a_unit_from_its_run_record_or_the_two_directories_above_it_only(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, "r", [record("a", run="r", evidence="android/S/units/a.try1/a/run")])
    Path(run_dir, "android/S/units/a.try1/a/run").mkdir(parents=True)
    index = load_units(run_dir)
    opened = {rel: index.named_by(rel) is not None for rel in (
        "android/S/units/a.try1/a/run", "android/S/units/a.try1/a", "android/S/units/a.try1", "android/S/units",
        "android", "")}
    assert opened == {"android/S/units/a.try1/a/run": True, "android/S/units/a.try1/a": True,
                      "android/S/units/a.try1": True, "android/S/units": False, "android": False, "": False}
