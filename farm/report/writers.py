"""Write a run's reports: report.md, report.html, junit.xml, scores.csv (UTF-8 BOM)."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from xml.sax.saxutils import quoteattr

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


def render_csv(agg: Aggregation) -> str:
    """scores.csv, one row per task × phone, with a UTF-8 BOM so spreadsheet apps read it right."""
    buf = io.StringIO()
    buf.write("\ufeff")
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    for r in agg.task_tuples():
        writer.writerow(
            (
                *r[:7],
                "pass" if r[7] else "fail",
                "pass" if r[8] else "fail",
                r[9],
                r[10],
                "" if r[11] is None else f"{r[11]:.3f}",
            )
        )
    return buf.getvalue()


def render_junit(agg: Aggregation) -> str:
    """junit.xml: one testsuite per run × phone, one testcase per task; skipped/failure/error with reasons."""
    counts = agg.con.execute(
        "SELECT run, device, count(*), count(*) FILTER (WHERE outcome = 'skipped'),"
        " count(*) FILTER (WHERE outcome = 'error'),"
        " count(*) FILTER (WHERE outcome NOT IN ('skipped', 'error') AND NOT final),"
        " coalesce(sum(metrics.total_ms), 0) / 1000.0 FROM shown GROUP BY run, device ORDER BY run, device"
    ).fetchall()
    out = ['<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n']
    rows = agg.task_tuples(order="run, device, task_id")
    pending = next(rows, None)
    for run, device, total, skipped, errors, failures, seconds in counts:
        label = agg.labels.get(device, device)
        out.append(
            f"<testsuite name={quoteattr(f'{run} {label}')} tests=\"{total}\" failures=\"{failures}\""
            f' errors="{errors}" skipped="{skipped}" time="{seconds:.3f}">\n'
        )
        while pending is not None and pending[0] == run and pending[2] == label:
            r = pending
            time = "" if r[11] is None else f' time="{r[11]:.3f}"'
            cls = quoteattr("android." + str(r[3] or "task"))
            head = f"  <testcase classname={cls} name={quoteattr(str(r[1]))}{time}"
            reason = quoteattr(str(r[9] or r[6]))
            if r[6] == "skipped":
                out.append(f"{head}><skipped message={reason}/></testcase>\n")
            elif r[6] == "error":
                out.append(f"{head}><error type=\"infrastructure\" message={reason}/></testcase>\n")
            elif not r[8]:
                out.append(f"{head}><failure type={quoteattr(str(r[6]))} message={reason}/></testcase>\n")
            else:
                out.append(f"{head}/>\n")
            pending = next(rows, None)
        out.append("</testsuite>\n")
    out.append("</testsuites>\n")
    return "".join(out)


def write_reports(agg: Aggregation, out_dir: Path) -> list[Path]:
    """Write the four reports into `out_dir` (each refused if it already exists). Returns their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in REPORT_FILES:
        if (out_dir / name).exists():
            from farm.errors import FarmError

            raise FarmError(f"{out_dir / name}: report already exists", hint="reports are never overwritten")
    contents = {
        "report.md": render_markdown(agg.data),
        "report.html": render_html(agg.data),
        "junit.xml": render_junit(agg),
        "scores.csv": render_csv(agg),
    }
    paths = []
    for name, text in contents.items():
        create_new_text(out_dir / name, text, what="report")
        paths.append(out_dir / name)
    return paths
