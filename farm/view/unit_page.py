"""Everything a unit's page shows beside its trajectory: the task as the run ran it, each check beside the task's
own words for it, the phone and its app versions, the evidence the checks looked for marked in the texts, the
unit's other tries (tabs) and the same task on the other phones and repeats (side-by-side links)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from farm.errors import FarmError
from farm.results.record import CheckResult
from farm.view.highlight import Highlighter, needles
from farm.view.phones import read_manifest
from farm.view.trajectory import Trajectory, load_trajectory
from farm.view.unit_index import cached_index
from farm.view.unit_relations import Related, same_task, tries
from farm.view.unit_task import CheckSpec, PhoneFacts, TaskView, phone_facts, task_view
from farm.view.units import Unit


@dataclass(frozen=True)
class CheckRow:
    """One check: what the task asked (when its file is known) and what the attempt's verdict said."""

    type: str
    spec: str | None
    """The task's settings for it; None when the task file is not known, or the record's check has no partner."""
    result: CheckResult | None
    """The verdict; None: the task has the check and the record none (the attempt ended before checks ran)."""


@dataclass
class UnitView:
    """The unit page's content."""

    t: Trajectory
    task: TaskView
    phone: PhoneFacts | None
    checks: list[CheckRow]
    marks: Highlighter
    step_hits: list[int]
    """Marks in each step's screen text, in step order."""
    tries: list[Related] = field(default_factory=list)
    same: list[Related] = field(default_factory=list)


def check_rows(specs: list[CheckSpec], results: list[CheckResult]) -> list[CheckRow]:
    """The task's checks beside the record's, paired in order by type (checks are evaluated in the task's order);
    a check either side has alone gets its own row."""
    rows: list[CheckRow] = []
    left = list(results)
    for spec in specs:
        at = next((i for i, r in enumerate(left) if r.type == spec.type), None)
        rows.append(CheckRow(spec.type, spec.spec, left.pop(at) if at is not None else None))
    rows += [CheckRow(r.type, None, r) for r in left]
    return rows


def unit_view(runs_dir: Path, run_dir: Path, run: str, unit: Unit, tasks_dir: Path | None) -> UnitView:
    """The page of `unit` of run `run`."""
    traj = load_trajectory(run_dir, run, unit)
    manifest = read_manifest(run_dir)
    phone = phone_facts(manifest, unit.record.device)
    task = task_view(runs_dir, manifest, unit.record.task_id, tasks_dir, traj.evidence, phone)
    marks = Highlighter(needles(task.task, unit.record.answer))
    view = UnitView(t=traj, task=task, phone=phone, checks=check_rows(task.checks, unit.record.checks), marks=marks,
                    step_hits=[marks.hits(s.observation) for s in traj.steps])
    try:
        index = cached_index(runs_dir, run_dir, tasks_dir)
    except FarmError:
        return view  # no tabs nor links: the page itself says what it can
    view.tries, view.same = tries(index, unit.key), same_task(index, unit.key)
    return view
