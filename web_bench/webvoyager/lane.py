"""The WebVoyager lane end to end, and its place in the farm: the run's farm manifest entry, one record per
task in the shared schema, and the finishing files (summary, report, metrics)."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from farm.errors import FarmError
from farm.fsutil import atomic_write_text
from farm.llm.config import LLMConfig
from farm.manifest import LaneEntry, Manifest, add_lane, code_fingerprint, manifest_path, save, utc_now
from farm.results.record import CheckResult, EndReason, Outcome, Record, RunMetrics
from farm.sweep.request import EXIT_FAILED, EXIT_INFRA, EXIT_OK, EXIT_UNFINISHED
from web_bench.webvoyager import store
from web_bench.webvoyager.model import TaskView, WvTask
from web_bench.webvoyager.options import RunOptions
from web_bench.webvoyager.plan import Plan
from web_bench.webvoyager.run import Prepared, environ_or, new_manifest, plan_lines, prepare

RECORDS_FILE = "records.jsonl"
_END_REASON: dict[str, EndReason] = {"completed": "answer", "timeout": "timeout", "step_limit": "max_steps",
                                     "error": "error"}
_INFRA = {"quota", "auth", "service_unavailable", "browser_error", "interrupted", "internal"}


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


def to_record(run_id: str, task: WvTask, view: TaskView | None) -> Record:
    """The farm record of one selected task: missing and unjudged tasks stay in the denominator as errors."""
    if view is None:
        return Record(run=run_id, lane="webvoyager", device="chromium", task_id=task.task_id, category=task.site,
                      outcome="error", passed=False, reasons=["missing: no agent result"],
                      failure_kind="infrastructure", failure_category="missing", execution="live")
    agent, verdict = view.agent, view.judge
    outcome: Outcome
    category: str | None = None
    if agent.error_kind in _INFRA or agent.error_kind == "website_unavailable":
        outcome, category = "error", agent.error_kind
    elif verdict is None or verdict.passed is None:
        outcome, category = "error", "unjudged"
    else:
        outcome = "succeeded" if verdict.passed else "failed"
    reasons = [r for r in (agent.error, verdict.reason if verdict else None,
                           verdict.judge_error if verdict else None) if r]
    checks = [CheckResult(type=f"llm_judge_{verdict.mode}", passed=bool(verdict.passed),
                          detail=verdict.reason or verdict.judge_error or "")] if verdict else []
    costs = [agent.usage.cost_usd, verdict.usage.cost_usd if verdict else 0.0]
    return Record(
        run=run_id, lane="webvoyager", device="chromium", task_id=task.task_id, category=task.site,
        outcome=outcome, passed=outcome == "succeeded", checks=checks, answer=agent.final_answer, reasons=reasons,
        end_reason=_END_REASON[agent.status],
        failure_kind=None if outcome == "succeeded" else ("agent" if outcome == "failed" else "infrastructure"),
        failure_category=category, steps=agent.steps, attempt=agent.attempt,
        metrics=RunMetrics(round_trips=agent.model_rounds, total_ms=agent.duration_ms),
        tokens=agent.usage.tokens or agent.usage.tokens_observed.model_copy(),
        cost_usd=None if any(c is None for c in costs) else sum(c for c in costs if c is not None),
        execution="live", started_at=agent.started_at, ended_at=agent.finished_at,
        extra={"site": task.site, "status": agent.status, "errorKind": agent.error_kind,
               "modelRounds": agent.model_rounds, "provenanceRun": view.provenance_run},
    )


def _join_farm_manifest(run_dir: Path, run_id: str, detail: Mapping[str, object]) -> None:
    entry = LaneEntry(lane="webvoyager", outputs=[f"{'webvoyager'}/report.md", "webvoyager/summary.json",
                                                  "webvoyager/task-metrics.json", RECORDS_FILE],
                      detail={k: v for k, v in detail.items() if isinstance(v, str | int | float | bool | None)})
    if manifest_path(run_dir).exists():
        add_lane(run_dir, entry)
        return
    run_dir.mkdir(parents=True, exist_ok=True)
    save(run_dir, Manifest(run_id=run_id, created_at=utc_now(), command=list(sys.argv), code=code_fingerprint(),
                           lanes=[entry]))


def finish(prepared: Prepared, views: dict[str, TaskView], *, halted: str | None) -> Path:
    """Rewrite metrics, summary.json, report.md and the farm records from the current views."""
    from web_bench.webvoyager.metrics import write_task_metrics
    from web_bench.webvoyager.report import render_report
    from web_bench.webvoyager.summary import summarize

    tree, opts = prepared.tree, prepared.opts
    finished_at = utc_now()
    write_task_metrics(tree.root, prepared.tasks, views, judge_mode=opts.judge, evaluation_finished_at=finished_at)
    manifest = store.read_manifest(tree)
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
    run_dir = tree.root.parent
    records = [to_record(opts.run_id, t, views.get(t.task_id)) for t in prepared.tasks]
    atomic_write_text(run_dir / RECORDS_FILE, "".join(r.model_dump_json(exclude_none=True) + "\n" for r in records))
    return tree.report


@contextmanager
def _cancel_on_signals(cancel: threading.Event) -> Iterator[None]:
    """Ctrl-C / SIGTERM stop the queue; running workers are stopped and record what they had."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def handler(signum: int, frame: object) -> None:
        cancel.set()

    for sig in previous:
        signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def run_webvoyager(opts: RunOptions, *, environ: Mapping[str, str] | None = None,
                   on_progress: Callable[[str], None] = lambda _: None) -> RunOutcome:
    """`farm webvoyager run`: plan, then (unless --dry-run) preflight, dispatch, judge and finish."""
    from web_bench.webvoyager.agent import AgentSettings
    from web_bench.webvoyager.config import agent_setup, judge_setup, snapshot
    from web_bench.webvoyager.execute import Clients, Dispatcher, preflight

    prepared = prepare(opts)
    if opts.dry_run:
        return RunOutcome(root=prepared.tree.root, plan=prepared.plan, lines=plan_lines(prepared), exit_status=EXIT_OK)
    env = environ_or(environ)
    # Credentials are read from here on, never before the data and the judge prompt were verified.
    agent = agent_setup(env, reasoning_effort=opts.reasoning_effort, base=_farm_model(env))
    judge = judge_setup(env, agent) if opts.judge != "none" else None
    pricing = {"agent": agent.price.model_dump() if agent.price else None,
               "judge": judge.price.model_dump() if judge and judge.price else None}
    manifest = new_manifest(prepared, snapshot(agent), snapshot(judge) if judge else None, pricing)
    if opts.resume and prepared.old_manifest is not None:
        # A backfilled or recovered run is mixed by nature: its code fingerprint is the older run's.
        ignore = ("code",) if prepared.old_manifest.provenance == "mixed" else ()
        # How long the service check may wait changes no result.
        differ = [d for d in store.resume_mismatch(prepared.old_manifest, manifest, ignore=ignore)
                  if d != "params.preflight_timeout_ms"]
        if differ:
            raise FarmError(f"--resume: the run was made with other {', '.join(differ)}",
                            hint="resume with the same options and code, or recover into a new run with "
                                 "--retry-from OLD --run NEW")
    tree = prepared.tree
    needs_agent = bool(prepared.plan.agent_items())
    needs_judge = judge is not None and bool(prepared.plan.items)
    created = not tree.manifest.exists()
    tree.root.mkdir(parents=True, exist_ok=True)
    calls = []
    if needs_agent:
        calls.append(preflight(tree, agent, opts.preflight_timeout_ms, env))
    if needs_judge and judge is not None and (judge.llm != agent.llm or not needs_agent):
        calls.append(preflight(tree, judge, opts.preflight_timeout_ms, env))
    refused = next((c for c in calls if c.outcome != "ok"), None)
    if refused is not None:
        if created and not tree.manifest.exists():
            # Nothing was dispatched: a refused preflight leaves only its own log behind.
            pass
        status = 2 if refused.outcome == "auth" else EXIT_UNFINISHED
        lines = [f"preflight: {refused.outcome}" + (f" ({refused.error})" if refused.error else ""),
                 "nothing was dispatched; the recovery list is unchanged"]
        return RunOutcome(root=tree.root, plan=prepared.plan, lines=lines, exit_status=status,
                          halted="auth" if refused.outcome == "auth" else "preflight")
    if opts.rerun_ids:
        manifest.rerun_requests.extend(
            store.RerunRequest(task_id=i.task_id, attempt=i.attempt, requested_at=utc_now(), new_rerun=opts.new_rerun)
            for i in prepared.plan.agent_items() if i.kind == "rerun")
    if created:
        store.create_manifest(tree, manifest)
    elif opts.rerun_ids:
        store.write_manifest(tree, manifest)
    if prepared.source_root is not None:
        from web_bench.webvoyager import revisions

        for view in prepared.views.values():
            revisions.commit(tree, view.model_copy(update={"provenance_run": view.provenance_run
                                                          or str(prepared.source_root)}), "recovery")
        store.save_recovery(tree, prepared.recovery)
    _join_farm_manifest(tree.root.parent, opts.run_id, {"judge": opts.judge, "tasks": len(prepared.tasks),
                                                       "harMode": opts.har_mode, "concurrency": opts.concurrency})
    settings = AgentSettings(
        timeout_ms=opts.timeout_ms, max_rounds=opts.max_rounds, headed=opts.headed, chromium=opts.chromium,
        llm=agent.llm, price=agent.price, har_mode=opts.har_mode,
        har_path=str(opts.record_har or opts.replay_har) if (opts.record_har or opts.replay_har) else None,
        stand_in=str(opts.stand_in) if opts.stand_in else None,
    )
    judge_client = None
    cancel = threading.Event()
    try:
        if judge is not None and needs_judge:
            from farm.llm.client import make_client

            judge_client = make_client(judge.llm, environ=env)
        dispatcher = Dispatcher(prepared, Clients(agent=agent, judge=judge, judge_client=judge_client), settings,
                                on_progress=on_progress, cancel=cancel)
        with _cancel_on_signals(cancel):
            dispatcher.run()
    finally:
        if judge_client is not None:
            judge_client.close()
    views = dispatcher.views
    report = finish(prepared, views, halted=dispatcher.halted)
    if opts.judge_only:
        verdicts = [v.judge.model_dump(mode="json", by_alias=True) for v in views.values() if v.judge is not None]
        import json

        atomic_write_text(tree.root / f"judged-{opts.judge}.json", json.dumps(verdicts, indent=2) + "\n")
    status = _exit_status(prepared.tasks, views, dispatcher.halted, opts.judge)
    return RunOutcome(root=tree.root, plan=prepared.plan, lines=_closing(prepared, views, dispatcher.halted),
                      exit_status=status, halted=dispatcher.halted, report=report)


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
    if halted or unfinished or unjudged:
        return EXIT_UNFINISHED
    if any(v.agent.error_kind in _INFRA for v in views.values()):
        return EXIT_INFRA
    if judge == "none" or all(v.judge is not None and v.judge.passed for v in views.values()):
        return EXIT_OK
    return EXIT_FAILED


def rebuild_report(root: Path, data_dir: Path | None = None) -> Path:
    """`farm webvoyager report`: rebuild the tables, summary and report from the run's revisions."""
    from web_bench.webvoyager import dataset, revisions
    from web_bench.webvoyager.data import default_data_dir
    from web_bench.webvoyager.options import RunOptions
    from web_bench.webvoyager.plan import plan_work

    tree = store.RunTree(root)
    if not tree.manifest.is_file():
        raise FarmError(f"{root}: no WebVoyager run there", hint="check --run / --runs-dir")
    manifest = store.read_manifest(tree)
    by_id = {t.task_id: t for t in dataset.load_tasks(data_dir or default_data_dir())}
    tasks = [by_id[i] for i in manifest.task_ids if i in by_id]
    views = revisions.current(tree)
    opts = RunOptions(run_id=manifest.run_id, runs_dir=root.parent.parent, judge=manifest.judge_mode)
    recovery = store.load_recovery(tree)
    prepared = Prepared(opts=opts, tasks=tasks, tree=tree, views=views, recovery=recovery, old_manifest=manifest,
                        prompt=None, plan=plan_work(tasks, views, judge_mode=manifest.judge_mode))
    return finish(prepared, views, halted=None)
