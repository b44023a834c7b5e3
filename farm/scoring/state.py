"""state: the phone's own state, read by the harness with a catalogue probe before and after the attempt.

Pure functions over two readings (`ProbeReading`: the parsed value, or the phone's refusal, or why it could not be
read). A reading the phone refused or that could not be read gives no verdict (`passed` None: the attempt is not
scored, never an agent failure); so does a value of the wrong shape (a number in an unexpected locale, rows from a
probe that gives none). Text is matched as whole tokens, so `7` is not found in `17` nor a marker in a longer one.
Every detail quotes the values it compared.
"""

from __future__ import annotations

import json
import re

from farm.results.record import CheckResult
from farm.scoring.evidence import ProbeReading
from farm.scoring.text import clip
from farm.taskset.model import BEFORE_OPS, StateCheck
from farm.taskset.probes import probe_rows

_TYPE = "state"
_NUMBER = re.compile(r"-?\d+(\.\d+)?")


def has_token(text: str, needle: str) -> bool:
    """`needle` occurs in `text` with no letter or digit glued to either end (case-sensitive, as a probe's values
    are exact)."""
    if not needle:
        return False
    start = 0
    while (at := text.find(needle, start)) >= 0:
        before = text[at - 1] if at > 0 else ""
        after = text[at + len(needle)] if at + len(needle) < len(text) else ""
        if not (before.isalnum() and needle[0].isalnum()) and not (after.isalnum() and needle[-1].isalnum()):
            return True
        start = at + 1
    return False


def _rows(value: str) -> list[dict[str, str]] | None:
    """A rows probe's value decoded (`farm.taskset.probes.probe_rows`); None when the value is not rows."""
    try:
        return probe_rows(value)
    except ValueError:
        return None


def _matching(rows: list[dict[str, str]], where: dict[str, str]) -> list[dict[str, str]]:
    return [r for r in rows if all(has_token(r.get(k, ""), v) for k, v in where.items())]


def _where_words(where: dict[str, str]) -> str:
    return ", ".join(f"{k} ∋ {v!r}" for k, v in where.items())


class _NoVerdict(Exception):
    """The reading says nothing about the agent: why, in words."""


_MISSING = "No such file or directory"
"""How toybox says a path is not there: for a file the task asks for, that is the state, not a refusal."""


def _read(reading: ProbeReading | None, probe: str, when: str) -> str:
    if reading is None:
        raise _NoVerdict(f"{probe} was not read {when} the attempt")
    if reading.refused is not None and when == "after" and _MISSING in reading.refused:
        raise _Fail(f"{probe}: no such file or directory after the attempt")
    if reading.refused is not None:
        raise _NoVerdict(f"the phone refused {probe} {when} the attempt: {clip(reading.refused)}")
    if reading.value is None:
        raise _NoVerdict(f"{probe} could not be read {when} the attempt: {clip(reading.error or 'no value')}")
    return reading.value


def _pick(check: StateCheck, value: str, when: str) -> str:
    """The compared value: the probe's value, or `field` of the one row `where` selects."""
    if not check.where:
        return value
    rows = _rows(value)
    if rows is None:
        raise _NoVerdict(f"{check.probe} gives no rows {when} the attempt: {clip(value)!r}")
    if check.field is None:
        return value
    found = _matching(rows, check.where)
    if len(found) != 1:
        raise _Fail(f"{len(found)} rows of {check.probe} with {_where_words(check.where)} {when} the attempt "
                    "(one expected)")
    if check.field not in found[0]:
        raise _NoVerdict(f"{check.probe} rows have no field {check.field!r}")
    return found[0][check.field]


class _Fail(Exception):
    """The state does not hold: why, in words (quoting the values)."""


def _number(value: str, probe: str, when: str) -> float:
    if not _NUMBER.fullmatch(value.strip()):
        raise _NoVerdict(f"{probe} {when} the attempt is not a number: {clip(value)!r}")
    return float(value)


def _verdict(check: StateCheck, target: str, before: ProbeReading | None, after: ProbeReading | None) -> str:
    """What held, in words; raises _Fail or _NoVerdict otherwise."""
    probe = check.probe
    now_raw = _read(after, probe, "after")
    if check.op in ("row", "count_changed"):
        rows_after = _rows(now_raw)
        if rows_after is None:
            raise _NoVerdict(f"{probe} gives no rows after the attempt: {clip(now_raw)!r}")
        found = _matching(rows_after, check.where)
        if check.op == "row":
            if not found:
                raise _Fail(f"no row of {probe} with {_where_words(check.where)} after the attempt "
                            f"({len(rows_after)} rows)")
            row = clip(json.dumps(found[0], ensure_ascii=False))
            return f"{probe} has a row with {_where_words(check.where)}: {row}"
        rows_before = _rows(_read(before, probe, "before"))
        if rows_before is None:
            raise _NoVerdict(f"{probe} gave no rows before the attempt")
        was = len(_matching(rows_before, check.where))
        change = len(found) - was
        words = f"rows of {probe} with {_where_words(check.where)}: {was} before, {len(found)} after"
        if change != check.by:
            raise _Fail(f"{words} (changed by {change:+d}, expected {check.by:+d})")
        return f"{words} (changed by {change:+d})"
    now = _pick(check, now_raw, "after")
    if check.op == "equals":
        if now.strip() != target.strip():
            raise _Fail(f"{probe} is {clip(now)!r} after the attempt, expected {clip(target)!r}")
        return f"{probe} is {clip(now)!r}"
    if check.op == "contains":
        if not has_token(now, target):
            raise _Fail(f"{probe} lacks {clip(target)!r} after the attempt: {clip(now)!r}")
        return f"{probe} shows {clip(target)!r}"
    if check.op == "matches":
        if re.fullmatch(target, now.strip()) is None:
            raise _Fail(f"{probe} is {clip(now)!r} after the attempt, which does not match {clip(target)!r}")
        return f"{probe} is {clip(now)!r}, matching {clip(target)!r}"
    then = _pick(check, _read(before, probe, "before"), "before")
    words = f"{probe}: {clip(then)!r} before, {clip(now)!r} after"
    if check.op == "changed":
        if then.strip() == now.strip():
            raise _Fail(f"{words}: unchanged")
        if check.before is not None and then.strip() != check.before.strip():
            raise _Fail(f"{words}: expected to start from {clip(check.before)!r}")
        if target and now.strip() != target.strip():
            raise _Fail(f"{words}: expected to end as {clip(target)!r}")
        return f"{words}: changed"
    a, b = _number(then, probe, "before"), _number(now, probe, "after")
    rose = b > a if check.op == "increased" else b < a
    if not rose:
        raise _Fail(f"{words}: not {check.op}")
    return f"{words}: {check.op}"


def state_holds(check: StateCheck, marker: str | None, before: ProbeReading | None,
                after: ProbeReading | None) -> CheckResult:
    """The verdict of one (resolved) state check on the readings of its probe before and after the attempt."""
    target = (marker or "") if check.marker else (check.value or "")
    where = {k: (marker or "") if v == "{marker}" else v for k, v in check.where.items()}
    check = check.model_copy(update={"where": where})
    if (check.marker or "{marker}" in check.where.values()) and not marker:
        return CheckResult(type=_TYPE, passed=False, detail="the task has no marker to look for")
    try:
        return CheckResult(type=_TYPE, passed=True, detail=_verdict(check, target, before, after))
    except _Fail as exc:
        return CheckResult(type=_TYPE, passed=False, detail=str(exc))
    except _NoVerdict as exc:
        return CheckResult(type=_TYPE, passed=None, detail=str(exc))


def needs_before(check: StateCheck) -> bool:
    """Whether the check compares with the reading taken just before the attempt."""
    return check.op in BEFORE_OPS
