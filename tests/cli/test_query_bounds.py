"""`farm query` is bounded: a time limit, DuckDB's memory limit and threads, a row cap, and Ctrl-C or SIGTERM stop it.

Through the real entry point in a child process, as a person runs it. Before these bounds each hostile query
below ran until killed, on every core and up to 80 % of RAM, and Ctrl-C did nothing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from farm.config import QueryLimits
from farm.errors import FarmError
from farm.exits import EXIT_INTERRUPTED, EXIT_OK
from farm.results import duck
from farm.results.query_limits import (
    DEFAULT_MAX_ROWS,
    DEFAULT_THREADS,
    DEFAULT_TIMEOUT_S,
    QueryBounds,
    bounded_connection,
    default_memory_mb,
    query_bounds,
)
from tests.helpers.cli import ENTRY, error_line, farm, isolated_env
from tests.helpers.records import record, write_run

ENDLESS = "select count(*) from range(1000000000000)"
HOSTILE = {
    "a trillion rows": ENDLESS,
    "an endless recursive CTE": "with recursive t(n) as (select 1 union all select n + 1 from t)"
                                " select count(*) from t",
    "a triple cross join": "select count(*) from range(100000) a, range(100000) b, range(100000) c",
}
TIMEOUT_LINE = ("error: query: stopped at the 1 s time limit"
                " — narrow the query (WHERE, LIMIT), or allow longer with --timeout SECONDS")
SLACK_S = 20.0
"""Start-up of a child `farm` (imports, the records) on a loaded CI host, on top of the limit being tested."""


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A directory holding runs/r (two records), the child's working directory."""
    write_run(tmp_path / "runs", "r", [record("a", run="r"), record("b", run="r", passed=False)], [("SER1", "Pixel 8")])
    return tmp_path


def _query(work: Path, sql: str, *flags: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return farm(work, "query", sql, "--runs-dir", "runs", *flags, timeout=timeout)


@pytest.mark.parametrize("sql", HOSTILE.values(), ids=HOSTILE)
def test_a_hostile_query_stops_at_the_time_limit_with_one_line(work: Path, sql: str) -> None:
    began = time.monotonic()
    proc = _query(work, sql, "--timeout", "1", timeout=1 + SLACK_S)
    assert time.monotonic() - began < 1 + SLACK_S
    assert error_line(proc) == TIMEOUT_LINE
    assert proc.stdout == ""


def test_a_query_given_no_flag_stops_at_the_default_limit(work: Path) -> None:
    # Before the bounds this ran until killed; no flag or setting is needed to stop it.
    proc = _query(work, ENDLESS, timeout=DEFAULT_TIMEOUT_S + SLACK_S)
    assert error_line(proc) == TIMEOUT_LINE.replace(" 1 s ", f" {DEFAULT_TIMEOUT_S:g} s ")


def test_the_time_limit_comes_from_farm_yaml_too(work: Path) -> None:
    (work / "farm.yaml").write_text("query:\n  timeout_s: 1\n", encoding="utf-8")
    assert error_line(_query(work, ENDLESS, timeout=1 + SLACK_S)) == TIMEOUT_LINE


def _linux_proc(pid: int, name: str) -> str:
    return (Path("/proc") / str(pid) / name).read_text(encoding="ascii")


def _catches(pid: int, signum: int) -> bool:
    """Whether the process has a handler for `signum` (the SigCgt mask of /proc/PID/status)."""
    for line in _linux_proc(pid, "status").splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    return False


def _cpu_s(pid: int) -> float:
    """User plus system CPU seconds the process has used so far."""
    fields = _linux_proc(pid, "stat").rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _running_endless_query(work: Path) -> subprocess.Popen[str]:
    """`farm query ENDLESS` once DuckDB is busy on it: the query's SIGTERM handler is installed (only the
    bounded query installs one) and the process has since burnt half a CPU second. Polls, no fixed sleep."""
    proc = subprocess.Popen([sys.executable, "-c", ENTRY, "query", ENDLESS, "--runs-dir", "runs", "--timeout", "600"],
                            cwd=work, env=isolated_env(work), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + SLACK_S
    try:
        while not _catches(proc.pid, signal.SIGTERM):
            assert proc.poll() is None and time.monotonic() < deadline, "the query never installed its handlers"
            time.sleep(0.01)
        busy_from = _cpu_s(proc.pid)
        while _cpu_s(proc.pid) < busy_from + 0.5:
            assert proc.poll() is None and time.monotonic() < deadline, "the query never ran"
            time.sleep(0.01)
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    return proc


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads /proc to see the query running")
@pytest.mark.parametrize(("signum", "line"), [
    (signal.SIGINT, "error: query stopped by Ctrl-C (SIGINT)"),
    (signal.SIGTERM, "error: query stopped by SIGTERM"),
], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_a_running_query_at_once_with_exit_130(work: Path, signum: int, line: str) -> None:
    proc = _running_endless_query(work)
    sent = time.monotonic()
    proc.send_signal(signum)
    try:
        out, err = proc.communicate(timeout=SLACK_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"{signal.Signals(signum).name} did not stop the query") from None
    assert time.monotonic() - sent < 5
    assert proc.returncode == EXIT_INTERRUPTED, err
    assert err.splitlines() == [line] and out == ""


def _setting(work: Path, *flags: str) -> list[str]:
    proc = _query(work, "select current_setting('memory_limit') as m, current_setting('threads') as t,"
                        " current_setting('temp_directory') as tmp", *flags)
    assert proc.returncode == EXIT_OK, proc.stderr
    header, row = proc.stdout.splitlines()
    assert header == "m\tt\ttmp"
    return row.split("\t")


def _duckdb_shows(memory_mb: int) -> str:
    with duckdb.connect(":memory:") as con:
        con.execute(f"SET memory_limit = '{memory_mb}MiB'")
        row = con.execute("select current_setting('memory_limit')").fetchone()
    assert row is not None
    return str(row[0])


def test_duckdb_runs_the_query_under_a_memory_limit_and_a_thread_cap(work: Path) -> None:
    # DuckDB's own default is 80 % of RAM and a thread per core; nothing may spill to a temp directory.
    assert _setting(work) == [_duckdb_shows(default_memory_mb()), str(DEFAULT_THREADS), ""]
    assert _setting(work, "--memory-mb", "512") == ["512.0 MiB", str(DEFAULT_THREADS), ""]
    (work / "farm.yaml").write_text("query: {memory_mb: 256, threads: 2}\n", encoding="utf-8")
    assert _setting(work) == ["256.0 MiB", "2", ""]
    assert _setting(work, "--memory-mb", "300")[:2] == ["300.0 MiB", "2"]  # the flag wins


def test_a_query_past_the_memory_limit_is_refused_with_one_line(work: Path) -> None:
    proc = _query(work, "select count(distinct r) from range(1000000000) t(r)", "--memory-mb", "64")
    assert error_line(proc) == ("error: query: the query needs more than the 64 MB memory limit"
                                " — narrow the query (or pick runs with --run), or allow more with --memory-mb MB")


def _rows(proc: subprocess.CompletedProcess[str]) -> list[str]:
    assert proc.returncode == EXIT_OK, proc.stderr
    header, *rows = proc.stdout.splitlines()
    assert header == "range"
    return rows


@pytest.mark.parametrize(("total", "flags", "shown", "note"), [
    (DEFAULT_MAX_ROWS, [], DEFAULT_MAX_ROWS, None),
    (DEFAULT_MAX_ROWS + 1, [], DEFAULT_MAX_ROWS, "1 more row not shown (--max-rows 1000)"),
    (2500, [], DEFAULT_MAX_ROWS, "1500 more rows not shown (--max-rows 1000)"),
    (2500, ["--max-rows", "10"], 10, "2490 more rows not shown (--max-rows 10)"),
    (2500, ["--all"], 2500, None),
    (0, [], 0, None),
])
def test_the_rows_are_capped_and_the_rest_counted_on_stderr(
    work: Path, total: int, flags: list[str], shown: int, note: str | None
) -> None:
    proc = _query(work, f"select * from range({total})", *flags)
    assert _rows(proc) == [str(i) for i in range(shown)]
    expected = [] if note is None else [f"warning: {note}; pass --all to print every row, or add LIMIT"]
    assert proc.stderr.splitlines() == expected


def test_an_endless_result_prints_its_first_rows_and_says_at_least_how_many_more(work: Path) -> None:
    proc = _query(work, "select * from range(1000000000000)", "--timeout", "1", "--max-rows", "3",
                  timeout=1 + SLACK_S)
    assert _rows(proc) == ["0", "1", "2"]
    (line,) = proc.stderr.splitlines()
    assert line.startswith("warning: at least ") and line.endswith(
        " more rows not shown (--max-rows 3; counting stopped at the 1 s time limit); pass --all to print every row,"
        " or add LIMIT")


def test_the_cap_holds_for_csv_and_json_and_keeps_stdout_clean(work: Path) -> None:
    proc = _query(work, "select * from range(5)", "--max-rows", "2", "--format", "csv")
    assert proc.stdout == "range\n0\n1\n" and proc.stderr.startswith("warning: 3 more rows not shown")
    proc = _query(work, "select * from range(5)", "--max-rows", "2", "--json")
    assert '"rows": [\n    [\n      0\n    ],\n    [\n      1\n    ]\n  ]' in proc.stdout


@pytest.mark.parametrize(("flags", "line"), [
    (["--timeout", "0"], "--timeout 0.0: Input should be greater than 0"),
    (["--timeout", "nan"], "--timeout nan: Input should be a finite number"),
    (["--timeout", "3601"], "--timeout 3601.0: Input should be less than or equal to 3600"),
    (["--memory-mb", "63"], "--memory-mb 63: Input should be greater than or equal to 64"),
    (["--max-rows", "0"], "--max-rows 0: Input should be greater than or equal to 1"),
    (["--max-rows", "1000001"], "--max-rows 1000001: Input should be less than or equal to 1000000"),
    (["--all", "--max-rows", "5"], "--all and --max-rows both given — pass one of them"),
])
def test_a_bound_out_of_range_is_refused_naming_the_flag(work: Path, flags: list[str], line: str) -> None:
    assert error_line(_query(work, "select 1", *flags)).startswith(f"error: {line}")


@pytest.mark.parametrize(("yaml_text", "line"), [
    ("query: {timeout_s: -1}\n", "query.timeout_s: Input should be greater than 0"),
    ("query: {timeout_s: .inf}\n", "query.timeout_s: Input should be a finite number"),
    ("query: {threads: 0}\n", "query.threads: Input should be greater than or equal to 1"),
    ("query: {threads: 1, threads: 2}\n", "farm.yaml:1: duplicate key 'threads' (first at line 1)"),
    ("query: {rows: 5}\n", "query.rows: Extra inputs are not permitted"),
])
def test_a_bad_query_section_in_farm_yaml_is_refused(work: Path, yaml_text: str, line: str) -> None:
    (work / "farm.yaml").write_text(yaml_text, encoding="utf-8")
    assert line in error_line(_query(work, "select 1"))


def test_flags_win_over_farm_yaml_and_farm_yaml_over_the_defaults() -> None:
    configured = QueryLimits.model_validate({"timeout_s": 3, "threads": 2, "max_rows": 7})
    assert query_bounds(configured) == QueryBounds(3, default_memory_mb(), 2, 7)
    assert query_bounds(configured, timeout_s=5, memory_mb=100, max_rows=9) == QueryBounds(5, 100, 2, 9)
    assert query_bounds(configured, all_rows=True).max_rows is None
    with pytest.raises(FarmError, match="^--timeout -1"):
        query_bounds(configured, timeout_s=-1)


def _settings(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    return dict(con.execute("select name, value from duckdb_settings()").fetchall())


def test_the_bounded_connection_is_locked_down_like_the_query_connection(work: Path) -> None:
    """`farm query` opens its own connection (the limits must be set before the records are read and the
    configuration locked): every setting but the limits equals `duck.query_connection`'s."""
    run_dirs = [work / "runs" / "r"]
    bounds = QueryBounds(timeout_s=1, memory_mb=200, threads=3, max_rows=10)
    # The limits, and what DuckDB derives from them.
    limits = {"memory_limit", "threads", "max_temp_directory_size", "worker_threads", "max_memory",
              "write_buffer_row_group_memory_limit"}
    reference = duck.query_connection(run_dirs)
    bounded = bounded_connection(run_dirs, bounds)
    try:
        ours, theirs = _settings(bounded), _settings(reference)
        assert {k: v for k, v in ours.items() if k not in limits} == {
            k: v for k, v in theirs.items() if k not in limits}
        assert ours["lock_configuration"] == "true" and ours["enable_external_access"] == "false"
        assert (ours["threads"], ours["max_temp_directory_size"]) == ("3", "0 bytes")
        assert bounded.execute("select count(*) from records").fetchall() == [(2,)]
        with pytest.raises(duckdb.Error):
            bounded.execute("SET memory_limit = '100GB'")
    finally:
        bounded.close()
        reference.close()


def test_help_teaches_the_bounds_with_an_example(work: Path) -> None:
    proc = farm(work, "query", "--help")
    assert proc.returncode == EXIT_OK
    text = " ".join(proc.stdout.split())
    for part in ("--timeout", "--memory-mb", "--max-rows", "--all", "exit 130", "Example:"):
        assert part in text, part

