"""What a sweep runs: units (task × phone or any eligible phone × repeat), ordered longest first.

Order comes from recorded history: the median duration of the task on that phone model in
earlier runs (unknown tasks first, so that the longest possible units start early and a unit
discovered to be long late cannot stretch the night). With `shard` a unit can run on any phone
that can run its task, so ordering is what balances the night (longest-processing-time first);
with `every-phone` each phone's units are its own and ordering only moves long units earlier.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from farm.sweep.journal import PlannedUnit, unit_id

Spread = Literal["every-phone", "shard"]
UNKNOWN_FIRST = -1e18
"""Priority of a unit whose task has no history (leases before every known one)."""


@dataclass(frozen=True)
class PhonePlan:
    """What one healthy phone can run, after resolving every selected task on it."""

    serial: str
    model: str | None
    eligible: frozenset[str]
    """Task ids that resolved on this phone."""
    skipped: Mapping[str, str] = field(default_factory=dict)
    """Task id → why it cannot run here (missing app, not signed in, …)."""


@dataclass(frozen=True)
class PlannedSkip:
    """A unit that will not run, with its reason (a `skipped` record, never a failure)."""

    task_id: str
    device: str
    """The phone it was planned on; `any` for a shard unit no phone can run."""
    repeat: int
    reason: str


@dataclass(frozen=True)
class Estimates:
    """Median durations (ms) from earlier runs: per (task, phone model) and per task over all models."""

    by_model: Mapping[tuple[str, str], float] = field(default_factory=dict)
    by_task: Mapping[str, float] = field(default_factory=dict)

    def of(self, task_id: str, model: str | None) -> float | None:
        """The estimate for a task on a model (the task's overall median when the model has none)."""
        if model is not None and (task_id, model) in self.by_model:
            return self.by_model[(task_id, model)]
        return self.by_task.get(task_id)


def _priority(est: float | None) -> float:
    return UNKNOWN_FIRST if est is None else -est


def plan_units(
    task_ids: Sequence[str], phones: Sequence[PhonePlan], *, spread: Spread, repeats: int, estimates: Estimates
) -> tuple[list[PlannedUnit], list[PlannedSkip]]:
    """The units of a sweep and the skips, in task order (the journal orders by priority)."""
    units: list[PlannedUnit] = []
    skips: list[PlannedSkip] = []
    reps = range(1, repeats + 1)
    if spread == "every-phone":
        for phone in phones:
            for tid in task_ids:
                if tid not in phone.eligible:
                    why = phone.skipped.get(tid, "not eligible on this phone")
                    skips += [PlannedSkip(tid, phone.serial, r, why) for r in reps]
                    continue
                est = estimates.of(tid, phone.model)
                units += [PlannedUnit(unit_id(tid, phone.serial, r), tid, phone.serial, r, _priority(est), est)
                          for r in reps]
        return units, skips
    for tid in task_ids:
        able = [p for p in phones if tid in p.eligible]
        if not able:
            why = "; ".join(sorted({p.skipped.get(tid, "not eligible") for p in phones})) or "no healthy phone"
            skips += [PlannedSkip(tid, "any", r, f"no eligible phone: {why}") for r in reps]
            continue
        models = {p.model for p in able}
        est = estimates.of(tid, models.pop()) if len(models) == 1 else estimates.of(tid, None)
        units += [PlannedUnit(unit_id(tid, "", r), tid, "", r, _priority(est), est) for r in reps]
    return units, skips


def history_estimates(run_dirs: Sequence[Path]) -> Estimates:
    """Median `total_ms` of attempts that ran (not skipped, not infrastructure errors) in earlier runs."""
    if not run_dirs:
        return Estimates()
    from farm.results import duck

    con = duck.connect(run_dirs)
    try:
        rows = con.execute(
            "SELECT r.task_id, d.model, median(r.metrics.total_ms), grouping(d.model) FROM records r"
            " LEFT JOIN (SELECT run, serial, any_value(model) AS model FROM devices GROUP BY 1, 2) d"
            " ON r.run = d.run AND r.device = d.serial"
            " WHERE r.outcome NOT IN ('skipped', 'error') AND r.metrics.total_ms IS NOT NULL"
            " GROUP BY GROUPING SETS ((r.task_id, d.model), (r.task_id))"
            " ORDER BY 1"
        ).fetchall()
    finally:
        con.close()
    by_model: dict[tuple[str, str], float] = {}
    by_task: dict[str, float] = {}
    for task_id, model, ms, over_models in rows:
        if ms is None:
            continue
        if over_models:
            by_task[task_id] = float(ms)
        elif model is not None:
            by_model[(task_id, model)] = float(ms)
    return Estimates(by_model, by_task)
