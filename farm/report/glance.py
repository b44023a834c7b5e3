"""What broke at a glance: the task × phone grid and the per-phone timeline of one run."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Verdict = Literal["pass", "fail", "skip", "error"]
"""A unit's final verdict: passed, did not pass, not attempted, or ended in an infrastructure error."""

VERDICTS: tuple[Verdict, ...] = ("fail", "error", "skip", "pass")
"""Worst first: when units are merged (a timeline bar, one phone name in two lanes) the worst one shows."""

GRID_ROWS = 100
"""Rows (units) the grid shows at most; units with a non-pass come first."""
GRID_PHONES = 40
"""Phone columns (and timeline lanes) shown at most; phones with the most non-passes are kept."""
TIMELINE_BARS = 200
"""Bars drawn per phone at most; a phone with more units has them merged into this many time slices."""


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GridRow(_M):
    """One unit's verdicts across the grid's phones."""

    unit: str
    """Unit name (task id, with instance and repeat when the report has them)."""
    cells: list[Verdict | None]
    """One per `Grid.phones`, in order; null where the unit did not run on that phone."""


class Grid(_M):
    """Task × phone verdicts of one run (phones by their stable names)."""

    run: str
    """The run shown (the compared run B in a comparison)."""
    phones: list[str]
    """Column labels, sorted."""
    rows: list[GridRow]
    """Units with a non-pass first, then the others, each group by task id; at most GRID_ROWS."""
    units_total: int
    """Units (rows) the run has on the shown phones."""
    units_not_passed: int
    """Of those, units with a non-pass on some shown phone."""
    phones_left_out: int = 0
    """Phones of the run not shown (beyond GRID_PHONES)."""


class TimelineBar(_M):
    """A unit on a phone's time axis, or several merged into one time slice."""

    start: float
    """Seconds from the timeline's start."""
    end: float
    """Seconds from the timeline's start (≥ start)."""
    verdict: Verdict
    """The unit's verdict; for merged units the worst of them."""
    units: int
    """Units in the bar (1 unless merged)."""
    not_passed: int
    """Of those, units that did not pass."""
    label: str
    """The unit name; empty for merged units."""


class TimelineLane(_M):
    """One phone's units in time order."""

    phone: str
    """Device label."""
    units: int
    """Units with start and end times on this phone."""
    bars: list[TimelineBar]
    """What is drawn: one bar per unit, or at most TIMELINE_BARS merged slices when there are more."""


class Timeline(_M):
    """Units of one run on a time axis, a lane per phone, from the records' started_at / ended_at."""

    run: str
    """The run shown (the compared run B in a comparison)."""
    start: str
    """ISO-8601 UTC time of the earliest start."""
    span_s: float
    """Seconds from the earliest start to the latest end."""
    lanes: list[TimelineLane]
    """Phones by label; at most GRID_PHONES."""
    bar_cap: int = TIMELINE_BARS
    """Bars drawn per phone at most."""
    phones_left_out: int = 0
    """Phones with timed units not shown (beyond GRID_PHONES)."""
    untimed: int = 0
    """Attempted units without usable start and end times (not drawn)."""

    @property
    def merged(self) -> bool:
        """Some lane has its units merged into time slices."""
        return any(lane.units > len(lane.bars) for lane in self.lanes)
