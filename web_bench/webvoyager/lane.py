"""The WebVoyager lane end to end, and its place in the farm: the run's farm manifest entry, one record per
task in the shared schema, and the finishing files (summary, report, metrics)."""

from __future__ import annotations

import fcntl
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from farm.errors import FarmError
from farm.exits import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INFRA, EXIT_INTERRUPTED, EXIT_OK, EXIT_UNFINISHED
from farm.fsutil import atomic_write_text
from farm.llm.model_config import LLMConfig
from farm.manifest import LaneEntry, Manifest, code_fingerprint, utc_now
from farm.results.store import RECORDS_FILE, RunStore
from farm.signals import stop_on_signals
from web_bench.webvoyager import run_tree
from web_bench.webvoyager.model import TaskView, WvTask
from web_bench.webvoyager.options import RunOptions
from web_bench.webvoyager.plan import Plan
from web_bench.webvoyager.records import INFRA_KINDS, to_record
from web_bench.webvoyager.run import LANE_DIR, Prepared, environ_or, new_manifest, plan_lines, prepare
from web_bench.webvoyager.spares import Spares

if TYPE_CHECKING:
    from web_bench.webvoyager.agent import AgentSettings
    from web_bench.webvoyager.model_setup import ModelSetup


@dataclass
class RunOutcome:
    """What a `farm webvoyager run` did."""

    root: Path
    """The run's WebVoyager tree."""
    plan: Plan
    """The queue it planned."""
    lines: list[str]
    """The dry run's plan, or the finishing lines."""
    exit_status: int
    """The CLI's exit status (the farm's convention)."""
    halted: str | None = None
    """Why dispatch stopped early (quota, service_unavailable, auth, interrupted)."""
    report: Path | None = None
    """report.md, when written."""


def finish(prepared: Prepared, views: dict[str, TaskView], *, halted: str | None) -> Path:
    """Rewrite metrics, summary.json and report.md from the current views, record each task whose view
    changed (a superseding line in the run's records, never a rewrite: other lanes' records stay), and rebuild
    the run's current report."""
    from web_bench.webvoyager.metrics import write_task_metrics
    from web_bench.webvoyager.report import render_report
    from web_bench.webvoyager.summary import summarize

    tree, opts = prepared.tree, prepared.opts
    finished_at = utc_now()
    write_task_metrics(tree.root, prepared.tasks, views, judge_mode=opts.judge, evaluation_finished_at=finished_at)
    manifest = run_tree.read_manifest(tree)
    summary = summarize(
        prepared.tasks, views, judge_mode=opts.judge,
        recovery_quota_retry=[e.task_id for e in prepared.recovery.quota_retry],
        recovery_quota_rejudge=[e.task_id for e in prepared.recovery.quota_rejudge],
        halted=halted is not None, mixed_provenance=manifest.provenance == "mixed",
        pricing_snapshot=manifest.pricing, evaluation_finished_at=finished_at,
    )
    atomic_write_text(tree.summary, summary.model_dump_json(indent=2) + "\n")
    report = render_report(manifest, summary, prepared.tasks, views)
    atomic_write_text(tree.report, report)
    records = [to_record(opts.run_id, t, views.get(t.task_id), judge_mode=opts.judge) for t in prepared.tasks]
    RunStore(tree.root.parent).supersede(records)
    # The run's current report (runs/<id>/report.*, headline.json) now counts these tasks as their latest lines
    # say, beside every other lane's units.
    from farm.lane_plugins import current_report

    current_report(tree.root.parent)
    return tree.report


@contextmanager
def _scheduler_lock(root: Path) -> Iterator[None]:
    """One scheduler per run tree: a second one on the same run is refused, naming the holder."""
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".scheduler.lock").open("a+") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise FarmError(f"{root}: a scheduler is already running on this run ({holder})",
                            hint="wait for it to finish, or stop it; never run two on one run") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}\n")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def run_webvoyager(opts: RunOptions, *, environ: Mapping[str, str] | None = None,
                   on_progress: Callable[[str], None] = lambda _: None) -> RunOutcome:
    """`farm webvoyager run`: plan, then (unless --dry-run) preflight, dispatch, judge and finish."""
    from web_bench.webvoyager.agent import check_display

    prepared = prepare(opts)
    if opts.dry_run:
        return RunOutcome(root=prepared.tree.root, plan=prepared.plan, lines=plan_lines(prepared), exit_status=EXIT_OK)
    env = environ_or(environ)
    # Credentials are read from here on, never before the data and the judge prompt were verified.
    agent, judge, manifest = _setups(prepared, env)
    settings = _settings(opts, agent)
    if prepared.plan.agent_items():
        check_display(settings, env)
    # The farm run first: its directory holds a manifest before the lane writes any file into it.
    _join_run(prepared)
    with _scheduler_lock(prepared.tree.root):
        return _run_locked(prepared, agent, judge, manifest, settings, env, on_progress)


def _run_locked(prepared: Prepared, agent: ModelSetup, judge: ModelSetup | None, manifest: run_tree.WvManifest,
                settings: AgentSettings, env: Mapping[str, str], on_progress: Callable[[str], None]) -> RunOutcome:
    from web_bench.webvoyager.execute import Clients, Dispatcher

    opts = prepared.opts
    # The first workers start importing while the service is checked (they read no credential before their task).
    attempts = len(prepared.plan.agent_items())
    spares = Spares(settings.llm.provider, attempts) if attempts else None
    judge_client = None
    cancel = threading.Event()
    try:
        refused = _preflight(prepared, agent, judge, env)
        if refused is not None:
            return refused
        _start(prepared, manifest)
        if judge is not None and prepared.plan.items:
            from farm.llm.client import make_client

            judge_client = make_client(judge.llm, environ=env)
        dispatcher = Dispatcher(prepared, Clients(agent=agent, judge=judge, judge_client=judge_client), settings,
                                on_progress=on_progress, cancel=cancel, environ=env, spares=spares)
        with stop_on_signals(cancel, lambda name: on_progress(f"{name}: stopping; running tasks record what they had")):
            dispatcher.run()
    finally:
        if spares is not None:
            spares.close()
        if judge_client is not None:
            judge_client.close()
    views = dispatcher.views
    report = finish(prepared, views, halted=dispatcher.halted)
    if opts.judge_only:
        verdicts = [v.judge.model_dump(mode="json", by_alias=True) for v in views.values() if v.judge is not None]
        atomic_write_text(prepared.tree.root / f"judged-{opts.judge}.json", json.dumps(verdicts, indent=2) + "\n")
    status = _exit_status(prepared.tasks, views, dispatcher.halted, opts.judge)
    return RunOutcome(root=prepared.tree.root, plan=prepared.plan, exit_status=status, halted=dispatcher.halted,
                      lines=_closing(prepared, views, dispatcher.halted), report=report)


def _setups(prepared: Prepared, env: Mapping[str, str]) -> tuple[ModelSetup, ModelSetup | None, run_tree.WvManifest]:
    """The agent and judge models, and the manifest they give (checked against the old one on --resume)."""
    from web_bench.webvoyager.agent import prompt_sha256
    from web_bench.webvoyager.model_setup import agent_setup, judge_setup, snapshot

    opts = prepared.opts
    agent = agent_setup(env, reasoning_effort=opts.reasoning_effort, base=_farm_model(env))
    judge = judge_setup(env, agent) if opts.judge != "none" else None
    pricing = {"agent": agent.price.model_dump() if agent.price else None,
               "judge": judge.price.model_dump() if judge and judge.price else None}
    agent_snapshot = {**snapshot(agent), "run_prompt_sha256": prompt_sha256()}
    manifest = new_manifest(prepared, agent_snapshot, snapshot(judge) if judge else None, pricing)
    old = prepared.old_manifest
    if opts.resume and old is not None:
        # A backfilled or recovered run is mixed by nature: its code fingerprint is the older run's.
        ignore = ("code",) if old.provenance == "mixed" else ()
        # How long the service check may wait changes no result.
        differ = [d for d in run_tree.resume_mismatch(old, manifest, ignore=ignore)
                  if d != "params.preflight_timeout_ms"]
        if differ:
            raise FarmError(f"--resume: the run was made with other {', '.join(differ)}",
                            hint="resume with the same options and code, or recover into a new run with "
                                 "--retry-from OLD --run NEW")
    return agent, judge, manifest


def _settings(opts: RunOptions, agent: ModelSetup) -> AgentSettings:
    from web_bench.webvoyager.agent import AgentSettings

    har = opts.record_har or opts.replay_har
    return AgentSettings(
        timeout_ms=opts.timeout_ms, max_rounds=opts.max_rounds, headed=opts.headed, chromium=opts.chromium,
        llm=agent.llm, price=agent.price, har_mode=opts.har_mode, har_path=str(har) if har else None,
        stand_in=str(opts.stand_in) if opts.stand_in else None,
    )


def _preflight(prepared: Prepared, agent: ModelSetup, judge: ModelSetup | None,
               env: Mapping[str, str]) -> RunOutcome | None:
    """Check the services the plan needs (logged in preflight.ndjson); an outcome when one refused."""
    from web_bench.webvoyager.execute import preflight

    tree, opts = prepared.tree, prepared.opts
    tree.root.mkdir(parents=True, exist_ok=True)
    needs_agent = bool(prepared.plan.agent_items())
    calls = [preflight(tree, agent, opts.preflight_timeout_ms, env)] if needs_agent else []
    if judge is not None and prepared.plan.items and (judge.llm != agent.llm or not needs_agent):
        calls.append(preflight(tree, judge, opts.preflight_timeout_ms, env))
    refused = next((c for c in calls if c.outcome != "ok"), None)
    if refused is None:
        return None
    again = "run the same command again" if not tree.manifest.exists() else "resume with --resume"
    lines = [f"preflight: {refused.outcome}" + (f" ({refused.error})" if refused.error else ""),
             f"nothing was dispatched and the recovery list is unchanged; {again} once the service is back"]
    return RunOutcome(root=tree.root, plan=prepared.plan, lines=lines,
                      exit_status=EXIT_BAD_INPUT if refused.outcome == "auth" else EXIT_UNFINISHED,
                      halted="auth" if refused.outcome == "auth" else "preflight")


def _start(prepared: Prepared, manifest: run_tree.WvManifest) -> None:
    """Write the manifest (new run, or a new re-run request) and carry over a --retry-from run."""
    tree, opts = prepared.tree, prepared.opts
    if opts.rerun_ids:
        manifest.rerun_requests.extend(
            run_tree.RerunRequest(task_id=i.task_id, attempt=i.attempt, requested_at=utc_now(),
                                  new_rerun=opts.new_rerun)
            for i in prepared.plan.agent_items() if i.kind == "rerun")
    if not tree.manifest.exists():
        run_tree.create_manifest(tree, manifest)
    elif opts.rerun_ids:
        run_tree.write_manifest(tree, manifest)
    if prepared.source_root is not None:
        from web_bench.webvoyager import revisions

        for view in prepared.views.values():
            revisions.commit(tree, view.model_copy(update={"provenance_run": view.provenance_run
                                                          or str(prepared.source_root)}), "recovery")
        run_tree.save_recovery(tree, prepared.recovery)


def _join_run(prepared: Prepared) -> RunStore:
    """Add the lane to the farm run (`runs/<id>/manifest.json`), creating the run with this command line when
    there is none; the records of every other lane in it stay."""
    opts = prepared.opts

    def new() -> Manifest:
        return Manifest(run_id=opts.run_id, created_at=utc_now(), command=list(sys.argv), code=code_fingerprint())

    outputs = [f"{LANE_DIR}/report.md", f"{LANE_DIR}/summary.json", f"{LANE_DIR}/task-metrics.json", RECORDS_FILE]
    detail = {"judge": opts.judge, "tasks": len(prepared.tasks), "harMode": opts.har_mode,
              "concurrency": opts.concurrency}
    joined, _created = RunStore.join(opts.runs_dir, opts.run_id,
                                     LaneEntry(lane="webvoyager", outputs=outputs, detail=detail), new=new)
    return joined


def _farm_model(env: Mapping[str, str]) -> LLMConfig | None:
    """The farm's own model (FARM_LLM_*), which the EVAL_* variables override; None when unset."""
    if not (env.get("FARM_LLM_PROVIDER") and env.get("FARM_LLM_MODEL")):
        return None
    return LLMConfig.from_env(environ=env)


def _closing(prepared: Prepared, views: Mapping[str, TaskView], halted: str | None) -> list[str]:
    passed = sum(1 for v in views.values() if v.judge is not None and v.judge.passed)
    lines = [f"{passed}/{len(prepared.tasks)} passed"]
    if halted:
        lines.append(f"dispatch stopped: {halted}; continue with --resume once the service is back")
    return lines


def _exit_status(tasks: list[WvTask], views: Mapping[str, TaskView], halted: str | None, judge: str) -> int:
    unfinished = [t for t in tasks if t.task_id not in views]
    unjudged = judge != "none" and any(v.judge is None or v.judge.passed is None for v in views.values())
    if halted == "interrupted":
        return EXIT_INTERRUPTED
    if halted or unfinished or unjudged:
        return EXIT_UNFINISHED
    if any(v.agent.error_kind in INFRA_KINDS for v in views.values()):
        return EXIT_INFRA
    if judge == "none" or all(v.judge is not None and v.judge.passed for v in views.values()):
        return EXIT_OK
    return EXIT_FAILED


def rebuild_report(root: Path, data_dir: Path | None = None) -> Path:
    """`farm webvoyager report`: rebuild the tables, summary and report from the run's revisions."""
    from web_bench.webvoyager import dataset, revisions
    from web_bench.webvoyager.data_files import default_data_dir
    from web_bench.webvoyager.options import RunOptions
    from web_bench.webvoyager.plan import plan_work

    tree = run_tree.RunTree(root)
    if not tree.manifest.is_file():
        raise FarmError(f"{root}: no WebVoyager run there", hint="check --run / --runs-dir")
    manifest = run_tree.read_manifest(tree)
    by_id = {t.task_id: t for t in dataset.load_tasks(data_dir or default_data_dir())}
    tasks = [by_id[i] for i in manifest.task_ids if i in by_id]
    views = revisions.current(tree)
    opts = RunOptions(run_id=manifest.run_id, runs_dir=root.parent.parent, judge=manifest.judge_mode)
    recovery = run_tree.load_recovery(tree)
    prepared = Prepared(opts=opts, tasks=tasks, tree=tree, views=views, recovery=recovery, old_manifest=manifest,
                        prompt=None, plan=plan_work(tasks, views, judge_mode=manifest.judge_mode))
    return finish(prepared, views, halted=None)
