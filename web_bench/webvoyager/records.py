"""The WebVoyager lane's records in the farm: one record per selected task in the shared schema, so
`farm report`, `farm query` and `farm history` see it like any lane (the lane appends them through the run
store, `farm.results.store`)."""

from __future__ import annotations

from farm.results.record import Outcome, Record, RunMetrics
from farm.scoring.evidence import EndKind, Evidence, JudgeEvidence
from farm.scoring.judge import LlmJudge
from farm.scoring.registry import CheckContext, evaluate
from farm.scoring.score import end_reason
from web_bench.webvoyager.model import AgentStatus, JudgeMode, TaskView, WvTask

_END_KIND: dict[AgentStatus, EndKind] = {"completed": "answer", "timeout": "timeout", "step_limit": "max_steps",
                                         "error": "error"}
INFRA_KINDS = frozenset({"quota", "auth", "service_unavailable", "browser_error", "interrupted", "internal"})
"""Error kinds that are the service's or the harness's, not the agent's."""


def to_record(run_id: str, task: WvTask, view: TaskView | None, judge_mode: JudgeMode | None = None) -> Record:
    """The farm record of one selected task: missing and unjudged tasks stay in the denominator as errors.

    The judge verdict is evidence (the judge adapter gathered it after the attempt); the registry's `llm_judge`
    check reads it. The check's judge is `judge_mode` when the caller names one (not `none`), else the verdict's;
    with neither there is no check.
    """
    if view is None:
        return Record(run=run_id, lane="webvoyager", device="chromium", task_id=task.task_id, category=task.site,
                      outcome="error", passed=False, reasons=["missing: no agent result"],
                      failure_kind="infrastructure", failure_category="missing", execution="live")
    agent, verdict = view.agent, view.judge
    mode = verdict.mode if verdict else None
    if judge_mode == "reference" or judge_mode == "evidence":
        mode = judge_mode
    evidence = Evidence(
        end=_END_KIND[agent.status], answer=agent.final_answer, end_reason=agent.error or "", steps=agent.steps,
        step_errors=agent.failed_steps,
        judge_verdicts=[JudgeEvidence(mode=verdict.mode, passed=verdict.passed, reason=verdict.reason,
                                      judge_error=verdict.judge_error)] if verdict else [],
    )
    check = evaluate(LlmJudge(mode=mode), CheckContext(evidence=evidence)) if mode is not None else None
    outcome: Outcome
    category: str | None = None
    if agent.error_kind in INFRA_KINDS or agent.error_kind == "website_unavailable":
        outcome, category = "error", agent.error_kind
    elif check is None or check.passed is None:
        outcome, category = "error", "unjudged"
    else:
        outcome = "succeeded" if check.passed else "failed"
    reasons = [r for r in (agent.error, verdict.reason if verdict else None,
                           verdict.judge_error if verdict else None) if r]
    if check is not None and check.passed is None and not (verdict and verdict.judge_error):
        reasons.append(check.detail)
    checks = [check] if check is not None else []
    costs = [agent.usage.cost_usd, verdict.usage.cost_usd if verdict else 0.0]
    return Record(
        run=run_id, lane="webvoyager", device="chromium", task_id=task.task_id, category=task.site,
        outcome=outcome, passed=outcome == "succeeded", checks=checks, answer=agent.final_answer, reasons=reasons,
        end_reason=end_reason(evidence.end),
        failure_kind=None if outcome == "succeeded" else ("agent" if outcome == "failed" else "infrastructure"),
        failure_category=category, steps=agent.steps, attempt=agent.attempt,
        metrics=RunMetrics(round_trips=agent.model_rounds, total_ms=agent.duration_ms),
        tokens=agent.usage.tokens or agent.usage.tokens_observed.model_copy(),
        cost_usd=None if any(c is None for c in costs) else sum(c for c in costs if c is not None),
        execution="live", started_at=agent.started_at, ended_at=agent.finished_at,
        extra={"site": task.site, "status": agent.status, "errorKind": agent.error_kind,
               "modelRounds": agent.model_rounds, "provenanceRun": view.provenance_run},
    )
