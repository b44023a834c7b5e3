"""What changed since the previous comparable run: the line under a run report's headline.

Comparable (like with like): another run in the same runs directory, created earlier, of equal setup
(`farm.report.run_setup`: the same label, the same lanes with the same settings — executor and its policy and
model, split, task set and selection, suite version, spread, repeats, profile — and the same holdout policy),
with at least one task in common at the same version (content hash). The newest such run is the previous one.
Holdout policy, from the manifests: `none planned` (no holdout unit in the android lane's `planned_units`), else
`counted` or `hidden`; this run's is this report's (`include_holdout`), the previous run's is its own report's
(`holdout_counted`), so a report that hides holdout is never compared with a previous number that counted it,
nor a run that planned holdout units with one that planned none.

The comparison itself is `farm history`'s night over night (`build_history` over the two runs): pairs by lane,
task, instance and phone, and regressions and fixes are its discordant pairs. A task whose file changed between
the two runs is another version of the task: its units are left out of the pairs (and counted in the line).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from farm import manifest as manifests
from farm.errors import FarmError
from farm.manifest import Manifest
from farm.report.headline import holdout_counted
from farm.report.history_data import Night, PairChange, build_history, created_time, read_night
from farm.report.model import SinceRow
from farm.report.paired import RunSetup
from farm.report.run_setup import changed_tasks, comparable, holdout_text, lanes_text, run_setup
from farm.results import duck

MAX_LISTED = 20
"""Regressed and fixed units named in the report; the counts are always whole."""


def _versions(m: Manifest) -> set[tuple[str, str]]:
    return {(t.id, t.sha256) for t in m.tasks}


def previous_comparable(run_dir: Path, *, include_holdout: bool | None = None) -> tuple[Path, Manifest] | None:
    """The newest run under `run_dir`'s parent that is comparable with it and older (None when there is none).
    `include_holdout`: how this run's report counts holdout (default: as the run planned it)."""
    if not manifests.manifest_path(run_dir).is_file():
        return None
    this = manifests.load(run_dir)
    when = created_time(this)
    if when is None:
        return None
    counted = holdout_counted([run_dir]) if include_holdout is None else include_holdout
    mine = run_setup(run_dir, this, include_holdout=counted)
    tasks = _versions(this)
    best: tuple[dt.datetime, str, Path, Manifest] | None = None
    for other_dir in duck.run_dirs_under(run_dir.parent):
        if other_dir.resolve() == run_dir.resolve() or not manifests.manifest_path(other_dir).is_file():
            continue
        try:
            other = manifests.load(other_dir)
        except FarmError:
            continue  # a damaged neighbour is that run's problem, not this report's
        created = created_time(other)
        if created is None or created >= when or other.label != this.label:
            continue
        if tasks and not tasks & _versions(other):
            continue
        # The previous run under its own report's holdout policy: the number the line starts from is its own.
        theirs = run_setup(other_dir, other, include_holdout=holdout_counted([other_dir]))
        if not comparable(mine, theirs):
            continue
        if best is None or (created, other.run_id) > best[:2]:
            best = (created, other.run_id, other_dir, other)
    return None if best is None else (best[2], best[3])


def compared_text(setup: RunSetup) -> str:
    """What both runs share, which made them comparable: `same label nightly; lane android: executor instrument,
    split tune; holdout counted`."""
    label = f"same label {setup.label}" if setup.label is not None else "neither labelled"
    return f"{label}; {lanes_text(setup)}; {holdout_text(setup)}"


def _same_versions(night: Night, changed: set[str]) -> Night:
    return Night(night.manifest, [r for r in night.records if r.task_id not in changed], night.written)


def since_previous(run_dir: Path, *, include_holdout: bool | None = None) -> SinceRow | None:
    """This run against the previous comparable one, counted as `farm history` counts (None when there is none).
    `include_holdout`: how this run's report counts holdout (default: as the run planned it)."""
    counted = holdout_counted([run_dir]) if include_holdout is None else include_holdout
    found = previous_comparable(run_dir, include_holdout=counted)
    if found is None:
        return None
    this = manifests.load(run_dir)
    changed = changed_tasks(found[1], this)
    before, _ = read_night(*found)
    after, _ = read_night(run_dir, this)
    h = build_history([_same_versions(before, changed), _same_versions(after, changed)], label=this.label,
                      runs_dir=str(run_dir.parent), include_holdout=counted)

    def name(change: PairChange) -> str:
        return f"{change.task_id} on {change.group}"

    setup = run_setup(run_dir, this, include_holdout=counted)
    return SinceRow(
        previous_run=found[1].run_id, previous_created_at=found[1].created_at, previous=h.nights[0].overall,
        paired=h.paired, regressions=len(h.regressions), fixes=len(h.fixes),
        regressed=[name(c) for c in h.regressions[:MAX_LISTED]], fixed=[name(c) for c in h.fixes[:MAX_LISTED]],
        mcnemar_p=h.mcnemar_p, compared=compared_text(setup), tasks_changed=len(changed),
    )
