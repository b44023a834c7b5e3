"""A unit's relatives in its run's index (`farm.view.unit_index`): its other tries (the unit page's tabs), the
same task on the other phones and repeats (side-by-side links), and per-run digests the nights and side-by-side
pages join across runs (each task's representative unit, each phone's counts). All read from DuckDB: no page
reads every record in Python.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from farm.view.unit_index import UnitIndex

MAX_RELATED = 60
"""Units of the same task listed on a unit page (a six-phone sweep with repeats has a few dozen)."""

TaskKey = tuple[str, str, str]
"""(lane, task id, instance)."""


class Related(BaseModel):
    """Another unit of the same task, or another try of the same unit."""

    model_config = ConfigDict(extra="forbid")

    key: str
    phone: str
    repeat: int
    attempt: int
    verdict: str
    latest: bool


_COLUMNS = "key, phone, repeat, attempt, verdict, latest"


def _related(rows: list[tuple[object, ...]]) -> list[Related]:
    return [Related(**dict(zip(("key", "phone", "repeat", "attempt", "verdict", "latest"), r, strict=True)))
            for r in rows]


def tries(index: UnitIndex, key: str) -> list[Related]:
    """Every try of the unit `key` is one of (itself included), first try first; empty when no unit has the key."""
    return _related(index.select(
        f"SELECT {_COLUMNS} FROM units WHERE (lane, device, task_id, instance, repeat) IN"
        " (SELECT (lane, device, task_id, instance, repeat) FROM units WHERE key = ?) ORDER BY attempt, ord", [key]))


def same_task(index: UnitIndex, key: str, limit: int = MAX_RELATED) -> list[Related]:
    """The latest try of every other unit of the task `key` ran (other phones, other repeats), by phone and repeat."""
    return _related(index.select(
        f"SELECT {_COLUMNS} FROM units u WHERE latest AND (lane, task_id, instance) IN"
        " (SELECT (lane, task_id, instance) FROM units WHERE key = ?) AND (device, repeat) NOT IN"
        " (SELECT (device, repeat) FROM units WHERE key = ?) ORDER BY phone, repeat LIMIT ?", [key, key, limit]))


def representatives(index: UnitIndex) -> dict[TaskKey, tuple[str, str]]:
    """Each task's unit a link to the task opens — its first failure (then error, pass, skip; `ord` order) among
    latest tries — with that unit's verdict."""
    rows = index.select("SELECT lane, task_id, instance, arg_min(key, ord), arg_min(verdict, ord) FROM units"
                        " WHERE latest GROUP BY lane, task_id, instance", [])
    return {(str(r[0]), str(r[1]), str(r[2])): (str(r[3]), str(r[4])) for r in rows}


UnitId = tuple[str, str, str, str, int]
"""(lane, task id, instance, phone, repeat): a unit as two runs share it."""


def latest_units(index: UnitIndex) -> dict[UnitId, tuple[str, str]]:
    """Every unit's latest try: its key and verdict."""
    rows = index.select("SELECT lane, task_id, instance, phone, repeat, key, verdict FROM units WHERE latest", [])
    return {(str(r[0]), str(r[1]), str(r[2]), str(r[3]), int(r[4])): (str(r[5]), str(r[6])) for r in rows}


class PhoneCount(BaseModel):
    """One phone's latest tries on one run."""

    model_config = ConfigDict(extra="forbid")

    phone: str
    device: str
    passed: int
    judged: int
    """Neither skipped nor an infrastructure error."""
    errors: int
    skipped: int


def phone_counts(index: UnitIndex) -> list[PhoneCount]:
    """Each device's counts over the run's latest tries, by phone name."""
    rows = index.select(
        "SELECT phone, device, count(*) FILTER (WHERE verdict = 'pass'),"
        " count(*) FILTER (WHERE verdict IN ('pass', 'fail')), count(*) FILTER (WHERE verdict = 'error'),"
        " count(*) FILTER (WHERE verdict = 'skipped') FROM units WHERE latest GROUP BY phone, device ORDER BY 1", [])
    return [PhoneCount(phone=str(r[0]), device=str(r[1]), passed=int(r[2]), judged=int(r[3]), errors=int(r[4]),
                       skipped=int(r[5])) for r in rows]
