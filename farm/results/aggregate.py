"""Aggregate records (DuckDB) into `ReportData`: rates with Wilson intervals, skips, timing, cost."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from farm.android.paths import raw_dir, sanitise_serial
from farm.manifest import utc_now
from farm.report.model import (
    Comparison,
    CountRow,
    MarkerRow,
    OverrideRow,
    RateRow,
    ReportData,
    SkipRow,
    Stat,
    SumRow,
    TaskRow,
)
from farm.results import duck
from farm.results.stats import mcnemar_exact, paired_bootstrap, wilson
from farm.scoring import overrides as ov

if TYPE_CHECKING:
    import duckdb

LIST_CAP = 500
"""Rows of each list (skipped, login hand-overs, not passed, markers) shown in report.md; scores.csv has all."""
_NOT_SKIPPED = "outcome <> 'skipped'"
# NULLs count as false, so every attempt is exactly one of passed / not passed in every output.
_LOGIN = "coalesce(outcome = 'takeover' AND takeover_kind = 'login' AND coalesce(expect, '') <> 'takeover', false)"
_INITIAL = f"(coalesce(passed AND outcome NOT IN ('error', 'skipped'), false) AND NOT {_LOGIN})"
_GROUPS = ("category", "partition", "device", "expect")


@dataclass
class Aggregation:
    """The DuckDB connection with the `shown` view, the labels, and the computed data."""

    con: duckdb.DuckDBPyConnection
    labels: dict[str, str]
    """Serial → device label (model + index)."""
    data: ReportData
    run_dirs: list[Path] = field(default_factory=list)
    ordered: bool = False
    """`shown.pos` follows (run, task_id, serial)."""
    scan_ordered: bool = False
    """Scanning `shown` itself yields that order (no join in between)."""

    def label_sql(self, column: str) -> str:
        """SQL mapping a serial column to its device label (an expression, so row order survives)."""
        whens = " ".join(f"WHEN {duck.sql_str(s)} THEN {duck.sql_str(lab)}" for s, lab in self.labels.items())
        return f"CASE {column} {whens} ELSE {column} END" if whens else column

    def csv_order(self) -> str:
        """ORDER BY for per-attempt rows by run, task, device label (empty when the scan is in that order)."""
        by_serial = [self.labels[s] for s in sorted(self.labels)]
        if self.ordered and by_serial == sorted(by_serial):
            return "" if self.scan_ordered else "ORDER BY pos"
        return "ORDER BY run, task_id, device"

    def task_rows(self, where: str = "true", limit: int | None = None) -> Iterator[TaskRow]:
        """Shown attempts as TaskRows, ordered by run, task, device."""
        cur = self.con.execute(
            "SELECT run, task_id, device, category, coalesce(partition, ''), coalesce(expect, ''), outcome,"
            " initial, final, coalesce(reason, ''), coalesce(failure_category, ''), total_ms"
            f" FROM shown WHERE {where} ORDER BY run, task_id, device"
            + (f" LIMIT {int(limit)}" if limit is not None else "")
        )
        while batch := cur.fetchmany(10_000):
            for r in batch:
                yield TaskRow(
                    run=r[0], task_id=r[1], device=self.labels.get(r[2], r[2]), category=r[3] or "",
                    partition=r[4], expect=r[5], outcome=r[6], initial=bool(r[7]), final=bool(r[8]),
                    reason=_short(r[9]), failure_category=r[10],
                    seconds=None if r[11] is None else r[11] / 1000.0,
                )


def _short(text: str, limit: int = 160) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def device_labels(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Serial → `<model> #<n>` (numbered per model, by serial); never the serial itself."""
    models = dict(con.execute("SELECT serial, any_value(model) FROM devices GROUP BY serial").fetchall())
    serials = [r[0] for r in con.execute("SELECT DISTINCT device FROM rec").fetchall()]
    serials = sorted(set(serials) | set(models), key=lambda s: (models.get(s) or "device", s))
    counts: dict[str, int] = {}
    labels = {}
    for serial in serials:
        model = models.get(serial) or "device"
        counts[model] = counts.get(model, 0) + 1
        labels[serial] = f"{model} #{counts[model]}"
    return labels


def _override_specs(run_dir: Path, extra: Sequence[Path], serials: list[str]) -> list[ov.OverrideSpec]:
    specs: list[ov.OverrideSpec] = []
    if (run_dir / "overrides.yaml").is_file():
        specs += ov.load_overrides_yaml(run_dir / "overrides.yaml")
    for path in extra:
        specs += ov.load_overrides_yaml(path)
    for serial in serials:
        for summary in sorted((run_dir / "android" / sanitise_serial(serial)).glob("*/raw/summary.md")):
            text = summary.read_text(encoding="utf-8", errors="replace")
            for spec in ov.parse_summary_section(text, source=f"{summary.parent.parent.name}/summary.md"):
                specs.append(spec.model_copy(update={"device": serial}))
    return specs


def _overrides(
    con: duckdb.DuckDBPyConnection, run_dirs: Sequence[Path], extra: Sequence[Path], labels: dict[str, str]
) -> tuple[list[OverrideRow], dict[tuple[str, str, str], bool]]:
    """Decide every re-judgement; the final verdicts by (run, serial, task), later ones winning."""
    wanted: list[tuple[Path, ov.OverrideSpec]] = []
    for run_dir in run_dirs:
        found = con.execute("SELECT DISTINCT device FROM rec WHERE run = ? ORDER BY 1", [run_dir.name]).fetchall()
        serials = [r[0] for r in found]
        wanted += [(run_dir, spec) for spec in _override_specs(run_dir, extra, serials)]
    if not wanted:
        return [], {}
    con.execute("CREATE TEMP TABLE ovr_want (idx INTEGER, run VARCHAR, task_id VARCHAR, device VARCHAR)")
    con.executemany(
        "INSERT INTO ovr_want VALUES (?, ?, ?, ?)",
        [(i, run_dir.name, spec.id, spec.device) for i, (run_dir, spec) in enumerate(wanted)],
    )
    matches: dict[int, list[tuple[str, bool, str | None, str]]] = {}
    # One pass over the records for all re-judgements, instead of one query each.
    for idx, serial, initial, answer, split in con.execute(
        "SELECT w.idx, l.device, l.initial, l.answer, coalesce(l.split, 'all') FROM latest l"
        " JOIN ovr_want w ON l.run = w.run AND l.task_id = w.task_id AND (w.device IS NULL OR l.device = w.device)"
        f" WHERE l.{_NOT_SKIPPED} ORDER BY w.idx, l.device"
    ).fetchall():
        matches.setdefault(idx, []).append((serial, bool(initial), answer, split))
    rows: list[OverrideRow] = []
    finals: dict[tuple[str, str, str], bool] = {}
    for idx, (run_dir, spec) in enumerate(wanted):
        run = run_dir.name
        if idx not in matches:
            rows.append(
                OverrideRow(
                    run=run, task_id=spec.id, device="-", initial="-", final=spec.to,
                    evidence=_short(spec.evidence, 80), applied=False, note="refused: no such attempt",
                )
            )
        for serial, initial, answer, split in sorted(matches.get(idx, []), key=lambda m: labels.get(m[0], m[0])):
            texts = ov.evidence_texts(raw_dir(run_dir, serial, split) / spec.id / "run", answer)
            decision = ov.decide(spec, serial, initial, texts)
            rows.append(
                OverrideRow(
                    run=run, task_id=spec.id, device=labels.get(serial, serial), initial=decision.initial,
                    final=spec.to if decision.applied else decision.initial,
                    evidence=_short(spec.evidence, 80), applied=decision.applied, note=decision.note,
                )
            )
            if decision.applied:
                finals[(run, serial, spec.id)] = spec.to == "pass"
    return rows, finals


def _rate_row(key: str, attempted: int, passed: int, errors: int) -> RateRow:
    r = wilson(passed, attempted)
    return RateRow(key=key, attempted=attempted, passed=passed, errors=errors, rate=r.rate, low=r.low, high=r.high)


@dataclass
class _Counts:
    """What one grouping-sets pass over `shown` yields."""

    rates: dict[str, list[RateRow]]
    overall: tuple[int, int, int]
    outcomes: list[CountRow]
    execution: list[str]
    login_total: int
    markers_total: int


def _counts(con: duckdb.DuckDBPyConnection, labels: dict[str, str]) -> _Counts:
    """Every rate table, the outcome counts and the execution kinds in one scan."""
    keys = ", ".join(f"coalesce(CAST({g} AS VARCHAR), '(none)') AS k_{g}" for g in _GROUPS)
    sets = ", ".join(f"(k_{g})" for g in _GROUPS)
    rows = con.execute(
        f"SELECT grouping(k_category, k_partition, k_device, k_expect, outcome, execution) AS g,"
        f" k_category, k_partition, k_device, k_expect, outcome, execution,"
        f" count(*) FILTER (WHERE {_NOT_SKIPPED}), count(*) FILTER (WHERE {_NOT_SKIPPED} AND final),"
        " count(*) FILTER (WHERE outcome = 'error'), count(*),"
        " count(*) FILTER (WHERE login_handover), count(*) FILTER (WHERE len(markers) > 0)"
        f" FROM (SELECT {keys}, outcome, execution, final, login_handover, markers FROM shown)"
        f" GROUP BY GROUPING SETS ({sets}, (outcome), (execution), ())"
    ).fetchall()
    # grouping() sets a bit per column *not* grouped, first column highest.
    width = len(_GROUPS) + 2
    only = {1 << (width - 1 - i): i for i in range(width)}
    full = (1 << width) - 1
    rates: dict[str, list[RateRow]] = {g: [] for g in _GROUPS}
    counts = _Counts(rates, (0, 0, 0), [], [], 0, 0)
    for row in rows:
        g, values, (attempted, passed, errors, total, login, markers) = row[0], row[1:7], row[7:]
        if g == full:
            counts.overall, counts.login_total, counts.markers_total = (attempted, passed, errors), login, markers
            continue
        i = only[full ^ g]
        if i < len(_GROUPS):
            key = str(values[i])
            if _GROUPS[i] == "device":
                key = labels.get(key, key)
            rates[_GROUPS[i]].append(_rate_row(key, attempted, passed, errors))
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
    rank = max(1, int(np.ceil(0.9 * n))) - 1
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


def _comparison(con: duckdb.DuckDBPyConnection, run_a: str, run_b: str) -> Comparison:
    import numpy as np

    arr = con.execute(
        "SELECT a.final AS a, b.final AS b FROM shown a JOIN shown b USING (task_id, device)"
        " WHERE a.run = ? AND b.run = ? AND a.outcome <> 'skipped' AND b.outcome <> 'skipped'"
        " ORDER BY task_id, device",
        [run_a, run_b],
    ).fetchnumpy()
    a = np.asarray(arr["a"], dtype=bool)
    b = np.asarray(arr["b"], dtype=bool)
    n = int(a.size)
    both = int(np.count_nonzero(a & b))
    only_a = int(np.count_nonzero(a & ~b))
    only_b = int(np.count_nonzero(b & ~a))
    boot = paired_bootstrap(a, b)
    return Comparison(
        run_a=run_a, run_b=run_b, units=n, both=both, only_a=only_a, only_b=only_b,
        neither=n - both - only_a - only_b, rate_a=int(a.sum()) / n if n else None,
        rate_b=int(b.sum()) / n if n else None, mcnemar_p=mcnemar_exact(only_a, only_b), diff=boot.diff,
        diff_low=boot.low, diff_high=boot.high, resamples=boot.resamples, seed=boot.seed,
    )


def _skip_rows(con: duckdb.DuckDBPyConnection, where: str, default: str, labels: dict[str, str]) -> list[SkipRow]:
    return [
        SkipRow(task_id=t, device=labels.get(d, d), reason=_short(r or default))
        for t, d, r in con.execute(
            f"SELECT task_id, device, reason FROM shown WHERE {where} ORDER BY task_id, device, run"
            f" LIMIT {LIST_CAP}"
        ).fetchall()
    ]


def aggregate(
    run_dirs: Sequence[Path],
    *,
    include_holdout: bool = False,
    overrides_files: Sequence[Path] = (),
    cache_min_bytes: int = duck.CACHE_MIN_BYTES,
) -> Aggregation:
    """Compute everything a report shows for one run (or a paired comparison of two).

    Only aggregates and the first `LIST_CAP` rows of each list leave DuckDB; the per-attempt files
    (scores.csv, junit.xml) are written from DuckDB by the report writers.
    """
    run_dirs = list(run_dirs)
    con = duck.connect(run_dirs, records_view=False)
    source = duck.report_records(con, run_dirs, cache_min_bytes=cache_min_bytes)
    latest = f"SELECT *, {_LOGIN} AS login_handover, {_INITIAL} AS initial FROM rec"
    if source.retries:
        con.execute(
            f"CREATE TEMP TABLE latest AS {latest}"
            " QUALIFY row_number() OVER (PARTITION BY run, device, task_id ORDER BY attempt DESC) = 1"
            + (" ORDER BY pos" if source.ordered else "")
        )
    else:
        con.execute(f"CREATE TEMP VIEW latest AS {latest}")
    labels = device_labels(con)
    override_rows, finals = _overrides(con, run_dirs, overrides_files, labels)
    holdout = "true" if include_holdout else "coalesce(l.partition, '') <> 'holdout'"
    final, join = _final_sql(con, finals)
    con.execute(
        f"CREATE TEMP VIEW shown AS SELECT l.* REPLACE ({_scrubbed_reason(labels)} AS reason), {final} AS final"
        f" FROM latest l{join} WHERE {holdout}"
    )
    hidden_tasks, hidden_attempts = (0, 0) if include_holdout else con.execute(
        "SELECT count(DISTINCT task_id), count(*) FROM latest WHERE partition = 'holdout'"
    ).fetchone() or (0, 0)
    counts = _counts(con, labels)
    failure_categories = [
        CountRow(key=k, count=c)
        for k, c in con.execute(
            "SELECT coalesce(failure_category, CASE WHEN outcome = 'error' THEN 'infrastructure'"
            " WHEN login_handover THEN 'barrier' ELSE 'unclassified' END) AS k, count(*)"
            f" FROM shown WHERE {_NOT_SKIPPED} AND NOT final GROUP BY k ORDER BY 2 DESC, 1"
        ).fetchall()
    ]
    markers = [
        MarkerRow(device=labels.get(d, d), task_id=t, markers=list(m))
        for d, t, m in con.execute(
            "SELECT device, task_id, markers FROM shown WHERE len(markers) > 0 ORDER BY device, task_id, run"
            f" LIMIT {LIST_CAP}"
        ).fetchall()
    ]
    sums = _sums(con)
    runs = [d.name for d in run_dirs]
    outcome_counts = {c.key: c.count for c in counts.outcomes}
    data = ReportData(
        runs=runs,
        generated_at=utc_now(),
        include_holdout=include_holdout,
        hidden_holdout_tasks=hidden_tasks,
        hidden_holdout_attempts=hidden_attempts,
        execution=counts.execution,
        overall=_rate_row("all", *counts.overall),
        outcomes=counts.outcomes,
        by_category=counts.rates["category"],
        by_partition=counts.rates["partition"],
        by_device=counts.rates["device"],
        by_expect=counts.rates["expect"],
        skipped=_skip_rows(con, "outcome = 'skipped'", "skipped", labels),
        skipped_total=outcome_counts.get("skipped", 0),
        login_handover=_skip_rows(con, "login_handover", "login", labels),
        login_handover_total=counts.login_total,
        failure_categories=failure_categories,
        infrastructure_errors=counts.overall[2],
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
        comparison=_comparison(con, runs[0], runs[1]) if len(runs) == 2 else None,
    )
    agg = Aggregation(
        con=con, labels=labels, data=data, run_dirs=run_dirs, ordered=source.ordered,
        scan_ordered=source.ordered and not join,
    )
    data.failures = list(agg.task_rows(f"{_NOT_SKIPPED} AND NOT final", LIST_CAP))
    return agg


_FEW_OVERRIDES = 64


def _final_sql(con: duckdb.DuckDBPyConnection, finals: dict[tuple[str, str, str], bool]) -> tuple[str, str]:
    """The final-verdict expression over `latest l`, and the join it needs (none for a few re-judgements)."""
    if not finals:
        return "l.initial", ""
    if len(finals) <= _FEW_OVERRIDES:
        # An expression rather than a join keeps the rows in storage order (writers then need no sort).
        q = duck.sql_str
        whens = " ".join(
            f"WHEN l.run = {q(r)} AND l.device = {q(d)} AND l.task_id = {q(t)} THEN {str(v).lower()}"
            for (r, d, t), v in finals.items()
        )
        tasks = ", ".join(q(t) for t in sorted({t for _, _, t in finals}))
        return f"CASE WHEN l.task_id IN ({tasks}) THEN (CASE {whens} ELSE l.initial END) ELSE l.initial END", ""
    con.execute("CREATE TEMP TABLE ovr (run VARCHAR, device VARCHAR, task_id VARCHAR, final BOOLEAN)")
    con.executemany("INSERT INTO ovr VALUES (?, ?, ?, ?)", [(*k, v) for k, v in finals.items()])
    return "coalesce(o.final, l.initial)", " LEFT JOIN ovr o USING (run, device, task_id)"


def _scrubbed_reason(labels: dict[str, str]) -> str:
    """Reports never show serials: the first reason with any quoted serial replaced by its device label."""
    expr = "l.reason"
    hits = []
    for serial, label in sorted(labels.items(), key=lambda kv: -len(kv[0])):
        if serial:
            expr = f"replace({expr}, {duck.sql_str(serial)}, {duck.sql_str(label)})"
            hits.append(f"contains(l.reason, {duck.sql_str(serial)})")
    return f"CASE WHEN {' OR '.join(hits)} THEN {expr} ELSE l.reason END" if hits else "l.reason"
