"""The typed outputs of `farm history`: one row per night, the pair changes, flaky tasks, the task × night grid,
errors, health, app version changes.

Links (`NightRow.report`, `UnitLink.evidence`) are paths relative to `History.runs_dir`, with `/` separators; the
renderings make them relative to the file they are written into.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from farm.report.model import PhoneRow, RateRow
from farm.report.run_setup import AppVersionChange

RunStatus = Literal["running", "finished", "failed", "interrupted"]


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NightRow(_M):
    """One night (run): its state and pass rates."""

    run_id: str
    """Run id."""
    created_at: str
    """When the run was created (ISO-8601, from its manifest)."""
    status: RunStatus
    """Run state; anything but `finished` is marked in every output."""
    overall: RateRow
    """Pass rate of the whole night (key: the run id), with its Wilson 95 % interval."""
    by_category: list[RateRow]
    """Pass rate per task category (key: the category; `(none)` when a record has none)."""
    phones_used: int
    """Phones the manifest lists as used."""
    phones_left_out: int
    """Phones the manifest lists as left out by the health gate."""
    run_dir: str | None = None
    """The run's directory relative to `History.runs_dir`; null for a night not read from disk."""
    report: str | None = None
    """The night's current report (`report.html`) relative to `History.runs_dir`; null when it has none."""


class _Task(_M):
    lane: str
    """Lane of the records."""
    task_id: str
    """Task id."""
    instance: str
    """Task instance (the web lane's data seed); empty when a task has one."""


class _Pair(_Task):
    group: str
    """The phone's stable name (`farm.phone_name`) on the android lane; the device (web backend, desktop machine)
    off it."""


class PairChange(_Pair):
    """A pair (task × phone, or task × device off the android lane) that changed from the previous night."""

    kind: Literal["regression", "fix", "new", "gone"]
    """What changed (rules in the module docstring)."""
    before_passed: int
    """Judged units that passed on the previous night."""
    before_failed: int
    """Judged units that failed on the previous night."""
    after_passed: int
    """Judged units that passed on the newest night."""
    after_failed: int
    """Judged units that failed on the newest night."""
    phones: list[str]
    """The pair's phone (or device) when it was judged on the newest night, or on the previous one for `gone`."""
    reasons: list[str]
    """First reason of each unit that failed on the newest night."""


class NightCount(_M):
    """A task's units on one night."""

    run_id: str
    """The night (run id)."""
    passed: int
    """Judged units that passed (verdict before human re-judgement)."""
    judged: int
    """Units judged: attempted, neither skipped nor an infrastructure error."""
    errors: int
    """Infrastructure errors (never judged)."""
    skipped: int
    """Units skipped (never judged)."""


class UnitLink(_M):
    """A unit of a task × night cell that did not pass, and where its run record is."""

    phone: str
    """The phone's stable name (`farm.phone_name`) or device."""
    repeat: int
    """Repeat index."""
    status: Literal["failed", "error"]
    """Judged and not passed, or an infrastructure error."""
    reason: str
    """First reason recorded (the outcome when none)."""
    evidence: str | None
    """The unit's run record (`Record.evidence` under the night's run directory); null when the record names none,
    or a path that is not linked (absolute, going up with `..`, or with control characters)."""


class TaskCell(NightCount):
    """One cell of the task × night grid."""

    units: list[UnitLink]
    """Units that did not pass (by phone, repeat), at most `farm.report.history_grid.MAX_CELL_UNITS`."""
    units_more: int
    """Units that did not pass beyond those listed."""
    unit: str | None = None
    """The unit a click on the cell opens: its first failure, else its first infrastructure error, else its first
    pass (by phone, repeat), as its run record relative to `History.runs_dir`; null when none names one."""


class TaskRow(_Task):
    """One task (lane, task, instance) of the task × night grid."""

    category: str
    """Task category (as the newest night that ran the task recorded it)."""
    flaky: bool
    """Flaky over the last `History.flaky_nights` nights (the rule of `History.flaky`, which may list fewer)."""
    regressed: bool
    """A pair of the task is in `History.regressions`."""
    cells: list[TaskCell]
    """One per night of `History.task_nights`, oldest first; a night without the task has all counts 0."""


class FlakyTask(_Task):
    """A task whose judged units disagree over the last `History.flaky_nights` nights: within a night (phones,
    repeats) or from one night to another."""

    category: str
    """Task category (as the newest night that ran the task recorded it)."""
    new: bool
    """Flaky over the last nights, and not over the same number of nights ending with the previous one."""
    nights_mixed: int
    """Nights whose judged units both passed and failed."""
    nights_passed: int
    """Nights whose judged units all passed."""
    nights_failed: int
    """Nights whose judged units all failed."""
    phones: list[str]
    """Phones (or devices) whose own judged units disagree over those nights: the flaky pairs. Empty when each
    phone is steady and only the phones differ."""
    cells: list[NightCount]
    """The task on each of those nights, oldest first."""


class ErrorUnit(_Task):
    """An infrastructure error on the newest night: listed apart, never a regression."""

    repeat: int
    """Repeat index."""
    phone: str
    """The phone's stable name (`farm.phone_name`) or device name."""
    reason: str
    """The error, in words (first reason recorded)."""


class HealthChange(_M):
    """A phone whose place in the farm changed from one night to the next."""

    before_run: str
    """The earlier night."""
    after_run: str
    """The later night."""
    phone: str
    """The phone's stable name (`farm.phone_name`; History.phones says where it is)."""
    kind: Literal["left_out", "back", "appeared", "disappeared"]
    """used → left out, left out → used, absent → listed, listed → absent."""
    before: Literal["used", "left_out"] | None
    """Its state in the earlier manifest; null when absent."""
    after: Literal["used", "left_out"] | None
    """Its state in the later manifest; null when absent."""
    reason: str | None
    """Why the health gate left it out (the later night's reason, or the earlier one's for `back`)."""


class AppChange(AppVersionChange):
    """An app whose version on a phone changed from that phone's previous night (`app_version_changes`)."""

    before_run: str
    """The phone's previous night that recorded versions (the night before, unless the phone missed nights)."""
    after_run: str
    """The night it had the new version."""


class History(_M):
    """Night over night for one label: rates per night and the changes of the newest night."""

    label: str | None
    """The label looked for; null: every run with a manifest."""
    runs_dir: str
    """Where the runs were read."""
    include_holdout: bool
    """Whether holdout-pool units are counted (hidden by default, as in the reports)."""
    hidden_holdout: int
    """Holdout-pool units left out, over every night (0 when they are counted)."""
    nights: list[NightRow]
    """The nights, oldest first."""
    newest: str | None
    """Run id of the newest night."""
    previous: str | None
    """Run id of the night it is compared with; null with a single night."""
    paired: int
    """Pairs judged on both nights (the McNemar sample)."""
    regressions: list[PairChange]
    """All passed before, some failed now."""
    fixes: list[PairChange]
    """Some failed before, all passed now."""
    mcnemar_p: float | None
    """Exact two-sided McNemar p-value of regressions against fixes; null with a single night."""
    new: list[PairChange]
    """Pairs judged on the newest night that had no unit on the previous one."""
    gone: list[PairChange]
    """Pairs judged on the previous night that have no unit on the newest one."""
    flaky_nights: int
    """Nights over which flakiness is judged: the last K of these nights (`--flaky-nights`, at most the nights
    read)."""
    flaky: list[FlakyTask]
    """Flaky tasks (newly flaky first, then by task), at most `farm.report.history_grid.MAX_TASK_ROWS`."""
    flaky_more: int
    """Flaky tasks beyond those listed."""
    task_nights: list[str]
    """The nights (run ids, oldest first) that are the columns of the task × night grid."""
    tasks: list[TaskRow]
    """The task × night grid: flaky or regressed tasks first, then by task id; at most `MAX_TASK_ROWS` rows."""
    tasks_more: int
    """Tasks of those nights beyond the rows listed."""
    errors: list[ErrorUnit]
    """Infrastructure errors of the newest night."""
    health: list[HealthChange]
    """Phone health changes between consecutive nights, oldest first."""
    phones: list[PhoneRow] = Field(default_factory=list)
    """Every phone of these nights by its stable name, with its serial and adb server (the newest night's)."""
    app_changes: list[AppChange] = Field(default_factory=list)
    """App versions that changed on a phone against its previous night, oldest night first (then by phone and
    package); nights recorded before versions were say nothing."""
    warnings: list[str]
    """Damaged record lines skipped, run directories left out, and why."""
