"""The typed outputs of `farm history`: one row per night, the pair changes, flaky tasks, errors, health."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from farm.report.model import PhoneRow, RateRow

RunStatus = Literal["running", "finished", "failed", "interrupted"]
Before = Literal["passed", "failed", "no verdict", "absent"]


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


class _Task(_M):
    lane: str
    """Lane of the records."""
    task_id: str
    """Task id."""
    instance: str
    """Task instance (the web lane's data seed); empty when a task has one."""


class _Pair(_Task):
    group: str
    """Phone model (android) or device name (other lanes)."""


class PairChange(_Pair):
    """A pair (task × phone model, or task × device off the android lane) that changed from the previous night."""

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
    """Phone labels (or devices) judged on the newest night, or on the previous one for `gone`."""
    reasons: list[str]
    """First reason of each unit that failed on the newest night."""


class FlakyTask(_Pair):
    """A pair whose judged units disagree on the newest night and did not on the previous one."""

    passed: int
    """Judged units that passed on the newest night."""
    failed: int
    """Judged units that failed on the newest night."""
    before: Before
    """The pair on the previous night: all passed, all failed, only skips/errors, or no unit at all."""


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
    flaky: list[FlakyTask]
    """Newly flaky pairs of the newest night."""
    errors: list[ErrorUnit]
    """Infrastructure errors of the newest night."""
    health: list[HealthChange]
    """Phone health changes between consecutive nights, oldest first."""
    phones: list[PhoneRow] = Field(default_factory=list)
    """Every phone of these nights by its stable name, with its serial and adb server (the newest night's)."""
    warnings: list[str]
    """Damaged record lines skipped, run directories left out, and why."""
