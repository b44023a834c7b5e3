"""Write a run's reports: report.md, report.html, junit.xml, scores.csv (UTF-8 BOM)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from xml.sax.saxutils import quoteattr

from farm.errors import FarmError
from farm.fsutil import create_new_text
from farm.report.charts import rate_chart
from farm.report.markdown import num, pct, render_markdown
from farm.report.model import ReportData
from farm.results.aggregate import Aggregation

REPORT_FILES = ("report.md", "report.html", "junit.xml", "scores.csv")
CSV_HEADER = (
    "run", "task_id", "device", "category", "partition", "expect", "outcome",
    "initial_verdict", "final_verdict", "reason", "failure_category", "seconds",
)


def render_html(data: ReportData) -> str:
    """The self-contained report.html (inline CSS and SVG; no scripts, no network)."""
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    env = Environment(
        loader=FileSystemLoader(str(Path(__file__).parent / "templates")),
        autoescape=select_autoescape(["html", "j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    charts = {"category": rate_chart(data.by_category), "device": rate_chart(data.by_device)}
    return env.get_template("report.html.j2").render(d=data, charts=charts, pct=pct, num=num)


_SETUP = r"""
CREATE OR REPLACE TEMP MACRO short_text(s) AS left(trim(regexp_replace(coalesce(s, ''), '\s+', ' ', 'g')), 160);
CREATE OR REPLACE TEMP MACRO xesc(s) AS replace(replace(replace(replace(
    regexp_replace(coalesce(s, ''), '[\x00-\x08\x0b\x0c\x0e-\x1f]', '', 'g'),
    '&', '&amp;'), '<', '&lt;'), '>', '&gt;'), '"', '&quot;');
"""
_ROWS = """
SELECT s.run, s.task_id, coalesce(l.label, s.device) AS device, coalesce(s.category, '') AS category,
       coalesce(s.partition, '') AS partition, coalesce(s.expect, '') AS expect, s.outcome,
       CASE WHEN s.initial THEN 'pass' ELSE 'fail' END AS initial_verdict,
       CASE WHEN s.final THEN 'pass' ELSE 'fail' END AS final_verdict,
       short_text(s.reasons[1]) AS reason, coalesce(s.failure_category, '') AS failure_category,
       CASE WHEN s.metrics.total_ms IS NULL THEN '' ELSE printf('%.3f', s.metrics.total_ms / 1000.0) END AS seconds,
       s.final AS final_bool, s.device AS serial
FROM shown s LEFT JOIN labels l ON l.serial = s.device
"""


def write_csv(agg: Aggregation, path: Path) -> None:
    """scores.csv, one row per task × phone, with a UTF-8 BOM so spreadsheet apps read it right."""
    agg.con.execute(_SETUP)
    fd, tmp = tempfile.mkstemp(prefix=".scores.", suffix=".csv", dir=path.parent)
    os.close(fd)
    body = tmp + ".body"
    try:
        cols = ", ".join(CSV_HEADER)
        agg.con.execute(
            f"COPY (SELECT {cols} FROM ({_ROWS}) ORDER BY run, task_id, device) TO '{body}' (HEADER, DELIMITER ',')"
        )
        with open(tmp, "wb") as out, open(body, "rb") as src:
            out.write("\ufeff".encode())
            shutil.copyfileobj(src, out, 1 << 20)
            out.flush()
            os.fsync(out.fileno())
        if path.exists():
            raise FarmError(f"{path}: report already exists", hint="reports are never overwritten")
        os.replace(tmp, path)
    finally:
        Path(body).unlink(missing_ok=True)
        Path(tmp).unlink(missing_ok=True)


def render_csv(agg: Aggregation) -> str:
    """scores.csv as text (see `write_csv`)."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "scores.csv"
        write_csv(agg, path)
        return path.read_text(encoding="utf-8")


def render_junit(agg: Aggregation) -> str:
    """junit.xml: one testsuite per run × phone, one testcase per task; skipped/failure/error with reasons."""
    agg.con.execute(_SETUP)
    suites = agg.con.execute(
        f"""
        WITH r AS ({_ROWS}), c AS (
          SELECT *, '  <testcase classname="' || xesc('android.' || coalesce(nullif(category, ''), 'task'))
            || '" name="' || xesc(task_id) || '"' || CASE WHEN seconds = '' THEN '' ELSE ' time="' || seconds || '"' END
            || CASE
                 WHEN outcome = 'skipped' THEN '><skipped message="' || xesc(coalesce(nullif(reason, ''), outcome))
                   || '"/></testcase>'
                 WHEN outcome = 'error' THEN '><error type="infrastructure" message="'
                   || xesc(coalesce(nullif(reason, ''), outcome)) || '"/></testcase>'
                 WHEN NOT final_bool THEN '><failure type="' || xesc(outcome) || '" message="'
                   || xesc(coalesce(nullif(reason, ''), outcome)) || '"/></testcase>'
                 ELSE '/>'
               END AS line
          FROM r)
        SELECT run, device, count(*), count(*) FILTER (WHERE outcome = 'skipped'),
               count(*) FILTER (WHERE outcome = 'error'),
               count(*) FILTER (WHERE outcome NOT IN ('skipped', 'error') AND NOT final_bool),
               coalesce(sum(CASE WHEN seconds = '' THEN 0 ELSE seconds::DOUBLE END), 0),
               string_agg(line, chr(10) ORDER BY task_id)
        FROM c GROUP BY run, device, serial ORDER BY run, serial
        """
    ).fetchall()
    out = ['<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n']
    for run, label, total, skipped, errors, failures, seconds, lines in suites:
        out.append(
            f"<testsuite name={quoteattr(f'{run} {label}')} tests=\"{total}\" failures=\"{failures}\""
            f' errors="{errors}" skipped="{skipped}" time="{seconds:.3f}">\n'
        )
        out.append(lines + "\n")
        out.append("</testsuite>\n")
    out.append("</testsuites>\n")
    return "".join(out)


def write_reports(agg: Aggregation, out_dir: Path) -> list[Path]:
    """Write the four reports into `out_dir` (each refused if it already exists). Returns their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in REPORT_FILES:
        if (out_dir / name).exists():
            raise FarmError(f"{out_dir / name}: report already exists", hint="reports are never overwritten")
    contents = {
        "report.md": render_markdown(agg.data),
        "report.html": render_html(agg.data),
        "junit.xml": render_junit(agg),
    }
    paths = []
    for name, text in contents.items():
        create_new_text(out_dir / name, text, what="report")
        paths.append(out_dir / name)
    write_csv(agg, out_dir / "scores.csv")
    paths.append(out_dir / "scores.csv")
    return paths
