"""asked_user: whether the agent asked the user (and what it was told)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from farm.results.record import CheckResult
from farm.scoring.evidence import AskEvent
from farm.scoring.text import clip, norm

DONT_KNOW = "I don't know"
"""The reply to a question none of the task's `answers` keys matches."""


def reply_for(question: str, answers: Mapping[str, str]) -> tuple[str, str | None]:
    """The auto reply for a question: the first `answers` key found in it (longest keys first)."""
    q = norm(question)
    for key in sorted(answers, key=len, reverse=True):
        if norm(key) and norm(key) in q:
            return answers[key], key
        # Keys may list alternatives: "谁|哪位|who".
        if "|" in key and any(norm(k) and norm(k) in q for k in re.split(r"\|", key)):
            return answers[key], key
    return DONT_KNOW, None


def asked_user(asks: Sequence[AskEvent], expected: bool = True) -> CheckResult:
    """Pass when the agent asked (expected=True) or did not ask (expected=False)."""
    asked = bool(asks)
    if asked == expected:
        detail = f"asked {len(asks)} time(s): {clip(asks[0].question)!r}" if asked else "did not ask, as expected"
        return CheckResult(type="asked_user", passed=True, detail=detail)
    detail = "never asked the user" if expected else f"asked without need: {clip(asks[0].question)!r}"
    return CheckResult(type="asked_user", passed=False, detail=detail)
