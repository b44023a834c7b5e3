"""A torn last line (a crash mid-append) or a corrupt line: reports and queries skip it and say so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from farm.report.aggregate import aggregate
from farm.report.build import build
from farm.results import duck
from farm.results.store import RECORDS_FILE
from tests.helpers.records import record, write_run

TORN = "torn last line (an append cut short, no newline at the end) skipped"


def _run(tmp_path: Path, *, middle: str | None = None, tail: str | None = None) -> Path:
    recs = [record("a", run="r"), record("b", run="r", passed=False), record("c", run="r")]
    run_dir = write_run(tmp_path, "r", recs, [("SER1", "Pixel 8")])
    path = run_dir / RECORDS_FILE
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    if middle is not None:
        lines.insert(1, middle)
    path.write_text("".join(lines) + (tail or ""), encoding="utf-8")
    return run_dir


def test_a_torn_last_line_is_skipped_and_named_in_every_report(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, tail='{"run": "r", "lane": "android", "task_')
    messages: list[str] = []
    paths = build([run_dir], on_warning=messages.append).paths
    assert messages == [f"r/records.jsonl:4: {TORN}"]
    md, html = (p.read_text(encoding="utf-8") for p in paths[:2])
    assert f"**Warning:** r/records.jsonl:4: {TORN}" in md
    assert f"Warning: r/records.jsonl:4: {TORN}" in html
    assert "planned 3 · skipped 0 · attempted 3 · errors 0 · passed 2" in md


def test_a_corrupt_line_in_the_middle_is_reported_not_hidden(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, middle='{"run": "r", "bro{"run": "r", "task_id": "x"}\n')
    d = aggregate([run_dir]).data
    assert d.warnings == ["r/records.jsonl:2: corrupt record line skipped"]
    assert (d.overall.planned, d.overall.passed) == (3, 2)


def test_blank_lines_do_not_shift_the_reported_line_number(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, middle="\n", tail="[1, 2]\n")
    assert aggregate([run_dir]).data.warnings == ["r/records.jsonl:5: corrupt record line skipped"]


def test_an_intact_file_gives_no_warning(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    assert aggregate([run_dir]).data.warnings == []
    assert duck.damaged_lines([run_dir]) == []


def test_the_records_view_skips_a_torn_line(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, tail='{"run": "r", "pa')
    names, rows = duck.query(duck.connect([run_dir]), "SELECT count(*), count(run) FROM records")
    assert rows == [(3, 3)]
    ((path, damage),) = duck.damaged_lines([run_dir])
    assert (path.name, damage.total, damage.lines, damage.torn_last_line) == (RECORDS_FILE, 1, [4], True)


def test_farm_query_works_on_a_torn_file_and_warns(tmp_path: Path) -> None:
    _run(tmp_path / "runs", tail='{"run": "r", "pa')
    code = "import sys; from farm.cli import main; main(sys.argv[1:])"
    proc = subprocess.run(
        [sys.executable, "-c", code, "query", "select count(*) as n from records"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "n\n3\n"  # piped: a header line and the row, tab-separated
    assert proc.stderr.strip() == f"warning: {Path('runs/r/records.jsonl')}:4: {TORN}"


def test_json_lines_that_are_not_records_are_damaged_too(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, middle='["not", "a", "record"]\n', tail='"nor this"\n')
    ((_, damage),) = duck.damaged_lines([run_dir])
    assert (damage.total, damage.lines, damage.torn_last_line) == (2, [2, 5], False)
    assert aggregate([run_dir]).data.warnings == [
        "r/records.jsonl:2: corrupt record line skipped", "r/records.jsonl:5: corrupt record line skipped",
    ]


def _huge_tokens_run(tmp_path: Path) -> Path:
    from farm.results.record import Tokens

    recs = [record(t, run="r", tokens=Tokens(input_new=1, cache_read=2, cache_write=3, output=4)) for t in "abc"]
    run_dir = write_run(tmp_path, "r", recs, [("SER1", "Pixel 8")])
    path = run_dir / RECORDS_FILE
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert '"output":4' in lines[1]
    lines[1] = lines[1].replace('"output":4', '"output":' + str(10**30))
    path.write_text("".join(lines), encoding="utf-8")
    return run_dir


def test_a_token_count_beyond_64_bits_is_a_damaged_line_in_the_query(tmp_path: Path) -> None:
    run_dir = _huge_tokens_run(tmp_path)
    names, rows = duck.query(duck.query_connection([run_dir]), "SELECT task_id, tokens FROM records ORDER BY 1")
    # Out of `Record`'s bounds, as the Python reader has it: never a wrapped number, nor an unknown one.
    assert rows == [
        ("a", {"input_new": 1, "cache_read": 2, "cache_write": 3, "output": 4}),
        ("c", {"input_new": 1, "cache_read": 2, "cache_write": 3, "output": 4}),
    ]


def test_a_token_count_beyond_64_bits_is_skipped_and_named_by_the_reports(tmp_path: Path) -> None:
    run_dir = _huge_tokens_run(tmp_path)
    d = aggregate([run_dir]).data
    assert (d.overall.planned, d.overall.passed) == (2, 2)
    assert d.warnings == ["r/records.jsonl:2: corrupt record line skipped"]


@pytest.mark.parametrize("change", [
    ('"cost_usd":', '"cost_usd":-5.0,"x":'), ('"total_ms":', '"total_ms":-1.0,"x":'), ('"attempt":1', '"attempt":0'),
    ('"repeat":1', '"repeat":0'),
], ids=["negative cost", "negative duration", "attempt 0", "repeat 0"])
def test_a_value_outside_the_record_bounds_is_skipped_and_named_by_the_reports(
    tmp_path: Path, change: tuple[str, str]
) -> None:
    recs = [record(t, run="r") for t in "abc"]
    run_dir = write_run(tmp_path, "r", recs, [("SER1", "Pixel 8")])
    path = run_dir / RECORDS_FILE
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert change[0] in lines[1]
    lines[1] = lines[1].replace(change[0], change[1], 1)
    path.write_text("".join(lines), encoding="utf-8")
    d = aggregate([run_dir]).data
    assert d.overall.planned == 2 and d.warnings == ["r/records.jsonl:2: corrupt record line skipped"]


def test_an_object_missing_a_field_no_record_lacks_is_a_damaged_line(tmp_path: Path) -> None:
    # Readers sort and group by the unit and the verdict: such a row must not reach them.
    run_dir = _run(tmp_path, middle='{"run": "r", "task_id": "x"}\n')
    d = aggregate([run_dir]).data
    assert d.warnings == ["r/records.jsonl:2: corrupt record line skipped"]
    assert (d.overall.planned, d.overall.passed) == (3, 2)


def test_a_required_field_of_the_wrong_type_is_a_damaged_line_in_the_query(tmp_path: Path) -> None:
    bad = record("z", run="r").model_dump_json().replace('"passed":true', '"passed":[1]')
    assert '"passed":[1]' in bad
    run_dir = _run(tmp_path, tail=bad + "\n")
    names, rows = duck.query(duck.query_connection([run_dir]), "SELECT string_agg(task_id, ',' ORDER BY task_id)"
                             " FROM records")
    assert rows == [("a,b,c",)]
    ((_, damage),) = duck.damaged_lines([run_dir])
    assert (damage.total, damage.lines) == (1, [4])


def test_every_required_field_of_the_record_model_is_checked() -> None:
    from farm.results.record import Record

    required = {name for name, f in Record.model_fields.items() if f.is_required()}
    assert set(duck.REQUIRED) == required
