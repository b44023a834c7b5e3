"""One task end to end on one phone: attempt, the harness's own looks, score, transcript, eval tree."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from farm.llm.loop import Policy
from farm.results.device_line import DeviceCheck, DeviceMetrics, DeviceTokens, WrittenScore
from farm.scoring import score
from farm.scoring.evidence import Evidence, ProbeReading, ScoreResult
from farm.scoring.transcript import FinalFile
from farm.taskset.model import Task
from host_agent.actions import ActionEnv
from host_agent.evalout import EvalTree
from host_agent.loop import Attempt, OnTakeover, run_attempt
from host_agent.phone import Phone, PhoneError
from host_agent.policy import PhoneBrief, TaskContext
from host_agent.transcript import TranscriptWriter
from host_agent.verify import verify

_HOME_PACKAGES = ("com.android.launcher3", "com.android.systemui")


@dataclass(frozen=True)
class TaskSpec:
    """A task resolved for one phone (what the executor's ResolvedTask carries)."""

    task: Task
    directory: str = ""
    apps: Mapping[str, str] = field(default_factory=dict)
    probes: Mapping[str, str] = field(default_factory=dict)
    markers: list[str] = field(default_factory=list)
    alternatives: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Resolved capability package → the packages handling that capability (the agent may use any)."""


@dataclass
class TaskReport:
    """What running one task produced."""

    line: WrittenScore
    result: ScoreResult
    evidence: Evidence
    attempt: Attempt


def run_task(
    spec: TaskSpec,
    phone: Phone,
    policy: Policy[PhoneBrief],
    tree: EvalTree,
    *,
    execution: str = "live",
    installed: Iterable[str] = (),
    on_takeover: OnTakeover = "cancel",
    state_before: Mapping[str, ProbeReading] | None = None,
) -> TaskReport:
    """Run, verify, score and record one task; phone trouble becomes an `error` outcome, never a raise.

    `on_takeover="wait"` waits for the user to clear a barrier the agent handed over (see run_attempt).
    `state_before`: the task's state probes as the harness read them just before (`host_agent.state_probes`).
    """
    task = spec.task
    known = frozenset(installed)
    writer = TranscriptWriter(tree.root / task.id / "run")
    env = ActionEnv(answers=task.answers, apps=spec.apps, installed=known)
    try:
        # Every task starts from the home screen with its apps closed, whatever the last task left.
        for package in task.apps:
            if "{" not in package and (not known or package in known):
                phone.stop(package)
        phone.press("home")
        attempt = run_attempt(TaskContext(task=task, apps=spec.apps), phone, policy, writer, env,
                              on_takeover=on_takeover)
    except PhoneError as exc:  # the phone was gone before the first read
        writer.close()
        attempt = _failed_start(str(exc))
    evidence = attempt.evidence.model_copy(
        update={"probes": dict(spec.probes), "state_before": dict(state_before or {})})
    try:
        evidence = verify(task, evidence, phone, installed=known, alternatives=spec.alternatives)
    except PhoneError as exc:
        evidence = evidence.model_copy(update={"end": "error", "end_reason": f"phone (verification): {exc}"})
    result = score(task, evidence)
    if evidence.end == "hand_over" and attempt.takeover_wait:
        waited = f"waited for the user: {attempt.takeover_wait}"
        result = result.model_copy(update={"reasons": [*result.reasons, waited]})
    writer.final(FinalFile(
        task_id=task.id, run=tree.run, evidence=evidence, outcome=result.outcome, passed=result.passed,
        checks=result.checks, reasons=result.reasons, failure_category=result.failure_category,
        takeover_kind=result.takeover_kind, metrics=attempt.metrics, tokens=attempt.tokens,
        cost_usd=attempt.cost_usd,
    ))
    used = [p for p in evidence.packages_used if p not in _HOME_PACKAGES]
    tokens = attempt.tokens
    line = WrittenScore(
        id=task.id, category=spec.directory or task.category, partition=task.partition, expect=task.expect,
        outcome=result.outcome, passed=result.passed,
        checks=[DeviceCheck(type=c.type, passed=c.passed, detail=c.detail) for c in result.checks],
        answer=evidence.answer, reason="; ".join(result.reasons) or None, failure_category=result.failure_category,
        takeover_kind=result.takeover_kind, end_reason=result.end_reason, steps=evidence.steps,
        tokens=DeviceTokens(input=tokens.input_new, cache_read=tokens.cache_read, cache_write=tokens.cache_write,
                          output=tokens.output),
        cost_usd=attempt.cost_usd, metrics=DeviceMetrics.of(attempt.metrics), markers=list(spec.markers),
        execution=execution, started_at=attempt.started_at, ended_at=attempt.ended_at,
        app_package=used[-1] if used else None,
    )
    tree.add(line)
    return TaskReport(line=line, result=result, evidence=evidence, attempt=attempt)


def skip_task(spec: TaskSpec, tree: EvalTree, reason: str, *, execution: str = "live",
              failure_category: str | None = None) -> WrittenScore:
    """Record a task the executor will not run (e.g. no script for it, or its goal already held: `failure_category`
    `invalid_start`), with its reason."""
    from farm.manifest import utc_now

    task, now = spec.task, utc_now()
    line = WrittenScore(id=task.id, category=spec.directory or task.category, partition=task.partition,
                     expect=task.expect, outcome="skipped", passed=False, reason=reason, execution=execution,
                     started_at=now, ended_at=now, failure_category=failure_category)
    tree.add(line)
    return line


def _failed_start(reason: str) -> Attempt:
    from farm.manifest import utc_now
    from farm.results.record import RunMetrics

    now = utc_now()
    return Attempt(evidence=Evidence(end="error", end_reason=f"phone: {reason}"), metrics=RunMetrics(),
                   started_at=now, ended_at=now)
