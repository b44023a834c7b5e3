"""Carrying out a planned WebVoyager run: preflight, the dispatch queue, judging, and the tables rewritten
after every task. A quota or service failure stops dispatch; running tasks finish on their own limit."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from farm.llm.client import ModelCallError, ModelClient, make_client
from farm.llm.types import Message
from farm.manifest import utc_now
from web_bench.webvoyager import revisions, run_tree
from web_bench.webvoyager.accounting import calls_from_error, calls_from_turn
from web_bench.webvoyager.agent import AgentSettings
from web_bench.webvoyager.model import AgentResult, JudgeVerdict, ModelCall, TaskView, WvTask
from web_bench.webvoyager.model_setup import ModelSetup
from web_bench.webvoyager.plan import WorkItem
from web_bench.webvoyager.run import Prepared, next_view
from web_bench.webvoyager.spares import Spares

Halt = Literal["quota", "service_unavailable", "auth", "interrupted"]
_HALTING: dict[str, Halt] = {"quota": "quota", "service_unavailable": "service_unavailable", "auth": "auth"}


@dataclass
class Clients:
    """The parent's model clients (the agent's own live in the worker processes)."""

    agent: ModelSetup
    judge: ModelSetup | None
    judge_client: ModelClient | None


def preflight(tree: run_tree.RunTree, setup: ModelSetup, timeout_ms: int, environ: Mapping[str, str]) -> ModelCall:
    """One small request to check the service; recorded in preflight.ndjson, never scored."""
    cfg = setup.llm.model_copy(update={"timeout_s": timeout_ms / 1000.0, "max_retries": 0})
    started = utc_now()
    with make_client(cfg, environ=environ) as client:
        try:
            turn = client.complete([Message.user("Reply with the single word: ok")])
            calls = calls_from_turn(turn, role="preflight", step=None, started_at=started, price=setup.price)
        except ModelCallError as exc:
            calls = calls_from_error(exc, role="preflight", step=None, started_at=started, price=setup.price,
                                     model=cfg.model)
    call = calls[-1]
    run_tree.append_preflight(tree, call)
    return call


class Dispatcher:
    """Runs the plan's items on `concurrency` threads, each agent attempt in its own worker process."""

    def __init__(self, prepared: Prepared, clients: Clients, settings: AgentSettings, *,
                 on_progress: Callable[[str], None], cancel: threading.Event, environ: Mapping[str, str],
                 spares: Spares | None = None) -> None:
        self.p = prepared
        self.spares = spares
        self.environ = environ
        self.clients = clients
        self.settings = settings
        self.on_progress = on_progress
        self.cancel = cancel
        self.halted: Halt | None = None
        self.views: dict[str, TaskView] = dict(prepared.views)
        self.tasks = {t.task_id: t for t in prepared.tasks}
        self._lock = threading.Lock()
        self.done = 0

    # -- bookkeeping under the lock ----------------------------------------------------------------
    def _commit(self, view: TaskView, reason: revisions.Reason) -> None:
        with self._lock:
            revisions.commit(self.p.tree, view, reason)
            self.views[view.task_id] = view
            self._rewrite_tables()

    def _rewrite_tables(self) -> None:
        from web_bench.webvoyager.metrics import write_task_metrics

        write_task_metrics(self.p.tree.root, self.p.tasks, self.views, judge_mode=self.p.opts.judge)

    def _recovery(self, change: Callable[[run_tree.Recovery], None]) -> None:
        with self._lock:
            change(self.p.recovery)
            run_tree.save_recovery(self.p.tree, self.p.recovery)

    # -- work --------------------------------------------------------------------------------------
    def _agent(self, item: WorkItem) -> None:
        from web_bench.webvoyager.worker import run_in_child

        task = self.tasks[item.task_id]
        attempt_dir = self.p.tree.attempt_dir(task.task_id, item.attempt)
        settings = self.settings
        if settings.har_mode != "live" and settings.har_path is not None:
            har = Path(settings.har_path) / f"{task.task_id}.har"
            settings = settings.model_copy(update={"har_path": str(har)})
        self.on_progress(f"{task.task_id}: attempt {item.attempt} started ({item.kind})")
        result = run_in_child(task, item.attempt, attempt_dir, settings, cancel=self.cancel, spares=self.spares)
        result = self._unmask_quota(result)
        view = next_view(task, result, self.views.get(task.task_id))
        self._commit(view, "rerun" if item.kind == "rerun" else ("recovery" if item.kind != "new" else "agent"))
        self._recovery(lambda r: run_tree.note_agent_result(r, result))
        self.on_progress(f"{task.task_id}: agent {result.status}"
                         + (f" ({result.error_kind})" if result.error_kind else ""))
        halt = _HALTING.get(result.error_kind or "")
        if result.error_kind == "interrupted":
            halt = "interrupted"
        if halt is not None:
            self.halted = self.halted or halt
            return
        self._judge(task, view)

    def _unmask_quota(self, result: AgentResult) -> AgentResult:
        """A model request that timed out or lost its connection may have hidden a quota refusal (a provider that
        stalls once the quota is gone): one service check right after tells, and a quota answer makes the
        attempt a quota stop, kept for a re-run instead of scored."""
        last = result.model_calls[-1] if result.model_calls else None
        if result.error_kind == "quota" or last is None or last.outcome not in ("timeout", "connection"):
            return result
        if result.status not in ("timeout", "error"):
            return result
        check = preflight(self.p.tree, self.clients.agent, self.p.opts.preflight_timeout_ms, self.environ)
        if check.outcome != "quota":
            return result
        why = f"{result.error or result.status}; a service check right after answered quota ({check.error})"
        return result.model_copy(update={"error_kind": "quota", "error": why})

    def _judge(self, task: WvTask, view: TaskView) -> None:
        if self.p.opts.judge == "none" or self.clients.judge_client is None or self.clients.judge is None:
            return
        verdict = judge_one(self.p, task, view.agent, self.clients.judge, self.clients.judge_client)
        self._commit(view.model_copy(update={"judge": verdict}), "judge")
        self._recovery(lambda r: run_tree.note_verdict(r, task.task_id, verdict))
        shown = {True: "pass", False: "fail", None: "unjudged"}[verdict.passed]
        why = f" ({verdict.judge_error})" if verdict.judge_error else ""
        self.on_progress(f"{task.task_id}: judge {shown}{why}")
        if verdict.error_kind == "quota":
            self.halted = self.halted or "quota"

    def _one(self, item: WorkItem) -> None:
        if item.runs_agent:
            self._agent(item)
        else:
            self._judge(self.tasks[item.task_id], self.views[item.task_id])
        with self._lock:
            self.done += 1

    def run(self) -> None:
        """Dispatch until the queue is empty, a halt, or a cancel; running items always finish."""
        queue = list(self.p.plan.items)
        with ThreadPoolExecutor(max_workers=self.p.opts.concurrency, thread_name_prefix="wv") as pool:
            running: set[Future[None]] = set()
            while queue or running:
                while (queue and len(running) < self.p.opts.concurrency and not self.halted
                       and not self.cancel.is_set()):
                    running.add(pool.submit(self._one, queue.pop(0)))
                if not running:
                    break
                finished, running = wait(running, timeout=0.5, return_when=FIRST_COMPLETED)
                for future in finished:
                    future.result()
        if self.cancel.is_set() and self.halted is None:
            self.halted = "interrupted"


def judge_one(prepared: Prepared, task: WvTask, result: AgentResult, setup: ModelSetup,
              client: ModelClient) -> JudgeVerdict:
    """The verdict of the run's judge on one agent attempt (problems become `passed=None`, never a failure)."""
    from web_bench.webvoyager import judge as judges

    attempt_dir = attempt_dir_of(prepared, task.task_id, result.attempt)
    log_path = prepared.tree.attempt_dir(task.task_id, result.attempt) / f"judge-{prepared.opts.judge}.ndjson"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    if prepared.opts.judge == "reference":
        assert prepared.prompt is not None
        return judges.judge_reference(task, result, client=client, prompt=prepared.prompt, price=setup.price,
                                      log_path=log_path)
    from web_bench.webvoyager.trace import browser_observations

    observations = browser_observations(attempt_dir / "trace.ndjson")
    return judges.judge_evidence(task, result, observations, client=client, price=setup.price, log_path=log_path)


def attempt_dir_of(prepared: Prepared, task_id: str, attempt: int) -> Path:
    """Where an attempt's files are: this run's tree, or the old run's for attempts made there (--retry-from)."""
    here = prepared.tree.attempt_dir(task_id, attempt)
    if (here / "result.json").is_file() or prepared.source_root is None:
        return here
    return run_tree.RunTree(prepared.source_root).attempt_dir(task_id, attempt)
