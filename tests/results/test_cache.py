"""The columnar cache of records.jsonl: derived, reused while the file is unchanged, rebuilt otherwise."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from farm.errors import FarmError
from farm.report.aggregate import aggregate
from farm.results import duck
from farm.results.store import RECORDS_FILE, append_records
from tests.helpers.records import record, write_run


def _run(tmp_path: Path) -> Path:
    recs = [record(f"t{i}", run="r", device=f"S{i % 2}", passed=i % 3 != 0) for i in range(9)]
    return write_run(tmp_path, "r", recs, [("S0", "Pixel 8"), ("S1", "Pixel 8")])


def _overall(run_dir: Path, **kw: int) -> tuple[int, int]:
    d = aggregate([run_dir], **kw).data
    return d.overall.attempted, d.overall.passed


def test_small_record_files_get_no_cache(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    aggregate([run_dir])
    assert not duck.cache_path(run_dir).exists()


def test_cache_is_built_once_and_gives_the_same_numbers(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    direct = _overall(run_dir)
    assert _overall(run_dir, cache_min_bytes=0) == direct
    cache = duck.cache_path(run_dir)
    built = cache.stat().st_mtime_ns
    assert _overall(run_dir, cache_min_bytes=0) == direct
    assert cache.stat().st_mtime_ns == built


def test_appended_records_invalidate_the_cache(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    before = _overall(run_dir, cache_min_bytes=0)
    append_records(run_dir / RECORDS_FILE, [record("new", run="r", device="S0", passed=True)])
    assert _overall(run_dir, cache_min_bytes=0) == (before[0] + 1, before[1] + 1)


def test_same_size_edit_with_restored_mtime_invalidates_the_cache(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    path = run_dir / RECORDS_FILE
    aggregate([run_dir], cache_min_bytes=0)
    st = path.stat()
    head, last = path.read_text(encoding="utf-8").rstrip("\n").rsplit("\n", 1)
    path.write_text(head + "\n" + last.replace("read/system", "read/zzzzzz") + "\n", encoding="utf-8")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size
    cats = {r.key: r.attempted for r in aggregate([run_dir], cache_min_bytes=0).data.by_category}
    assert cats == {"read/system": 8, "read/zzzzzz": 1}


def test_a_damaged_cache_is_rebuilt_from_the_records(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    expected = _overall(run_dir)
    cache = duck.cache_path(run_dir)
    cache.parent.mkdir()
    cache.write_bytes(b"not a database")
    assert _overall(run_dir, cache_min_bytes=0) == expected
    assert cache.read_bytes() != b"not a database"


def test_the_stamp_follows_first_and_last_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}\n', encoding="utf-8")
    one = duck.file_stamp(path)
    path.write_text('{"a": 1}\n{"a": 3}\n', encoding="utf-8")
    two = duck.file_stamp(path)
    assert one.size == two.size
    assert one.first_line_sha256 == two.first_line_sha256 and one.last_line_sha256 != two.last_line_sha256


def test_damaged_line_is_skipped_and_named_when_building_the_cache(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    expected = _overall(run_dir)
    with (run_dir / RECORDS_FILE).open("a", encoding="utf-8") as fh:
        fh.write('{"run": "r", "broken\n')
    d = aggregate([run_dir], cache_min_bytes=0).data
    assert (d.overall.attempted, d.overall.passed) == expected
    assert d.warnings == ["r/records.jsonl:10: corrupt record line skipped"]
    assert duck.cache_path(run_dir).exists()


def test_the_cache_remembers_damaged_lines(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    with (run_dir / RECORDS_FILE).open("a", encoding="utf-8") as fh:
        fh.write('{"run": "r", "task_')
    first = aggregate([run_dir], cache_min_bytes=0).data.warnings
    built = duck.cache_path(run_dir).stat().st_mtime_ns
    again = aggregate([run_dir], cache_min_bytes=0).data.warnings
    assert duck.cache_path(run_dir).stat().st_mtime_ns == built
    assert first == again == ["r/records.jsonl:10: torn last line (an append cut short, no newline at the end) skipped"]


def test_a_cache_of_an_older_format_is_rebuilt(tmp_path: Path) -> None:
    import duckdb

    recs = [record("t", run="r", device="S0", instance=seed, passed=seed == "1") for seed in ("1", "2", "3")]
    run_dir = write_run(tmp_path, "r", recs, [("S0", "Pixel 8")])
    aggregate([run_dir], cache_min_bytes=0)
    cache = duck.cache_path(run_dir)
    # What an older harness left: its own format number, and one row per (run, device, task).
    con = duckdb.connect(str(cache))
    stamp = con.execute("SELECT stamp FROM stamp").fetchone()
    assert stamp is not None
    source = duck.CacheStamp.model_validate_json(stamp[0]).source
    older = {"format": 1, "source": source.model_dump(), "duplicate_keys": 0}  # as format 1 wrote it
    con.execute("UPDATE stamp SET stamp = ?", [json.dumps(older)])
    con.execute("DELETE FROM rec WHERE instance <> '1'")
    con.close()
    d = aggregate([run_dir], cache_min_bytes=0).data
    assert (d.overall.planned, d.overall.passed) == (3, 1)


def test_a_cache_that_cannot_be_written_falls_back_to_reading_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = _run(tmp_path)
    direct = _overall(run_dir)
    fill = duck._fill

    def full_disk(con: object, table: str, path: Path, *, temp: bool) -> object:
        if not temp:  # DuckDB's words when the cache file cannot grow
            raise FarmError(f"{path}: unreadable record file (Could not write file: No space left on device)")
        return fill(con, table, path, temp=temp)  # type: ignore[arg-type]

    monkeypatch.setattr(duck, "_fill", full_disk)
    assert _overall(run_dir, cache_min_bytes=0) == direct
    assert not duck.cache_path(run_dir).exists()
