"""`farm query` only reads: no statement but one SELECT, and the database it runs on reaches no file.

Every refusal is one line with exit status 2 and leaves every file as it was (names, sizes, mtimes, bytes).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from farm.cli import main
from farm.errors import FarmError
from farm.results import duck
from farm.results.store import RECORDS_FILE
from tests.helpers.records import record, write_run

CANARY = "canary-7c1d0e5b-outside-the-run"

Snapshot = dict[str, tuple[int, int, str]]


def _runs(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    write_run(runs, "r", [record("a", run="r"), record("b", run="r", passed=False)], [("SER1", "Pixel 8")])
    (tmp_path / "outside.txt").write_text(CANARY + "\n", encoding="utf-8")
    return runs


def _snapshot(root: Path) -> Snapshot:
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        if p.is_file() else (-1, 0, "dir")
        for p in sorted(root.rglob("*"))
    }


def _farm_query(tmp_path: Path, sql: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`farm query SQL` through the real entry point, from `tmp_path` (relative paths land there)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        main(["query", sql, "--runs-dir", str(tmp_path / "runs")])
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def _refused(tmp_path: Path, sql: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    """Run `farm query SQL`; assert a one-line error, exit 2, and no file changed. Returns the error line."""
    monkeypatch.chdir(tmp_path)
    before = _snapshot(tmp_path)
    code, out, err = _farm_query(tmp_path, sql, capsys)
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: query: "), err
    assert out == ""
    assert _snapshot(tmp_path) == before
    return lines[0]


def test_a_select_over_the_records_still_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(tmp_path)
    monkeypatch.chdir(tmp_path)
    before = _snapshot(tmp_path)
    code, out, err = _farm_query(
        tmp_path, "with t as (select task_id, passed from records) select string_agg(task_id || ':' || passed, ','"
        " order by task_id) as s from t", capsys,
    )
    assert (code, err) == (0, "")
    assert "a:true,b:false" in out
    assert _snapshot(tmp_path) == before


def test_runs_devices_describe_and_pivot_with_an_in_list_are_selects() -> None:
    for sql in ("from runs", "describe records", "summarize records", "show tables",
                "pivot records on passed in (true, false) using count(*)"):
        duck.check_query(sql)


def test_copy_to_a_file_outside_the_run_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(tmp_path)
    line = _refused(tmp_path, f"COPY (SELECT 1) TO '{tmp_path / 'out.csv'}'", capsys, monkeypatch)
    assert "COPY refused" in line
    assert not (tmp_path / "out.csv").exists()


def test_copy_over_the_run_records_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = _runs(tmp_path)
    target = runs / "r" / RECORDS_FILE
    line = _refused(tmp_path, f"COPY (SELECT 1 AS x) TO '{target}' (FORMAT csv, USE_TMP_FILE false)", capsys,
                    monkeypatch)
    assert "COPY refused" in line


def test_export_database_into_the_run_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = _runs(tmp_path)
    assert "EXPORT refused" in _refused(tmp_path, f"EXPORT DATABASE '{runs / 'r'}'", capsys, monkeypatch)


def test_attaching_a_new_database_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(tmp_path)
    line = _refused(tmp_path, f"ATTACH '{tmp_path / 'new.duckdb'}' AS evil", capsys, monkeypatch)
    assert "ATTACH refused" in line
    assert not (tmp_path / "new.duckdb").exists()


def test_installing_an_extension_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(tmp_path)
    assert "refused" in _refused(tmp_path, "INSTALL httpfs", capsys, monkeypatch)


def test_loading_an_extension_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(tmp_path)
    assert "refused" in _refused(tmp_path, "LOAD httpfs", capsys, monkeypatch)


def test_reading_etc_passwd_with_read_csv_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(tmp_path)
    line = _refused(tmp_path, "SELECT * FROM read_csv('/etc/passwd')", capsys, monkeypatch)
    assert "Permission Error" in line and "root:" not in line


def test_reading_a_file_outside_the_run_with_read_text_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(tmp_path)
    line = _refused(tmp_path, f"SELECT content FROM read_text('{tmp_path / 'outside.txt'}')", capsys, monkeypatch)
    assert "Permission Error" in line and CANARY not in line


def test_a_record_file_itself_is_not_readable_as_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Records are read into memory before the lock: no path stays allowed, since an allowed path is writable.
    runs = _runs(tmp_path)
    line = _refused(tmp_path, f"SELECT content FROM read_text('{runs / 'r' / RECORDS_FILE}')", capsys, monkeypatch)
    assert "Permission Error" in line


def test_turning_external_access_back_on_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(tmp_path)
    assert "SET refused" in _refused(tmp_path, "SET enable_external_access = true", capsys, monkeypatch)


def test_a_pragma_that_writes_a_profile_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(tmp_path)
    # DuckDB parses `PRAGMA name = value` as a SET.
    line = _refused(tmp_path, f"PRAGMA profile_output = '{tmp_path / 'profile.json'}'", capsys, monkeypatch)
    assert "SET refused, farm query is read-only" in line


def test_a_pragma_call_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(tmp_path)
    assert "PRAGMA refused" in _refused(tmp_path, "PRAGMA enable_profiling", capsys, monkeypatch)


def test_a_select_followed_by_a_copy_is_refused_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(tmp_path)
    line = _refused(tmp_path, f"SELECT 1; COPY (SELECT 1) TO '{tmp_path / 'second.csv'}'", capsys, monkeypatch)
    assert "2 statements refused" in line


def test_two_selects_are_refused_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(tmp_path)
    assert "2 statements refused" in _refused(tmp_path, "SELECT 1; SELECT 2", capsys, monkeypatch)


def test_a_pivot_that_creates_a_type_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(tmp_path)
    assert "PIVOT without IN" in _refused(tmp_path, "PIVOT records ON device USING count(*)", capsys, monkeypatch)


def test_an_empty_query_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(tmp_path)
    assert "empty query" in _refused(tmp_path, "", capsys, monkeypatch)


def test_a_query_of_only_comments_and_semicolons_is_refused_as_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(tmp_path)
    assert "empty query" in _refused(tmp_path, " -- nothing\n ; ;", capsys, monkeypatch)


def test_an_empty_query_is_one_line_and_exit_2_from_the_installed_command(tmp_path: Path) -> None:
    # Checked before the runs directory: no runs needed to be told the query is empty.
    code = "import sys; from farm.cli import main; main(sys.argv[1:])"
    proc = subprocess.run([sys.executable, "-c", code, "query", ""], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: query: empty query — one SELECT over the views records, runs, devices"
    ]
    assert list(tmp_path.iterdir()) == []


def test_a_syntax_error_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(tmp_path)
    assert "Parser Error" in _refused(tmp_path, "SELECT FROM WHERE", capsys, monkeypatch)


def test_the_query_connection_itself_cannot_write_the_records(tmp_path: Path) -> None:
    # Below the statement check: a COPY that reached the database would still find every file shut.
    runs = _runs(tmp_path)
    target = runs / "r" / RECORDS_FILE
    before = _snapshot(tmp_path)
    con = duck.query_connection([runs / "r"])
    with pytest.raises(duckdb.PermissionException):
        con.execute(f"COPY (SELECT 1 AS x) TO '{target}' (FORMAT csv, USE_TMP_FILE false)")
    assert _snapshot(tmp_path) == before


def test_the_query_connection_cannot_attach_a_file(tmp_path: Path) -> None:
    runs = _runs(tmp_path)
    con = duck.query_connection([runs / "r"])
    with pytest.raises(duckdb.PermissionException):
        con.execute(f"ATTACH '{tmp_path / 'x.duckdb'}' AS x")
    assert not (tmp_path / "x.duckdb").exists()


@pytest.mark.parametrize("setting", ["enable_external_access = true", "lock_configuration = false",
                                     "allowed_directories = ['/']", "temp_directory = '.tmp'"])
def test_the_query_connection_settings_are_locked(tmp_path: Path, setting: str) -> None:
    runs = _runs(tmp_path)
    con = duck.query_connection([runs / "r"])
    with pytest.raises(duckdb.InvalidInputException, match="locked"):
        con.execute(f"SET {setting}")


def test_the_query_connection_holds_the_records_without_their_files(tmp_path: Path) -> None:
    runs = _runs(tmp_path)
    con = duck.query_connection([runs / "r"])
    (runs / "r" / RECORDS_FILE).unlink()
    assert duck.query(con, "SELECT task_id FROM records ORDER BY 1") == (["task_id"], [("a",), ("b",)])


def test_duck_query_refuses_a_write_on_any_connection(tmp_path: Path) -> None:
    runs = _runs(tmp_path)
    with pytest.raises(FarmError, match="CREATE refused"):
        duck.query(duck.connect([runs / "r"]), "CREATE TABLE x AS SELECT 1")
