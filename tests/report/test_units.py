"""One identity per unit: (run, lane, device, task, instance, repeat); its latest attempt is the one shown."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

from farm.report.aggregate import aggregate
from farm.report.junit import render_junit
from farm.report.writers import render_csv
from farm.results.store import RECORDS_FILE
from tests.helpers.records import record, write_run

BACKENDS = ("playwright", "cdp")
SEEDS = ("1", "2", "3", "4", "5")


def _matrix(tmp_path: Path) -> Path:
    """6 tasks × 2 backends × 5 seeds; seed 5 fails everywhere, seed 4 fails on one backend."""
    recs = [
        record(f"w{t}", run="web", lane="web", device=backend, instance=seed,
               passed=not (seed == "5" or (seed == "4" and backend == "cdp")))
        for t in range(6) for backend in BACKENDS for seed in SEEDS
    ]
    return write_run(tmp_path, "web", recs)


def test_a_web_matrix_keeps_every_seed_and_backend_as_its_own_unit(tmp_path: Path) -> None:
    d = aggregate([_matrix(tmp_path)]).data
    assert (d.overall.planned, d.overall.attempted, d.overall.passed) == (60, 60, 42)
    assert d.failures_total == 18
    by_seed = {(f.instance, f.device) for f in d.failures}
    assert by_seed == {("4", "cdp"), ("5", "cdp"), ("5", "playwright")}  # backends keep their names


def test_repeats_are_distinct_units(tmp_path: Path) -> None:
    recs = [record("t", run="r", repeat=k, passed=k != 2) for k in (1, 2, 3)]
    d = aggregate([write_run(tmp_path, "r", recs)]).data
    assert (d.overall.attempted, d.overall.passed) == (3, 2)
    assert [(f.task_id, f.repeat) for f in d.failures] == [("t", 2)]


def test_the_latest_attempt_of_each_unit_is_shown(tmp_path: Path) -> None:
    recs = [
        record("t", run="r", instance="1", passed=False, outcome="error", attempt=1),
        record("t", run="r", instance="1", passed=True, attempt=2),
        record("t", run="r", instance="2", passed=False, attempt=1),
    ]
    d = aggregate([write_run(tmp_path, "r", recs)]).data
    assert (d.overall.attempted, d.overall.passed, d.overall.errors) == (2, 1, 0)
    assert [(f.instance, f.outcome) for f in d.failures] == [("2", "failed")]


def test_an_attempt_written_twice_counts_once_and_the_last_line_wins(tmp_path: Path) -> None:
    recs = [
        record("t", run="r", instance="1", passed=True),
        record("t", run="r", instance="2", passed=False),
        record("t", run="r", instance="1", passed=False),
        record("t", run="r", instance="2", passed=True),
    ]
    run_dir = write_run(tmp_path, "r", recs)
    for cache_min_bytes in (0, 1 << 30):
        d = aggregate([run_dir], cache_min_bytes=cache_min_bytes).data
        assert (d.overall.planned, d.overall.passed) == (2, 1)
        assert [f.instance for f in d.failures] == ["1"]


def test_records_without_instance_and_repeat_are_the_default_unit(tmp_path: Path) -> None:
    old = record("t", run="r", passed=False, outcome="error").model_dump(mode="json")
    del old["instance"], old["repeat"]
    run_dir = write_run(tmp_path, "r", [])
    newer = record("t", run="r", passed=True, attempt=2).model_dump_json()
    (run_dir / RECORDS_FILE).write_text(json.dumps(old) + "\n" + newer + "\n", encoding="utf-8")
    d = aggregate([run_dir]).data
    assert (d.overall.planned, d.overall.passed, d.overall.errors) == (1, 1, 0)


def test_scores_csv_rows_carry_instance_and_repeat(tmp_path: Path) -> None:
    recs = [record("t", run="r", instance=i, repeat=k) for i in ("1", "2") for k in (1, 2)]
    rows = list(csv.DictReader(io.StringIO(render_csv(aggregate([write_run(tmp_path, "r", recs)])).lstrip("\ufeff"))))
    assert [(r["task_id"], r["instance"], r["repeat"]) for r in rows] == [
        ("t", "1", "1"), ("t", "1", "2"), ("t", "2", "1"), ("t", "2", "2"),
    ]


def test_junit_names_each_instance_and_repeat(tmp_path: Path) -> None:
    recs = [record("t", run="r", instance=i, repeat=k, passed=False) for i in ("1", "2") for k in (1, 2)]
    root = ET.fromstring(render_junit(aggregate([write_run(tmp_path, "r", recs)])))
    names = [c.get("name") for c in root.iter("testcase")]
    assert names == ["t [instance 1, repeat 1]", "t [instance 1, repeat 2]",
                     "t [instance 2, repeat 1]", "t [instance 2, repeat 2]"]
    assert len(root.findall(".//failure")) == 4


def test_junit_names_stay_task_ids_for_single_instance_units(tmp_path: Path) -> None:
    root = ET.fromstring(render_junit(aggregate([write_run(tmp_path, "r", [record("a", run="r")])])))
    assert [c.get("name") for c in root.iter("testcase")] == ["a"]


def test_comparison_pairs_units_by_instance_and_repeat(tmp_path: Path) -> None:
    a = write_run(tmp_path, "ra", [record("t", run="ra", instance=i, passed=i == "1") for i in ("1", "2")])
    b = write_run(tmp_path, "rb", [record("t", run="rb", instance=i, passed=i == "2") for i in ("1", "2")])
    c = aggregate([a, b]).data.comparison
    assert c is not None
    assert (c.units, c.both, c.only_a, c.only_b, c.neither) == (2, 0, 1, 1, 0)
