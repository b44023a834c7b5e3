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
_NOT_SKIPPED = "outcome <> 'skipped'"


@dataclass
class Aggregation:
    """The DuckDB connection with the `shown` view, the labels, and the computed data."""

    con: duckdb.DuckDBPyConnection
    labels: dict[str, str]
    """Serial → device label (model + index)."""
    data: ReportData
    run_dirs: list[Path] = field(default_factory=list)

    def task_rows(self, where: str = "true", limit: int | None = None) -> Iterator[TaskRow]:
        """Shown attempts as TaskRows, ordered by run, task, device."""
        cur = self.con.execute(
            "SELECT run, task_id, device, category, coalesce(partition, ''), coalesce(expect, ''), outcome,"
            " initial, final, coalesce(reasons[1], ''), coalesce(failure_category, ''), metrics.total_ms"
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
    serials = [r[0] for r in con.execute("SELECT DISTINCT device FROM rec ORDER BY 1").fetchall()]
    serials = sorted(set(serials) | set(models), key=lambda s: (models.get(s) or "device", s))
    counts: dict[str, int] = {}
    labels = {}
    for serial in serials:
        model = models.get(serial) or "device"
        counts[model] = counts.get(model, 0) + 1
        labels[serial] = f"{model} #{counts[model]}"
    return labels


def _overrides(
    con: duckdb.DuckDBPyConnection, run_dirs: Sequence[Path], extra: Sequence[Path], labels: dict[str, str]
) -> tuple[list[OverrideRow], list[tuple[str, str, str, bool]]]:
    rows: list[OverrideRow] = []
    finals: list[tuple[str, str, str, bool]] = []
    for run_dir in run_dirs:
        run = run_dir.name
        specs: list[ov.OverrideSpec] = []
        if (run_dir / "overrides.yaml").is_file():
            specs += ov.load_overrides_yaml(run_dir / "overrides.yaml")
        for path in extra:
            specs += ov.load_overrides_yaml(path)
        serials = [r[0] for r in con.execute("SELECT DISTINCT device FROM latest WHERE run = ?", [run]).fetchall()]
        for serial in serials:
            for summary in sorted((run_dir / "android" / sanitise_serial(serial)).glob("*/raw/summary.md")):
                text = summary.read_text(encoding="utf-8", errors="replace")
                for spec in ov.parse_summary_section(text, source=f"{summary.parent.parent.name}/summary.md"):
                    specs.append(spec.model_copy(update={"device": serial}))
        for spec in specs:
            sql = (
                "SELECT device, initial, answer, coalesce(split, 'all') FROM latest"
                " WHERE run = ? AND task_id = ? AND outcome <> 'skipped'"
            )
            params: list[object] = [run, spec.id]
            if spec.device:
                sql += " AND device = ?"
                params.append(spec.device)
            matches = con.execute(sql, params).fetchall()
            if not matches:
                rows.append(
                    OverrideRow(
                        run=run, task_id=spec.id, device="-", initial="-", final=spec.to,
                        evidence=_short(spec.evidence, 80), applied=False, note="refused: no such attempt",
                    )
                )
            for serial, initial, answer, split in matches:
                texts = ov.evidence_texts(raw_dir(run_dir, serial, split) / spec.id / "run", answer)
                decision = ov.decide(spec, serial, bool(initial), texts)
                rows.append(
                    OverrideRow(
                        run=run, task_id=spec.id, device=labels.get(serial, serial), initial=decision.initial,
                        final=spec.to if decision.applied else decision.initial,
                        evidence=_short(spec.evidence, 80), applied=decision.applied, note=decision.note,
                    )
                )
                if decision.applied:
                    finals.append((run, serial, spec.id, spec.to == "pass"))
    return rows, finals


def _rate_row(key: str, attempted: int, passed: int, errors: int) -> RateRow:
    r = wilson(passed, attempted)
    return RateRow(key=key, attempted=attempted, passed=passed, errors=errors, rate=r.rate, low=r.low, high=r.high)


def _rates(con: duckdb.DuckDBPyConnection, expr: str, labels: dict[str, str] | None = None) -> list[RateRow]:
    rows = con.execute(
        f"SELECT coalesce(CAST({expr} AS VARCHAR), '(none)') AS k,"
        f" count(*) FILTER (WHERE {_NOT_SKIPPED}), count(*) FILTER (WHERE {_NOT_SKIPPED} AND final),"
        " count(*) FILTER (WHERE outcome = 'error')"
        " FROM shown GROUP BY k ORDER BY k"
    ).fetchall()
    out = [_rate_row(labels.get(k, k) if labels else k, a, p, e) for k, a, p, e in rows]
    return sorted(out, key=lambda r: r.key)


def _stat(con: duckdb.DuckDBPyConnection, name: str, expr: str) -> Stat:
    import numpy as np

    arr = con.execute(f"SELECT {expr} FROM shown WHERE {_NOT_SKIPPED} AND {expr} IS NOT NULL").fetchnumpy()
    values = np.sort(next(iter(arr.values())).astype(np.float64)) if arr else np.array([])
    n = int(values.size)
    if n == 0:
        return Stat(name=name, n=0, median=None, p90=None)
    p90 = float(values[max(1, int(np.ceil(0.9 * n))) - 1])
    return Stat(name=name, n=n, median=float(np.median(values)), p90=p90)


def _sum(con: duckdb.DuckDBPyConnection, name: str, expr: str) -> SumRow:
    total, known, count = con.execute(
        f"SELECT sum({expr}), count({expr}), count(*) FROM shown WHERE {_NOT_SKIPPED}"
    ).fetchone() or (None, 0, 0)
    return SumRow(name=name, total=None if known == 0 else float(total), known=known, unknown=count - known)


def _comparison(con: duckdb.DuckDBPyConnection, run_a: str, run_b: str) -> Comparison:
    pairs = con.execute(
        "SELECT a.final, b.final FROM shown a JOIN shown b USING (task_id, device)"
        " WHERE a.run = ? AND b.run = ? AND a.outcome <> 'skipped' AND b.outcome <> 'skipped'"
        " ORDER BY task_id, device",
        [run_a, run_b],
    ).fetchall()
    a = [bool(p[0]) for p in pairs]
    b = [bool(p[1]) for p in pairs]
    both = sum(x and y for x, y in pairs)
    only_a = sum(x and not y for x, y in pairs)
    only_b = sum(y and not x for x, y in pairs)
    boot = paired_bootstrap(a, b)
    n = len(pairs)
    return Comparison(
        run_a=run_a, run_b=run_b, units=n, both=both, only_a=only_a, only_b=only_b,
        neither=n - both - only_a - only_b, rate_a=sum(a) / n if n else None, rate_b=sum(b) / n if n else None,
        mcnemar_p=mcnemar_exact(only_a, only_b), diff=boot.diff, diff_low=boot.low, diff_high=boot.high,
        resamples=boot.resamples, seed=boot.seed,
    )


def aggregate(
    run_dirs: Sequence[Path], *, include_holdout: bool = False, overrides_files: Sequence[Path] = ()
) -> Aggregation:
    """Compute everything a report shows for one run (or a paired comparison of two)."""
    run_dirs = list(run_dirs)
    con = duck.connect(run_dirs, report_columns_only=True)
    duck.materialise(con, run_dirs)
    labels = device_labels(con)
    con.execute("CREATE TEMP TABLE labels (serial VARCHAR, label VARCHAR)")
    if labels:
        con.executemany("INSERT INTO labels VALUES (?, ?)", list(labels.items()))
    con.execute(
        "CREATE TEMP TABLE latest AS SELECT *, (outcome = 'takeover' AND takeover_kind = 'login'"
        " AND coalesce(expect, '') <> 'takeover') AS login_handover,"
        " (passed AND outcome NOT IN ('error', 'skipped') AND NOT (outcome = 'takeover' AND takeover_kind = 'login'"
        " AND coalesce(expect, '') <> 'takeover')) AS initial"
        " FROM rec QUALIFY row_number() OVER (PARTITION BY run, device, task_id ORDER BY attempt DESC) = 1"
    )
    con.execute("DROP TABLE rec")
    override_rows, finals = _overrides(con, run_dirs, overrides_files, labels)
    con.execute("CREATE TEMP TABLE ovr (run VARCHAR, device VARCHAR, task_id VARCHAR, final BOOLEAN)")
    if finals:
        con.executemany("INSERT INTO ovr VALUES (?, ?, ?, ?)", finals)
    holdout = "true" if include_holdout else "coalesce(l.partition, '') <> 'holdout'"
    con.execute(
        "CREATE TEMP TABLE shown AS SELECT l.*, coalesce(o.final, l.initial) AS final FROM latest l"
        f" LEFT JOIN ovr o USING (run, device, task_id) WHERE {holdout}"
    )
    _scrub_serials(con, labels)
    hidden_tasks, hidden_attempts = (0, 0) if include_holdout else con.execute(
        "SELECT count(DISTINCT task_id), count(*) FROM latest WHERE partition = 'holdout'"
    ).fetchone() or (0, 0)
    overall_row = con.execute(
        f"SELECT count(*) FILTER (WHERE {_NOT_SKIPPED}), count(*) FILTER (WHERE {_NOT_SKIPPED} AND final),"
        " count(*) FILTER (WHERE outcome = 'error') FROM shown"
    ).fetchone() or (0, 0, 0)
    outcomes = [
        CountRow(key=k, count=c)
        for k, c in con.execute("SELECT outcome, count(*) FROM shown GROUP BY 1 ORDER BY 1").fetchall()
    ]
    skipped_total = _scalar(con, "SELECT count(*) FROM shown WHERE outcome = 'skipped'")
    skipped = [
        SkipRow(task_id=t, device=labels.get(d, d), reason=_short(r or "skipped"))
        for t, d, r in con.execute(
            "SELECT task_id, device, reasons[1] FROM shown WHERE outcome = 'skipped'"
            f" ORDER BY task_id, device LIMIT {LIST_CAP}"
        ).fetchall()
    ]
    login = [
        SkipRow(task_id=t, device=labels.get(d, d), reason=_short(r or "login"))
        for t, d, r in con.execute(
            "SELECT task_id, device, reasons[1] FROM shown WHERE login_handover"
            f" ORDER BY task_id, device LIMIT {LIST_CAP}"
        ).fetchall()
    ]
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
            "SELECT device, task_id, markers FROM shown WHERE len(markers) > 0 ORDER BY device, task_id"
        ).fetchall()
    ]
    failures_total = _scalar(con, f"SELECT count(*) FROM shown WHERE {_NOT_SKIPPED} AND NOT final")
    runs = [d.name for d in run_dirs]
    execution = [r[0] for r in con.execute("SELECT DISTINCT execution FROM shown ORDER BY 1").fetchall() if r[0]]
    data = ReportData(
        runs=runs,
        generated_at=utc_now(),
        include_holdout=include_holdout,
        hidden_holdout_tasks=hidden_tasks,
        hidden_holdout_attempts=hidden_attempts,
        execution=execution,
        overall=_rate_row("all", *overall_row),
        outcomes=outcomes,
        by_category=_rates(con, "category"),
        by_partition=_rates(con, "partition"),
        by_device=_rates(con, "device", labels),
        by_expect=_rates(con, "expect"),
        skipped=skipped,
        skipped_total=skipped_total,
        login_handover=login,
        failure_categories=failure_categories,
        infrastructure_errors=overall_row[2],
        timing=[
            _stat(con, "first_feedback_ms", "metrics.first_feedback_ms"),
            _stat(con, "round_trips", "metrics.round_trips"),
            _stat(con, "total_ms", "metrics.total_ms"),
        ],
        time_split=[
            _sum(con, "model_ms", "metrics.model_ms"),
            _sum(con, "screen_read_ms", "metrics.screen_read_ms"),
            _sum(con, "action_ms", "metrics.action_ms"),
            _sum(con, "other_ms", "metrics.other_ms"),
        ],
        tokens=[
            _sum(con, "input_new", "tokens.input_new"),
            _sum(con, "cache_read", "tokens.cache_read"),
            _sum(con, "cache_write", "tokens.cache_write"),
            _sum(con, "output", "tokens.output"),
        ],
        cost=_sum(con, "cost_usd", "cost_usd"),
        overrides=override_rows,
        markers=markers,
        failures_total=failures_total,
        comparison=_comparison(con, runs[0], runs[1]) if len(runs) == 2 else None,
    )
    agg = Aggregation(con=con, labels=labels, data=data, run_dirs=run_dirs)
    data.failures = list(agg.task_rows(f"{_NOT_SKIPPED} AND NOT final", LIST_CAP))
    return agg


def _scrub_serials(con: duckdb.DuckDBPyConnection, labels: dict[str, str]) -> None:
    """Reports never show serials: replace any serial quoted in a reason by its device label."""
    expr = "x"
    hits = []
    for serial, label in sorted(labels.items(), key=lambda kv: -len(kv[0])):
        if serial:
            expr = f"replace({expr}, {duck.sql_str(serial)}, {duck.sql_str(label)})"
            hits.append(f"contains(array_to_string(reasons, chr(10)), {duck.sql_str(serial)})")
    if hits:
        con.execute(
            f"UPDATE shown SET reasons = list_transform(reasons, lambda x: {expr})"
            f" WHERE len(reasons) > 0 AND ({' OR '.join(hits)})"
        )


def _scalar(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    row = con.execute(sql).fetchone()
    return int(row[0]) if row and row[0] is not None else 0
