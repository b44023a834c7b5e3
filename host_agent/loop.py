"""The agent loop: read the screen, ask the policy, act, until a terminal tool, a budget, or a repeat."""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from farm.manifest import utc_now
from farm.results.record import RunMetrics, Tokens
from farm.scoring.evidence import AskEvent, ConfirmationCard, EndKind, Evidence, HandOver, ScreenRead
from farm.scoring.takeover import barrier_kind, barrier_visible
from farm.scoring.transcript import ActionLine, ObservationLine, ResultLine, StepLine, StepTimings
from host_agent import tools as t
from host_agent.actions import ActionEnv, perform
from host_agent.observation import Observation
from host_agent.phone import Phone, PhoneError
from host_agent.policy import Decision, ModelUnavailable, Policy, PolicyUnavailable, TaskContext
from host_agent.transcript import TranscriptWriter

MAX_REPEATS = 5
"""The same action on the same screen this many times ends the attempt."""
TAKEOVER_POLL_S = 1.0
"""How often the screen is read while waiting for the user to clear a barrier (`--on-takeover wait`)."""

OnTakeover = Literal["cancel", "wait"]


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


class _Clock:
    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.model = self.screen = self.action = 0.0
        self.first_feedback: float | None = None
        self.waited = 0.0

    def now_ms(self) -> float:
        return (time.perf_counter() - self.start) * 1000


def _read(phone: Phone, policy: Policy, clock: _Clock, writer: TranscriptWriter) -> tuple[Observation, float]:
    t0 = time.perf_counter()
    obs = phone.read(screenshot=policy.wants_screenshots)
    took = (time.perf_counter() - t0) * 1000
    clock.screen += took
    if obs.screenshot is None and writer.wants_screenshot():
        # For the transcript only, so not the agent's screen-reading time; a phone that cannot give one
        # still runs the task (the step then names no screenshot).
        try:
            obs.screenshot = phone.screenshot_jpeg()
        except (PhoneError, ValueError):  # ValueError: an answer that is not base64
            pass
    return obs, took


def run_attempt(
    ctx: TaskContext,
    phone: Phone,
    policy: Policy,
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
    clock = _Clock()
    reads: list[ScreenRead] = []
    asks: list[AskEvent] = []
    cards: list[ConfirmationCard] = []
    hand_over: HandOver | None = None
    answer: str | None = None
    tokens, cost, cost_known, round_trips = Tokens(), 0.0, True, 0
    packages: list[str] = []
    repeats: Counter[tuple[str, str, str]] = Counter()
    end: EndKind = "error"
    end_reason = ""
    step = step_errors = 0
    takeover_wait: str | None = None

    def remember(obs: Observation, at_step: int) -> None:
        reads.append(ScreenRead(step=at_step, text=obs.text, package=obs.package, activity=obs.activity))
        if obs.package and obs.package not in packages:
            packages.append(obs.package)

    try:
        obs, read_ms = _read(phone, policy, clock, writer)
        remember(obs, 0)
        policy.begin(ctx)
        feedback: str | None = None
        while True:
            if step >= task.max_steps:
                end, end_reason = "max_steps", f"{task.max_steps} steps"
                break
            if clock.now_ms() > task.timeout_sec * 1000:
                end, end_reason = "timeout", f"{task.timeout_sec} s"
                break
            at_ms = clock.now_ms()
            t0 = time.perf_counter()
            decision: Decision = policy.decide(obs, feedback)
            decide_ms = decision.model_ms or (time.perf_counter() - t0) * 1000
            clock.model += decide_ms
            if decision.tokens is not None:
                # A model call without usage makes the total unknown; it is never summed as 0.
                tokens = decision.tokens if not round_trips else tokens.plus(decision.tokens)
            round_trips += decision.round_trips
            if decision.round_trips:
                if decision.cost_usd is None:
                    cost_known = False
                else:
                    cost += decision.cost_usd
            step += 1
            shot = writer.screenshot(obs.screenshot)
            obs_line = ObservationLine(digest=obs.digest, text=obs.text, package=obs.package,
                                       activity=obs.activity, screenshot=shot)
            args: t._Args | None = None
            error = decision.error
            if error is None:
                try:
                    args = t.parse_call(decision.tool, decision.arguments)
                except t.ToolCallError as exc:
                    error = str(exc)
            action_line = ActionLine(tool=decision.tool, args=_args_dict(decision.arguments),
                                     raw=None if _parses(decision.arguments) else decision.arguments,
                                     message=decision.text or None)
            timings = StepTimings(screen_read_ms=read_ms, model_ms=decide_ms)
            if args is None:
                step_errors += 1
                writer.step(StepLine(step=step, at_ms=at_ms, observation=obs_line, action=action_line,
                                     result=ResultLine(ok=False, text=f"error: {error}", error=error),
                                     timings=timings, tokens=decision.tokens))
                feedback, read_ms = f"error: {error}", 0.0
                continue
            key = (obs.digest, decision.tool, json.dumps(args.model_dump(), sort_keys=True))
            repeats[key] += 1
            if repeats[key] >= max_repeats:
                writer.step(StepLine(step=step, at_ms=at_ms, observation=obs_line, action=action_line,
                                     result=ResultLine(ok=False, text="not performed: repeated on the same screen"),
                                     timings=timings, tokens=decision.tokens))
                end, end_reason = "repeat", f"{decision.tool} {max_repeats} times on the same screen"
                break
            result = perform(args, obs, phone, env, step)
            clock.action += result.action_ms
            if clock.first_feedback is None:
                clock.first_feedback = clock.now_ms()
            timings.action_ms = result.action_ms
            timings.other_ms = result.waited_ms
            if result.ask:
                asks.append(result.ask)
            if result.card:
                cards.append(result.card)
            hand_over = result.hand_over or hand_over
            answer = result.answer if result.answer is not None else answer
            if not result.ok:
                step_errors += 1
            if result.end == "hand_over" and result.hand_over is not None and on_takeover == "wait":
                cleared, takeover_wait = _wait_for_user(result.hand_over, phone, clock, task.timeout_sec, poll_s)
                if cleared:
                    result.end = None
                    result.text = f"the user completed the hand-over ({takeover_wait}); continue the task"
                else:
                    result.end_reason += f"; waited for the user: {takeover_wait}"
                timings.other_ms += clock.waited
            writer.step(StepLine(step=step, at_ms=at_ms, observation=obs_line, action=action_line,
                                 result=ResultLine(ok=result.ok, text=result.text, error=result.error),
                                 timings=timings, tokens=decision.tokens))
            if result.end is not None:
                end, end_reason = result.end, result.end_reason
                break
            obs, read_ms = _read(phone, policy, clock, writer)
            remember(obs, step)
            feedback = result.text if result.ok else f"error: {result.error}"
    except PhoneError as exc:
        end, end_reason = "error", f"phone: {exc}"
    except ModelUnavailable as exc:
        end, end_reason = "error", f"model: {exc}"
    except PolicyUnavailable as exc:
        end, end_reason = "error", f"policy: {exc}"
    total = clock.now_ms()
    metrics = RunMetrics(
        first_feedback_ms=clock.first_feedback,
        round_trips=round_trips,
        model_ms=clock.model,
        screen_read_ms=clock.screen,
        action_ms=clock.action,
        other_ms=max(0.0, total - clock.model - clock.screen - clock.action),
        total_ms=total,
    )
    ev = Evidence(
        end=end, answer=answer, end_reason=end_reason, screen_reads=reads, asks=asks, confirmations=cards,
        hand_over=hand_over, packages_used=packages, steps=step, step_errors=step_errors,
    )
    return Attempt(
        evidence=ev,
        metrics=metrics,
        tokens=tokens,
        cost_usd=cost if (round_trips and cost_known) else None,
        started_at=started_at,
        ended_at=utc_now(),
        takeover_wait=takeover_wait,
    )


def _wait_for_user(
    hand: HandOver, phone: Phone, clock: _Clock, timeout_sec: float, poll_s: float
) -> tuple[bool, str]:
    """Poll the screen until the barrier named by the hand-over is gone (True) or the budget runs out."""
    kind = barrier_kind(hand.reason)
    t0 = time.perf_counter()
    try:
        while True:
            # Reads while waiting are the user's time, not the agent's screen reading.
            if not barrier_visible(kind, phone.read(screenshot=False).text):
                return True, f"{kind} cleared after {time.perf_counter() - t0:.1f} s"
            left = timeout_sec - clock.now_ms() / 1000
            if left <= 0:
                return False, f"the wait timed out after {time.perf_counter() - t0:.1f} s ({kind} still on screen)"
            time.sleep(min(poll_s, left))
    finally:
        clock.waited = (time.perf_counter() - t0) * 1000


def _parses(arguments: str) -> bool:
    try:
        return isinstance(json.loads(arguments or "{}"), dict)
    except json.JSONDecodeError:
        return False


def _args_dict(arguments: str) -> dict[str, object]:
    try:
        value = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
