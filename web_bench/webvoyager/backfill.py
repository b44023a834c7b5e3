"""Extend an older run to a bigger selection, running only the tasks it lacks (seed: 从旧数据集只补缺失任务).

`audit` only reads. It refuses — before any credential is loaded or browser started — unless the old manifest's
tasks are an ordered sub-sequence of the target selection with identical content, and every old task is
complete on disk (task.json, non-empty parseable session.json and trace.ndjson, result.json, a decided verdict).
`execute` keeps the old manifest as `manifest-before-backfill.json`, writes the target manifest with the old
tasks as `protected_task_ids` and `provenance: mixed`, and rebuilds `results.ndjson` and the revision chain in
target order. It never touches a task directory.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from farm.errors import FarmError
from farm.fsutil import create_new_text
from web_bench.webvoyager import dataset, revisions
from web_bench.webvoyager.model import AgentResult, TaskView, WvTask
from web_bench.webvoyager.run_tree import (
    RunTree,
    WvManifest,
    check_task_id,
    manifest_text,
    read_manifest,
    read_manifest_file,
    write_manifest,
)

_INCOMPLETE = "a kept task must be complete and judged: finish it with --resume (or --judge-only) first"
_NOT_SUBSET = "backfill extends a run only to a selection that holds its tasks unchanged, in the same order"


class BackfillPlan(BaseModel):
    """What a backfill keeps and adds (the audit's output)."""

    model_config = ConfigDict(extra="forbid")

    protected_task_ids: list[str] = Field(default_factory=list)
    """The old run's tasks, kept as they are (never re-run or re-judged by the backfill)."""
    missing_task_ids: list[str] = Field(default_factory=list)
    """Target tasks the old run did not select, in target order."""
    pending: list[str] = Field(default_factory=list)
    """Missing tasks with no result yet, in target (data-set) order: the queue the next run dispatches."""
    target_set_sha256: str
    """SHA-256 of the target selection."""


def _base_manifest(tree: RunTree, target_ids: list[str]) -> WvManifest:
    """The manifest before any backfill: `manifest-before-backfill.json` when an earlier `execute` wrote it (the
    current manifest must then be that one or its extension to this very target), else `manifest.json`."""
    current = read_manifest(tree)
    if not tree.manifest_before_backfill.exists():
        return current
    base = read_manifest_file(tree.manifest_before_backfill)
    extended = current.task_ids == target_ids and current.protected_task_ids == base.task_ids
    if current != base and not extended:
        raise FarmError(f"{tree.manifest_before_backfill}: the run was already extended to another selection",
                        hint="a run is extended once; start a new output directory for another selection")
    return base


def _check_subsequence(base: WvManifest, targets: list[WvTask], where: Path) -> None:
    position = {task.task_id: n for n, task in enumerate(targets)}
    last = -1
    for task_id in base.task_ids:
        if task_id not in position:
            raise FarmError(f"{where}: task {task_id} of the old run is not in the target selection",
                            hint=_NOT_SUBSET)
        if position[task_id] < last:
            raise FarmError(f"{where}: task {task_id} comes before the previous old task in the target selection "
                            "(reordered)", hint=_NOT_SUBSET)
        last = position[task_id]
        if dataset.task_sha256(targets[position[task_id]]) != base.task_sha256[task_id]:
            raise FarmError(f"{where}: task {task_id} has other content in the target selection (changed text, "
                            "URL or id)", hint=_NOT_SUBSET)


def _json_file(path: Path, task_id: str) -> object:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise FarmError(f"{path}: missing for protected task {task_id}", hint=_INCOMPLETE) from None
    if not raw.strip():
        raise FarmError(f"{path}: empty for protected task {task_id}", hint=_INCOMPLETE)
    try:
        return json.loads(raw)
    except ValueError:
        raise FarmError(f"{path}: not valid JSON for protected task {task_id}", hint=_INCOMPLETE) from None


def _check_trace(path: Path, task_id: str) -> None:
    try:
        lines = [line for line in path.read_bytes().splitlines() if line.strip()]
    except FileNotFoundError:
        raise FarmError(f"{path}: missing for protected task {task_id}", hint=_INCOMPLETE) from None
    if not lines:
        raise FarmError(f"{path}: empty for protected task {task_id}", hint=_INCOMPLETE)
    for number, line in enumerate(lines, start=1):
        try:
            json.loads(line)
        except ValueError:
            raise FarmError(f"{path}:{number}: not valid JSON for protected task {task_id}",
                            hint=_INCOMPLETE) from None


def _check_protected(tree: RunTree, task: WvTask, view: TaskView | None) -> None:
    """Every file and the verdict a protected task needs; the first problem names the task and the file."""
    task_id = task.task_id
    if view is None:
        raise FarmError(f"{tree.results}: protected task {task_id} has no result", hint=_INCOMPLETE)
    where = tree.attempt_dir(task_id, view.agent.attempt)
    task_json = _json_file(where / "task.json", task_id)
    try:
        on_disk = WvTask.model_validate(task_json)
    except ValidationError:
        raise FarmError(f"{where / 'task.json'}: not a task for protected task {task_id}", hint=_INCOMPLETE) from None
    if dataset.task_sha256(on_disk) != dataset.task_sha256(task):
        raise FarmError(f"{where / 'task.json'}: differs from the target task {task_id}", hint=_NOT_SUBSET)
    session = _json_file(where / "session.json", task_id)
    if session in (None, {}, []):
        raise FarmError(f"{where / 'session.json'}: holds no session for protected task {task_id}", hint=_INCOMPLETE)
    _check_trace(where / "trace.ndjson", task_id)
    try:
        result = AgentResult.model_validate(_json_file(where / "result.json", task_id))
    except ValidationError:
        raise FarmError(f"{where / 'result.json'}: not an agent result for protected task {task_id}",
                        hint=_INCOMPLETE) from None
    if (result.task_id, result.attempt) != (task_id, view.agent.attempt):
        raise FarmError(f"{where / 'result.json'}: is not attempt {view.agent.attempt} of {task_id}", hint=_INCOMPLETE)
    verdict = view.judge
    if verdict is None or verdict.passed is None or verdict.attempt != view.agent.attempt:
        raise FarmError(f"{tree.results}: protected task {task_id} has no decided verdict on attempt "
                        f"{view.agent.attempt}", hint=_INCOMPLETE)


def audit(old_root: Path, target_tasks: list[WvTask]) -> BackfillPlan:
    """Check that the old run can be extended to `target_tasks` and say what would be kept and run. Reads only."""
    tree = RunTree(old_root)
    target_ids = [check_task_id(t.task_id) for t in target_tasks]
    if len(set(target_ids)) != len(target_ids):
        raise FarmError("backfill: the target selection names a task twice", hint="pass each task once")
    base = _base_manifest(tree, target_ids)
    _check_subsequence(base, target_tasks, tree.manifest_before_backfill
                       if tree.manifest_before_backfill.exists() else tree.manifest)
    views = revisions.current(tree)  # refuses a damaged chain
    by_id = {t.task_id: t for t in target_tasks}
    for task_id in base.task_ids:
        _check_protected(tree, by_id[task_id], views.get(task_id))
    kept = set(base.task_ids)
    missing = [i for i in target_ids if i not in kept]
    return BackfillPlan(protected_task_ids=list(base.task_ids), missing_task_ids=missing,
                        pending=[i for i in missing if i not in views],
                        target_set_sha256=dataset.tasks_sha256(target_tasks))


def execute(old_root: Path, target_tasks: list[WvTask], plan: BackfillPlan, *,
            data_sha256: dict[str, str] | None = None) -> WvManifest:
    """Apply an audited plan (audited again first: the tree must not have changed) and return the new manifest.

    Order: `manifest-before-backfill.json` (created exclusively), the new manifest, then the rebuilt chain; a
    crash part-way is finished by running it again.
    """
    if audit(old_root, target_tasks) != plan:
        raise FarmError(f"{old_root}: the run changed since the audit", hint="audit again, then --execute")
    if not plan.missing_task_ids:
        raise FarmError(f"{old_root}: the run already selects every target task", hint="nothing to backfill")
    tree = RunTree(old_root)
    if not tree.manifest_before_backfill.exists():
        create_new_text(tree.manifest_before_backfill, tree.manifest.read_text(encoding="utf-8"),
                        what="manifest before backfill")
    base = read_manifest_file(tree.manifest_before_backfill)
    if manifest_text(read_manifest(tree)) == manifest_text(base):
        ids = [t.task_id for t in target_tasks]
        extended = base.model_copy(update={
            "task_ids": ids, "task_sha256": {t.task_id: dataset.task_sha256(t) for t in target_tasks},
            "set_sha256": plan.target_set_sha256, "protected_task_ids": list(base.task_ids), "provenance": "mixed",
            "data_sha256": dict(data_sha256) if data_sha256 is not None else base.data_sha256,
        })
        write_manifest(tree, WvManifest.model_validate(extended.model_dump()))
    chain = revisions.read_chain(tree)
    if not chain or chain[0].reason != "backfill":
        views = revisions.current(tree)
        # Kept views (and any a crashed earlier execute let run since) in target order; the old chain and the
        # old results.ndjson stay beside the new ones.
        revisions.rebuild(tree, [views[t.task_id] for t in target_tasks if t.task_id in views], "backfill",
                          keep_old=True)
    return read_manifest(tree)
