"""One attempt at a task: the first screen, then the one agent loop (`farm.llm.loop.run_tool_loop`) over the
phone's tools (`host_agent.session.PhoneSession`), until a terminal tool, a budget, a repeat or trouble."""

from __future__ import annotations

from dataclasses import dataclass, field

from farm.llm.loop import LoopOutcome, Policy, run_tool_loop
from farm.manifest import utc_now
from farm.results.record import RunMetrics, Tokens
from farm.scoring.evidence import EndKind, Evidence
from farm.taskset.model import Task
from host_agent.actions import ActionEnv
from host_agent.phone import Phone, PhoneError
from host_agent.policy import PhoneBrief, PolicyUnavailable, TaskContext
from host_agent.session import MAX_REPEATS, TAKEOVER_POLL_S, Clock, OnTakeover, PhoneSession
from host_agent.transcript import TranscriptWriter

__all__ = ["MAX_REPEATS", "TAKEOVER_POLL_S", "Attempt", "OnTakeover", "run_attempt"]


@dataclass
class Attempt:
    """One attempt's evidence and accounting (scoring and fresh looks come after)."""

    evidence: Evidence
    metrics: RunMetrics
    tokens: Tokens = field(default_factory=Tokens)
    cost_usd: float | None = None
    started_at: str = ""
    ended_at: str = ""
    takeover_wait: str | None = None
    """With `wait`: how the wait for the user ended ("login cleared after …" or "the wait timed out …")."""


def run_attempt(
    ctx: TaskContext,
    phone: Phone,
    policy: Policy[PhoneBrief],
    writer: TranscriptWriter,
    env: ActionEnv,
    *,
    max_repeats: int = MAX_REPEATS,
    on_takeover: OnTakeover = "cancel",
    poll_s: float = TAKEOVER_POLL_S,
) -> Attempt:
    """Drive one task to its end and return the evidence; never raises for phone or model trouble.

    `on_takeover="wait"`: a hand-over does not end the attempt at once; the screen is polled until
    the barrier's words are gone (the user resumes the task) or the task's time budget runs out.
    """
    task = ctx.task
    started_at = utc_now()
    clock = Clock()
    # The one thing the lane asks of a phone policy besides the protocol: whether its screens carry a JPEG.
    screenshots = bool(getattr(policy, "wants_screenshots", False))
    session = PhoneSession(phone, writer, env, clock, screenshots=screenshots, timeout_sec=task.timeout_sec,
                           max_repeats=max_repeats, on_takeover=on_takeover, poll_s=poll_s)
    end: EndKind = "error"
    end_reason = ""
    try:
        brief = PhoneBrief(ctx=ctx, screen=session.read(0))
        outcome = run_tool_loop(policy, brief, session, max_steps=task.max_steps, hooks=session,
                                expired=lambda: clock.now_ms() > task.timeout_sec * 1000)
        end, end_reason = _end(outcome, session, task)
    except PhoneError as exc:
        end, end_reason = "error", f"phone: {exc}"
    except PolicyUnavailable as exc:
        end, end_reason = "error", f"policy: {exc}"
    total = clock.now_ms()
    metrics = RunMetrics(
        first_feedback_ms=clock.first_feedback,
        round_trips=session.round_trips,
        model_ms=clock.model,
        screen_read_ms=clock.screen,
        action_ms=clock.action,
        other_ms=max(0.0, total - clock.model - clock.screen - clock.action),
        total_ms=total,
    )
    ev = Evidence(
        end=end, answer=session.answer, end_reason=end_reason, screen_reads=session.reads, asks=session.asks,
        confirmations=session.cards, hand_over=session.hand_over, packages_used=session.packages,
        steps=session.steps, step_errors=session.step_errors,
    )
    return Attempt(
        evidence=ev,
        metrics=metrics,
        tokens=session.tokens,
        cost_usd=session.cost if (session.round_trips and session.cost_known) else None,
        started_at=started_at,
        ended_at=utc_now(),
        takeover_wait=session.takeover_wait,
    )


def _end(outcome: LoopOutcome, session: PhoneSession, task: Task) -> tuple[EndKind, str]:
    """The evidence's end kind and reason for how the loop ended."""
    if outcome.status == "halted":
        if session.end is not None:  # a terminal tool or a repeat
            return session.end, session.end_reason
        halt = outcome.halt
        return "error", f"halted: {halt.detail if halt else ''}"
    if outcome.status == "max_steps":
        return "max_steps", f"{task.max_steps} steps"
    if outcome.status == "timeout":
        return "timeout", f"{task.timeout_sec} s"
    if outcome.status == "model_error":
        return "error", f"model: {outcome.error.line() if outcome.error else 'failed'}"
    # "completed": the phone ends a task only through a terminal tool, so stopping without one is the policy's fault.
    return "error", "policy: stopped without a terminal tool (answer, give_up, hand_over or confirm)"
