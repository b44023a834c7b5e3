"""DuckDB views over record files: `records`, `runs`, `devices`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from farm.errors import FarmError
from farm.manifest import manifest_path
from farm.results.store import RECORDS_FILE

if TYPE_CHECKING:
    import duckdb

RECORD_COLUMNS: dict[str, str] = {
    "schema_version": "BIGINT",
    "run": "VARCHAR",
    "lane": "VARCHAR",
    "device": "VARCHAR",
    "task_id": "VARCHAR",
    "category": "VARCHAR",
    "partition": "VARCHAR",
    "expect": "VARCHAR",
    "outcome": "VARCHAR",
    "passed": "BOOLEAN",
    "checks": "JSON",
    "answer": "VARCHAR",
    "reasons": "VARCHAR[]",
    "failure_category": "VARCHAR",
    "failure_kind": "VARCHAR",
    "takeover_kind": "VARCHAR",
    "metrics": "STRUCT(first_feedback_ms DOUBLE, round_trips BIGINT, model_ms DOUBLE, screen_read_ms DOUBLE,"
    " action_ms DOUBLE, other_ms DOUBLE, total_ms DOUBLE)",
    "steps": "BIGINT",
    "tokens": "STRUCT(input_new BIGINT, cache_read BIGINT, cache_write BIGINT, output BIGINT)",
    "cost_usd": "DOUBLE",
    "attempt": "BIGINT",
    "execution": "VARCHAR",
    "executor": "VARCHAR",
    "split": "VARCHAR",
    "started_at": "VARCHAR",
    "ended_at": "VARCHAR",
    "source": "VARCHAR",
    "markers": "VARCHAR[]",
    "extra": "JSON",
}


# What reports need; `checks` and `extra` stay in the files (and in the `records` view for queries).
REPORT_COLUMNS = tuple(c for c in RECORD_COLUMNS if c not in ("checks", "extra", "source", "schema_version"))


def sql_str(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def run_dirs_under(runs_dir: Path) -> list[Path]:
    """Every run directory (one holding records.jsonl or manifest.json) under `runs_dir`."""
    if not runs_dir.is_dir():
        raise FarmError(f"{runs_dir}: no such runs directory", hint="pass --runs-dir")
    return sorted(
        d for d in runs_dir.iterdir() if d.is_dir() and ((d / RECORDS_FILE).is_file() or manifest_path(d).is_file())
    )


def connect(run_dirs: Sequence[Path], *, report_columns_only: bool = False) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with `records`, `runs` and `devices` views over the given runs.

    `report_columns_only` reads only what reports need (JSON parsing is the cost that dominates).
    """
    import duckdb

    con = duckdb.connect(":memory:")
    files = [str(d / RECORDS_FILE) for d in run_dirs if (d / RECORDS_FILE).is_file()]
    wanted = {k: v for k, v in RECORD_COLUMNS.items() if not report_columns_only or k in REPORT_COLUMNS}
    columns = "{" + ", ".join(f"{sql_str(k)}: {sql_str(v)}" for k, v in wanted.items()) + "}"
    if files:
        listing = "[" + ", ".join(sql_str(f) for f in files) + "]"
        con.execute(
            f"CREATE VIEW records AS SELECT * FROM read_json({listing}, format='newline_delimited', "
            f"columns={columns})"
        )
    else:
        cols = ", ".join(f"CAST(NULL AS {v}) AS {k}" for k, v in wanted.items())
        con.execute(f"CREATE VIEW records AS SELECT {cols} WHERE false")
    runs_rows: list[tuple[str, str | None, str | None, str | None, str]] = []
    device_rows: list[tuple[str, str, str | None, str | None, str | None, str, str | None]] = []
    for d in run_dirs:
        path = manifest_path(d)
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise FarmError(f"{path}: invalid manifest JSON") from None
        runs_rows.append(
            (data.get("run_id", d.name), data.get("created_at"), data.get("finished_at"), data.get("status"), str(d))
        )
        for phone in data.get("phones", []):
            device_rows.append(
                (
                    data.get("run_id", d.name),
                    phone.get("serial", ""),
                    phone.get("model"),
                    phone.get("android"),
                    phone.get("agent_version"),
                    phone.get("status", "used"),
                    phone.get("reason"),
                )
            )
    con.execute(
        "CREATE TABLE runs (run VARCHAR, created_at VARCHAR, finished_at VARCHAR, status VARCHAR, path VARCHAR)"
    )
    if runs_rows:
        con.executemany("INSERT INTO runs VALUES (?, ?, ?, ?, ?)", runs_rows)
    con.execute(
        "CREATE TABLE devices (run VARCHAR, serial VARCHAR, model VARCHAR, android VARCHAR, agent_version VARCHAR,"
        " status VARCHAR, reason VARCHAR)"
    )
    if device_rows:
        con.executemany("INSERT INTO devices VALUES (?, ?, ?, ?, ?, ?, ?)", device_rows)
    return con


def materialise(con: duckdb.DuckDBPyConnection, run_dirs: Sequence[Path], table: str = "rec") -> None:
    """Read the record files once into a temp table; a damaged file is a FarmError naming file and line."""
    import duckdb

    try:
        con.execute(f"CREATE TEMP TABLE {table} AS SELECT {', '.join(REPORT_COLUMNS)} FROM records")
    except duckdb.Error:
        for d in run_dirs:
            _find_bad_line(d / RECORDS_FILE)
        raise FarmError("records: unreadable record files", hint="check records.jsonl of each run") from None


def _find_bad_line(path: Path) -> None:
    if not path.is_file():
        return
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
                if not isinstance(value, dict):
                    raise ValueError
            except ValueError:
                raise FarmError(
                    f"{path}:{number}: corrupt record line",
                    hint="records are append-only; move the damaged line out of the file",
                ) from None


def query(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[list[str], list[tuple[object, ...]]]:
    """Run SQL; return column names and rows. A SQL error is a FarmError."""
    import duckdb

    try:
        cur = con.execute(sql)
        rows = cur.fetchall()
    except duckdb.Error as exc:
        first = str(exc).splitlines()[0]
        raise FarmError(f"query: {first}", hint="views: records, runs, devices") from None
    names = [c[0] for c in (cur.description or [])]
    return names, rows
