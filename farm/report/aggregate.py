"""Aggregate records (DuckDB) into `ReportData`: rates with Wilson intervals, skips, timing, cost."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from farm import manifest as mf
from farm.errors import FarmError
from farm.manifest import utc_now
from farm.phone_name import PhoneId, from_manifests
from farm.report import glance_data
from farm.report.compare import comparison
from farm.report.compare_sides import overall_row
from farm.report.headline import INITIAL_SQL, LOGIN_SQL, holdout_counted, rate_row
from farm.report.lost_hosts import LostHost, lost_hosts
from farm.report.model import (
    CountRow,
    DisagreementRow,
    FailureGroup,
    LeftOutRow,
    MarkerRow,
    PhoneRow,
    RateRow,
    ReportData,
    RetriedRow,
    SkipRow,
    Stat,
    SumRow,
    TaskRow,
)
from farm.report.overrides_apply import CATEGORY_SQL, apply_overrides, final_sql, short
from farm.report.why import why
from farm.results import duck
from farm.results.damage import damage_text
from farm.results.stats import nearest_rank_position

if TYPE_CHECKING:
    import duckdb

LIST_CAP = 500
"""Rows of each list (skipped, login hand-overs, not passed, markers) shown in report.md; scores.csv has all."""
_NOT_SKIPPED = "outcome <> 'skipped'"
_UNIT_ORDER = "run, task_id, device, instance, repeat, lane"
"""Per-unit rows in reports: by run, task, device, then instance and repeat (lane last: it rarely differs)."""
_GROUPS = ("category", "partition", "device", "expect")


@dataclass
class Aggregation:
    """The DuckDB connection with the `shown` view, the labels, and the computed data."""

    con: duckdb.DuckDBPyConnection
    labels: dict[str, str]
    """Serial → device label (a phone's stable name, `farm.phone_name`)."""
    data: ReportData
    run_dirs: list[Path] = field(default_factory=list)
    ordered: bool = False
    """`shown.pos` follows (run, task_id, serial, instance, repeat, lane)."""
    scan_ordered: bool = False
    """Scanning `shown` itself yields that order (no join in between)."""

    def label_sql(self, column: str) -> str:
        """SQL mapping a serial column to its device label (an expression, so row order survives)."""
        whens = " ".join(f"WHEN {duck.sql_str(s)} THEN {duck.sql_str(lab)}" for s, lab in self.labels.items())
        return f"CASE {column} {whens} ELSE {column} END" if whens else column

    def csv_order(self) -> str:
        """ORDER BY for per-attempt rows by run, task, device label, instance, repeat (empty when the scan is
        in that order)."""
        by_serial = [self.labels[s] for s in sorted(self.labels)]
        if self.ordered and by_serial == sorted(by_serial):
            return "" if self.scan_ordered else "ORDER BY pos"
        return f"ORDER BY {_UNIT_ORDER}"

    def task_rows(self, where: str = "true", limit: int | None = None, order: str = "") -> Iterator[TaskRow]:
        """Shown attempts as TaskRows, ordered by `order` (SQL) then by run, task, device, instance, repeat."""
        cur = self.con.execute(
            "SELECT run, task_id, device, instance, repeat, category, coalesce(partition, ''),"
            " coalesce(expect, ''), outcome, initial, final, coalesce(reason, ''), coalesce(failure_category, ''),"
            " total_ms, coalesce(evidence, ''), CASE WHEN NOT final THEN failing_checks END"
            f" FROM shown WHERE {where} ORDER BY {order + ', ' if order else ''}"
            f"{_UNIT_ORDER}" + (f" LIMIT {int(limit)}" if limit is not None else "")
        )
        while batch := cur.fetchmany(10_000):
            for r in batch:
                yield TaskRow(
                    run=r[0], task_id=r[1], device=self.labels.get(r[2], r[2]), instance=r[3], repeat=r[4],
                    category=r[5] or "", partition=r[6], expect=r[7], outcome=r[8], initial=bool(r[9]),
                    final=bool(r[10]), reason=short(r[11]), failure_category=r[12],
                    seconds=None if r[13] is None else r[13] / 1000.0, evidence=r[14],
                    failing_checks=list(why(r[15], ()).checks),
                )


def phone_ids(con: duckdb.DuckDBPyConnection, run_dirs: Sequence[Path]) -> dict[str, PhoneId]:
    """Serial → PhoneId (`farm.phone_name`) of every phone of the runs: the name each run's manifest recorded at
    discovery (the later run's when two differ; computed for runs recorded before names were), and phones only
    the records name."""
    models = dict(con.execute("SELECT serial, any_value(model) FROM devices GROUP BY serial").fetchall())
    rows = con.execute("SELECT DISTINCT device, lane FROM rec ORDER BY device").fetchall()
    named = {d for d, lane in rows if lane not in (None, "android")} - set(models)
    manifests = []
    for run_dir in run_dirs:
        try:
            data = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            continue  # the manifest's own problems are the runs table's to report
        if isinstance(data, dict):
            manifests.append(data)
    return from_manifests(manifests, [(d, models.get(d)) for d, _lane in rows if d not in named])


def device_labels(con: duckdb.DuckDBPyConnection, phones: dict[str, PhoneId]) -> dict[str, str]:
    """Serial → the phone's stable name; a web backend or a desktop machine keeps its own name."""
    labels = {name: name for name, in con.execute("SELECT DISTINCT device FROM rec").fetchall()}
    return labels | {serial: p.name for serial, p in phones.items()}


def phone_rows(phones: dict[str, PhoneId]) -> list[PhoneRow]:
    """The phones table of the reports: by name."""
    return [PhoneRow(name=p.name, serial=p.serial, adb_server=p.server, model=p.model)
            for p in sorted(phones.values(), key=lambda p: (p.name, p.serial))]


@dataclass
class _Counts:
    """What one grouping-sets pass over `shown` yields."""

    rates: dict[str, list[RateRow]]
    overall: tuple[int, int, int, int]
    """planned, attempted, passed, errors."""
    outcomes: list[CountRow]
    execution: list[str]
    login_total: int
    markers_total: int
    instances: bool
    repeats: bool


def _counts(con: duckdb.DuckDBPyConnection, labels: dict[str, str]) -> _Counts:
    """Every rate table, the outcome counts and the execution kinds in one scan."""
    keys = ", ".join(f"coalesce(CAST({g} AS VARCHAR), '(none)') AS k_{g}" for g in _GROUPS)
    sets = ", ".join(f"(k_{g})" for g in _GROUPS)
    rows = con.execute(
        f"SELECT grouping(k_category, k_partition, k_device, k_expect, outcome, execution) AS g,"
        f" k_category, k_partition, k_device, k_expect, outcome, execution,"
        f" count(*) FILTER (WHERE {_NOT_SKIPPED}), count(*) FILTER (WHERE {_NOT_SKIPPED} AND final),"
        " count(*) FILTER (WHERE outcome = 'error'), count(*),"
        " count(*) FILTER (WHERE login_handover), count(*) FILTER (WHERE len(markers) > 0),"
        " count(*) FILTER (WHERE instance <> ''), count(*) FILTER (WHERE repeat <> 1)"
        f" FROM (SELECT {keys}, outcome, execution, final, login_handover, markers, instance, repeat FROM shown)"
        f" GROUP BY GROUPING SETS ({sets}, (outcome), (execution), ())"
    ).fetchall()
    # grouping() sets a bit per column *not* grouped, first column highest.
    width = len(_GROUPS) + 2
    only = {1 << (width - 1 - i): i for i in range(width)}
    full = (1 << width) - 1
    rates: dict[str, list[RateRow]] = {g: [] for g in _GROUPS}
    counts = _Counts(rates, (0, 0, 0, 0), [], [], 0, 0, False, False)
    for row in rows:
        g, values, (attempted, passed, errors, total, login, markers, instances, repeats) = row[0], row[1:7], row[7:]
        if g == full:
            counts.overall = (total, attempted, passed, errors)
            counts.login_total, counts.markers_total = login, markers
            counts.instances, counts.repeats = instances > 0, repeats > 0
            continue
        i = only[full ^ g]
        if i < len(_GROUPS):
            key = str(values[i])
            if _GROUPS[i] == "device":
                key = labels.get(key, key)
            rates[_GROUPS[i]].append(rate_row(key, total, attempted, passed, errors))
        elif i == len(_GROUPS):
            counts.outcomes.append(CountRow(key=values[i], count=total))
        elif values[i]:
            counts.execution.append(values[i])
    for group in rates.values():
        group.sort(key=lambda r: r.key)
    counts.outcomes.sort(key=lambda c: c.key)
    counts.execution.sort()
    return counts


def _stat(con: duckdb.DuckDBPyConnection, name: str, col: str) -> Stat:
    import numpy as np

    arr = con.execute(f"SELECT {col} FROM shown WHERE {_NOT_SKIPPED} AND {col} IS NOT NULL").fetchnumpy()
    values = np.asarray(arr[col], dtype=np.float64)
    n = int(values.size)
    if n == 0:
        return Stat(name=name, n=0, median=None, p90=None)
    rank = nearest_rank_position(n, 90) - 1
    # Selection, not a full sort: the same order statistics.
    p90 = float(np.partition(values, rank)[rank])
    return Stat(name=name, n=n, median=float(np.median(values)), p90=p90)


_SUMS = (
    ("time_split", ("model_ms", "screen_read_ms", "action_ms", "other_ms")),
    ("tokens", ("input_new", "cache_read", "cache_write", "output")),
    ("cost", ("cost_usd",)),
)


def _sum_fn(col: str) -> str:
    # Integers sum exactly; doubles with compensated summation, so the order rows arrive in does not matter.
    return "fsum" if duck.report_type(col) == "DOUBLE" else "sum"


def _sums(con: duckdb.DuckDBPyConnection) -> dict[str, list[SumRow]]:
    cols = [c for _, group in _SUMS for c in group]
    row = con.execute(
        "SELECT count(*), " + ", ".join(f"{_sum_fn(c)}({c}), count({c})" for c in cols)
        + f" FROM shown WHERE {_NOT_SKIPPED}"
    ).fetchone()
    count = int(row[0]) if row else 0
    rows: dict[str, SumRow] = {}
    for i, c in enumerate(cols):
        total, known = (row[1 + 2 * i], int(row[2 + 2 * i])) if row else (None, 0)
        rows[c] = SumRow(name=c, total=None if known == 0 or total is None else float(total), known=known,
                         unknown=count - known)
    return {part: [rows[c] for c in group] for part, group in _SUMS}


def _skip_rows(con: duckdb.DuckDBPyConnection, where: str, default: str,
               labels: dict[str, str]) -> tuple[list[SkipRow], dict[str, int]]:
    """The first LIST_CAP rows of each run (a comparison lists each side apart), and each run's total."""
    rows = con.execute(
        f"SELECT task_id, device, reason, instance, repeat, run, count(*) OVER (PARTITION BY run) FROM shown"
        f" WHERE {where} QUALIFY row_number() OVER (PARTITION BY run ORDER BY task_id, instance, repeat, device)"
        f" <= {LIST_CAP} ORDER BY run, task_id, instance, repeat, device"
    ).fetchall()
    return [
        SkipRow(task_id=t, device=labels.get(d, d), reason=short(r or default), instance=i, repeat=k, run=run)
        for t, d, r, i, k, run, _ in rows
    ], {run: int(n) for *_, run, n in rows}


def aggregate(
    run_dirs: Sequence[Path],
    *,
    include_holdout: bool | None = None,
    overrides_files: Sequence[Path] = (),
    cache_min_bytes: int = duck.CACHE_MIN_BYTES,
) -> Aggregation:
    """Compute everything a report shows for one run (or a paired comparison of two).

    One row per unit (run, lane, device, task, instance, repeat): its latest attempt. Only aggregates and
    the first `LIST_CAP` rows of each list leave DuckDB; the per-attempt files (scores.csv, junit.xml)
    are written from DuckDB by the report writers.
    """
    run_dirs = list(run_dirs)
    if include_holdout is None:
        include_holdout = holdout_counted(run_dirs)
    con = duck.connect(run_dirs, records_view=False)
    source = duck.report_records(con, run_dirs, cache_min_bytes=cache_min_bytes)
    latest = f"SELECT *, {LOGIN_SQL} AS login_handover, {INITIAL_SQL} AS initial FROM rec"
    if source.retries:
        # The highest attempt of each unit; one attempt written twice is one attempt (the later line).
        con.execute(
            f"CREATE TEMP TABLE latest AS {latest} QUALIFY row_number() OVER"
            f" (PARTITION BY {', '.join(duck.UNIT)} ORDER BY attempt DESC, pos DESC) = 1"
            + (" ORDER BY pos" if source.ordered else "")
        )
    else:
        con.execute(f"CREATE TEMP VIEW latest AS {latest}")
    phones = phone_ids(con, run_dirs)
    labels = device_labels(con, phones)
    override_rows, finals = apply_overrides(con, run_dirs, overrides_files, labels)
    holdout = "true" if include_holdout else "coalesce(l.partition, '') <> 'holdout'"
    fin = final_sql(con, finals)
    con.execute(
        f"CREATE TEMP VIEW shown AS SELECT l.* REPLACE ({_scrubbed_reason(labels)} AS reason,"
        f" {_scrubbed_lists(labels)}"
        f" {fin.category} AS failure_category), {fin.final} AS final FROM latest l{fin.join} WHERE {holdout}"
    )
    hidden_tasks, hidden_attempts = (0, 0) if include_holdout else con.execute(
        "SELECT count(DISTINCT task_id), count(*) FROM latest WHERE partition = 'holdout'"
    ).fetchone() or (0, 0)
    counts = _counts(con, labels)
    failure_categories, end_reasons, unrecorded = _not_passed(con)
    markers = [
        MarkerRow(device=labels.get(d, d), task_id=t, markers=list(m))
        for d, t, m in con.execute(
            "SELECT device, task_id, markers FROM shown WHERE len(markers) > 0 ORDER BY device, task_id, run"
            f" LIMIT {LIST_CAP}"
        ).fetchall()
    ]
    disagreements, disagreements_total = _disagreements(con, labels)
    retried, retried_total = _retried(con, labels)
    sums = _sums(con)
    runs = [d.name for d in run_dirs]
    outcome_counts = {c.key: c.count for c in counts.outcomes}
    skipped, skipped_by_run = _skip_rows(con, "outcome = 'skipped'", "skipped", labels)
    login, login_by_run = _skip_rows(con, "login_handover", "login", labels)
    grid, timeline = glance_data.glance_views(con, runs[-1], labels, instances=counts.instances, repeats=counts.repeats)
    data = ReportData(
        runs=runs,
        generated_at=utc_now(),
        include_holdout=include_holdout,
        hidden_holdout_tasks=hidden_tasks,
        hidden_holdout_attempts=hidden_attempts,
        execution=counts.execution,
        overall=overall_row(con, run_dirs, counts.overall, include_holdout=include_holdout),
        outcomes=counts.outcomes,
        by_category=counts.rates["category"],
        by_partition=counts.rates["partition"],
        by_device=counts.rates["device"],
        by_expect=counts.rates["expect"],
        skipped=skipped,
        skipped_total=outcome_counts.get("skipped", 0),
        skipped_by_run=skipped_by_run,
        login_handover=login,
        login_handover_by_run=login_by_run,
        login_handover_total=counts.login_total,
        failure_categories=failure_categories,
        infrastructure_errors=counts.overall[3],
        timing=[
            _stat(con, "first_feedback_ms", "first_feedback_ms"),
            _stat(con, "round_trips", "round_trips"),
            _stat(con, "total_ms", "total_ms"),
        ],
        time_split=sums["time_split"],
        tokens=sums["tokens"],
        cost=sums["cost"][0],
        overrides=override_rows,
        markers=markers,
        markers_total=counts.markers_total,
        failures_total=sum(c.count for c in failure_categories),
        comparison=comparison(con, run_dirs, labels, LIST_CAP, include_holdout=include_holdout)
        if len(run_dirs) == 2 else None,
        grid=grid,
        timeline=timeline,
        unfinished_runs=[
            f"{run} ({status})" for run, status in con.execute(
                "SELECT run, coalesce(status, 'unknown') FROM runs WHERE coalesce(status, '') <> 'finished' ORDER BY 1"
            ).fetchall()
        ],
        warnings=[
            line for path, damage in source.damaged
            for line in damage_text(Path(path.parent.name) / path.name, damage)
        ],
        disagreements=disagreements,
        retried=retried,
        retried_total=retried_total,
        disagreements_total=disagreements_total,
        end_reasons=end_reasons,
        end_reason_unrecorded=unrecorded,
        instances=counts.instances,
        repeats=counts.repeats,
        phones=phone_rows(phones),
        left_out=[
            LeftOutRow(run=run, device=labels.get(serial, "device"), reason=_unserial(reason or "", labels))
            for run, serial, reason in con.execute(
                "SELECT run, serial, reason FROM devices WHERE status = 'left_out' ORDER BY run, serial").fetchall()
        ],
    )
    notes = run_notes(run_dirs, labels)
    data.notes, data.notes_total = notes[:LIST_CAP], len(notes)
    data.lost_hosts = _lost_hosts(run_dirs)[:LIST_CAP]
    agg = Aggregation(
        con=con, labels=labels, data=data, run_dirs=run_dirs, ordered=source.ordered,
        scan_ordered=source.ordered and not fin.join,
    )
    # Grouped as the report shows them: by category, then by why they failed.
    data.failures = list(agg.task_rows(f"{_NOT_SKIPPED} AND NOT final", LIST_CAP,
                                       order="category NULLS LAST, failure_category NULLS LAST"))
    data.failure_groups, data.failure_groups_total = failure_groups(con, data.failures)
    return agg


GROUP_WHY = 5
"""Distinct failing checks (or reasons) listed per task in the "Not passed" groups; the rest are counted."""


def failure_groups(con: duckdb.DuckDBPyConnection, failures: Sequence[TaskRow]) -> tuple[list[FailureGroup], int]:
    """The attempts that did not pass, by task (first LIST_CAP tasks, most phones failed first), each with what
    failed and how often (`farm.report.why`), and where its unit rows are in `failures`; and how many tasks."""
    # The groups are ranked by their failures alone, so only the failed attempts are grouped to rank them; the
    # phones each listed group ran on are then counted for those LIST_CAP groups only, not for every task.
    order = "phones_failed DESC, units_failed DESC, category, task_id, run"
    con.execute(
        "CREATE OR REPLACE TEMP TABLE failure_groups AS WITH failed AS (SELECT run, task_id,"
        " coalesce(category, '') AS category, count(DISTINCT device) AS phones_failed, count(*) AS units_failed,"
        f" count(*) OVER () AS total FROM shown WHERE {_NOT_SKIPPED} AND NOT final GROUP BY ALL"
        f" ORDER BY {order} LIMIT {LIST_CAP}),"
        " ran AS (SELECT run, task_id, coalesce(category, '') AS category, count(DISTINCT device) AS phones_run"
        f" FROM shown WHERE {_NOT_SKIPPED} AND (run, task_id) IN (SELECT run, task_id FROM failed) GROUP BY ALL)"
        " SELECT run, task_id, category, phones_failed, phones_run, units_failed, total"
        f" FROM failed JOIN ran USING (run, task_id, category) ORDER BY {order}"
    )
    groups = {
        (run, task): FailureGroup(run=run, task_id=task, category=category, phones_failed=pf, phones_run=pr,
                                  units_failed=uf)
        for run, task, category, pf, pr, uf, _total in con.execute("SELECT * FROM failure_groups").fetchall()
    }
    row = con.execute("SELECT any_value(total) FROM failure_groups").fetchone()
    total = int(row[0]) if row and row[0] is not None else 0
    counted: dict[tuple[str, str], dict[str, int]] = {key: {} for key in groups}
    for run, task, checks, reasons, n in con.execute(
        "SELECT s.run, s.task_id, s.failing_checks, s.reasons, count(*) FROM shown s"
        f" SEMI JOIN failure_groups g USING (run, task_id) WHERE s.{_NOT_SKIPPED} AND NOT s.final GROUP BY ALL"
    ).fetchall():
        w = why(checks, reasons)
        tally = counted[(run, task)]
        for item in w.checks or w.reasons[:1] or ("not recorded",):
            tally[item] = tally.get(item, 0) + int(n)
    for key, tally in counted.items():
        ranked = sorted(tally.items(), key=lambda kv: (-kv[1], kv[0]))
        groups[key].why = [CountRow(key=k, count=c) for k, c in ranked[:GROUP_WHY]]
        groups[key].why_more = max(0, len(ranked) - GROUP_WHY)
    for i, t in enumerate(failures):
        if (g := groups.get((t.run, t.task_id))) is not None:
            g.rows.append(i)
    return list(groups.values()), total


def _unserial(text: str, labels: dict[str, str]) -> str:
    """`text` with every serial (also in its file-name form, `:` as `_`) replaced by its device label."""
    for serial in sorted(labels, key=len, reverse=True):
        if serial != labels[serial]:
            text = text.replace(serial, labels[serial]).replace(serial.replace(":", "_"), labels[serial])
    return text


def _lost_hosts(run_dirs: Sequence[Path]) -> list[LostHost]:
    """Each run's lost farm hosts (a run without a readable manifest has none to say)."""
    out: list[LostHost] = []
    for run_dir in run_dirs:
        try:
            out += lost_hosts(mf.load(run_dir))
        except (FarmError, OSError):
            continue
    return out


def run_notes(run_dirs: Sequence[Path], labels: dict[str, str]) -> list[str]:
    """Each run's manifest notes (`run: note` when there are two runs), serials replaced by device labels."""
    out: list[str] = []
    for run_dir in run_dirs:
        try:
            notes = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8")).get("notes") or []
        except (OSError, ValueError, AttributeError, RecursionError):
            continue  # the manifest's own problems are the runs table's to report
        prefix = f"{run_dir.name}: " if len(run_dirs) > 1 else ""
        out += [prefix + _unserial(str(note), labels) for note in notes]
    return out


def _not_passed(con: duckdb.DuckDBPyConnection) -> tuple[list[CountRow], list[CountRow], int]:
    """Attempts that did not pass, by final failure category and by why they ended (one scan)."""
    rows = con.execute(
        f"SELECT grouping(k, end_reason), k, end_reason, count(*) FROM (SELECT coalesce({CATEGORY_SQL},"
        f" 'unclassified') AS k, end_reason FROM shown WHERE {_NOT_SKIPPED} AND NOT final)"
        " GROUP BY GROUPING SETS ((k), (end_reason)) ORDER BY 4 DESC, 2, 3"
    ).fetchall()
    categories = [CountRow(key=k, count=c) for g, k, _, c in rows if g == 0b01]
    ended = [CountRow(key=e, count=c) for g, _, e, c in rows if g == 0b10 and e is not None]
    unrecorded = sum(c for g, _, e, c in rows if g == 0b10 and e is None)
    return categories, ended, unrecorded


def _disagreements(con: duckdb.DuckDBPyConnection, labels: dict[str, str]) -> tuple[list[DisagreementRow], int]:
    """Attempts the phone's own scorer judged differently from the host (first rows, and how many)."""
    rows = con.execute(
        "SELECT run, task_id, instance, repeat, device, dv_outcome, dv_passed, outcome, passed,"
        " coalesce(reason, ''), count(*) OVER () FROM shown WHERE dv_passed IS DISTINCT FROM passed"
        f" AND dv_passed IS NOT NULL ORDER BY {_UNIT_ORDER} LIMIT {LIST_CAP}"
    ).fetchall()
    return [
        DisagreementRow(
            run=r[0], task_id=r[1], instance=r[2], repeat=r[3], device=labels.get(r[4], r[4]),
            phone_outcome=r[5] or "", phone_passed=bool(r[6]), host_outcome=r[7], host_passed=bool(r[8]),
            reason=short(r[9]),
        )
        for r in rows
    ], (int(rows[0][10]) if rows else 0)


def _retried(con: duckdb.DuckDBPyConnection, labels: dict[str, str]) -> tuple[list[RetriedRow], int]:
    """Units shown at an attempt after their first (first rows, and how many)."""
    rows = con.execute(
        "SELECT run, task_id, instance, repeat, device, attempt, outcome, count(*) OVER () FROM shown"
        f" WHERE attempt > 1 ORDER BY {_UNIT_ORDER} LIMIT {LIST_CAP}"
    ).fetchall()
    return [
        RetriedRow(run=r[0], task_id=r[1], instance=r[2], repeat=r[3], device=labels.get(r[4], r[4]),
                   attempt=r[5], outcome=r[6])
        for r in rows
    ], (int(rows[0][7]) if rows else 0)


def _scrubbed_reason(labels: dict[str, str], column: str = "l.reason") -> str:
    """Reports never show serials: the first reason with any quoted serial replaced by its device label."""
    expr = column
    hits = []
    for serial, label in sorted(labels.items(), key=lambda kv: -len(kv[0])):
        if serial and serial != label:
            expr = f"replace({expr}, {duck.sql_str(serial)}, {duck.sql_str(label)})"
            hits.append(f"contains({column}, {duck.sql_str(serial)})")
    return f"CASE WHEN {' OR '.join(hits)} THEN {expr} ELSE {column} END" if hits else column


def _scrubbed_lists(labels: dict[str, str]) -> str:
    """Every reason as `_scrubbed_reason` has the first, for the REPLACE of `shown` (empty: nothing to replace)."""
    reasons = _scrubbed_reason(labels, "r")
    return "" if reasons == "r" else f" list_transform(l.reasons, lambda r: {reasons}) AS reasons,"
