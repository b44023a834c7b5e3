"""On-device `scores.jsonl` lines (camelCase, `farm.results.device_line`) → `Record`s.

Nothing the phone wrote is dropped: fields this schema does not model go to `Record.extra`; an
outcome it does not know becomes an `error` record. Nothing it wrote is trusted either: a line that is
not valid JSON, is nested too deeply, or carries a number out of the record's range (negative or
absurd tokens, cost, times, counts; NaN or infinity) becomes an `error` record naming the line and the
field, and the other lines are kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import cast, get_args

from pydantic import BaseModel, JsonValue, ValidationError
from pydantic_core import from_json

from farm.results.device_line import DeviceScore
from farm.results.record import (
    CheckResult,
    EndReason,
    Execution,
    Executor,
    Expect,
    Outcome,
    Partition,
    Record,
    RunMetrics,
    Tokens,
)

_OUTCOMES: tuple[str, ...] = get_args(Outcome)
_EXPECTS: tuple[str, ...] = get_args(Expect)
_PARTITIONS: tuple[str, ...] = get_args(Partition)
_EXECUTIONS: tuple[str, ...] = get_args(Execution)
_END_REASONS: tuple[str, ...] = get_args(EndReason)
_ID_IN_TEXT = re.compile(r'"id"\s*:\s*"([^"\\]{1,200})"')


@dataclass(frozen=True)
class Context:
    """What the lane knows about the records of one phone's eval tree."""

    run: str
    device: str
    split: str | None = None
    executor: Executor | None = None
    execution: Execution = "live"
    attempt: int = 1
    categories: dict[str, str] | None = None
    """Task id → task directory (e.g. `read/system`), preferred over the app's category."""


def _extra_of(model: BaseModel) -> dict[str, JsonValue]:
    return dict(model.model_extra or {})


def score_to_record(score: DeviceScore, ctx: Context, source: str) -> Record:
    """Normalise one parsed line."""
    extra = _extra_of(score)
    for name, sub in (("tokens", score.tokens), ("metrics", score.metrics)):
        if sub.model_extra:
            extra[name] = _extra_of(sub)
    checks = []
    for check in score.checks:
        checks.append(CheckResult(type=check.type, passed=check.passed, detail=check.detail))
        if check.model_extra:
            extra.setdefault("checkExtra", [])
            bucket = extra["checkExtra"]
            if isinstance(bucket, list):
                bucket.append(_extra_of(check))
    reasons = [score.reason] if score.reason else []
    outcome = score.outcome
    passed = score.passed
    if outcome not in _OUTCOMES:
        extra["deviceOutcome"] = outcome
        reasons.append(f"unknown outcome {outcome!r} reported by the phone")
        outcome, passed = "error", False
    partition = score.partition if score.partition in _PARTITIONS else None
    if score.partition is not None and partition is None:
        extra["devicePartition"] = score.partition
    expect = score.expect if score.expect in _EXPECTS else None
    if score.expect is not None and expect is None:
        extra["deviceExpect"] = score.expect
    end_reason = cast(EndReason, score.end_reason) if score.end_reason in _END_REASONS else None
    if score.end_reason is not None and end_reason is None:
        extra["deviceEndReason"] = score.end_reason
    execution = score.execution if score.execution in _EXECUTIONS else ctx.execution
    if score.execution is not None and score.execution not in _EXECUTIONS:
        extra["deviceExecution"] = score.execution
    category = (ctx.categories or {}).get(score.id) or score.category
    if category != score.category and score.category:
        extra["deviceCategory"] = score.category
    kind = None
    if outcome == "error":
        kind = "infrastructure"
    elif outcome != "skipped" and not passed:
        kind = "agent"
    return Record(
        run=ctx.run,
        lane="android",
        device=ctx.device,
        task_id=score.id,
        category=category,
        partition=partition,
        expect=expect,
        outcome=outcome,
        end_reason=end_reason,
        passed=passed and outcome != "error",
        checks=checks,
        answer=score.answer,
        reasons=reasons,
        failure_category=score.failure_category or ("infrastructure" if outcome == "error" else None),
        failure_kind=kind,
        takeover_kind=score.takeover_kind,
        metrics=RunMetrics(**score.metrics.model_dump(include=set(RunMetrics.model_fields))),
        steps=score.steps,
        tokens=Tokens(
            input_new=score.tokens.input,
            cache_read=score.tokens.cache_read,
            cache_write=score.tokens.cache_write,
            output=score.tokens.output,
        ),
        cost_usd=score.cost_usd,
        attempt=ctx.attempt,
        execution=execution,
        executor=ctx.executor,
        split=ctx.split,
        started_at=score.started_at,
        ended_at=score.ended_at,
        source=source,
        markers=score.markers,
        extra=extra,
    )


def error_record(
    ctx: Context, task_id: str, reason: str, *, source: str | None = None, category: str = "", **kw: object
) -> Record:
    """An infrastructure-error record (never an agent failure)."""
    return Record(
        run=ctx.run,
        lane="android",
        device=ctx.device,
        task_id=task_id,
        category=(ctx.categories or {}).get(task_id, category),
        outcome="error",
        passed=False,
        reasons=[reason],
        failure_category="infrastructure",
        failure_kind="infrastructure",
        attempt=ctx.attempt,
        execution=ctx.execution,
        executor=ctx.executor,
        split=ctx.split,
        source=source,
        **kw,
    )


@dataclass
class Normalised:
    """The records of one scores.jsonl and the problems met reading it."""

    records: list[Record]
    problems: list[str]
    """One line per corrupt line (`file:line: what`)."""


def normalise_lines(lines: Iterable[str], ctx: Context, source: str) -> Normalised:
    """Normalise the lines of a scores.jsonl (`source` names the file in provenance), iterating them once, in order
    (a generator works: `read_scores` hands one that reads the file line by line)."""
    records: list[Record] = []
    problems: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        data: object = None
        try:
            data = _parse(line)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            records.append(score_to_record(DeviceScore.model_validate(data), ctx, where))
        except (ValueError, ValidationError) as exc:
            task_id = _task_id_of(data, line) or f"{source}:{number}"
            what = _first_error(exc)
            reason = f"corrupt scores.jsonl line {number}: {what}"
            problems.append(f"{where}: {what}")
            records.append(error_record(ctx, task_id, reason, source=where))
    return Normalised(records, problems)


class _InvalidJson(ValueError):
    """A line the JSON parser refused (its message says where)."""


def _parse(line: str) -> object:
    # pydantic's parser, not `json`: it stops at a fixed depth with a ValueError where `json` exhausts the
    # stack, and it refuses lone surrogates, which `json` accepts and the record's own write then fails on.
    try:
        return from_json(line)
    except ValueError as exc:
        raise _InvalidJson(str(exc)) from None


def _task_id_of(data: object, line: str) -> str | None:
    """The task id a rejected line names, so the task still shows up (as an error) in its unit."""
    if isinstance(data, dict) and isinstance(data.get("id"), str) and 0 < len(data["id"]) <= 200:
        return str(data["id"])
    found = _ID_IN_TEXT.search(line)
    return found.group(1) if found else None


def normalise_file(path: Path, ctx: Context, source: str | None = None) -> Normalised:
    """Normalise a pulled scores.jsonl; a missing file gives no records."""
    try:
        # Bytes, not read_text: text mode would also end a line at a lone "\r" (universal newlines).
        text = path.read_bytes().decode("utf-8", "replace")
    except FileNotFoundError:
        return Normalised([], [])
    # Lines end at "\n" only, as the records reader and an editor count them: `splitlines` also breaks at NEL,
    # U+2028, form feed…, which JSON strings may hold, so a valid line fell apart and the numbers shifted.
    return normalise_lines(text.split("\n"), ctx, source or str(path))


def _first_error(exc: Exception) -> str:
    if isinstance(exc, _InvalidJson):
        return f"invalid JSON ({exc})"
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        # A validator's own message already names the value; pydantic's "Value error, " prefix adds nothing.
        msg = str(err["ctx"]["error"]) if err["type"] == "value_error" and "ctx" in err else err["msg"]
        what = f"{'.'.join(str(p) for p in err['loc']) or 'line'}: {msg}"
        if err["type"] in _RANGE_ERRORS:
            what += f" (got {str(err['input'])[:40]})"
        return what
    return str(exc)


# Errors about a number's value, where the value itself says what went wrong (a sign, an exponent).
_RANGE_ERRORS = frozenset({"greater_than_equal", "less_than_equal", "finite_number", "int_parsing_size"})
