"""Write a run's reports: report.md, report.html, junit.xml, scores.csv (UTF-8 BOM)."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from xml.sax.saxutils import quoteattr

from farm.errors import FarmError
from farm.fsutil import create_new_text, new_file_mode
from farm.report.charts import rate_chart
from farm.report.lanes import lane_sections
from farm.report.markdown import category_change, evidence_href, headline_notes, num, pct, render_markdown
from farm.report.model import ReportData
from farm.results.aggregate import Aggregation
from farm.results.duck import sql_str
from farm.results.headline import headline_text

REPORT_FILES = ("report.md", "report.html", "junit.xml", "scores.csv")
CSV_HEADER = (
    "run", "task_id", "device", "instance", "repeat", "category", "partition", "expect", "outcome",
    "initial_verdict", "final_verdict", "reason", "failure_category", "seconds",
)
"""scores.csv columns. A verdict is pass, fail, skipped (not attempted) or error (infrastructure): counting
final_verdict gives the headline — planned = rows, skipped, errors, passed = pass, attempted = rows − skipped."""
CSV_NUMBERS = frozenset({"repeat", "seconds"})
"""scores.csv columns the harness writes as numbers; every other column is text and is neutralised (`csv_text`)."""


def render_html(data: ReportData) -> str:
    """The self-contained report.html (inline CSS and SVG; no scripts, no network)."""
    from jinja2 import Environment, FileSystemLoader

    env = Environment(
        loader=FileSystemLoader(str(Path(__file__).parent / "templates")),
        # Every template here renders phone-written text into HTML: escaping must not depend on a file name.
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    charts = {"category": rate_chart(data.by_category), "device": rate_chart(data.by_device)}
    return env.get_template("report.html.j2").render(
        d=data, charts=charts, pct=pct, num=num, headline=headline_text(data.overall), notes=headline_notes(data),
        category_change=category_change, evidence_href=evidence_href,
    )


# `csv_text`: a cell a spreadsheet would read as a formula (OWASP's list: = + - @ tab CR; LF and the fullwidth
# forms too, as a precaution) gets a leading single quote, so it is shown as text.
# `xesc`: U+FFFE and U+FFFF are not XML characters at all; the C0 controls are dropped for the same reason.
_SETUP = r"""
CREATE OR REPLACE TEMP MACRO short_text(s) AS left(trim(regexp_replace(coalesce(s, ''), '\s+', ' ', 'g')), 160);
CREATE OR REPLACE TEMP MACRO xesc(s) AS
    CASE WHEN regexp_matches(coalesce(s, ''), '[&<>"\x00-\x08\x0b\x0c\x0e-\x1f\x{fffe}\x{ffff}]')
    THEN replace(replace(replace(replace(
        regexp_replace(coalesce(s, ''), '[\x00-\x08\x0b\x0c\x0e-\x1f\x{fffe}\x{ffff}]', '', 'g'),
        '&', '&amp;'), '<', '&lt;'), '>', '&gt;'), '"', '&quot;')
    ELSE coalesce(s, '') END;
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
    """Per-attempt report columns over `shown` (device labels, verdict words, short reasons, seconds)."""
    return f"""
SELECT s.run, s.task_id, {agg.label_sql("s.device")} AS device, s.instance, s.repeat,
       coalesce(s.category, '') AS category,
       coalesce(s.partition, '') AS partition, coalesce(s.expect, '') AS expect, s.outcome,
       {_verdict("initial")} AS initial_verdict, {_verdict("final")} AS final_verdict,
       short_text(s.reason) AS reason, coalesce(s.failure_category, '') AS failure_category,
       CASE WHEN s.total_ms IS NULL THEN '' ELSE printf('%.3f', s.total_ms / 1000.0) END AS seconds,
       s.final AS final_bool, s.device AS serial, s.pos, s.lane, {_unit_name(agg)} AS unit
FROM shown s
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


def _cases(agg: Aggregation) -> str:
    """One `<testcase>` line per attempt."""
    return f"""
WITH r AS ({_rows(agg)})
SELECT run, serial, task_id, instance, repeat, lane, pos,
  concat('  <testcase classname="', xesc(lane || '.' || coalesce(nullif(category, ''), 'task')), '" name="',
    xesc(unit), '"', CASE WHEN seconds = '' THEN '' ELSE concat(' time="', seconds, '"') END,
    CASE
      WHEN outcome = 'skipped' THEN concat('><skipped message="', xesc(coalesce(nullif(reason, ''), outcome)),
        '"/></testcase>')
      WHEN outcome = 'error' THEN concat('><error type="infrastructure" message="',
        xesc(coalesce(nullif(reason, ''), outcome)), '"/></testcase>')
      WHEN NOT final_bool THEN concat('><failure type="', xesc(outcome), '" message="',
        xesc(coalesce(nullif(reason, ''), outcome)), '"/></testcase>')
      ELSE '/>'
    END) AS line
FROM r
"""


def write_junit(agg: Aggregation, path: Path) -> None:
    """junit.xml: one testsuite per run × phone, one testcase per unit; skipped/failure/error with reasons.

    The root carries the headline: its name in words, and tests (planned), skipped, errors and failures
    (attempted − errors − passed) as attributes.
    """
    agg.con.execute(_SETUP)
    suites = agg.con.execute(
        "SELECT run, serial, any_value(device), count(*), count(*) FILTER (WHERE outcome = 'skipped'),"
        " count(*) FILTER (WHERE outcome = 'error'),"
        " count(*) FILTER (WHERE outcome NOT IN ('skipped', 'error') AND NOT final_bool),"
        " coalesce(sum(CASE WHEN seconds = '' THEN 0 ELSE seconds::DOUBLE END), 0), min(pos), max(pos)"
        f" FROM ({_rows(agg)}) GROUP BY run, serial ORDER BY run, serial"
    ).fetchall()
    heads = [
        (run, serial, f"<testsuite name={_attr(f'{run} {label}')} tests=\"{total}\" failures=\"{failures}\""
         f' errors="{errors}" skipped="{skipped}" time="{seconds:.3f}">', first, last)
        for run, serial, label, total, skipped, errors, failures, seconds, first, last in suites
    ]
    o = agg.data.overall
    title = f"{', '.join(agg.data.runs)}: {headline_text(o)}"
    xml_head = '<?xml version="1.0" encoding="UTF-8"?>' + chr(10) + (
        f"<testsuites name={_attr(title)} tests=\"{o.planned}\" failures=\"{o.attempted - o.errors - o.passed}\""
        f' errors="{o.errors}" skipped="{o.skipped}">'
    )
    xml_tail = "</testsuites>"
    if not heads:
        create_new_text(path, f"{xml_head}\n{xml_tail}\n", what="report")
        return
    if agg.scan_ordered and len(heads) <= _UNION_SUITES:
        # Rows come in (run, task, serial) order, so each suite's filtered scan is in task order and
        # UNION ALL keeps the suites in sequence: the file is written without a sort. Suite start and
        # end tags ride on the suite's first and last case lines.
        parts = []
        for i, (run, serial, head, first, last) in enumerate(heads):
            start = (f"{xml_head}\n" if i == 0 else "") + head + "\n"
            end = "\n</testsuite>" + (f"\n{xml_tail}" if i == len(heads) - 1 else "")
            parts.append(
                f"SELECT concat(CASE WHEN pos = {int(first)} THEN {sql_str(start)} ELSE '' END, line,"
                f" CASE WHEN pos = {int(last)} THEN {sql_str(end)} ELSE '' END) AS line"
                f" FROM ({_cases(agg)}) WHERE run = {sql_str(run)} AND serial = {sql_str(serial)}"
            )
        lines = " UNION ALL ".join(parts)
    else:
        lines = _sorted_lines(agg, [(r, s, h) for r, s, h, _, _ in heads], xml_head)
    _copy_new(agg, lines, path, "FORMAT csv, HEADER false, QUOTE '', ESCAPE '', DELIMITER '\\x01'")


_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _attr(text: str) -> str:
    """An XML attribute value; characters XML cannot hold at all (a device label is phone-written) are dropped."""
    return quoteattr(_XML_INVALID.sub("", text))


_UNION_SUITES = 32
"""Up to this many suites, junit.xml is written by one filtered scan per suite instead of a sort."""


def _sorted_lines(agg: Aggregation, heads: list[tuple[str, str, str]], xml_head: str) -> str:
    agg.con.execute("CREATE OR REPLACE TEMP TABLE junit_heads (run VARCHAR, serial VARCHAR, line VARCHAR)")
    if heads:
        agg.con.executemany("INSERT INTO junit_heads VALUES (?, ?, ?)", heads)
    # Within a suite, `pos` is unit order when the rows come from one sorted source.
    within = "pos" if agg.ordered else "struct_pack(t := task_id, i := instance, r := repeat, l := lane)"
    return f"""
        SELECT line FROM (
          SELECT 1 AS zone, run, serial, 1 AS part, {within} AS k, line FROM ({_cases(agg)})
          UNION ALL SELECT 0, '', '', 0, NULL, {sql_str(xml_head)}
          UNION ALL SELECT 1, run, serial, 0, NULL, line FROM junit_heads
          UNION ALL SELECT 1, run, serial, 2, NULL, '</testsuite>' FROM junit_heads
          UNION ALL SELECT 2, '', '', 0, NULL, '</testsuites>'
        ) ORDER BY zone, run, serial, part, k
    """


def render_junit(agg: Aggregation) -> str:
    """junit.xml as text (see `write_junit`)."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "junit.xml"
        write_junit(agg, path)
        return path.read_text(encoding="utf-8")


def write_reports(agg: Aggregation, out_dir: Path) -> list[Path]:
    """Write the four reports into `out_dir` (each refused if it already exists). Returns their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in REPORT_FILES:
        if (out_dir / name).exists():
            raise FarmError(f"{out_dir / name}: report already exists", hint="reports are never overwritten")
    agg.data.run_paths = {d.name: Path(os.path.relpath(d, out_dir)).as_posix() for d in agg.run_dirs}
    agg.data.lane_sections = lane_sections(agg.run_dirs)
    contents = {"report.md": render_markdown(agg.data), "report.html": render_html(agg.data)}
    paths = []
    for name, text in contents.items():
        create_new_text(out_dir / name, text, what="report")
        paths.append(out_dir / name)
    write_junit(agg, out_dir / "junit.xml")
    write_csv(agg, out_dir / "scores.csv")
    return [*paths, out_dir / "junit.xml", out_dir / "scores.csv"]
