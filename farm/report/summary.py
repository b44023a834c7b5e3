"""What `farm report --json` prints: the files written and the headline numbers, as one JSON object."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from farm.report.model import Comparison, RateRow, ReportData


class ReportSummary(BaseModel):
    """The written reports and the numbers their headline shows."""

    model_config = ConfigDict(extra="forbid")

    runs: list[str]
    """Run ids, in the order given (two: a paired comparison A B)."""
    reports: list[str]
    """Paths of the files written (report.md, report.html, junit.xml, scores.csv…)."""
    include_holdout: bool
    """Whether holdout-pool results are counted."""
    headline: RateRow | None
    """One run: planned / skipped / attempted / errors / passed and the pass rate with its Wilson 95 % interval,
    as the report's headline shows them (final verdicts, after human re-judgement). Two runs: null — a comparison
    has no pooled headline; each side's is in `headlines`."""
    headlines: list[RateRow]
    """Each run's own headline, in the order of `runs` (keyed by its run id), counted as its single-run report
    counts it."""
    comparison: Comparison | None
    """Two runs: the paired comparison on their common units; null for one run."""
    warnings: list[str]
    """Damaged record lines that were skipped (also printed on stderr)."""


def report_summary(run_dirs: Sequence[Path], reports: Sequence[Path], data: ReportData) -> ReportSummary:
    """The summary of reports just written for `run_dirs`: the numbers they show (`data`), not a recount."""
    return ReportSummary(
        runs=[d.name for d in run_dirs], reports=[str(p) for p in reports], include_holdout=data.include_holdout,
        headline=data.overall if data.comparison is None else None,
        headlines=[data.overall] if data.comparison is None else [data.comparison.side_a, data.comparison.side_b],
        comparison=data.comparison, warnings=list(data.warnings),
    )
