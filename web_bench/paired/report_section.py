"""The web lane's section of a run report: per results file of the run, the backends by name, the seed-001
tables (success, latency, pairs, ratios, tokens, per task, failed runs), a latency chart per backend and the
seed's caveat — from the same computation as `farm web report`."""

from __future__ import annotations

from pathlib import Path

from farm.errors import FarmError
from farm.manifest import Manifest
from farm.report.lanes import LaneSection, register
from farm.results.store import RECORDS_FILE
from web_bench.paired.charts import latency_chart
from web_bench.paired.report import (
    CAVEAT,
    P90_MIN_SAMPLES,
    backend_notes,
    damage_note,
    reading_notes,
    report_file,
    report_tables,
)
from web_bench.paired.report_model import WebReport

FAILURES_SHOWN = 50
"""Failed runs listed in the run report; the results file and `farm web report` have them all."""
_TITLE = "Web lane: paired browser backends"


def results_files(run_dir: Path, manifest: Manifest) -> list[tuple[str, Path]]:
    """(as the manifest names it, path) of every web results file the run's web lane wrote, in order."""
    found: dict[str, Path] = {}
    for entry in manifest.lanes:
        if entry.lane != "web":
            continue
        for output in entry.outputs:
            path = Path(output)
            if path.suffix == ".jsonl" and path.name != RECORDS_FILE:
                found.setdefault(output, path if path.is_absolute() else run_dir / path)
    return list(found.items())


def section_of(rep: WebReport, *, run: str, links: list[str]) -> LaneSection:
    """The section of one web report."""
    stats = rep.backends.values()
    axis = max((ms for s in stats for ms in s.success_completions_ms), default=0.0) * 1.05
    charts = [
        latency_chart(name, s.success_completions_ms, runs=s.runs, p50_ms=s.p50_completion_ms,
                      p90_ms=s.p90_completion_ms, axis_ms=axis, p90_min_samples=P90_MIN_SAMPLES)
        for name, s in rep.backends.items()
    ]
    names = " vs ".join(rep.backends)
    # One paragraph of rules, then the caveat: the numbers should be on the first screen of the section.
    rules = [note for note in reading_notes(rep) if note != CAVEAT]
    return LaneSection(
        lane="web", run=run, title=f"{_TITLE} — {names} (suite version {rep.suite_version})",
        notes=[*backend_notes(rep), *filter(None, [damage_note(rep)]), " ".join(rules), CAVEAT],
        tables=report_tables(rep, failures_limit=FAILURES_SHOWN), svg=charts, links=links,
    )


@register("web")
def web_sections(run_dir: Path, manifest: Manifest) -> list[LaneSection]:
    """One section per web results file of the run; none when the run has no web lane."""
    sections = []
    for named, path in results_files(run_dir, manifest):
        report_md = path.with_suffix(".report.md")
        links = [n for n in (named, str(Path(named).with_suffix(".report.md"))) if not Path(n).is_absolute()]
        links = links if report_md.is_file() else links[:1]
        try:
            rep = report_file(path)
        except FarmError as exc:
            # The run report is still written: it says why this lane's numbers are missing.
            sections.append(LaneSection(lane="web", run=manifest.run_id, title=_TITLE, links=links,
                                        notes=[f"The web results could not be reported: {exc.line()}"]))
            continue
        sections.append(section_of(rep, run=manifest.run_id, links=links))
    return sections
