"""The SQL ingest of records.jsonl finds the same damaged lines as the Python reader, and keeps the same records.

A torn last line, a value outside `Record`'s bounds and a line that is not UTF-8 are each skipped and named by
their line number, the same numbers `iter_records` gives, whether the report reads the file directly, builds
its columnar cache, or reads a cache built before. The records every reader keeps are the same records.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.report.aggregate import aggregate
from farm.report.writers import render_csv
from farm.results import duck
from farm.results.record import Tokens
from farm.results.store import RECORDS_FILE, ReadProblems, read_records
from tests.helpers.records import record, write_run

TORN = "torn last line (an append cut short, no newline at the end) skipped"
CORRUPT = "corrupt record line skipped"


def _lines(tmp_path: Path) -> tuple[Path, list[bytes]]:
    recs = [
        record(f"t{i}", run="r", device=f"S{i % 2}", passed=i % 3 != 0, cost_usd=0.25 * i,
               tokens=Tokens(input_new=10 * i, cache_read=None, cache_write=i, output=i + 1),
               reasons=[] if i % 3 else [f"why {i}"], extra={"k": "v"})
        for i in range(8)
    ]
    run_dir = write_run(tmp_path, "r", recs, [("S0", "Pixel 8"), ("S1", "Pixel 8")])
    return run_dir, (run_dir / RECORDS_FILE).read_bytes().splitlines(keepends=True)


def _replace(line: bytes, old: bytes, new: bytes) -> bytes:
    assert old in line, (old, line[:120])
    return line.replace(old, new, 1)


# Each damage: the line it edits (0-based, in the file as written), the edit.
DAMAGES = {
    "negative cost": (1, b'"cost_usd":0.25', b'"cost_usd":-0.25'),
    "epoch time as a duration": (2, b'"total_ms":', b'"total_ms":1.7e12,"x":'),
    "10^30 tokens": (4, b'"output":5', b'"output":' + str(10**30).encode()),
    "not UTF-8 in a field the report reads": (5, b'"task_id":"t5"', b'"task_id":"t\xff5"'),
    "not UTF-8 in a field the report does not read": (6, b'"k":"v"', b'"k":"\xe9t\xe9"'),
}


def _damaged_run(tmp_path: Path, names: list[str]) -> Path:
    """The records with the named damages, a blank line after the third, and a torn last line."""
    run_dir, lines = _lines(tmp_path)
    for name in names:
        index, old, new = DAMAGES[name]
        lines[index] = _replace(lines[index], old, new)
    lines.insert(3, b"\n")
    torn = b'{"run":"r","lane":"android","device":"S0","task_id":"t9","outc'
    (run_dir / RECORDS_FILE).write_bytes(b"".join(lines) + torn)
    return run_dir


def _python_problems(path: Path) -> tuple[list[str], list[int], int | None]:
    """What the Python reader keeps and skips: task ids, corrupt line numbers, the torn line's number."""
    problems = ReadProblems()
    kept = [r.task_id for r in read_records(path, problems)]
    corrupt = [int(p.split(":")[-2]) for p in problems.corrupt]
    torn = [int(p.split(":")[-2]) for p in problems.torn]
    assert len(torn) <= 1
    return kept, corrupt, (torn[0] if torn else None)


def _expected_warnings(corrupt: list[int], torn: int | None) -> list[str]:
    return [f"r/records.jsonl:{n}: {CORRUPT}" for n in corrupt] + ([f"r/records.jsonl:{torn}: {TORN}"] if torn else [])


@pytest.mark.parametrize("names", [[name] for name in DAMAGES] + [list(DAMAGES)], ids=[*DAMAGES, "all of them"])
def test_every_read_path_names_the_lines_the_python_reader_names(tmp_path: Path, names: list[str]) -> None:
    run_dir = _damaged_run(tmp_path, names)
    path = run_dir / RECORDS_FILE
    kept, corrupt, torn = _python_problems(path)
    # The damages land where they were put: line numbers count the blank line, the torn line is the last.
    edited = sorted(DAMAGES[name][0] + 1 + (DAMAGES[name][0] >= 3) for name in names)
    assert (corrupt, torn) == (edited, 10)
    expected = _expected_warnings(corrupt, torn)
    direct = aggregate([run_dir]).data
    built = aggregate([run_dir], cache_min_bytes=0).data
    assert duck.cache_path(run_dir).is_file()
    cached = aggregate([run_dir], cache_min_bytes=0).data
    for data in (direct, built, cached):
        assert data.warnings == expected
        assert data.overall.planned == len(kept)
    ((where, damage),) = duck.damaged_lines([run_dir])
    assert where == path
    assert (damage.total, damage.lines, damage.torn_last_line) == (len(corrupt) + 1, [*corrupt, torn], True)
    _, rows = duck.query(duck.query_connection([run_dir]), "SELECT task_id FROM records ORDER BY task_id")
    assert [r[0] for r in rows] == sorted(kept)


def test_the_records_kept_read_the_same_as_the_python_reader_has_them(tmp_path: Path) -> None:
    run_dir = _damaged_run(tmp_path, list(DAMAGES))
    records = {r.task_id: r for r in read_records(run_dir / RECORDS_FILE, ReadProblems())}
    for cache_min_bytes in (duck.CACHE_MIN_BYTES, 0, 0):
        agg = aggregate([run_dir], cache_min_bytes=cache_min_bytes)
        rows = agg.con.execute(
            "SELECT task_id, device, passed, outcome, cost_usd, input_new, cache_read, cache_write, output,"
            " total_ms, reasons, attempt FROM rec ORDER BY pos"
        ).fetchall()
        assert [r[0] for r in rows] == sorted(records)
        for task_id, device, passed, outcome, cost, i, cr, cw, o, total_ms, reasons, attempt in rows:
            rec = records[task_id]
            assert (device, passed, outcome, cost, attempt) == (rec.device, rec.passed, rec.outcome, rec.cost_usd,
                                                               rec.attempt)
            assert (i, cr, cw, o) == (rec.tokens.input_new, rec.tokens.cache_read, rec.tokens.cache_write,
                                      rec.tokens.output)
            assert (total_ms, reasons) == (rec.metrics.total_ms, rec.reasons)


def test_the_scores_file_is_the_same_from_the_file_and_from_the_cache(tmp_path: Path) -> None:
    run_dir = _damaged_run(tmp_path, list(DAMAGES))
    direct = render_csv(aggregate([run_dir]))
    built = render_csv(aggregate([run_dir], cache_min_bytes=0))
    cached = render_csv(aggregate([run_dir], cache_min_bytes=0))
    assert direct == built == cached
    assert direct.count("\n") == 1 + len(read_records(run_dir / RECORDS_FILE, ReadProblems()))


def test_a_file_of_damaged_lines_only_is_all_named(tmp_path: Path) -> None:
    run_dir, lines = _lines(tmp_path)
    (run_dir / RECORDS_FILE).write_bytes(b"\xff\xfe\n" + _replace(lines[0], b'"attempt":1', b'"attempt":0') + b"{")
    kept, corrupt, torn = _python_problems(run_dir / RECORDS_FILE)
    assert (kept, corrupt, torn) == ([], [1, 2], 3)
    for cache_min_bytes in (duck.CACHE_MIN_BYTES, 0, 0):
        data = aggregate([run_dir], cache_min_bytes=cache_min_bytes).data
        assert data.warnings == _expected_warnings(corrupt, torn)
        assert data.overall.planned == 0
