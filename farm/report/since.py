"""What changed since the previous comparable run: the line under a run report's headline.

Comparable: another run in the same runs directory, created earlier, with the same label, the same lanes and the
same selection (split, task set, executor, spread, repeats, profile — what the lanes record in the manifest), and
at least one task in common. The newest such run is the previous one. The comparison itself is `farm history`'s
night over night (`build_history` over the two runs): pairs by lane, task, instance and phone model, so a run on
another phone of the same model still compares, and regressions and fixes are its discordant pairs.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from pydantic import JsonValue

from farm import manifest as manifests
from farm.errors import FarmError
from farm.manifest import Manifest
from farm.report.history_data import PairChange, build_history, created_time, read_night
from farm.report.model import SinceRow
from farm.results import duck

SELECTION_KEYS = ("split", "set", "executor", "spread", "repeats", "profile", "kind", "backends", "suite")
"""Lane settings that change what a run measures: two runs that differ in one are not comparable."""
MAX_LISTED = 20
"""Regressed and fixed units named in the report; the counts are always whole."""


def _selection(m: Manifest) -> list[tuple[str, list[tuple[str, JsonValue]]]]:
    return sorted((lane.lane, sorted((k, v) for k, v in lane.detail.items() if k in SELECTION_KEYS))
                  for lane in m.lanes)


def previous_comparable(run_dir: Path) -> tuple[Path, Manifest] | None:
    """The newest run under `run_dir`'s parent that is comparable with it and older (None when there is none)."""
    if not manifests.manifest_path(run_dir).is_file():
        return None
    this = manifests.load(run_dir)
    when = created_time(this)
    if when is None:
        return None
    tasks = {t.id for t in this.tasks}
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
        if _selection(other) != _selection(this) or (tasks and not tasks & {t.id for t in other.tasks}):
            continue
        if best is None or (created, other.run_id) > best[:2]:
            best = (created, other.run_id, other_dir, other)
    return None if best is None else (best[2], best[3])


def since_previous(run_dir: Path, *, include_holdout: bool = False) -> SinceRow | None:
    """This run against the previous comparable one, counted as `farm history` counts (None when there is none)."""
    found = previous_comparable(run_dir)
    if found is None:
        return None
    before, _ = read_night(*found)
    after, _ = read_night(run_dir, manifests.load(run_dir))
    h = build_history([before, after], label=after.manifest.label, runs_dir=str(run_dir.parent),
                      include_holdout=include_holdout)

    def name(change: PairChange) -> str:
        return f"{change.task_id} on {change.group}"

    return SinceRow(
        previous_run=found[1].run_id, previous_created_at=found[1].created_at, previous=h.nights[0].overall,
        paired=h.paired, regressions=len(h.regressions), fixes=len(h.fixes),
        regressed=[name(c) for c in h.regressions[:MAX_LISTED]], fixed=[name(c) for c in h.fixes[:MAX_LISTED]],
        mcnemar_p=h.mcnemar_p,
    )
