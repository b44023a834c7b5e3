"""A paired comparison of two runs as the reports show it: overall, per category, and the units that changed."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


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
    outcome_a: str
    """Outcome in A."""
    outcome_b: str
    """Outcome in B."""
    reason: str
    """The first reason of the side that did not pass, shortened."""
    evidence_run: str
    """The run of the side that did not pass."""
    evidence: str = ""
    """That side's run record, relative to its run directory (empty when none was kept)."""


class Comparison(_M):
    """Paired comparison of two runs on their common (task, phone) units."""

    run_a: str
    """Baseline run."""
    run_b: str
    """Compared run."""
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
