"""`farm history`'s per-task computations: pairs compared night over night, the task × night grid, flaky tasks.

Pairs. The newest night is compared with the night before it, pair by pair: a pair is (lane, task, instance, group)
where the group is the phone for android records (its stable name, `farm.phone_name`: serial → `PhoneId.name`) and
the device itself (web backend, desktop machine) for the other lanes. Within a pair, every judged unit (its repeats)
counts; skipped units and infrastructure errors are never judged. A task that passed on 5 of 6 phones and then on
1 is thus 4 regressions, one per phone that went from pass to fail.

- regression: every judged unit passed on the previous night, and at least one failed on the newest;
- fix: at least one judged unit failed on the previous night, and every one passed on the newest;
- new / gone: judged on one night, with no unit at all (not even a skip) on the other.

A pair's outcome on a night is thus "all passed" or not, and regressions and fixes are exactly the discordant pairs
of the exact McNemar test over the pairs judged on both nights.

A task is (lane, task, instance); its units on a night are every phone's (or device's) latest attempts, repeats
included. Units are judged as the reports judge them (verdict before human re-judgement); skipped units and
infrastructure errors are never judged, so they never make a task flaky.

Flaky: over the last K nights (`--flaky-nights`), the task's judged units both passed and failed — within one
night (3 of 6 phones, repeats that disagree) or from one night to another. That is every way a pair (task ×
phone) can be flaky, and more: phones that disagree steadily make the task flaky while each of its pairs is
steady. A task is newly flaky when it is flaky over the last K nights and was not over the K nights ending with
the previous one; a task flaky for longer stays listed, not new.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TypedDict

from farm.report.headline import initial_passed, latest_attempts
from farm.report.history_model import FlakyTask, NightCount, PairChange, TaskCell, TaskRow, UnitLink
from farm.results.record import Record

MAX_TASK_ROWS = 500
"""Tasks listed in the grid, and flaky tasks listed; beyond, only counted."""
MAX_CELL_UNITS = 8
"""Units that did not pass listed (and linked) per grid cell; beyond, only counted."""
GRID_NIGHTS = 14
"""Nights shown as grid columns at least (more when flakiness is judged over more)."""
DEFAULT_FLAKY_NIGHTS = 5
"""K: flakiness is judged over the last K nights by default."""

TaskKey = tuple[str, str, str]
"""(lane, task id, instance)."""

# Control characters never belong in a path a lane wrote; such a path is shown unlinked, never followed.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass
class _PairTally:
    passed: int = 0
    failed: int = 0
    reasons: list[str] = field(default_factory=list)


PairKey = tuple[str, str, str, str]
"""(lane, task id, instance, phone or device)."""


def pair_tallies(records: Iterable[Record], phone: Callable[[Record], str]) -> dict[PairKey, _PairTally]:
    """Judged units per pair; a pair with only skips and errors is present with nothing judged."""
    out: dict[PairKey, _PairTally] = {}
    for r in latest_attempts(records):
        tally = out.setdefault((r.lane, r.task_id, r.instance, phone(r)), _PairTally())
        if r.outcome in ("skipped", "error"):
            continue
        if initial_passed(r):
            tally.passed += 1
        else:
            tally.failed += 1
            tally.reasons.append(r.reasons[0] if r.reasons else r.outcome)
    return out


def _change(kind: str, key: PairKey, before: _PairTally | None, after: _PairTally | None) -> PairChange:
    b, a = before or _PairTally(), after or _PairTally()
    return PairChange.model_validate({
        "kind": kind, "lane": key[0], "task_id": key[1], "instance": key[2], "group": key[3],
        "before_passed": b.passed, "before_failed": b.failed, "after_passed": a.passed, "after_failed": a.failed,
        "phones": [key[3]], "reasons": a.reasons,  # a change is only ever made of judged sides
    })


def compare_pairs(before: dict[PairKey, _PairTally], after: dict[PairKey, _PairTally]) -> tuple[int, list[PairChange]]:
    """Pairs judged on both nights, and the changed pairs (in key order)."""
    paired, changes = 0, list[PairChange]()
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key), after.get(key)
        b_judged, a_judged = bool(b and b.passed + b.failed), bool(a and a.passed + a.failed)
        if a is not None and a_judged and b is None:
            changes.append(_change("new", key, b, a))
        elif b is not None and b_judged and a is None:
            changes.append(_change("gone", key, b, a))
        elif a is not None and b is not None and a_judged and b_judged:
            paired += 1
            if not b.failed and a.failed:
                changes.append(_change("regression", key, b, a))
            elif b.failed and not a.failed:
                changes.append(_change("fix", key, b, a))
    return paired, changes


@dataclass(frozen=True)
class NightUnits:
    """What the grid reads of one night."""

    run_id: str
    run_path: str | None
    """The run directory relative to the runs directory (None: no links)."""
    records: list[Record]
    """The night's records (every attempt: the latest of each unit counts)."""


@dataclass
class _Tally:
    category: str = ""
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    not_passed: list[UnitLink] = field(default_factory=list)
    verdicts: dict[str, set[bool]] = field(default_factory=dict)
    """Phone → the verdicts its judged units had."""
    first: tuple[int, str] | None = None
    """(rank, run record) of the unit a click on the cell opens: failed 0, error 1, passed 2; the first of the
    lowest rank."""

    def offer(self, rank: int, link: str | None) -> None:
        if link is not None and (self.first is None or rank < self.first[0]):
            self.first = (rank, link)

    def count(self, run_id: str) -> NightCount:
        return NightCount(run_id=run_id, passed=self.passed, judged=self.passed + self.failed, errors=self.errors,
                          skipped=self.skipped)


def evidence_link(run_path: str | None, evidence: str | None) -> str | None:
    """A unit's run record relative to the runs directory; None when there is none or it is not to be followed
    (absolute, going up, or with control characters: a record says where its evidence is, it never escapes its
    run directory)."""
    if run_path is None or not evidence or _CONTROL.search(evidence):
        return None
    parts = PurePosixPath(evidence.replace("\\", "/"))
    if parts.is_absolute() or ".." in parts.parts:
        return None
    return f"{run_path}/{evidence}"


def tally_night(night: NightUnits, phone: Callable[[Record], str]) -> dict[TaskKey, _Tally]:
    """Each task's units of one night."""
    out: dict[TaskKey, _Tally] = {}
    for r in sorted(latest_attempts(night.records), key=lambda r: (phone(r), r.repeat, r.unit_key())):
        t = out.setdefault((r.lane, r.task_id, r.instance), _Tally())
        t.category = r.category
        if r.outcome == "skipped":
            t.skipped += 1
            continue
        if r.outcome == "error":
            t.errors += 1
        elif initial_passed(r):
            t.passed += 1
            t.verdicts.setdefault(phone(r), set()).add(True)
            t.offer(2, evidence_link(night.run_path, r.evidence))
            continue
        else:
            t.failed += 1
            t.verdicts.setdefault(phone(r), set()).add(False)
        link = evidence_link(night.run_path, r.evidence)
        t.offer(1 if r.outcome == "error" else 0, link)
        t.not_passed.append(UnitLink(
            phone=phone(r), repeat=r.repeat, status="error" if r.outcome == "error" else "failed",
            reason=r.reasons[0] if r.reasons else r.outcome, evidence=link))
    return out


def _flaky(window: Sequence[dict[TaskKey, _Tally]], key: TaskKey) -> bool:
    tallies = [n[key] for n in window if key in n]
    return any(t.passed for t in tallies) and any(t.failed for t in tallies)


def _categories(nights: Sequence[dict[TaskKey, _Tally]]) -> dict[TaskKey, str]:
    # The newest night that ran a task names its category (a task may move between directories).
    return {key: t.category for night in nights for key, t in night.items()}


def flaky_tasks(run_ids: Sequence[str], nights: Sequence[dict[TaskKey, _Tally]], k: int) -> list[FlakyTask]:
    """Tasks flaky over the last `k` nights (rules in the module docstring): newly flaky first, then by task."""
    window, before = nights[-k:], nights[-k - 1:-1]
    ids, categories = run_ids[-k:], _categories(nights)
    out: list[FlakyTask] = []
    for key in sorted({key for n in window for key in n}):
        if not _flaky(window, key):
            continue
        tallies = [n.get(key, _Tally()) for n in window]
        verdicts: dict[str, set[bool]] = {}
        for t in tallies:
            for phone, seen in t.verdicts.items():
                verdicts.setdefault(phone, set()).update(seen)
        out.append(FlakyTask(
            lane=key[0], task_id=key[1], instance=key[2], category=categories[key], new=not _flaky(before, key),
            nights_mixed=sum(bool(t.passed and t.failed) for t in tallies),
            nights_passed=sum(bool(t.passed and not t.failed) for t in tallies),
            nights_failed=sum(bool(t.failed and not t.passed) for t in tallies),
            phones=sorted(p for p, seen in verdicts.items() if len(seen) > 1),
            cells=[t.count(run_id) for run_id, t in zip(ids, tallies, strict=True)],
        ))
    out.sort(key=lambda f: (not f.new, f.task_id, f.instance, f.lane))
    return out


def task_rows(
    run_ids: Sequence[str], nights: Sequence[dict[TaskKey, _Tally]], *, flaky: set[TaskKey], regressed: set[TaskKey],
    limit: int = MAX_TASK_ROWS,
) -> tuple[list[TaskRow], int]:
    """One row per task with a unit on any of `nights` (the grid's columns), flaky or regressed tasks first, then
    by task id: the first `limit` rows, and how many more there are."""
    categories = _categories(nights)
    keys = sorted({key for n in nights for key in n},
                  key=lambda k: (k not in flaky and k not in regressed, k[1], k[2], k[0]))
    rows: list[TaskRow] = []
    for key in keys[:limit]:
        cells = []
        for run_id, night in zip(run_ids, nights, strict=True):
            t = night.get(key, _Tally())
            cells.append(TaskCell(**t.count(run_id).model_dump(), units=t.not_passed[:MAX_CELL_UNITS],
                                  units_more=max(0, len(t.not_passed) - MAX_CELL_UNITS),
                                  unit=t.first[1] if t.first is not None else None))
        rows.append(TaskRow(lane=key[0], task_id=key[1], instance=key[2], category=categories[key],
                            flaky=key in flaky, regressed=key in regressed, cells=cells))
    return rows, max(0, len(keys) - limit)


class GridFields(TypedDict):
    """`History`'s fields made here (documented there)."""

    flaky_nights: int
    flaky: list[FlakyTask]
    flaky_more: int
    task_nights: list[str]
    tasks: list[TaskRow]
    tasks_more: int


def grid(nights: Sequence[NightUnits], phone: Callable[[Record], str], *, k: int,
         regressions: Sequence[PairChange]) -> GridFields:
    """Flaky tasks over the last `k` nights, and the grid over the last max(GRID_NIGHTS, k); only the nights
    either reads are tallied."""
    shown = max(GRID_NIGHTS, k)
    read = nights[-max(shown, k + 1):]  # the night before the window says whether a flaky task is new
    ids = [n.run_id for n in read]
    tallies = [tally_night(n, phone) for n in read]
    flaky = flaky_tasks(ids, tallies, k) if read else []
    rows, more = task_rows(ids[-shown:], tallies[-shown:], flaky={(f.lane, f.task_id, f.instance) for f in flaky},
                           regressed={(c.lane, c.task_id, c.instance) for c in regressions})
    return {"flaky_nights": k, "flaky": flaky[:MAX_TASK_ROWS], "flaky_more": max(0, len(flaky) - MAX_TASK_ROWS),
            "task_nights": ids[-shown:], "tasks": rows, "tasks_more": more}
