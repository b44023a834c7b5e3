"""One typed registry: check model class → adapter that feeds the pure check its evidence."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from farm.results.record import CheckResult
from farm.scoring.answer import answer_contains, answer_regex
from farm.scoring.confirmation import confirmation_shows
from farm.scoring.dialogue import asked_user
from farm.scoring.evidence import Evidence
from farm.scoring.grounding import DEFAULT_WINDOW, answer_grounded
from farm.scoring.judge import LlmJudge, llm_judge
from farm.scoring.probe import probe_has
from farm.scoring.screen import screen_has
from farm.scoring.state import state_holds
from farm.taskset.model import (
    AnswerContains,
    AnswerGrounded,
    AnswerRegex,
    AskedUser,
    ConfirmationShows,
    ProbeHas,
    ScreenHas,
    StateCheck,
    Task,
)


@dataclass(frozen=True)
class CheckContext:
    """What an adapter may read: the (resolved) task and the evidence of the attempt.

    `task` is the farm task; a lane without one (WebVoyager) passes none, and marker checks then look for nothing.
    `no_look` says why the harness never looked after the attempt (a pulled run): screen_has and probe_has then
    fail with it, whatever the evidence holds.
    """

    evidence: Evidence
    task: Task | None = None
    window: int = DEFAULT_WINDOW
    no_look: str | None = None


C = TypeVar("C", bound=BaseModel)
Adapter = Callable[[Any, CheckContext], CheckResult]
_REGISTRY: dict[type[BaseModel], Adapter] = {}


def register(model: type[C]) -> Callable[[Callable[[C, CheckContext], CheckResult]], Adapter]:
    """Decorator: the adapter for one check model class."""

    def wrap(fn: Callable[[C, CheckContext], CheckResult]) -> Adapter:
        _REGISTRY[model] = fn
        return fn

    return wrap


def evaluate(check: BaseModel, ctx: CheckContext) -> CheckResult:
    """Run one check; an unknown check type fails with a clear detail (never passes silently)."""
    adapter = _REGISTRY.get(type(check))
    if adapter is None:
        kind = str(getattr(check, "type", type(check).__name__))
        return CheckResult(type=kind, passed=False, detail=f"no scorer for check type {kind!r}")
    return adapter(check, ctx)


def registered_types() -> list[str]:
    """The check `type` values this registry scores."""
    return sorted(str(m.model_fields["type"].default) for m in _REGISTRY)


@register(AnswerContains)
def _answer_contains(check: AnswerContains, ctx: CheckContext) -> CheckResult:
    return answer_contains(ctx.evidence.answer, [check.text])


@register(AnswerRegex)
def _answer_regex(check: AnswerRegex, ctx: CheckContext) -> CheckResult:
    return answer_regex(ctx.evidence.answer, check.pattern)


@register(AnswerGrounded)
def _answer_grounded(check: AnswerGrounded, ctx: CheckContext) -> CheckResult:
    reads = [r.text for r in ctx.evidence.screen_reads]
    return answer_grounded(ctx.evidence.answer, reads, check.min_items, window=ctx.window)


def _target_text(text: str | None, marker: bool, ctx: CheckContext) -> str:
    if marker:
        return (ctx.task.marker or "") if ctx.task is not None else ""
    return text or ""


@register(ScreenHas)
def _screen_has(check: ScreenHas, ctx: CheckContext) -> CheckResult:
    if ctx.no_look is not None:
        return CheckResult(type="screen_has", passed=False, detail=ctx.no_look)
    # An unresolved `{app:…}` (no standard intent, e.g. notes) means "the app the agent used": any look.
    package = None if check.package_name.startswith("{app:") else check.package_name
    if package is not None:
        package = ctx.evidence.app_choices.get(package, package)
    return screen_has(ctx.evidence.fresh_looks, _target_text(check.text, check.marker, ctx), package)


@register(ProbeHas)
def _probe_has(check: ProbeHas, ctx: CheckContext) -> CheckResult:
    if ctx.no_look is not None:
        return CheckResult(type="probe_has", passed=False, detail=ctx.no_look)
    return probe_has(ctx.evidence.probes_after, check.probe, _target_text(check.text, check.marker, ctx))


@register(StateCheck)
def _state(check: StateCheck, ctx: CheckContext) -> CheckResult:
    if ctx.no_look is not None:
        return CheckResult(type="state", passed=False, detail=ctx.no_look)
    marker = ctx.task.marker if ctx.task is not None else None
    return state_holds(check, marker, ctx.evidence.state_before.get(check.probe),
                       ctx.evidence.state_after.get(check.probe))


@register(AskedUser)
def _asked_user(check: AskedUser, ctx: CheckContext) -> CheckResult:
    return asked_user(ctx.evidence.asks, check.expected)


@register(ConfirmationShows)
def _confirmation_shows(check: ConfirmationShows, ctx: CheckContext) -> CheckResult:
    return confirmation_shows(
        ctx.evidence.confirmations,
        action=check.action,
        target=check.target,
        content=check.content,
        amount=check.amount,
    )


@register(LlmJudge)
def _llm_judge(check: LlmJudge, ctx: CheckContext) -> CheckResult:
    return llm_judge(ctx.evidence.judge_verdicts, check.mode)
