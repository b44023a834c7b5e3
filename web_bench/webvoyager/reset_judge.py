"""`reset-judge`: clear every verdict of a run so it can be judged again under another rule.

What goes: the `judge` field of every view (the revision chain is rebuilt from each task's latest agent attempt,
with no judge content, and `results.ndjson` rewritten from it), every `judge-*.ndjson` in every attempt
directory, `judged-*.json`, revision chains kept aside earlier (`result-revisions.old-*`, which hold old
verdicts), the judge-derived `summary.json`, `report.md` and `task-metrics.*`, and `quota_rejudge` in
`recovery.json`. What stays: task.json, session.json, trace.ndjson, screenshots, result.json, HAR files and
every `attempts/N/` directory. `plan` only reads; `execute` is idempotent.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from farm.errors import FarmError
from web_bench.webvoyager import revisions
from web_bench.webvoyager.model import TaskView
from web_bench.webvoyager.run_tree import RunTree, load_recovery, read_manifest, save_recovery


class ResetPlan(BaseModel):
    """What `execute` would remove and rebuild (paths relative to the run tree)."""

    model_config = ConfigDict(extra="forbid")

    files: list[str] = Field(default_factory=list)
    """Judge logs and judge-derived files to delete."""
    old_revision_dirs: list[str] = Field(default_factory=list)
    """Revision chains kept aside by earlier rebuilds, to delete."""
    rebuild: bool = False
    """Whether the current chain (or `results.ndjson`) holds judge content and is rebuilt without it."""
    revisions: int = 0
    """Revisions in the current chain (all replaced when `rebuild`)."""
    task_ids: list[str] = Field(default_factory=list)
    """Tasks of the rebuilt chain, in selection order (one revision each, latest agent attempt, no verdict)."""
    judged_task_ids: list[str] = Field(default_factory=list)
    """Tasks whose current view carries a verdict that is dropped."""
    quota_rejudge_task_ids: list[str] = Field(default_factory=list)
    """Tasks cleared from `recovery.json`'s `quota_rejudge`."""

    def empty(self) -> bool:
        """Whether there is nothing to reset."""
        return not (self.files or self.old_revision_dirs or self.rebuild or self.quota_rejudge_task_ids)

    def lines(self) -> list[str]:
        """The plan in words, one change per line."""
        if self.empty():
            return ["nothing to reset: the run holds no verdicts or judge files"]
        out = [f"remove {name}" for name in self.files]
        out += [f"remove {name}/ (old revision chain)" for name in self.old_revision_dirs]
        if self.rebuild:
            out.append(f"rebuild result-revisions/ ({self.revisions} revisions) and results.ndjson from the latest "
                       f"agent attempt of {len(self.task_ids)} tasks; verdicts dropped: {len(self.judged_task_ids)}")
        if self.quota_rejudge_task_ids:
            out.append("clear quota_rejudge in recovery.json: " + ", ".join(self.quota_rejudge_task_ids))
        out.append("keep task.json, session.json, trace.ndjson, screenshots, result.json and attempts/")
        return out


_DERIVED = ("summary.json", "report.md", "task-metrics.md", "task-metrics.csv", "task-metrics.json")


def _results_hold_judge(tree: RunTree) -> bool:
    if not tree.results.is_file():
        return False
    for line in tree.results.read_bytes().splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue  # a torn line: rewritten with the rest
        if isinstance(value, dict) and value.get("judge") is not None:
            return True
    return False


def _ordered_views(tree: RunTree) -> dict[str, TaskView]:
    """Current views in selection order (views of tasks outside the selection, if any, after them)."""
    views = revisions.current(tree)
    order = [i for i in read_manifest(tree).task_ids if i in views]
    order += [i for i in views if i not in set(order)]
    return {i: views[i] for i in order}


def plan(root: Path) -> ResetPlan:
    """What a reset would change; reads only (a damaged chain is refused)."""
    tree = RunTree(root)
    views = _ordered_views(tree)
    chain = revisions.read_chain(tree)
    task_ids = set(views) | set(read_manifest(tree).task_ids)
    files: list[Path] = sorted(root.glob("judged-*.json"))
    for task_id in sorted(task_ids):
        for attempt in tree.attempts_on_disk(task_id):
            where = tree.attempt_dir(task_id, attempt)
            files += sorted([*where.glob("judge-*.ndjson"), *where.glob("judged-*.json")])
    files += [root / name for name in _DERIVED if (root / name).is_file()]
    rebuild = any(r.reason == "judge" or r.view.judge is not None for r in chain) or _results_hold_judge(tree)
    return ResetPlan(
        files=[p.relative_to(root).as_posix() for p in files if p.is_file()],
        old_revision_dirs=sorted(p.name for p in root.glob("result-revisions.old-*") if p.is_dir()),
        rebuild=rebuild, revisions=len(chain), task_ids=list(views),
        judged_task_ids=[i for i, v in views.items() if v.judge is not None],
        quota_rejudge_task_ids=[e.task_id for e in load_recovery(tree).quota_rejudge],
    )


def execute(root: Path, reset: ResetPlan) -> ResetPlan:
    """Carry out a plan made by `plan` on the same tree (made again first: refused if the run changed) and return
    what a new plan says is left (nothing).

    The rebuilt chain is written first, so a crash part-way leaves verdict-free views and a re-run finishes the
    file removals.
    """
    if plan(root) != reset:
        raise FarmError(f"{root}: the run changed since the dry run", hint="run reset-judge without --execute again")
    tree = RunTree(root)
    if reset.rebuild:
        views = _ordered_views(tree)
        revisions.rebuild(tree, [v.model_copy(update={"judge": None}) for v in views.values()], "reset")
    for name in reset.files:
        (root / name).unlink(missing_ok=True)
    for name in reset.old_revision_dirs:
        shutil.rmtree(root / name, ignore_errors=True)
    if reset.quota_rejudge_task_ids:
        save_recovery(tree, load_recovery(tree).model_copy(update={"quota_rejudge": []}))
    return plan(root)
