"""A paired comparison of two runs as the reports show it: each run's own headline and what it measured, the
difference overall and per category, and the units that changed."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from farm.report.rate import RateRow

Verdict = Literal["passed", "failed", "error"]
"""A judged unit's final verdict (after human re-judgement); an infrastructure error has no agent verdict."""
HoldoutPolicy = Literal["counted", "hidden", "none planned"]
"""How a report counts a run's holdout pool: in the numbers, left out of them, or the run planned none."""


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CategoryDiff(_M):
    """One category of a paired comparison: A and B on the units both ran."""

    key: str
    """Category (B's, or A's when B has none)."""
    units: int
    """Common units that ran in both."""
    passed_a: int
    """Passed in A."""
    passed_b: int
    """Passed in B."""
    rate_a: float | None
    """Rate of A on these units."""
    rate_b: float | None
    """Rate of B on these units."""
    diff: float | None
    """rate(B) − rate(A)."""
    diff_low: float | None
    """Paired bootstrap 95 % lower bound."""
    diff_high: float | None
    """Paired bootstrap 95 % upper bound."""
    mcnemar_p: float
    """Exact McNemar p-value."""


class ChangeRow(_M):
    """A unit that passed in one run of a comparison and not in the other."""

    task_id: str
    """Task id."""
    instance: str
    """Task instance."""
    repeat: int
    """Repeat index."""
    device: str
    """Device label."""
    category: str
    """Category."""
    verdict_a: Verdict
    """Final verdict in A (what the comparison pairs on: an impossible task that fails as expected passed)."""
    verdict_b: Verdict
    """Final verdict in B."""
    outcome_a: str
    """Outcome in A (what the agent reported; read it against the task's expected outcome)."""
    outcome_b: str
    """Outcome in B."""
    reason: str
    """The first reason of the side that did not pass, shortened."""
    evidence_run: str
    """The run of the side that did not pass."""
    evidence: str = ""
    """That side's run record, relative to its run directory (empty when none was kept)."""


class Setting(_M):
    """One setting of a lane that changes what its numbers mean (executor, split, task set…)."""

    name: str
    """Setting name, as the lane records it in the manifest (`executor`, `split`, `suiteVersion`…)."""
    value: str
    """Its value as text (lists and numbers as JSON)."""


class LaneSetup(_M):
    """One lane of a run and the settings it recorded that change what its numbers mean."""

    lane: str
    """Lane name (`android`, `web`, `webvoyager`, `desktop`)."""
    settings: list[Setting] = Field(default_factory=list)
    """Its settings, in a fixed order (`farm.report.run_setup.SETTINGS`); unset ones are left out."""


class RunSetup(_M):
    """What a run measured, from its manifest: two runs are like with like when their setups are equal."""

    run: str
    """Run id."""
    label: str | None = None
    """The run's label (`--label nightly`); null when it has none."""
    lanes: list[LaneSetup] = Field(default_factory=list)
    """Its lanes (by name) with their settings; empty when the manifest records none."""
    holdout: HoldoutPolicy
    """How the report counts its holdout pool (`farm.report.run_setup` says how this is decided)."""
    hidden_holdout: int = 0
    """Holdout units of this run left out of the report's numbers (0 when counted or none planned)."""


class SettingDiff(_M):
    """A setting on which the two runs of a comparison differ."""

    lane: str
    """The lane the setting belongs to; empty for run-wide ones (label, lanes, holdout)."""
    name: str
    """Setting name (`executor`, `split`…, or `label`, `lanes`, `holdout`)."""
    a: str
    """Its value in A (`unset` when A does not record it)."""
    b: str
    """Its value in B (`unset` when B does not record it)."""


class Comparison(_M):
    """Paired comparison of two runs on their common (task, phone) units."""

    run_a: str
    """Baseline run."""
    run_b: str
    """Compared run."""
    side_a: RateRow
    """A's own headline (key: its run id), counted exactly as A's single-run report counts it: every unit A
    planned, not only the common ones. The comparison has no pooled headline."""
    side_b: RateRow
    """B's own headline (key: its run id), as B's single-run report counts it."""
    setup_a: RunSetup
    """What A measured (lanes, executor, split, task set, holdout policy)."""
    setup_b: RunSetup
    """What B measured."""
    differences: list[SettingDiff] = Field(default_factory=list)
    """Settings on which A and B differ: an explicit comparison of unlike runs is an A/B of those settings."""
    units: int
    """Common units that ran in both."""
    both: int
    """Passed in both."""
    only_a: int
    """Passed only in A."""
    only_b: int
    """Passed only in B."""
    neither: int
    """Passed in neither."""
    rate_a: float | None
    """Rate of A on the common units."""
    rate_b: float | None
    """Rate of B on the common units."""
    mcnemar_p: float
    """Exact McNemar p-value."""
    diff: float | None
    """rate(B) − rate(A)."""
    diff_low: float | None
    """Paired bootstrap 95 % lower bound."""
    diff_high: float | None
    """Paired bootstrap 95 % upper bound."""
    resamples: int
    """Bootstrap resamples."""
    seed: int
    """Bootstrap seed."""
    by_category: list[CategoryDiff] = Field(default_factory=list)
    """Per category, with paired intervals and McNemar p."""
    regressed: list[ChangeRow] = Field(default_factory=list)
    """Units passed in A and not in B (first rows), by category and task."""
    regressed_total: int = 0
    """All such units."""
    fixed: list[ChangeRow] = Field(default_factory=list)
    """Units passed in B and not in A (first rows), by category and task."""
    fixed_total: int = 0
    """All such units."""
