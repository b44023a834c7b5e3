"""What a run's page shows: the run's facts and its one headline, its report files, the task × phone grid
(`farm.view.run_grid`), its failures grouped (`farm.view.failure_groups`) and a page of its units.

The headline is the one its current report wrote (`headline.json`, `farm.report.headline.read_headline`); a run
with no report yet is counted from its records by the headline's own rules (`UnitIndex.headline`), and the page
says which. The units come from the run's DuckDB index (`farm.view.unit_index`), so no page reads every record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from farm.errors import FarmError
from farm.report.headline import HEADLINE_FILE, headline_text, read_headline
from farm.report.writers import REPORT_FILES
from farm.results.store import RECORDS_FILE
from farm.view.failure_groups import FailureGroups, failure_groups
from farm.view.files import exists, list_dir
from farm.view.phones import phones_of
from farm.view.run_grid import GRID_PHONES, GRID_TASKS, RunGrid, run_grid
from farm.view.runs import RunSummary, describe, listed_phones
from farm.view.unit_index import UnitIndex, UnitPage, cached_index
from farm.view.unit_query import GROUPINGS, NONE, PER_CHOICES, VERDICTS, UnitQuery

REPORT_LINKS = (*REPORT_FILES, HEADLINE_FILE)
"""The run's current report files, linked from its page when they exist."""


@dataclass
class RunView:
    """The run page's content."""

    summary: RunSummary
    """The run's row (label, date, status, lanes and settings, phones) with the headline shown."""
    headline_from: Literal["report", "records", "none"]
    """Where the headline comes from: the run's current report, its records (no report yet), or nowhere."""
    query: UnitQuery
    files: list[str] = field(default_factory=list)
    """Report files present at the run's top level, in REPORT_LINKS order."""
    earlier_reports: bool = False
    """Whether `reports/` holds earlier reports or comparisons."""
    entries: list[tuple[str, bool]] = field(default_factory=list)
    """The run directory's top level (name, is a directory), hidden names left out."""
    index: UnitIndex | None = None
    """The units' index (None: no records, or they could not be indexed: `problems` says why)."""
    page: UnitPage = field(default_factory=UnitPage)
    grid: RunGrid | None = None
    """A page of the task × phone grid (None without an index)."""
    failures: FailureGroups | None = None
    """The failures grouped (None without an index)."""
    problems: list[str] = field(default_factory=list)
    verdicts: tuple[str, ...] = VERDICTS
    per_choices: tuple[int, ...] = PER_CHOICES
    groupings: tuple[str, ...] = GROUPINGS
    none: str = NONE
    grid_tasks: int = GRID_TASKS
    grid_phones: int = GRID_PHONES

    def cell_href(self, task: str, phone: str) -> str:
        """The units table filtered to one grid cell's units (the grid's page and the grouping kept)."""
        q = self.query
        return UnitQuery(task=task, phone=phone, gpage=q.gpage, group=q.group).link() + "#units"


def run_view(runs_dir: Path, run: str, query: UnitQuery, tasks_dir: Path | None = None) -> RunView:
    """The page of `run` (a run directory under `runs_dir`) under `query`."""
    summary, run_dir, manifest = describe(runs_dir, run)
    view = RunView(summary=summary, headline_from="none", query=query, problems=list(summary.problems))
    if run_dir is None:
        return view
    view.files = [name for name in REPORT_LINKS if exists(run_dir / name, file=True)]
    view.earlier_reports = exists(run_dir / "reports")
    view.entries = [(name, is_dir) for name, is_dir in list_dir(run_dir) if not name.startswith(".")]
    written = read_headline(run_dir)
    if written is not None:
        summary.headline, summary.headline_text, view.headline_from = written.overall, written.text, "report"
    devices: list[str] = []
    if exists(run_dir / RECORDS_FILE):
        try:
            view.index = cached_index(runs_dir, run_dir, tasks_dir)
        except FarmError as exc:
            view.problems.append(exc.line())
        else:
            devices = view.index.devices
            view.problems.extend(view.index.problems)
            view.page = view.index.page(query)
            view.grid = run_grid(view.index, query.gpage)
            view.failures = failure_groups(view.index, query)
            if written is None:
                summary.headline = view.index.headline()
                summary.headline_text, view.headline_from = headline_text(summary.headline), "records"
    elif written is None:
        summary.headline_text = "no records yet"
    ids = view.index.phone_ids if view.index is not None else phones_of(manifest, [])
    summary.phones = listed_phones(manifest, devices, ids)
    return view

