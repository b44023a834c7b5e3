"""The task × phone grid and the per-phone timeline of one run, from the `shown` view: four scans, capped in
SQL, so a night of a million units leaves DuckDB as a few thousand rows."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from farm.report import glance
from farm.report.glance import VERDICTS, Grid, GridRow, Timeline, TimelineBar, TimelineLane, Verdict
from farm.report.model import unit_name

if TYPE_CHECKING:
    import duckdb

VERDICT_SQL = ("CASE WHEN outcome = 'skipped' THEN 'skip' WHEN outcome = 'error' THEN 'error'"
               " WHEN final THEN 'pass' ELSE 'fail' END")
"""A `shown` row's verdict word (`glance.Verdict`)."""
_RANK_SQL = "CASE v " + " ".join(f"WHEN '{v}' THEN {i}" for i, v in enumerate(VERDICTS)) + " END"
"""0 for the worst verdict: `arg_min(v, rank)` picks the worst of merged units."""
# Record times are ISO-8601 UTC (the session time zone is set to UTC, so one without an offset reads as UTC).
_UNITS = (f"SELECT device, task_id, instance, repeat, {VERDICT_SQL} AS v, outcome <> 'skipped' AS ran,"
          " epoch(TRY_CAST(started_at AS TIMESTAMPTZ)) AS s, epoch(TRY_CAST(ended_at AS TIMESTAMPTZ)) AS e"
          " FROM shown WHERE run = $run")
_TIMED = "(ran AND e >= s)"


def glance_views(con: duckdb.DuckDBPyConnection, run: str, labels: dict[str, str], *, instances: bool,
                 repeats: bool) -> tuple[Grid | None, Timeline | None]:
    """The run's grid (None without units) and timeline (None when no attempted unit has usable times)."""
    con.execute("SET TimeZone = 'UTC'")
    per_phone = con.execute(
        f"SELECT device, count(*) FILTER (WHERE v <> 'pass'), count(*) FILTER (WHERE {_TIMED}),"
        f" count(*) FILTER (WHERE ran AND NOT coalesce({_TIMED}, false)), min(s) FILTER (WHERE {_TIMED}),"
        f" max(e) FILTER (WHERE {_TIMED}) FROM ({_UNITS}) GROUP BY device",
        {"run": run},
    ).fetchall()
    if not per_phone:
        return None, None
    # The phones with the most non-passes when there are too many, shown in label order.
    ranked = sorted(per_phone, key=lambda p: (-p[1], labels.get(p[0], p[0])))[: glance.GRID_PHONES]
    phones = sorted((p[0] for p in ranked), key=lambda s: labels.get(s, s))
    names = {"instances": instances, "repeats": repeats}
    grid = _grid(con, run, labels, phones, len(per_phone) - len(phones), names)
    timed = {p[0]: p for p in per_phone if p[2]}
    if not timed:
        return grid, None
    lanes = [s for s in phones if s in timed]
    timeline = _timeline(con, run, labels, [timed[s] for s in lanes], names)
    timeline.phones_left_out = len(timed) - len(lanes)
    timeline.untimed = sum(int(p[3]) for p in per_phone)
    return grid, timeline


def _grid(con: duckdb.DuckDBPyConnection, run: str, labels: dict[str, str], phones: list[str], left_out: int,
          names: dict[str, bool]) -> Grid:
    rows = con.execute(
        f"""WITH c AS (SELECT task_id, instance, repeat, device, v FROM ({_UNITS})
                       WHERE list_contains($phones, device)),
        u AS (SELECT task_id, instance, repeat, bool_or(v <> 'pass') AS bad, count(*) OVER () AS total,
                     sum(bool_or(v <> 'pass')::INT) OVER () AS bad_total
              FROM c GROUP BY ALL ORDER BY bad DESC, task_id, instance, repeat LIMIT {int(glance.GRID_ROWS)})
        SELECT u.task_id, u.instance, u.repeat, u.total, u.bad_total, c.device, c.v
        FROM u JOIN c USING (task_id, instance, repeat) ORDER BY u.bad DESC, u.task_id, u.instance, u.repeat""",
        {"run": run, "phones": phones},
    ).fetchall()
    column = {serial: i for i, serial in enumerate(phones)}
    out: dict[tuple[str, str, int], GridRow] = {}
    for task_id, instance, repeat, _, _, device, verdict in rows:
        row = out.get((task_id, instance, repeat))
        if row is None:
            row = GridRow(unit=unit_name(task_id, instance, repeat, **names), cells=[None] * len(phones))
            out[(task_id, instance, repeat)] = row
        seen = row.cells[column[device]]
        # One phone name in two lanes: the worse verdict shows.
        if seen is None or VERDICTS.index(_verdict(verdict)) < VERDICTS.index(seen):
            row.cells[column[device]] = _verdict(verdict)
    return Grid(
        run=run, phones=[labels.get(s, s) for s in phones], rows=list(out.values()),
        units_total=int(rows[0][3]) if rows else 0, units_not_passed=int(rows[0][4] or 0) if rows else 0,
        phones_left_out=left_out,
    )


def _timeline(con: duckdb.DuckDBPyConnection, run: str, labels: dict[str, str], phones: list[Any],
              names: dict[str, bool]) -> Timeline:
    """Lanes of the given phones (their per-phone rows: serial, non-passes, timed units, untimed, first start,
    last end). A phone with more than TIMELINE_BARS units gets them merged into that many equal slices of the
    run's span, each showing its worst verdict and how many units it holds."""
    t0 = min(float(p[4]) for p in phones)
    span = max(float(p[5]) for p in phones) - t0
    cap = int(glance.TIMELINE_BARS)
    busy = [p[0] for p in phones if p[2] > cap]
    # A busy phone's slot is its time slice; any other phone's is the unit itself (a 64-bit hash of its name: a
    # number groups much faster than a string, and both kinds never meet on one phone).
    slot = (f"CASE WHEN list_contains($busy, device) THEN least(floor((s - $t0) / $span * {cap}), {cap - 1})::UBIGINT"
            " ELSE hash(task_id, instance, repeat) END")
    bars = con.execute(
        f"SELECT device, min(s) - $t0, max(e) - $t0, arg_min(v, {_RANK_SQL}), count(*),"
        f" count(*) FILTER (WHERE v <> 'pass'), min(task_id), min(instance), min(repeat)"
        f" FROM ({_UNITS}) WHERE {_TIMED} AND list_contains($phones, device)"
        f" GROUP BY device, {slot} ORDER BY device, 2, 3, 7, 8, 9",
        {"run": run, "phones": [p[0] for p in phones], "busy": busy, "t0": t0, "span": max(span, 1e-9)},
    ).fetchall()
    lanes = {p[0]: TimelineLane(phone=labels.get(p[0], p[0]), units=int(p[2]), bars=[]) for p in phones}
    for device, start, end, verdict, units, not_passed, task_id, instance, repeat in bars:
        label = unit_name(task_id, instance, repeat, **names) if units == 1 else ""
        lanes[device].bars.append(TimelineBar(start=float(start), end=float(end), verdict=_verdict(verdict),
                                              units=units, not_passed=not_passed, label=label))
    return Timeline(
        run=run, start=dt.datetime.fromtimestamp(t0, dt.UTC).isoformat().replace("+00:00", "Z"), span_s=span,
        lanes=list(lanes.values()), bar_cap=cap,
    )


def _verdict(word: str) -> Verdict:
    for v in VERDICTS:
        if v == word:
            return v
    raise ValueError(f"not a verdict: {word}")
