"""Write a run's reports: report.md, report.html, junit.xml, scores.csv (UTF-8 BOM)."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from farm.errors import FarmError
from farm.fsutil import create_new_text, new_file_mode
from farm.report.aggregate import Aggregation
from farm.report.charts import PART_COLOURS, VERDICT_COLOURS, rate_chart, time_split_chart, timeline_chart
from farm.report.lanes import lane_sections
from farm.report.markdown import environment, headline_notes, render_markdown, template_globals
from farm.report.model import ReportData, SinceRow
from farm.report.why import register_sql, why_sql
from farm.results.duck import sql_str

REPORT_FILES = ("report.md", "report.html", "junit.xml", "scores.csv")
CSV_HEADER = (
    "run", "task_id", "device", "instance", "repeat", "category", "partition", "expect", "outcome",
    "initial_verdict", "final_verdict", "reason", "failing_checks", "failure_category", "seconds",
)
"""scores.csv columns. A verdict is pass, fail, skipped (not attempted) or error (infrastructure): counting
final_verdict gives the headline — planned = rows, skipped, errors, passed = pass, attempted = rows − skipped.
failing_checks: every check of a unit that did not pass (failed or unjudged), `; ` between them (`farm.report.why`)."""
CSV_NUMBERS = frozenset({"repeat", "seconds"})
"""scores.csv columns the harness writes as numbers; every other column is text and is neutralised (`csv_text`)."""


def render_html(data: ReportData) -> str:
    """The self-contained report.html (inline CSS and SVG; no scripts, no network)."""
    charts = {
        "category": rate_chart(data.by_category), "device": rate_chart(data.by_device),
        "timeline": timeline_chart(data.timeline), "time_split": time_split_chart(data.time_split),
    }
    return environment(markdown=False).get_template("report.html.j2").render(
        **template_globals(data), charts=charts, notes=headline_notes(data), colours=VERDICT_COLOURS,
        part_colours=PART_COLOURS,
    )


# `csv_text`: a cell a spreadsheet would read as a formula (OWASP's list: = + - @ tab CR; LF and the fullwidth
# forms too, as a precaution) gets a leading single quote, so it is shown as text.
_SETUP = r"""
CREATE OR REPLACE TEMP MACRO short_text(s) AS left(trim(regexp_replace(coalesce(s, ''), '\s+', ' ', 'g')), 160);
CREATE OR REPLACE TEMP MACRO csv_text(s) AS
    CASE WHEN regexp_matches(s, '^[=+\-@\t\r\n\x{ff1d}\x{ff0b}\x{ff0d}\x{ff20}]') THEN '''' || s ELSE s END;
"""


def _verdict(column: str) -> str:
    # A skip was never attempted and an infrastructure error has no agent verdict: neither is a "fail".
    return (f"CASE WHEN s.outcome = 'skipped' THEN 'skipped' WHEN s.outcome = 'error' THEN 'error'"
            f" WHEN s.{column} THEN 'pass' ELSE 'fail' END")


def _unit_name(agg: Aggregation) -> str:
    """SQL for `ReportData.unit` over `s`: the task id, with instance and repeat when the report has them."""
    parts = []
    if agg.data.instances:
        parts.append("CASE WHEN s.instance <> '' THEN 'instance ' || s.instance END")
    if agg.data.repeats:
        parts.append("'repeat ' || s.repeat")
    if not parts:
        return "s.task_id"
    joined = f"concat_ws(', ', {', '.join(parts)})"
    return f"CASE WHEN {joined} = '' THEN s.task_id ELSE concat(s.task_id, ' [', {joined}, ']') END"


def _rows(agg: Aggregation) -> str:
    """Per-attempt report columns over `shown` (device labels, verdict words, short reasons, seconds), and why a
    unit did not pass (`farm.report.why`: `failing_checks`, the JUnit `why_message` and `why_body`)."""
    register_sql(agg.con)
    return f"""
SELECT s.run, s.task_id, {agg.label_sql("s.device")} AS device, s.instance, s.repeat,
       coalesce(s.category, '') AS category,
       coalesce(s.partition, '') AS partition, coalesce(s.expect, '') AS expect, s.outcome,
       {_verdict("initial")} AS initial_verdict, {_verdict("final")} AS final_verdict,
       short_text(s.reason) AS reason, coalesce(s.why.checks, '') AS failing_checks,
       coalesce(s.why.message, '') AS why_message, coalesce(s.why.body, '') AS why_body,
       coalesce(s.failure_category, '') AS failure_category,
       CASE WHEN s.total_ms IS NULL THEN '' ELSE printf('%.3f', s.total_ms / 1000.0) END AS seconds,
       s.final AS final_bool, s.device AS serial, s.pos, s.lane, {_unit_name(agg)} AS unit
FROM (SELECT *, CASE WHEN NOT final THEN {why_sql("failing_checks", "reasons")} END AS why FROM shown) s
"""


def _copy_new(agg: Aggregation, select: str, path: Path, options: str) -> None:
    """`COPY (select) TO path`, through a temp file that appears complete, never replacing an existing file."""
    if path.exists():
        raise FarmError(f"{path}: report already exists", hint="reports are never overwritten")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        agg.con.execute(f"COPY ({select}) TO {sql_str(tmp)} ({options})")
        os.chmod(tmp, new_file_mode())  # like every other report file
        with open(tmp, "rb") as out:
            os.fsync(out.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise FarmError(f"{path}: report already exists", hint="reports are never overwritten") from None
    finally:
        Path(tmp).unlink(missing_ok=True)


def write_csv(agg: Aggregation, path: Path) -> None:
    """scores.csv, one row per unit (task × phone × instance × repeat), with a UTF-8 BOM so spreadsheet apps
    read it right. Text cells that a spreadsheet would run as a formula are neutralised (`csv_text`)."""
    agg.con.execute(_SETUP)
    cols = []
    for i, c in enumerate(CSV_HEADER):
        cell = f"r.{c}" if c in CSV_NUMBERS else f"csv_text(r.{c})"
        # The BOM rides on the first header name, so DuckDB writes the whole file in one pass.
        cols.append(f'{cell} AS "\ufeff{c}"' if i == 0 else f"{cell} AS {c}")
    order = _qualified(agg.csv_order(), "r")
    _copy_new(agg, f"SELECT {', '.join(cols)} FROM ({_rows(agg)}) r {order}", path, "HEADER, DELIMITER ','")


def _qualified(order: str, alias: str) -> str:
    """An `ORDER BY a, b` whose columns name `alias`'s: a bare name would sort by the output cell of that
    name, which for a neutralised cell is not the value the other reports sort by."""
    return re.sub(r"(ORDER BY |, )(\w+)", rf"\g<1>{alias}.\g<2>", order)


def render_csv(agg: Aggregation) -> str:
    """scores.csv as text (see `write_csv`)."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "scores.csv"
        write_csv(agg, path)
        return path.read_text(encoding="utf-8")


def _since(agg: Aggregation) -> SinceRow | None:
    """The run against the previous comparable one; a previous run that cannot be read is a warning, not a stop."""
    from farm.report.since import since_previous

    try:
        return since_previous(agg.run_dirs[0], include_holdout=agg.data.include_holdout)
    except FarmError as exc:
        agg.data.warnings.append(f"no comparison with the previous run: {exc.line()}")
        return None


def write_reports(agg: Aggregation, out_dir: Path, *, served_from: Path | None = None) -> list[Path]:
    """Write the four reports into `out_dir` (each refused if it already exists). Returns their paths.

    `served_from`: the folder the reports will be moved to (their links to the runs are relative to it)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in REPORT_FILES:
        if (out_dir / name).exists():
            raise FarmError(f"{out_dir / name}: report already exists", hint="reports are never overwritten")
    agg.data.run_paths = {d.name: Path(os.path.relpath(d, served_from or out_dir)).as_posix() for d in agg.run_dirs}
    agg.data.lane_sections = lane_sections(agg.run_dirs)
    if len(agg.run_dirs) == 1 and agg.data.since is None:
        agg.data.since = _since(agg)
    contents = {"report.md": render_markdown(agg.data), "report.html": render_html(agg.data)}
    paths = []
    for name, text in contents.items():
        create_new_text(out_dir / name, text, what="report")
        paths.append(out_dir / name)
    from farm.report.junit import write_junit  # junit builds on this module's per-unit rows

    write_junit(agg, out_dir / "junit.xml")
    write_csv(agg, out_dir / "scores.csv")
    return [*paths, out_dir / "junit.xml", out_dir / "scores.csv"]
