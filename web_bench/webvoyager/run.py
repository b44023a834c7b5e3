"""`farm webvoyager run` as a library call: choose the tasks, plan the queue, check the judge prompt (before
any credential), preflight the model, dispatch tasks to worker processes, judge, and keep every table and the
summary current after each task."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from farm.errors import FarmError
from farm.manifest import code_fingerprint, utc_now
from web_bench.webvoyager import dataset, revisions, run_tree
from web_bench.webvoyager.data_files import default_data_dir
from web_bench.webvoyager.model import AgentResult, TaskView, WvTask
from web_bench.webvoyager.options import RunOptions
from web_bench.webvoyager.plan import Plan, plan_work
from web_bench.webvoyager.prompt import JudgePrompt, load_reference_prompt

LANE_DIR = "webvoyager"
"""The seed's tree inside a farm run directory."""


def lane_root(path: Path) -> Path:
    """The WebVoyager tree of a run: `path` itself when it holds a WebVoyager manifest, else `path/webvoyager`."""
    if (path / "manifest.json").is_file() and (path / "results.ndjson").exists():
        return path
    return path / LANE_DIR


def existing_root(run_dir: Path) -> Path:
    """The WebVoyager tree of an existing run directory; FarmError naming it when there is none."""
    root = lane_root(run_dir)
    if not (root / "manifest.json").is_file():
        raise FarmError(f"{run_dir}: no WebVoyager run there", hint="check --run and --runs-dir")
    return root


@dataclass
class Prepared:
    """Everything decided before credentials are read."""

    opts: RunOptions
    tasks: list[WvTask]
    tree: run_tree.RunTree
    views: dict[str, TaskView]
    recovery: run_tree.Recovery
    old_manifest: run_tree.WvManifest | None
    prompt: JudgePrompt | None
    plan: Plan
    rerun_ids: list[str] = field(default_factory=list)
    """Re-runs that still need an agent attempt (a repeated request that already ran is not run again)."""
    source_root: Path | None = None
    """`--retry-from`: the old run's tree (only read)."""


def _selection(opts: RunOptions, data_dir: Path, old: run_tree.WvManifest | None) -> list[WvTask]:
    tasks = dataset.load_tasks(data_dir)
    if old is None:
        return dataset.select(tasks, opts.ids, opts.count)
    by_id = {t.task_id: t for t in tasks}
    missing = [i for i in old.task_ids if i not in by_id]
    if missing:
        raise FarmError(f"{old.run_id}: task {missing[0]} of the run is not in the data set",
                        hint="the run was made with other data; start a new run")
    chosen = [by_id[i] for i in old.task_ids]
    for task in chosen:
        if dataset.task_sha256(task) != old.task_sha256.get(task.task_id):
            raise FarmError(f"{old.run_id}: task {task.task_id} differs from the one the run was made with",
                            hint="the data changed; start a new run (--retry-from keeps the old results)")
    if opts.ids is not None and list(opts.ids) != [t.task_id for t in dataset.select(tasks, opts.ids, None)]:
        raise FarmError("--ids: a resumed run keeps its selection", hint="drop --ids, or start a new --run")
    return chosen


def prepare(opts: RunOptions) -> Prepared:
    """Validate switches, load and verify the data and the judge prompt, read the run's state and plan."""
    opts.check()
    data_dir = opts.data_dir or default_data_dir()
    root = opts.runs_dir / opts.run_id / LANE_DIR
    tree = run_tree.RunTree(root)
    old: run_tree.WvManifest | None = None
    source_root: Path | None = None
    if opts.existing_run():
        if not tree.manifest.is_file():
            raise FarmError(f"{root}: no WebVoyager run there", hint="check --run / --runs-dir, or start a new run")
        old = run_tree.read_manifest(tree)
    elif root.exists() and {p.name for p in root.iterdir()} - {"preflight.ndjson", ".scheduler.lock"}:
        # A tree holding only the log of a refused preflight was never started: the same command may run again.
        raise FarmError(f"{root}: the run already exists",
                        hint="pass a new --run, or --resume to continue it (--retry-from to recover it elsewhere)")
    if opts.retry_from is not None:
        source_root = lane_root(opts.retry_from)
        if not (source_root / "manifest.json").is_file():
            raise FarmError(f"--retry-from {opts.retry_from}: no WebVoyager run there",
                            hint="pass the old run's directory (runs/RUN)")
        old = run_tree.read_manifest(run_tree.RunTree(source_root))
    tasks = _selection(opts, data_dir, old)
    # The reference prompt is checked before any credential is read: a changed prompt refuses the run.
    prompt = load_reference_prompt(data_dir) if opts.judge == "reference" else None
    state_tree = run_tree.RunTree(source_root) if source_root is not None else tree
    views = revisions.current(state_tree) if (opts.existing_run() or source_root is not None) else {}
    recovery = run_tree.load_recovery(state_tree)
    if opts.existing_run() or source_root is not None:
        views = _recover_orphans(state_tree, tasks, views, recovery, write=source_root is None and not opts.dry_run)
    rerun_ids = _reruns(opts, old, tasks, views)
    plan = plan_work(
        tasks, views, judge_mode=opts.judge,
        quota_retry={e.task_id: e.reason for e in recovery.quota_retry},
        service_retry={e.task_id: e.reason for e in recovery.service_retry},
        rerun_ids=rerun_ids, judge_only=opts.judge_only,
    )
    if opts.rerun_ids:
        # A re-run request is about the named tasks only: nothing else is dispatched with it.
        plan = Plan(items=[i for i in plan.items if i.task_id in opts.rerun_ids], done=plan.done)
    return Prepared(opts=opts, tasks=tasks, tree=tree, views=views, recovery=recovery, old_manifest=old,
                    prompt=prompt, plan=plan, rerun_ids=rerun_ids, source_root=source_root)


def _reruns(opts: RunOptions, old: run_tree.WvManifest | None, tasks: list[WvTask],
            views: Mapping[str, TaskView]) -> list[str]:
    if not opts.rerun_ids:
        return []
    known = {t.task_id for t in tasks}
    if len(set(opts.rerun_ids)) != len(opts.rerun_ids):
        raise FarmError("--rerun-ids: a task is named twice", hint="name each task once")
    pending: list[str] = []
    for task_id in opts.rerun_ids:
        if task_id not in known:
            raise FarmError(f"--rerun-ids: {task_id} is not in the run's selection", hint="check the task id")
        if old is not None and task_id in old.protected_task_ids:
            raise FarmError(f"--rerun-ids: {task_id} is a protected task of a backfilled run",
                            hint="protected tasks keep their original attempt")
        if task_id not in views:
            raise FarmError(f"--rerun-ids: {task_id} never ran, so there is nothing to replace",
                            hint="run it with --resume")
        earlier = [r for r in (old.rerun_requests if old else []) if r.task_id == task_id]
        if earlier and not opts.new_rerun and views[task_id].agent.attempt >= earlier[-1].attempt:
            continue  # the same request already ran: rebuild the views, do not make another attempt
        pending.append(task_id)
    return pending


def _recover_orphans(tree: run_tree.RunTree, tasks: list[WvTask], views: dict[str, TaskView],
                     recovery: run_tree.Recovery, *, write: bool) -> dict[str, TaskView]:
    """Register attempts a worker wrote to disk that the run never registered (the parent died first)."""
    from web_bench.webvoyager.worker import read_result

    views = dict(views)
    for task in tasks:
        current = views[task.task_id].agent.attempt if task.task_id in views else 0
        attempt = current + 1
        while (result := read_result(tree.attempt_dir(task.task_id, attempt))) is not None:
            view = next_view(task, result, views.get(task.task_id))
            if write:
                revisions.commit(tree, view, "recovery")
                run_tree.note_agent_result(recovery, result)
            views[task.task_id] = view
            attempt += 1
    if write:
        run_tree.save_recovery(tree, recovery)
    return views


def next_view(task: WvTask, result: AgentResult, earlier: TaskView | None) -> TaskView:
    """The task's view once `result` is its current attempt: the earlier attempt is superseded, and its cost is
    kept apart (unknown when any superseded cost is unknown)."""
    if earlier is None:
        return TaskView(task_id=task.task_id, site=task.site, agent=result)
    cost = None
    if earlier.superseded_agent_cost_usd is not None and earlier.agent.usage.cost_usd is not None:
        cost = earlier.superseded_agent_cost_usd + earlier.agent.usage.cost_usd
    return TaskView(task_id=task.task_id, site=task.site, agent=result,
                    superseded_attempts=[*earlier.superseded_attempts, earlier.agent.attempt],
                    superseded_agent_cost_usd=cost)


def plan_lines(prepared: Prepared) -> list[str]:
    """The dry run's account of the queue, in dispatch order."""
    lines = [f"{len(prepared.tasks)} tasks selected; {len(prepared.plan.done)} already done"]
    for item in prepared.plan.items:
        what = "judge attempt" if item.kind == "judge" else "run attempt"
        reason = f" ({item.reason})" if item.reason else ""
        lines.append(f"{item.kind:<13} {item.task_id}  {what} {item.attempt}{reason}")
    if not prepared.plan.items:
        lines.append("nothing to do")
    return lines


def new_manifest(prepared: Prepared, agent: Mapping[str, object], judge: Mapping[str, object] | None,
                 pricing: Mapping[str, object]) -> run_tree.WvManifest:
    """The manifest this command would write (compared field by field with the old one on --resume)."""
    opts = prepared.opts
    old = prepared.old_manifest
    return run_tree.WvManifest(
        run_id=opts.run_id, created_at=old.created_at if old and opts.existing_run() else utc_now(),
        task_ids=[t.task_id for t in prepared.tasks],
        task_sha256={t.task_id: dataset.task_sha256(t) for t in prepared.tasks},
        set_sha256=dataset.tasks_sha256(prepared.tasks),
        data_sha256=dataset.data_file_hashes(),
        judge_mode=opts.judge, judge_prompt_sha256=prepared.prompt.sha256 if prepared.prompt else None,
        agent=dict(agent), judge=dict(judge) if judge is not None else None, pricing=dict(pricing),
        params=run_tree.RunParams(
            timeout_ms=opts.timeout_ms, max_rounds=opts.max_rounds, concurrency=opts.concurrency,
            headed=opts.headed, reasoning_effort=opts.reasoning_effort,
            preflight_timeout_ms=opts.preflight_timeout_ms,
        ),
        code=code_fingerprint(), har_mode=opts.har_mode,
        har_dir=str(opts.record_har or opts.replay_har) if (opts.record_har or opts.replay_har) else None,
        provenance="mixed" if (prepared.source_root is not None or (old is not None and old.provenance == "mixed"))
        else "single",
        protected_task_ids=list(old.protected_task_ids) if old else [],
        retry_from=str(prepared.source_root) if prepared.source_root else (old.retry_from if old else None),
        rerun_requests=list(old.rerun_requests) if old else [],
        command=list(sys.argv),
    )


def environ_or(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    """The process environment unless one is given (tests)."""
    return os.environ if environ is None else environ


def remove_empty(root: Path) -> None:
    """Remove a run tree that holds nothing yet (a refused preflight leaves no empty run behind)."""
    if root.is_dir() and not any(root.iterdir()):
        shutil.rmtree(root)


ProgressFn = Callable[[str], None]
