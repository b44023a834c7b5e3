"""DuckDB over record files: `records`, `runs`, `devices` views, and the report columns (with a columnar cache)."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from pydantic import BaseModel, ConfigDict, ValidationError

from farm.errors import FarmError
from farm.manifest import manifest_path
from farm.results.columns import (
    RECORD_BOUNDS,
    RECORD_COLUMNS,
    REPORT_READ,
    REPORT_SELECT,
    Bound,
    Number,
    ReportColumn,
    report_type,
)
from farm.results.damage import Damage, find_damage
from farm.results.record import Record
from farm.results.store import RECORDS_FILE, is_run_dir

if TYPE_CHECKING:
    import duckdb


def sql_str(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def run_dirs_under(runs_dir: Path) -> list[Path]:
    """Every run directory (one holding records.jsonl or manifest.json) under `runs_dir`."""
    if not runs_dir.is_dir():
        raise FarmError(f"{runs_dir}: no such runs directory", hint="pass --runs-dir")
    return sorted(d for d in runs_dir.iterdir() if is_run_dir(d))


# Fields read as JSON first, their members checked through a DOUBLE: a count too big for a BIGINT would otherwise
# read as an unknown (NULL) count. `Record` always writes its tokens, so a line without them is damaged too.
_READ_AS_JSON = ("tokens",)


def _sql_number(value: Number) -> str:
    """A bound as a SQL literal: integral values without a decimal point (`1e11` → `100000000000`)."""
    return str(int(value)) if float(value).is_integer() and abs(value) < 2**63 else repr(float(value))


def _bound_check(bound: Bound) -> str:
    """`bound` in SQL; a null (unknown) value is checked as `bound.default`, which is inside the range."""
    head, *rest = bound.path
    if head in _READ_AS_JSON:
        value = f"TRY_CAST({head}->>'$.{'.'.join(rest)}' AS DOUBLE)" if rest else f"TRY_CAST({head} AS DOUBLE)"
    else:
        value = bound.name
    value = f"coalesce({value}, {_sql_number(bound.default)})"
    lower, upper = bound.lower, bound.upper
    if lower is not None and upper is not None:
        return f"{value} BETWEEN {_sql_number(lower)} AND {_sql_number(upper)}"
    if lower is not None:
        return f"{value} >= {_sql_number(lower)}"
    return f"{value} <= {_sql_number(bound.default)}"  # no lower bound: the default is the upper one


_BOUNDED = {
    **{name: "JSON" for name in _READ_AS_JSON},
    **{b.path[0]: RECORD_COLUMNS[b.path[0]] for b in RECORD_BOUNDS if b.path[0] not in _READ_AS_JSON},
}
"""The fields every read reads to check the bounds, and the type they are read as."""
_IN_BOUNDS = " AND ".join([
    *(f"{name} IS NOT NULL" for name in _READ_AS_JSON),
    *(_bound_check(b) for b in RECORD_BOUNDS),
])
"""`Record`'s range bounds in SQL (`RECORD_BOUNDS`, derived from the fields' declared constraints): a line
outside them is a damaged line here too, as the Python reader has it."""


def _json_source(files: Sequence[str], columns: dict[str, str]) -> str:
    listing = "[" + ", ".join(sql_str(f) for f in files) + "]"
    spec = "{" + ", ".join(f"{sql_str(k)}: {sql_str(v)}" for k, v in {**columns, **_BOUNDED}.items()) + "}"
    # An explicit schema and format: no sampling pass over the file to guess types; `records=true` so a
    # one-column read still unpacks objects. A line that is not a JSON object (a torn last append, a
    # damaged line) reads as a row of NULLs instead of failing the whole read; every reader drops those
    # rows, and rows missing a field no record lacks, by `_INTACT` and reports them (see `damaged_lines`).
    # A line outside `Record`'s bounds loses its `run`, so it is one of those rows.
    read = f"read_json({listing}, format='newline_delimited', records=true, columns={spec}, ignore_errors=true)"
    drop = ", ".join(k for k in _BOUNDED if k not in columns)
    tokens = f", TRY_CAST(tokens AS {columns['tokens']}) AS tokens" if "tokens" in columns else ""
    return (f"(SELECT * {f'EXCLUDE ({drop}) ' if drop else ''}REPLACE (CASE WHEN {_IN_BOUNDS} THEN run END AS run"
            f"{tokens}) FROM {read})")


# Records written before `instance` and `repeat` existed belong to the one instance '' and repeat 1.
_UNIT_DEFAULTS = "coalesce(instance, '') AS instance, coalesce(repeat, 1) AS repeat"


def connect(run_dirs: Sequence[Path], *, records_view: bool = True) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with `records`, `runs` and `devices` views over the given runs.

    `records_view=False` leaves `records` out (reports read through `report_records` instead).
    """
    import duckdb

    con = duckdb.connect(":memory:")
    if records_view:
        con.execute(f"CREATE VIEW records AS {_records_select(run_dirs)}")
    runs_rows: list[tuple[str, str | None, str | None, str | None, str]] = []
    device_rows: list[tuple[str, str, str | None, str | None, str | None, str, str | None]] = []
    for d in run_dirs:
        path = manifest_path(d)
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            raise FarmError(f"{path}: invalid manifest JSON") from None
        if not isinstance(data, dict):
            raise FarmError(f"{path}: invalid manifest JSON (not an object)")
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


def _records_select(run_dirs: Sequence[Path]) -> str:
    files = [str(d / RECORDS_FILE) for d in run_dirs if (d / RECORDS_FILE).is_file()]
    if files:
        return f"SELECT * REPLACE ({_UNIT_DEFAULTS}) FROM {_json_source(files, RECORD_COLUMNS)} WHERE {_INTACT}"
    cols = ", ".join(f"CAST(NULL AS {v}) AS {k}" for k, v in RECORD_COLUMNS.items())
    return f"SELECT {cols} WHERE false"


# Run last, in this order: after them the connection reaches no file, network or extension, and the
# locked configuration cannot be turned back. `allowed_paths` is no way to let the record files through:
# it allows writing them as well (`COPY … TO '…/records.jsonl' (USE_TMP_FILE false)`), so the records
# are read into memory first and nothing stays allowed.
_LOCK_DOWN = (
    # An in-memory database spills to `./.tmp`: a query running out of memory fails instead of writing.
    "SET temp_directory = ''",
    "SET autoinstall_known_extensions = false",
    "SET autoload_known_extensions = false",
    "SET allow_community_extensions = false",
    "SET allow_persistent_secrets = false",
    "SET allowed_directories = []",
    "SET allowed_paths = []",
    "SET enable_external_access = false",
    "SET lock_configuration = true",
)


def query_connection(
    run_dirs: Sequence[Path], settings: Sequence[str] = (),
    on_open: Callable[[duckdb.DuckDBPyConnection], None] | None = None,
) -> duckdb.DuckDBPyConnection:
    """What `farm query` runs SQL on: the views of `connect`, with the records read into memory first
    and then every way out shut — no file read or written, no extension, no setting changed back. `records` holds
    one row per attempt, as the reports count them: an attempt written twice is its later line.

    `settings` (SET statements: `farm query`'s limits) run before the records are read, so they bound the read
    too, and are locked with the rest; `on_open` sees the connection first (to interrupt it from then on)."""
    con = connect(run_dirs, records_view=False)
    if on_open is not None:
        on_open(con)
    for statement in settings:
        con.execute(statement)
    con.execute(f"CREATE TABLE records AS {_records_select(run_dirs)}")
    _drop_superseded(con, "records")
    for statement in _LOCK_DOWN:
        con.execute(statement)
    return con


def _drop_superseded(con: duckdb.DuckDBPyConnection, table: str) -> None:
    """One row per attempt, as every other reader has it: an attempt written twice (a placeholder a resume's try
    superseded, a re-recorded unit: `RunStore.supersede`) keeps its later line. The table was filled in line order,
    so its rowid is the line order; the window runs only when some attempt has two lines."""
    if not _dup_attempts(con, table):
        return
    keys = ", ".join([*UNIT, "attempt"])
    con.execute(f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table}"
                f" QUALIFY row_number() OVER (PARTITION BY {keys} ORDER BY rowid DESC) > 1)")


# The fields no record lacks (`Record`'s required ones). A JSON object missing one, or holding one of the
# wrong type (read as NULL), is a damaged line like a torn one: readers sort and group by these fields.
REQUIRED = tuple(
    name for name, f in Record.model_fields.items() if f.is_required() and ReportColumn(name, name) in REPORT_SELECT
)
_INTACT = " AND ".join(f"{name} IS NOT NULL" for name in REQUIRED)

UNIT = ("run", "lane", "device", "task_id", "instance", "repeat")
"""The columns naming a unit (`Record.unit_key`): its attempts are retries; distinct units are never merged."""
ORDER = "run, task_id, device, instance, repeat, lane, attempt"
"""The order record sources are stored in (`pos` follows it); an attempt written twice keeps line order."""

CACHE_DIR = ".cache"
CACHE_FILE = "records.duckdb"
CACHE_FORMAT = 7
"""Bump when REPORT_SELECT or the stamp changes: older caches are then rebuilt."""
CACHE_MIN_BYTES = 16 << 20
"""Record files smaller than this are parsed every time (it is fast) and get no cache."""


class FileStamp(BaseModel):
    """What identifies the content of a records.jsonl a cache was built from."""

    model_config = ConfigDict(extra="forbid")

    size: int
    """Size in bytes."""
    mtime_ns: int
    """Modification time (ns)."""
    first_line_sha256: str
    """SHA-256 of the first line."""
    last_line_sha256: str
    """SHA-256 of the last line."""


class CacheStamp(BaseModel):
    """Stored inside the cache: the file it was derived from, and facts about its rows."""

    model_config = ConfigDict(extra="forbid")

    format: int
    """CACHE_FORMAT the cache was written with."""
    source: FileStamp
    """The records.jsonl it was built from (taken before reading it)."""
    duplicate_keys: int
    """Unit keys (run, lane, device, task, instance, repeat) with more than one record (retries)."""
    damage: Damage
    """Damaged lines of the source, left out of the cache."""


def file_stamp(path: Path) -> FileStamp:
    """Size, mtime and the hashes of the first and last lines of a file."""
    st = path.stat()
    with path.open("rb") as fh:
        first = fh.readline()
        fh.seek(max(0, st.st_size - (1 << 16)))
        # A last line longer than the window is identified by its last 64 KiB.
        last = fh.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]
    return FileStamp(
        size=st.st_size, mtime_ns=st.st_mtime_ns,
        first_line_sha256=hashlib.sha256(first).hexdigest(), last_line_sha256=hashlib.sha256(last).hexdigest(),
    )


def cache_path(run_dir: Path) -> Path:
    """Where a run keeps the columnar cache of its records.jsonl (derived; safe to delete)."""
    return run_dir / CACHE_DIR / CACHE_FILE


@dataclass(frozen=True)
class ReportRecords:
    """What `report_records` set up."""

    retries: bool
    """Some unit has more than one record: keep the latest attempt."""
    ordered: bool
    """`pos` orders `rec` by ORDER: a single source, sorted when it was read."""
    damaged: list[tuple[Path, Damage]] = field(default_factory=list)
    """Record files with damaged lines (skipped), and which."""


@dataclass(frozen=True)
class _Source:
    name: str
    duplicate_keys: int
    damage: Damage


def report_records(
    con: duckdb.DuckDBPyConnection, run_dirs: Sequence[Path], *, cache_min_bytes: int = CACHE_MIN_BYTES
) -> ReportRecords:
    """Create the `rec` view: the REPORT_SELECT columns of every run's records, plus `pos` (row position).

    Large record files are read through a columnar cache next to them, rebuilt whenever the file's size,
    mtime, first or last line differ from what the cache was built from. Damaged lines (a torn last
    append, a corrupt line) are skipped and returned in `damaged`, never silently dropped.
    """
    sources: list[str] = []
    duplicates = False
    damaged: list[tuple[Path, Damage]] = []
    seen: dict[Path, str] = {}
    for i, run_dir in enumerate(run_dirs):
        path = (run_dir / RECORDS_FILE).resolve()
        if not path.is_file():
            continue
        if path in seen:
            sources.append(seen[path])
            duplicates = True
            continue
        src = _source(con, path, f"src{i}", cache_min_bytes)
        seen[path] = src.name
        sources.append(src.name)
        duplicates = duplicates or src.duplicate_keys > 0
        if src.damage.total:
            damaged.append((run_dir / RECORDS_FILE, src.damage))
    if sources:
        con.execute(
            "CREATE TEMP VIEW rec AS " + " UNION ALL ".join(f"SELECT *, rowid AS pos FROM {s}" for s in sources)
        )
        if len(sources) > 1 and not duplicates:
            # Retries of one unit can only span files if a run id appears in more than one of them.
            shared = con.execute(
                "SELECT count(*) FROM (SELECT run FROM ("
                + " UNION ALL ".join(f"SELECT DISTINCT run, {n} AS f FROM {s}" for n, s in enumerate(sources))
                + ") GROUP BY run HAVING count(*) > 1)"
            ).fetchone()
            duplicates = bool(shared and shared[0])
    else:
        cols = ", ".join(f"CAST(NULL AS {report_type(c.name)}) AS {c.name}" for c in REPORT_SELECT)
        con.execute(f"CREATE TEMP VIEW rec AS SELECT {cols}, CAST(NULL AS BIGINT) AS pos WHERE false")
    return ReportRecords(retries=duplicates, ordered=len(sources) == 1, damaged=damaged)


# Keys (units, or units with the attempt) that more than one record has.
_DUP_KEYS_SQL = "SELECT count(*) FROM (SELECT {keys} FROM {t} GROUP BY ALL HAVING count(*) > 1)"


def _intact_source(path: Path) -> str:
    # `run`, NULL on every damaged line: what `find_damage` counts and locates.
    required = _json_source([str(path)], {name: RECORD_COLUMNS[name] for name in REQUIRED})
    return f"(SELECT CASE WHEN {_INTACT} THEN run END AS run FROM {required})"


def _numbered(source: str) -> str:
    # A streaming window numbers the rows in file order; it serialises the scan, so only the rare
    # search for damaged lines uses it.
    return f"(SELECT *, row_number() OVER () AS seq FROM {source})"


def _fill(con: duckdb.DuckDBPyConnection, table: str, path: Path, *, temp: bool) -> tuple[int, Damage]:
    """Parse one records.jsonl into `table` in ORDER (so a report over one run writes its rows without
    sorting them), damaged lines left out; its duplicate-key count and damage."""
    import duckdb

    create = f"CREATE {'TEMP ' if temp else ''}TABLE {table}"
    cols = ", ".join(f"{c.sql} AS {c.name}" for c in REPORT_SELECT)
    source = _json_source([str(path)], {k: RECORD_COLUMNS[k] for k in REPORT_READ})
    try:
        con.execute(f"{create} AS SELECT {cols} FROM {source} ORDER BY {ORDER}")
        row = con.execute(f"SELECT count(*) FROM {table} WHERE NOT ({_INTACT})").fetchone()
        damage = Damage()
        if row and row[0]:
            con.execute(f"DELETE FROM {table} WHERE NOT ({_INTACT})")
            damage = find_damage(con, _numbered(_intact_source(path)), path)
        row = con.execute(_DUP_KEYS_SQL.format(keys=", ".join(UNIT), t=table)).fetchone()
        dup_units = int(row[0]) if row else 0
        if dup_units and _dup_attempts(con, table):
            # An attempt written twice: the later line wins, so ties must keep file order, which the
            # parallel sort does not promise. A table filled in insertion order has rowid = line order.
            raw = f"{table.rsplit('.', 1)[-1]}_lines"
            con.execute(f"DROP TABLE {table}")
            con.execute(f"CREATE TEMP TABLE {raw} AS SELECT {cols} FROM {source}")
            con.execute(f"{create} AS SELECT * FROM {raw} WHERE {_INTACT} ORDER BY {ORDER}, rowid")
            con.execute(f"DROP TABLE {raw}")
    except duckdb.Error:
        _raise_bad_file(path)
    return dup_units, damage


def _dup_attempts(con: duckdb.DuckDBPyConnection, table: str) -> int:
    row = con.execute(_DUP_KEYS_SQL.format(keys=", ".join([*UNIT, "attempt"]), t=table)).fetchone()
    return int(row[0]) if row else 0


def damaged_lines(run_dirs: Sequence[Path]) -> list[tuple[Path, Damage]]:
    """Damaged lines of each run's records.jsonl (what the `records` view skips), for warnings.

    A valid cache already knows them; otherwise one parse of the `run` field finds them.
    """
    import duckdb

    out: list[tuple[Path, Damage]] = []
    con = duckdb.connect(":memory:")
    try:
        for i, run_dir in enumerate(run_dirs):
            path = run_dir / RECORDS_FILE
            if not path.is_file():
                continue
            stamp = _cached_stamp(con, path.resolve(), file_stamp(path), f"probe{i}")
            source = _intact_source(path)
            if stamp is not None:
                damage = stamp.damage
            elif (row := con.execute(f"SELECT count(*) FROM {source} WHERE run IS NULL").fetchone()) and row[0]:
                damage = find_damage(con, _numbered(source), path)
            else:
                damage = Damage()
            if damage.total:
                out.append((path, damage))
    finally:
        con.close()
    return out


def _cached_stamp(con: duckdb.DuckDBPyConnection, path: Path, stamp: FileStamp, name: str) -> CacheStamp | None:
    """The stamp of a cache that matches `stamp`, left attached as `<name>_db`; None (detached) otherwise."""
    import duckdb

    cache = cache_path(path.parent)
    if not cache.is_file():
        return None
    try:
        con.execute(f"ATTACH {sql_str(str(cache))} AS {name}_db (READ_ONLY)")
    except duckdb.Error:
        return None
    try:
        row = con.execute(f"SELECT stamp FROM {name}_db.stamp").fetchone()
        found = CacheStamp.model_validate_json(row[0]) if row else None
    except (duckdb.Error, ValidationError):
        found = None
    if found is None or found.format != CACHE_FORMAT or found.source != stamp:
        con.execute(f"DETACH {name}_db")
        return None
    return found


def _source(con: duckdb.DuckDBPyConnection, path: Path, name: str, cache_min_bytes: int) -> _Source:
    """A table holding the report columns of one records.jsonl, its duplicate-key count and damage."""
    stamp = file_stamp(path)
    if stamp.size >= cache_min_bytes:
        cached = _cached_stamp(con, path, stamp, name)
        if cached is not None:
            return _Source(f"{name}_db.rec", cached.duplicate_keys, cached.damage)
        built = _build_cache(con, path, stamp, name)
        if built is not None:
            return built
    dup_keys, damage = _fill(con, name, path, temp=True)
    return _Source(name, dup_keys, damage)


def _build_cache(con: duckdb.DuckDBPyConnection, path: Path, stamp: FileStamp, name: str) -> _Source | None:
    """Parse the JSONL into a new cache file, publish it atomically, attach it; None when it cannot be written."""
    import duckdb

    cache = cache_path(path.parent)
    try:
        cache.parent.mkdir(exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".records.", suffix=".duckdb", dir=cache.parent)
    except OSError:
        return None
    os.close(fd)
    os.unlink(tmp)
    try:
        try:
            con.execute(f"ATTACH {sql_str(tmp)} AS build")
        except duckdb.Error:
            return None
        try:
            dup_keys, damage = _fill(con, "build.rec", path, temp=False)
        except FarmError:
            # Writing the cache may be what failed (a full disk): the caller reads without one, and a file that
            # really is unreadable is refused there.
            con.execute("DETACH build")
            return None
        # The stamp taken *before* reading: if the file grew meanwhile, the next report sees the change.
        found = CacheStamp(format=CACHE_FORMAT, source=stamp, duplicate_keys=dup_keys, damage=damage)
        con.execute("CREATE TABLE build.stamp (stamp VARCHAR)")
        con.execute("INSERT INTO build.stamp VALUES (?)", [found.model_dump_json()])
        con.execute("DETACH build")
        os.replace(tmp, cache)
    finally:
        Path(tmp).unlink(missing_ok=True)
        Path(tmp + ".wal").unlink(missing_ok=True)
    con.execute(f"ATTACH {sql_str(str(cache))} AS {name}_db (READ_ONLY)")
    return _Source(f"{name}_db.rec", found.duplicate_keys, found.damage)


def _raise_bad_file(path: Path) -> NoReturn:
    raise FarmError(f"{path}: unreadable record file", hint="check records.jsonl of the run")


_QUERY_HINT = "one SELECT over the views records, runs, devices"


def _query_error(exc: Exception) -> NoReturn:
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    raise FarmError(f"query: {first}", hint=_QUERY_HINT) from None


def check_query(sql: str) -> None:
    """Refuse (FarmError) anything but exactly one SELECT statement: `farm query` only reads."""
    import duckdb

    if not sql.strip():
        raise FarmError("query: empty query", hint=_QUERY_HINT)
    try:
        with duckdb.connect(":memory:") as parser:
            statements = parser.extract_statements(sql)
    except duckdb.Error as exc:
        _query_error(exc)
    if not statements:
        raise FarmError("query: empty query (nothing but comments or semicolons)", hint=_QUERY_HINT)
    if len(statements) > 1:
        raise FarmError(f"query: {len(statements)} statements refused, farm query runs one", hint=_QUERY_HINT)
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        # PIVOT without an IN list is a MULTI statement: it creates a type before selecting.
        what = "PIVOT without IN (…)" if kind == duckdb.StatementType.MULTI else kind.name
        raise FarmError(f"query: {what} refused, farm query is read-only", hint=_QUERY_HINT)


def query(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[list[str], list[tuple[object, ...]]]:
    """Run one SELECT (see `check_query`); return column names and rows. A SQL error is a FarmError."""
    import duckdb

    check_query(sql)
    try:
        cur = con.execute(sql)
        rows = cur.fetchall()
    except duckdb.Error as exc:
        _query_error(exc)
    names = [c[0] for c in (cur.description or [])]
    return names, rows
