"""Checks on the final answer text: answer_contains, answer_regex."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from farm.results.record import CheckResult
from farm.scoring.text import clip, contains, norm

# Phrases with which an answer says the task cannot be done (matched after normalisation).
_IMPOSSIBLE = re.compile(
    r"无法|不能|做不到|办不到|做不了|不可能|不支持|不存在|没办法|没有办法|并没有|没有这个|没有该|没有此|找不到|不提供|"
    r"\bcannot\b|\bcan't\b|\bcan not\b|\bunable\b|\bimpossible\b|\bnot possible\b|\bisn't possible\b|"
    r"\bdoes not exist\b|\bdoesn't exist\b|\bnot supported\b|\bno such\b|\bnot available\b"
)


def answer_contains(answer: str | None, texts: Sequence[str], *, require_all: bool = True) -> CheckResult:
    """Pass when the answer contains every one (or, with require_all=False, any one) of `texts`."""
    if not answer:
        return CheckResult(type="answer_contains", passed=False, detail="no answer was given")
    found = [t for t in texts if contains(answer, t)]
    missing = [t for t in texts if t not in found]
    passed = bool(texts) and (not missing if require_all else bool(found))
    if passed:
        detail = f"answer contains {', '.join(repr(t) for t in found)}"
    else:
        detail = f"answer lacks {', '.join(repr(t) for t in missing) or repr(list(texts))}: {clip(answer)!r}"
    return CheckResult(type="answer_contains", passed=passed, detail=detail)


def answer_regex(answer: str | None, pattern: str) -> CheckResult:
    """Pass when `pattern` matches somewhere in the (NFKC-normalised) answer."""
    if not answer:
        return CheckResult(type="answer_regex", passed=False, detail="no answer was given")
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        return CheckResult(type="answer_regex", passed=False, detail=f"invalid pattern {pattern!r}: {exc}")
    text = unicodedata.normalize("NFKC", answer)
    match = compiled.search(text) or compiled.search(answer)
    if match:
        return CheckResult(type="answer_regex", passed=True, detail=f"/{pattern}/ matched {match.group(0)!r}")
    return CheckResult(type="answer_regex", passed=False, detail=f"/{pattern}/ not in answer {clip(answer)!r}")


def declares_impossible(answer: str | None) -> bool:
    """Whether an answer says the task cannot be done (seed 003's `expect: failed`: the agent must say so)."""
    return bool(answer) and _IMPOSSIBLE.search(norm(answer or "").replace("’", "'")) is not None
