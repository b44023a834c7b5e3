"""A run's units in DuckDB, for the run page: filtered, searched and paged on the server, so a run of a hundred
thousand units answers each page in milliseconds.

The records are read once per change of records.jsonl or the manifest through `farm.results.duck.query_connection`
(the `records` table `farm query` sees: one row per attempt, an attempt written twice as its later line, damaged
lines skipped and reported) into one `units` table holding what a row shows. Each unit keeps the key of its unit
page exactly as `farm.view.units` makes it (the same readable text, the same `-N` for a key two attempts share, in
line order), its verdict by the headline's own rule (`farm.report.headline.INITIAL_SQL`), and whether it is its
unit's latest try (highest attempt; the later line on a tie), which is what the headline counts.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from farm import manifest as mf
from farm.errors import FarmError
from farm.phone_name import PhoneId
from farm.report.headline import INITIAL_SQL, rate_row
from farm.report.model import RateRow
from farm.results.columns import struct_type
from farm.results.damage import damage_text
from farm.results.record import CheckResult
from farm.results.store import RECORDS_FILE
from farm.view.goals import run_goals
from farm.view.phones import phone_ref, phones_of, read_manifest
from farm.view.unit_query import VERDICTS, UnitQuery

if TYPE_CHECKING:
    import duckdb

_CHECKS = f"TRY_CAST(checks AS {struct_type(CheckResult, 'CheckResult')}[])"
_KEY = ("trim(regexp_replace(concat_ws('.', task_id, device, CASE WHEN instance <> '' THEN 'i' || instance END,"
        " CASE WHEN repeat > 1 THEN 'r' || repeat END, 'a' || attempt), '[^A-Za-z0-9._-]+', '_', 'g'), '._')")
"""`farm.view.units.unit_key` in SQL (before the `-N` that makes it unique)."""
_VERDICT = (f"CASE WHEN outcome IN ('skipped', 'error') THEN outcome WHEN {INITIAL_SQL} THEN 'pass' ELSE 'fail' END")
_RANK = "CASE verdict WHEN 'fail' THEN 0 WHEN 'error' THEN 1 WHEN 'pass' THEN 2 ELSE 3 END"
_BUILD = f"""
CREATE TABLE units AS
WITH lines AS (SELECT rowid AS line, * FROM records),
named AS (
  SELECT *, coalesce(nullif({_KEY}, ''), 'unit') AS base, {_VERDICT} AS verdict, {_CHECKS} AS cs,
    row_number() OVER (PARTITION BY run, lane, device, task_id, instance, repeat
                       ORDER BY attempt DESC, line DESC) = 1 AS latest
  FROM lines),
keyed AS (
  SELECT *, row_number() OVER (PARTITION BY base ORDER BY line) AS nth,
    list_filter(cs, lambda x: x.passed IS NOT TRUE)[1] AS failing
  FROM named)
SELECT
  CASE WHEN nth = 1 THEN base ELSE base || '-' || nth END AS key,
  row_number() OVER (ORDER BY NOT latest, {_RANK}, line) AS ord,
  k.lane, k.task_id, k.category, k.device, coalesce(p.phone, k.device) AS phone, coalesce(p.place, '') AS place,
  k.instance, k.repeat, k.attempt, k.latest, k.verdict, k.outcome, k.end_reason,
  failing.type AS check_type, failing.detail AS check_detail, failing.passed AS check_passed,
  k.reasons[1] AS reason, k.metrics.total_ms AS total_ms,
  CASE WHEN k.tokens.input_new IS NOT NULL
       THEN k.tokens.input_new + coalesce(k.tokens.cache_read, 0) + coalesce(k.tokens.cache_write, 0) END
    AS tokens_in,
  k.tokens.output AS tokens_out, k.cost_usd,
  lower(concat_ws(' ', k.task_id, g.goal, k.answer,
                  array_to_string(list_transform(cs, lambda x: concat_ws(' ', x.type, x.detail)), ' '))) AS haystack
FROM keyed k LEFT JOIN phones p USING (device) LEFT JOIN goals g USING (task_id)
ORDER BY ord
"""
# Stored in page order: a page's rows then lie together, and reading them back by their `ord` range skips the rest.


class PagedUnit(BaseModel):
    """One row of the run page's units table."""

    model_config = ConfigDict(extra="forbid")

    key: str
    """The unit page's URL segment (`farm.view.units`)."""
    task_id: str
    category: str
    device: str
    phone: str
    """The device's stable name (`farm.phone_name`)."""
    place: str
    """`<serial> on <adb server>`, shown beside the name; empty for a device known by its own name."""
    instance: str
    repeat: int
    attempt: int
    latest: bool
    verdict: str
    outcome: str
    end_reason: str | None = None
    check_type: str | None = None
    """The first check that did not pass (failed, or reached no verdict)."""
    check_detail: str | None = None
    check_passed: bool | None = None
    """False: the check failed; null: it reached no verdict."""
    reason: str | None = None
    """The first reason the record gives (a skip's, an error's, a failure's)."""
    total_ms: float | None = None
    tokens_in: int | None = None
    """Prompt tokens (new input + cache read + cache write); null while the new input is unknown."""
    tokens_out: int | None = None
    cost_usd: float | None = None


class UnitPage(BaseModel):
    """One page of a run's units under a query."""

    model_config = ConfigDict(extra="forbid")

    rows: list[PagedUnit] = Field(default_factory=list)
    matching: int = 0
    """Units the query matches (all pages)."""
    page: int = 1
    """The page shown (a page past the last shows the last)."""
    pages: int = 1


_COLUMNS = tuple(PagedUnit.model_fields)


class UnitIndex:
    """The `units` table of one run and what the page offers to filter by; thread-safe."""

    def __init__(self, con: duckdb.DuckDBPyConnection, problems: list[str], devices: list[str],
                 phone_ids: dict[str, PhoneId]) -> None:
        self._con = con
        self._lock = threading.Lock()
        self.problems = problems
        """Damaged record lines skipped, one line each."""
        self.devices = devices
        """Every device the records name."""
        self.phone_ids = phone_ids
        """The run's phones (`farm.view.phones.phones_of`)."""
        self.categories = self._distinct("category")
        self.phones = self._distinct("phone")
        self.outcomes = self._distinct("outcome")
        self.check_types = self._distinct("check_type")
        """Types of the first check that did not pass, over every try."""
        self.end_reasons = self._distinct("end_reason")
        counts = dict(self._fetch("SELECT verdict, count(*) FROM units WHERE latest GROUP BY verdict", []))
        self.verdicts: dict[str, int] = {v: int(counts.get(v, 0)) for v in VERDICTS}
        """Latest tries per verdict."""
        row = self._fetch("SELECT count(*), count(*) FILTER (WHERE NOT latest) FROM units", [])[0]
        self.attempts, self.earlier = int(row[0]), int(row[1])
        self._headline = self._count_headline()

    def _fetch(self, sql: str, values: list[object]) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._con.execute(sql, values).fetchall()

    def select(self, sql: str, values: list[object]) -> list[tuple[Any, ...]]:
        """Rows of a read of the `units` table (values bound, never part of the SQL text)."""
        return self._fetch(sql, values)

    def _distinct(self, column: str) -> list[str]:
        return [str(r[0]) for r in self._fetch(f"SELECT DISTINCT {column} FROM units WHERE {column} IS NOT NULL"
                                               " ORDER BY 1", [])]

    def identity(self, key: str) -> tuple[tuple[str, str, str, str, int, int], bool] | None:
        """The attempt the unit with this key is — (lane, device, task, instance, repeat, attempt) — and whether it
        is its unit's latest try; None when no unit has the key."""
        rows = self._fetch("SELECT lane, device, task_id, instance, repeat, attempt, latest FROM units WHERE key = ?",
                           [key])
        if not rows:
            return None
        lane, device, task, instance, repeat, attempt, latest = rows[0]
        return (str(lane), str(device), str(task), str(instance), int(repeat), int(attempt)), bool(latest)

    def headline(self) -> RateRow:
        """`farm.report.headline.headline` of the run's records, counted in SQL by the same rules: each unit's
        latest try; skips apart; errors attempted; passed by `INITIAL_SQL`."""
        return self._headline.model_copy()

    def _count_headline(self) -> RateRow:
        row = self._fetch("SELECT count(*), count(*) FILTER (WHERE outcome <> 'skipped'),"
                          " count(*) FILTER (WHERE verdict = 'pass'), count(*) FILTER (WHERE outcome = 'error')"
                          " FROM units WHERE latest", [])[0]
        planned, attempted, passed, errors = (int(v) for v in row)
        return rate_row("all", planned, attempted, passed, errors)

    def page(self, query: UnitQuery) -> UnitPage:
        """The rows of `query`'s page, failures first (then errors, passes, skips; earlier tries last), in line
        order within each."""
        where, values = query.where()
        matching = int(self._fetch(f"SELECT count(*) FROM units WHERE {where}", values)[0][0])
        pages = max(1, -(-matching // query.per))
        page = min(query.page, pages)
        # The page's positions first, then its rows: sorting whole rows to drop most of them costs twice as much.
        ords = [int(r[0]) for r in self._fetch(f"SELECT ord FROM units WHERE {where} ORDER BY ord LIMIT ? OFFSET ?",
                                               [*values, query.per, (page - 1) * query.per])]
        rows = self._fetch(f"SELECT {', '.join(_COLUMNS)} FROM units WHERE ord BETWEEN ? AND ?"
                           " AND list_contains(?, ord) ORDER BY ord", [ords[0], ords[-1], ords]) if ords else []
        return UnitPage(rows=[PagedUnit(**dict(zip(_COLUMNS, r, strict=True))) for r in rows],
                        matching=matching, page=page, pages=pages)


def build_index(runs_dir: Path, run_dir: Path, tasks_dir: Path | None = None) -> UnitIndex:
    """The index of one run; a FarmError when its records (or its manifest) cannot be read."""
    import duckdb

    from farm.results.duck import damaged_lines, query_connection

    manifest = read_manifest(run_dir)
    con = query_connection([run_dir])
    try:
        devices = con.execute("SELECT DISTINCT device, lane = 'android' FROM records").fetchall()
        ids = phones_of(manifest, [str(d) for d, android in devices if android])
        refs = [phone_ref(str(d), ids) for d, _ in devices]
        con.execute("CREATE TABLE phones (device VARCHAR, phone VARCHAR, place VARCHAR)")
        if refs:
            con.executemany("INSERT INTO phones VALUES (?, ?, ?)", [(p.device, p.phone, p.where) for p in refs])
        con.execute("CREATE TABLE goals (task_id VARCHAR, goal VARCHAR)")
        goals = run_goals(runs_dir, manifest, tasks_dir)
        if goals:
            con.executemany("INSERT INTO goals VALUES (?, ?)", list(goals.items()))
        con.execute(_BUILD)
        con.execute("DROP TABLE records")
    except duckdb.Error as exc:
        con.close()
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise FarmError(f"{run_dir / RECORDS_FILE}: the records could not be indexed ({first})") from None
    problems = [line for path, damage in damaged_lines([run_dir]) for line in damage_text(path, damage)]
    return UnitIndex(con, problems, [str(d) for d, _ in devices], ids)


CACHED_RUNS = 4
"""Runs whose index stays in memory (the ones read last)."""
_CACHE: OrderedDict[tuple[Path, Path | None], tuple[tuple[int, ...], UnitIndex]] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def files_stamp(*paths: Path) -> tuple[int, ...]:
    """What a cached reading of `paths` depends on: each file's modification time and size ((0, -1) when absent)."""
    out: list[int] = []
    for path in paths:
        try:
            st = path.stat()
            out += [st.st_mtime_ns, st.st_size]
        except OSError:
            out += [0, -1]
    return tuple(out)


def cached_index(runs_dir: Path, run_dir: Path, tasks_dir: Path | None = None) -> UnitIndex:
    """`build_index`, built again only when records.jsonl or the manifest changed (size or modification time)."""
    stamp, key = files_stamp(run_dir / RECORDS_FILE, mf.manifest_path(run_dir)), (run_dir, tasks_dir)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None and hit[0] == stamp:
            _CACHE.move_to_end(key)
            return hit[1]
    index = build_index(runs_dir, run_dir, tasks_dir)
    with _CACHE_LOCK:
        # An index dropped here is freed with its connection once no request still reads it.
        _CACHE[key] = (stamp, index)
        _CACHE.move_to_end(key)
        while len(_CACHE) > CACHED_RUNS:
            _CACHE.popitem(last=False)
    return index
