"""Batch statistics: counts, rates (null without samples, never 0) and nearest-rank percentiles, computed with
the primitives every lane shares (farm.results.stats)."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from farm.desktop.batch import Batch, Slot
from farm.desktop.result import RunResult
from farm.results.stats import nearest_rank, ratio

Number = int | float


class Stats(BaseModel):
    """Summary of a set of slots (the whole batch or one task). Key names are the report's JSON keys."""

    model_config = ConfigDict(extra="forbid")

    planned: int
    """Slots in the plan."""
    recorded: int
    """Slots with a recorded result."""
    pending: int
    """Slots not yet recorded."""
    complete: bool
    """True when no slot is pending."""
    success: int
    """Recorded as success."""
    failed: int
    """Recorded as failed (timeouts included)."""
    blocked: int
    """Recorded as blocked."""
    cancelled: int
    """Recorded as cancelled."""
    finalSuccessRate: float | None
    """success / recorded, corrected successes included; null with nothing recorded."""
    autonomousSuccessRate: float | None
    """Successes without human intervention and without wrong action / recorded; null with nothing recorded."""
    successfulFractionOfPlan: float | None
    """success / planned, so pending slots cannot inflate progress."""
    durationMedianMs: Number | None
    """P50 (nearest rank) of all recorded durations, ms; null with nothing recorded."""
    durationP95Ms: Number | None
    """P95 (nearest rank) of all recorded durations, ms; null with nothing recorded."""
    successDurationMedianMs: Number | None
    """P50 (nearest rank) of successful durations, ms; null without a success."""
    successDurationP95Ms: Number | None
    """P95 (nearest rank) of successful durations, ms; null without a success."""
    humanInterventions: int
    """Total human interventions over recorded runs."""
    plannerHandoffs: int
    """Total Jev → main model handoffs over recorded runs."""
    actions: int
    """Total dispatched actions over recorded runs."""
    wrongActions: int
    """Total wrong actions over recorded runs."""
    wrongActionRatio: float | None
    """wrongActions / actions; null when no action was recorded."""
    runsWithWrongActions: int
    """Recorded runs with at least one wrong action."""


def summarise(slots: Sequence[Slot]) -> Stats:
    """Statistics of these slots."""
    results: list[RunResult] = [slot.result for slot in slots if slot.result is not None]
    successes = [r for r in results if r.status == "success"]
    durations = [r.duration_ms() for r in results]
    success_durations = [r.duration_ms() for r in successes]
    actions = sum(r.actions for r in results)
    wrong = sum(r.wrongActions for r in results)
    return Stats(
        planned=len(slots),
        recorded=len(results),
        pending=len(slots) - len(results),
        complete=len(results) == len(slots),
        success=len(successes),
        failed=sum(1 for r in results if r.status == "failed"),
        blocked=sum(1 for r in results if r.status == "blocked"),
        cancelled=sum(1 for r in results if r.status == "cancelled"),
        finalSuccessRate=ratio(len(successes), len(results)),
        autonomousSuccessRate=ratio(sum(1 for r in results if r.autonomous_success()), len(results)),
        successfulFractionOfPlan=ratio(len(successes), len(slots)),
        durationMedianMs=nearest_rank(durations, 50),
        durationP95Ms=nearest_rank(durations, 95),
        successDurationMedianMs=nearest_rank(success_durations, 50),
        successDurationP95Ms=nearest_rank(success_durations, 95),
        humanInterventions=sum(r.humanInterventions for r in results),
        plannerHandoffs=sum(r.plannerHandoffs for r in results),
        actions=actions,
        wrongActions=wrong,
        wrongActionRatio=ratio(wrong, actions),
        runsWithWrongActions=sum(1 for r in results if r.wrongActions > 0),
    )


def summarise_batch(batch: Batch) -> tuple[Stats, dict[str, Stats]]:
    """Overall statistics and statistics per task (suite order)."""
    per_task: dict[str, list[Slot]] = {}
    for slot in batch.slots:
        per_task.setdefault(slot.task, []).append(slot)
    return summarise(batch.slots), {task: summarise(slots) for task, slots in per_task.items()}
