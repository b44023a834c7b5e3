"""The desktop lane in reports: each batch attached to a run (`farm desktop attach`) as a section of that run's
report, and one batch alone as an HTML page styled like the run report (`farm desktop report --html`). The
numbers are the batch report's (`farm.desktop.report`), never recomputed here."""

from __future__ import annotations

import re
from pathlib import Path

from farm.desktop.jsonfile import parse_model_file
from farm.desktop.report import (
    READING_NOTES,
    RESULT_GROUPS,
    RESULT_HEADER,
    DesktopReport,
    batch_facts,
    progress_text,
    result_rows,
)
from farm.errors import FarmError
from farm.manifest import Manifest, utc_now
from farm.report.lanes import LaneSection, SectionTable, register

_REPORT_JSON = re.compile(r"desktop/([^/]+)\.report\.json")
_STYLE = re.compile(r"<style>(.*?)</style>", re.DOTALL)


def batch_section(report: DesktopReport, *, run: str, links: list[str] | None = None) -> LaneSection:
    """One batch as a report section: its label and execution note first, then the results table split into
    narrow ones (slots, rates, durations, actions), the runs that did not succeed, and how to read it."""
    rows = result_rows(report)
    tables = [SectionTable(title=title, header=[RESULT_HEADER[i] for i in columns],
                           rows=[[row[i] for i in columns] for row in rows], numeric=list(range(1, len(columns))))
              for title, columns in RESULT_GROUPS.items()]
    if report.notSucceeded:
        tables.append(SectionTable(title="Not succeeded", header=["slot", "status", "reason"],
                                   rows=[[n.slot, n.status, n.reason] for n in report.notSucceeded]))
    return LaneSection(
        lane="desktop", run=run, title=f"Desktop batch {Path(report.batch).stem} ({report.suite}) — {report.label}",
        notes=[f"{report.label}: {progress_text(report)}", *batch_facts(report), " ".join(READING_NOTES)],
        tables=tables, links=links or [],
    )


@register("desktop")
def desktop_sections(run_dir: Path, manifest: Manifest) -> list[LaneSection]:
    """One section per batch attached to the run, in the order attached; none without a desktop lane."""
    sections = []
    for entry in manifest.lanes:
        if entry.lane != "desktop":
            continue
        for output in entry.outputs:
            if not (match := _REPORT_JSON.fullmatch(output)):
                continue
            stem = match.group(1)
            links = [o for o in entry.outputs if o.startswith(f"desktop/{stem}.report.")]
            try:
                report = parse_model_file(run_dir / output, DesktopReport, what="desktop report",
                                          hint="attach the batch again to a new run")
            except FarmError as exc:
                # The run report is still written; it says which batch is missing and why.
                sections.append(LaneSection(lane="desktop", run=manifest.run_id, title=f"Desktop batch {stem}",
                                            notes=[f"The batch report could not be read: {exc.line()}"], links=links))
                continue
            sections.append(batch_section(report, run=manifest.run_id, links=links))
    return sections


def run_report_css() -> str:
    """The run report's stylesheet, as report.html renders it: a lane page looks like the run report and the
    stylesheet is written in one place only."""
    from farm.report.model import RateRow, ReportData, SumRow
    from farm.report.writers import render_html

    empty = ReportData(
        runs=[], generated_at="", include_holdout=False, hidden_holdout_tasks=0, hidden_holdout_attempts=0,
        execution=[], overall=RateRow(key="all", planned=0, skipped=0, attempted=0, passed=0, errors=0, rate=None,
                                      low=None, high=None),
        outcomes=[], by_category=[], by_partition=[], by_device=[], by_expect=[], skipped=[], skipped_total=0,
        login_handover=[], failure_categories=[], infrastructure_errors=0, timing=[], time_split=[], tokens=[],
        cost=SumRow(name="cost", total=None, known=0, unknown=0), overrides=[], markers=[],
    )
    found = _STYLE.search(render_html(empty))
    if found is None:
        raise FarmError("report.html.j2: no <style> element", hint="the run report's template must keep its CSS inline")
    return found.group(1)


def lane_page_html(title: str, sections: list[LaneSection]) -> str:
    """A self-contained HTML page holding only `sections`, in the run report's style (no scripts, no network)."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined
    from markupsafe import Markup

    env = Environment(
        loader=FileSystemLoader(str(Path(__file__).parents[1] / "report" / "templates")),
        # Sections carry batch- and page-written text: escaping must not depend on a file name.
        autoescape=True, trim_blocks=True, lstrip_blocks=True, undefined=StrictUndefined,
    )
    return env.get_template("lane_page.html.j2").render(
        title=title, sections=sections, css=Markup(run_report_css()), generated_at=utc_now(),
    )


def batch_page_html(report: DesktopReport) -> str:
    """One batch as an HTML page (`farm desktop report --html`)."""
    return lane_page_html(f"Desktop benchmark {report.suite} — {Path(report.batch).name}",
                          [batch_section(report, run=Path(report.batch).stem)])
