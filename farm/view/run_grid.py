"""The run page's task × phone grid: one row per task, one column per phone (its stable name), each cell the
verdicts of that task's latest tries on that phone — coloured like the nights matrix (`farm.view.nights.colour`),
counted `passed/judged` (`eN`: infrastructure errors) and a link: to the unit when the cell holds one, else to the
units table filtered to that task and phone.

Built in SQL from the run's `units` table (`farm.view.unit_index`) a page of tasks at a time, so a run of any size
leaves DuckDB as at most GRID_TASKS × GRID_PHONES cells. Tasks with the most failures and errors come first (then
by id); a run with more than GRID_PHONES phones shows those with the most failures and errors, and says how many
it leaves out.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from farm.view.nights import colour
from farm.view.unit_index import UnitIndex

GRID_TASKS = 50
"""Task rows a grid page shows."""
GRID_PHONES = 40
"""Phone columns shown at most."""

_PHONES = ("SELECT phone, count(*) FILTER (WHERE verdict IN ('fail', 'error')) AS bad FROM units WHERE latest"
           " GROUP BY phone ORDER BY bad DESC, phone")
_CELLS = """
WITH c AS (
  SELECT task_id, phone, count(*) AS n, count(*) FILTER (WHERE verdict = 'pass') AS passed,
    count(*) FILTER (WHERE verdict = 'fail') AS failed, count(*) FILTER (WHERE verdict = 'error') AS errors,
    min(key) AS key, min(category) AS category
  FROM units WHERE latest AND list_contains(?, phone) GROUP BY task_id, phone),
t AS (SELECT task_id, sum(failed + errors) AS bad, min(category) AS category FROM c GROUP BY task_id),
r AS (
  SELECT *, row_number() OVER (ORDER BY bad DESC, task_id) AS nth,
    count(*) FILTER (WHERE bad > 0) OVER () AS bad_tasks
  FROM t)
SELECT r.bad_tasks, r.category, c.task_id, c.phone, c.n, c.passed, c.failed, c.errors, c.key
FROM r JOIN c USING (task_id) WHERE r.nth > ? AND r.nth <= ? ORDER BY r.nth, c.phone
"""


class GridCell(BaseModel):
    """One task on one phone (its latest tries: every instance and repeat)."""

    model_config = ConfigDict(extra="forbid")

    units: int
    passed: int
    failed: int
    errors: int
    skipped: int
    key: str | None = None
    """The unit a click opens when the cell holds one; null when it holds several (a click lists them)."""

    @property
    def colour(self) -> str:
        """pass, fail, mixed, error or skipped (`farm.view.nights.colour`)."""
        return colour(self.passed, self.passed + self.failed, self.errors, self.skipped)

    @property
    def text(self) -> str:
        """`passed/judged` (`–` when none was judged), ` eN` for infrastructure errors."""
        judged = self.passed + self.failed
        return (f"{self.passed}/{judged}" if judged else "–") + (f" e{self.errors}" if self.errors else "")

    @property
    def title(self) -> str:
        """Every count in words (the cell's tooltip)."""
        return (f"{self.units} unit{'' if self.units == 1 else 's'}: {self.passed} passed, {self.failed} failed, "
                f"{self.errors} error{'' if self.errors == 1 else 's'}, {self.skipped} skipped")


class GridRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_id: str
    category: str
    cells: list[GridCell | None]
    """One per `RunGrid.phones`; null where the task did not run on that phone."""


class RunGrid(BaseModel):
    """One page of a run's task × phone grid."""

    model_config = ConfigDict(extra="forbid")

    phones: list[str] = Field(default_factory=list)
    """Column labels (stable phone names), sorted."""
    rows: list[GridRow] = Field(default_factory=list)
    first: int = 1
    """The position of the page's first task among all tasks (from 1)."""
    tasks: int = 0
    """Tasks with a unit on a shown phone."""
    bad_tasks: int = 0
    """Of those, tasks with a failure or an error (they come first)."""
    page: int = 1
    pages: int = 1
    phones_left_out: int = 0
    """Phones of the run not shown (beyond GRID_PHONES: those with the fewest failures and errors)."""


def run_grid(index: UnitIndex, page: int = 1) -> RunGrid:
    """Page `page` of the grid (a page past the last shows the last)."""
    ranked = index.select(_PHONES, [])
    phones = sorted(str(p[0]) for p in ranked[:GRID_PHONES])
    grid = RunGrid(phones=phones, phones_left_out=max(0, len(ranked) - GRID_PHONES))
    if not phones:
        return grid
    count = index.select("SELECT count(DISTINCT task_id) FROM units WHERE latest AND list_contains(?, phone)",
                         [phones])
    grid.tasks = int(count[0][0])
    pages = max(1, -(-grid.tasks // GRID_TASKS))
    grid.page, grid.pages = min(max(1, page), pages), pages
    grid.first = (grid.page - 1) * GRID_TASKS + 1
    column = {name: i for i, name in enumerate(phones)}
    rows: dict[str, GridRow] = {}
    for bad, category, task, phone, n, passed, failed, errors, key in index.select(
            _CELLS, [phones, grid.first - 1, grid.first - 1 + GRID_TASKS]):
        grid.bad_tasks = int(bad)
        row = rows.get(task)
        if row is None:
            row = rows[task] = GridRow(task_id=str(task), category=str(category or ""), cells=[None] * len(phones))
        n = int(n)
        row.cells[column[str(phone)]] = GridCell(
            units=n, passed=int(passed), failed=int(failed), errors=int(errors),
            skipped=n - int(passed) - int(failed) - int(errors), key=str(key) if n == 1 else None)
    grid.rows = list(rows.values())
    return grid
