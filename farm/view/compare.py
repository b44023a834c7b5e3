"""Two runs picked on the run list: each one's row (its headline, setup, phones) side by side, where their
settings differ, and the paired comparisons `farm report A B` wrote, when there are any.

The viewer renders no comparison of its own: a paired comparison (common units, bootstrap intervals, McNemar,
regressions and fixes) is `farm.report.compare`'s, written as `reports/<time>-vs-<A>/report.html` in run B. This
page links those (either direction) and, when there is none, says the command that makes one.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from farm.errors import FarmError
from farm.report.headline import holdout_counted
from farm.report.run_setup import differences, differences_text, run_setup, setup_text
from farm.view.files import REPORT_NAME, exists, list_dir
from farm.view.phones import read_manifest
from farm.view.runs import RunSummary, summarise


class ComparisonReport(BaseModel):
    """A paired comparison report `farm report` wrote."""

    model_config = ConfigDict(extra="forbid")

    run: str
    """The run that holds it (the comparison's B)."""
    path: str
    """Its report.html, relative to that run's directory."""
    against: str
    """The other run (A)."""


class Comparison(BaseModel):
    """What the comparison page shows."""

    model_config = ConfigDict(extra="forbid")

    a: RunSummary
    b: RunSummary
    setup_a: str = ""
    """Run A's setup in words (`farm.report.run_setup.setup_text`)."""
    setup_b: str = ""
    differ: str = ""
    """`A and B differ in …` (empty when their setups are alike or cannot be read)."""
    reports: list[ComparisonReport] = Field(default_factory=list)
    """Paired comparisons of these two runs, newest first."""


def comparison_reports(runs_dir: Path, a: str, b: str) -> list[ComparisonReport]:
    """report.html files under `<b>/reports/*-vs-<a>/` and `<a>/reports/*-vs-<b>/`, newest first."""
    found: list[ComparisonReport] = []
    for holder, other in ((b, a), (a, b)):
        folder = runs_dir / holder / "reports"
        for name, is_dir in list_dir(folder):
            if is_dir and name.endswith(f"-vs-{other}") and exists(folder / name / REPORT_NAME, file=True):
                found.append(ComparisonReport(run=holder, path=f"reports/{name}/{REPORT_NAME}", against=other))
    return sorted(found, key=lambda r: r.path.split("/")[1], reverse=True)


def compare(runs_dir: Path, a_dir: Path, b_dir: Path, tasks_dir: Path | None = None) -> Comparison:
    """The comparison page of runs A and B (both resolved run directories)."""
    a, b = summarise(runs_dir, a_dir.name, tasks_dir), summarise(runs_dir, b_dir.name, tasks_dir)
    out = Comparison(a=a, b=b, reports=comparison_reports(runs_dir, a_dir.name, b_dir.name))
    ma, mb = read_manifest(a_dir), read_manifest(b_dir)
    try:
        counted = holdout_counted([a_dir, b_dir])
    except (FarmError, OSError):  # a manifest that cannot be read: the rows already say why
        counted = False
    sa = run_setup(a_dir, ma, include_holdout=counted)
    sb = run_setup(b_dir, mb, include_holdout=counted)
    out.setup_a, out.setup_b = setup_text(sa), setup_text(sb)
    diffs = differences(sa, sb)
    out.differ = differences_text(diffs) if diffs else ""
    return out
