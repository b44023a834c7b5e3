"""The pass-rate row every report table and headline is made of (its own module: the comparison models of
`farm.report.paired` hold one per side, and `farm.report.model` holds those models)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class RateRow(BaseModel):
    """Pass rate of one group (a category, a pool, a phone, an expected outcome)."""

    model_config = ConfigDict(extra="forbid")

    key: str
    """Group value (category name, device label…)."""
    planned: int
    """Units selected (skips included)."""
    skipped: int
    """Units not attempted (planned − attempted)."""
    attempted: int
    """Attempts that ran (skips excluded, infrastructure errors included)."""
    passed: int
    """Attempts with a final verdict of pass."""
    errors: int
    """Infrastructure errors among the attempts."""
    unfinished: int = 0
    """Planned units with no record yet (a run stopped before they ran); part of planned, not of attempted."""
    rate: float | None
    """passed / attempted; null when nothing ran."""
    low: float | None
    """Wilson 95 % lower bound."""
    high: float | None
    """Wilson 95 % upper bound."""
