"""score(task, evidence): the verdict on one attempt, shared by both executors."""

from __future__ import annotations

from farm.results.record import CheckResult, EndReason, Outcome
from farm.scoring.answer import declares_impossible
from farm.scoring.evidence import EndKind, Evidence, ScoreResult
from farm.scoring.grounding import DEFAULT_WINDOW
from farm.scoring.registry import CheckContext, evaluate
from farm.scoring.takeover import judge_hand_over
from farm.taskset.model import Task

# Which failure category a failed check points to (seed 003: perception, route, barrier, app_state…).
_CHECK_CATEGORY = {
    "answer_contains": "perception",
    "answer_regex": "perception",
    "answer_grounded": "perception",
    "confirmation_shows": "perception",
    "screen_has": "app_state",
    "probe_has": "app_state",
    "state": "app_state",
    "asked_user": "clarification",
}
_END_REASON: dict[EndKind, EndReason | None] = {
    "answer": "answer", "give_up": "give_up", "hand_over": "takeover", "confirmation": "confirm",
    "max_steps": "max_steps", "timeout": "timeout", "repeat": "repeat", "error": "error", "unknown": None,
}
_END_WORDS = {
    "give_up": "the agent gave up",
    "max_steps": "step budget exhausted",
    "timeout": "time budget exhausted",
    "repeat": "the same action repeated on the same screen",
    "unknown": "the transcript does not say how the attempt ended",
}


def end_reason(end: EndKind) -> EndReason | None:
    """The record's end reason for how the harness saw the attempt end (null when the transcript did not say)."""
    return _END_REASON[end]


def declared_impossible(evidence: Evidence) -> bool:
    """Whether the agent itself declared the task impossible: give-up, or an answer saying it cannot be done."""
    return evidence.end == "give_up" or (evidence.end == "answer" and declares_impossible(evidence.answer))


def score(task: Task, evidence: Evidence, *, window: int = DEFAULT_WINDOW, no_look: str | None = None) -> ScoreResult:
    """Outcome from how the attempt ended (takeover rule applied), checks from evidence, verdict.

    `passed` means the outcome equals the task's `expect` and every check passed. A check that reached no
    verdict makes the outcome `error` (category `unjudged`), whatever the other checks say. An answer whose
    checks fail is a `failed` outcome: `succeeded` needs evidence, not the agent's claim. For
    `expect: failed` the agent must declare the task impossible (give up, or answer that it cannot
    be done); running out of steps, time or repeating itself never passes. `no_look`: why the harness never
    looked after the attempt (a pulled run); its screen_has and probe_has checks fail with that reason.
    """
    ended_by = end_reason(evidence.end)
    if evidence.end == "error":
        return ScoreResult(
            outcome="error",
            passed=False,
            reasons=[evidence.end_reason or "infrastructure error"],
            failure_category="infrastructure",
            end_reason=ended_by,
        )
    ctx = CheckContext(task=task, evidence=evidence, window=window, no_look=no_look)
    checks = [evaluate(check, ctx) for check in task.checks]
    unjudged = [c for c in checks if c.passed is None]
    if unjudged:
        # A check without a verdict (an LLM judge that could not answer) says nothing about the agent: the attempt
        # is not scored, and stays in the denominator as an error, never as a pass or an agent failure.
        return ScoreResult(
            outcome="error",
            passed=False,
            checks=checks,
            reasons=[f"{c.type} reached no verdict: {c.detail}" for c in unjudged],
            failure_category="unjudged",
            end_reason=ended_by,
        )
    failed_checks = [c for c in checks if c.passed is False]
    reasons = [f"{c.type}: {c.detail}" for c in failed_checks]
    takeover_kind: str | None = None
    category: str | None = None
    outcome: Outcome
    declared = declared_impossible(evidence)
    if evidence.end == "answer" and task.expect == "failed" and declared:
        outcome = "failed"
    elif evidence.end == "answer":
        outcome = "succeeded" if not failed_checks else "failed"
    elif evidence.end == "confirmation":
        outcome = "confirmation"
    elif evidence.end == "hand_over" and evidence.hand_over is not None:
        verdict = judge_hand_over(evidence.hand_over, requires=task.requires, accept_on=task.accept_takeover_on)
        if verdict.accepted:
            outcome, takeover_kind = "takeover", verdict.kind
        else:
            outcome, category = "failed", "barrier"
            reasons.insert(0, verdict.reason)
    else:
        outcome = "failed"
        why = _END_WORDS.get(evidence.end, evidence.end)
        reasons.insert(0, f"{why}: {evidence.end_reason}" if evidence.end_reason else why)
    passed = outcome == task.expect and not failed_checks
    if passed and task.expect == "failed" and not declared:
        passed = False
        reasons.insert(0, "expected the agent to declare the task impossible; it never did (ended by "
                          f"{ended_by or 'an unknown end'})")
    if not passed:
        if outcome != task.expect:
            reasons.insert(0, f"expected {task.expect}, got {outcome}")
        category = category or _category(task, evidence, outcome, failed_checks)
    return ScoreResult(
        outcome=outcome,
        passed=passed,
        checks=checks,
        reasons=reasons,
        failure_category=category,
        takeover_kind=takeover_kind,
        end_reason=ended_by,
    )


def _category(task: Task, evidence: Evidence, outcome: Outcome, failed_checks: list[CheckResult]) -> str:
    if outcome == "takeover" or task.expect == "takeover":
        return "barrier"
    # Budgets, repeats and giving up where success was possible are route failures, whatever the checks say.
    if evidence.end in ("max_steps", "timeout", "repeat") or (evidence.end == "give_up" and outcome != task.expect):
        return "route"
    if failed_checks:
        return _CHECK_CATEGORY.get(failed_checks[0].type, "perception")
    return "route"
