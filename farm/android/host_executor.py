"""The host executor: runs a phone's tasks from the host with host_agent (uiautomator2 + a policy).

It leaves the same `eval/<run>/` tree in `job.raw_dir` as the on-device agent app, so the lane
normalises both executors' results the same way; only the record's `executor` field differs.

A model call that fails for a reason every phone shares (the provider's quota is used up, its key refused: the
verdict of `farm.llm.provider_errors`) is not the phone's failure: the job stops there and says so in
`ExecutorOutcome.stop_dispatch`, one line naming the provider and the reason; every later job of this executor
starts no task (no request is made while the quota is gone), and the run keeps those units for `--resume`, as the
WebVoyager lane does (seed 002).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from farm.android.executor import ExecutorName, ExecutorOutcome, PhoneJob, ProgressSink, TestStatus
from farm.android.options import HostSettings
from farm.errors import FarmError

if TYPE_CHECKING:
    from farm.android.options import AgentOptions, PolicyName, RunOptions
    from farm.config import FarmConfig
    from farm.llm.loop import Policy
    from farm.llm.model_config import LLMConfig
    from host_agent.phone import Phone
    from host_agent.policy import PhoneBrief
    from host_agent.scripted import Script

POLICY_ENV = "FARM_HOST_POLICY"
"""Environment variable naming the default policy when `--policy` is not given."""


def llm_config(cfg: FarmConfig | None, settings: HostSettings, agent: AgentOptions | None = None) -> LLMConfig:
    """farm.yaml `llm:` < FARM_LLM_* < command-line flags; the run's prices when the model has none configured."""
    from farm.llm.model_config import LLMConfig, ModelPrice

    overrides: dict[str, object] = {
        "model": settings.model, "provider": settings.provider, "base_url": settings.base_url,
        "api_key_env": settings.api_key_env, "reasoning_effort": settings.reasoning_effort,
    }
    try:
        llm = LLMConfig.from_env(overrides, base=cfg.llm if cfg else None)
    except FarmError as exc:
        if "no model configured" in exc.message:
            raise FarmError(
                "--policy model: no model configured",
                hint="pass --provider and --model, set FARM_LLM_PROVIDER/FARM_LLM_MODEL, the llm: section of "
                     "farm.yaml, or use --policy scripted",
            ) from None
        raise
    if llm.pricing is None and agent and agent.price_in is not None and agent.price_out is not None:
        price = ModelPrice(input_per_m=agent.price_in, output_per_m=agent.price_out,
                           cache_read_per_m=agent.price_cached)
        llm = llm.model_copy(update={"pricing": price})
    return llm


class HostExecutor:
    """Runs one phone's tasks one by one with host_agent and writes the eval tree locally.

    A sweep hands it one unit at a time, so what does not change between units is made once: the
    scripts of the scripted policy, and per phone the uiautomator2 connection and the installed
    packages (kept while the phone answers, dropped when it is lost; `close` ends them all).
    """

    name: ExecutorName = "host"

    def __init__(self, cfg: FarmConfig | None = None, settings: HostSettings | None = None) -> None:
        self.cfg = cfg
        self.settings = settings or HostSettings()
        policy = self.settings.policy or os.environ.get(POLICY_ENV, "model")
        if policy not in ("model", "scripted"):
            raise FarmError(f"--policy {policy}: unknown policy", hint="use model or scripted")
        self.policy_name: PolicyName = policy  # type: ignore[assignment]
        if self.policy_name == "model":
            from farm.llm.client import make_client

            # Before any phone is touched or a run directory made: no model, no key, a refused key or an endpoint
            # that does not answer is one line now, not a run of infrastructure errors.
            with make_client(llm_config(cfg, self.settings)) as client:
                client.preflight()
        self._scripts: dict[str, Script] | None = None
        self._sessions: dict[str, tuple[Phone, list[str]]] = {}
        self._guard = threading.Lock()
        self._stopped: str | None = None
        """Set by the first job whose model call stopped dispatch (quota, key): later jobs start no task."""

    @property
    def stopped(self) -> str | None:
        """Why this executor starts no more tasks (the provider's quota or key), or None."""
        with self._guard:
            return self._stopped

    def _policy(self, options: RunOptions) -> tuple[Policy[PhoneBrief], Callable[[], None]]:
        if self.policy_name == "scripted":
            from host_agent.scripted import ScriptedPolicy, load_scripts

            with self._guard:
                if self._scripts is None:
                    self._scripts = load_scripts(self.settings.scripts_dir)
            return ScriptedPolicy(self._scripts), lambda: None
        from farm.llm.client import make_client
        from host_agent.model_policy import ModelPolicy

        client = make_client(llm_config(self.cfg, self.settings, options.agent))
        return ModelPolicy(client, screenshots=self.settings.screenshots), client.close

    def run(self, job: PhoneJob, progress: ProgressSink) -> ExecutorOutcome:
        """Run `job.tasks` in order; a phone that stops answering ends the job (the rest stay unfinished)."""
        from host_agent.evalout import EvalTree
        from host_agent.phone import Phone
        from host_agent.runner import TaskSpec, run_task, skip_task

        outcome = ExecutorOutcome()
        pending = [t.id for t in job.tasks]
        stopped = self.stopped
        if stopped is not None:
            # Another job met the used-up quota (or refused key): a new task would only fail the same way.
            outcome.unfinished = pending
            outcome.infrastructure_error = outcome.stop_dispatch = stopped
            return outcome
        with self._guard:
            # Taken out while in use: one worker per phone, and a lost phone's session is never handed out.
            session = self._sessions.pop(job.serial, None)
        if session is None:
            try:
                session = (Phone.connect(job.device), [str(p) for p in job.device.list_packages()])
            except Exception as exc:  # noqa: BLE001 - PhoneError, or whatever adbutils raises listing packages
                outcome.unfinished = pending
                outcome.infrastructure_error = f"uiautomator2: {exc}"
                return outcome
        phone, installed = session
        execution = "simulated" if job.options.profile_name == "sim" else "live"
        tree = EvalTree(job.raw_dir, job.run_id)
        policy, close = self._policy(job.options)
        try:
            for rt in job.tasks:
                deadline = job.options.deadline_monotonic
                if job.stop is not None and job.stop.is_set():
                    outcome.infrastructure_error = "stopped by the user"
                    break
                if deadline is not None and time.monotonic() > deadline:
                    outcome.infrastructure_error = "run deadline reached"
                    break
                progress.task_started(rt.id)
                spec = TaskSpec(task=rt.task, directory=rt.directory, apps=rt.apps, probes=rt.probes,
                                markers=list(rt.markers), alternatives=rt.alternatives)
                has_script = getattr(policy, "has_script", None)
                if has_script is not None and not has_script(rt.id):
                    skip_task(spec, tree, "scripted policy: no script for this task", execution=execution)
                    pending.remove(rt.id)
                    outcome.finished.append(rt.id)
                    outcome.statuses[rt.id] = "ignored"
                    progress.task_finished(rt.id, "ignored")
                    continue
                report = run_task(spec, phone, policy, tree, execution=execution, installed=installed,
                                  on_takeover=job.options.agent.on_takeover or "cancel",
                                  state_before=job.state_before.get(rt.id))
                status = _status(report.result.outcome, report.result.passed)
                pending.remove(rt.id)
                outcome.finished.append(rt.id)
                outcome.statuses[rt.id] = status
                progress.task_finished(rt.id, status)
                reason = report.evidence.end_reason
                if report.result.outcome == "error" and reason.startswith("phone"):
                    outcome.infrastructure_error = reason
                    progress.note(f"phone lost: {reason}")
                    break
                line = _stop_line(policy)
                if line is not None:
                    self._stop(line, outcome, progress)
                    break
        finally:
            close()
            # A provider stop leaves the phone as healthy as it was: its connection is kept for the resume's jobs.
            if outcome.stop_dispatch is not None or (outcome.infrastructure_error is None and not pending):
                with self._guard:
                    self._sessions[job.serial] = session
            else:
                phone.close()
        outcome.unfinished = pending
        outcome.pulled = True
        return outcome


    def _stop(self, line: str, outcome: ExecutorOutcome, progress: ProgressSink) -> None:
        """Stop dispatch for a reason every phone shares; said once per job, in one line."""
        with self._guard:
            self._stopped = self._stopped or line
        outcome.stop_dispatch = outcome.infrastructure_error = line
        progress.note(f"stopping dispatch: {line}; the unit is kept for --resume")

    def close(self) -> None:
        """End the phones' kept connections."""
        with self._guard:
            sessions, self._sessions = list(self._sessions.values()), {}
        for phone, _installed in sessions:
            phone.close()


def _stop_line(policy: object) -> str | None:
    """The line naming the provider and the reason when the policy's last task ended on a model call that stops
    dispatch (quota, key); None otherwise (a scripted policy never does)."""
    from farm.llm.client import ModelCallError

    failure = getattr(policy, "failure", None)
    if isinstance(failure, ModelCallError) and failure.stops_dispatch:
        return failure.stop_line()
    return None


def _status(outcome: str, passed: bool) -> TestStatus:
    if outcome == "error":
        return "incomplete"
    return "passed" if passed else "failed"


def make_executor(cfg: FarmConfig | None = None, settings: HostSettings | None = None) -> HostExecutor:
    """The lane's entry point (`--executor host`)."""
    return HostExecutor(cfg, settings)
