"""Model requests as `ModelCall`s, their cost, and totals with the seed's unknown-is-null rules.

One `ModelCall` per HTTP request, failures and retries included. Only a response that arrived whole carries
usage; a request that may have been billed but returned none (a timeout, a cut connection, an unusable 2xx)
makes the complete totals unknown, while refused requests (429, 5xx, 4xx, quota, auth) were never billed.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence

from farm.llm.client import ModelCallError
from farm.llm.model_config import ModelPrice
from farm.llm.pricing import cost_usd
from farm.llm.types import Attempt, ModelTurn
from farm.results.record import Tokens
from web_bench.webvoyager.model import CallOutcome, CallRole, ModelCall, UsageTotals
from web_bench.webvoyager.model_setup import WvPrice

MAY_BE_BILLED: frozenset[str] = frozenset({"ok", "timeout", "connection", "bad_response"})
"""Outcomes after which the provider may have billed the request: the request reached it and no refusal came
back. A missing usage on these makes the complete totals unknown."""


def cost(price: WvPrice | None, usage: Tokens) -> tuple[float | None, bool]:
    """(USD cost, long_context) of one request at `price`.

    The cost is null when the price, the new-input or output count is unknown, or a cache count is non-zero
    while its price is unknown. Output already includes reasoning, so reasoning is never billed again.
    Above `context_threshold` input tokens (new + cache read + cache write) the whole request is multiplied.
    """
    if price is None:
        return None, False
    prompt = usage.prompt()
    long_context = (price.context_threshold is not None and prompt is not None
                    and prompt > price.context_threshold)
    base = cost_usd(
        ModelPrice(input_per_m=price.input, output_per_m=price.output, cache_read_per_m=price.cache_read,
                   cache_write_per_m=price.cache_write),
        usage,
    )
    if base is None:
        return None, long_context
    if long_context and price.long_context_multiplier is not None:
        base *= price.long_context_multiplier
    return base, long_context


def _shift(started_at: str, offset_ms: float) -> str:
    """`started_at` (UTC ISO) moved by `offset_ms`, in the same `…Z` form; unchanged when it does not parse."""
    if offset_ms <= 0:
        return started_at
    try:
        when = dt.datetime.fromisoformat(started_at.replace("Z", "+00:00"))
    except ValueError:
        return started_at
    shifted = when.astimezone(dt.UTC) + dt.timedelta(milliseconds=offset_ms)
    return shifted.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _failed(
    attempt: Attempt, *, index: int, role: CallRole, step: int | None, started_at: str, model: str | None,
    error: str | None,
) -> ModelCall:
    outcome: CallOutcome = attempt.outcome
    status = f" (HTTP {attempt.status})" if attempt.status is not None else ""
    return ModelCall(
        role=role, step=step, retry=index > 0, started_at=started_at, duration_ms=max(0.0, attempt.duration_ms),
        outcome=outcome, status=attempt.status, model=model, usage=None,
        usage_expected=outcome in MAY_BE_BILLED, error=error or f"{outcome}{status}",
    )


def _starts(started_at: str, attempts: Sequence[Attempt]) -> list[str]:
    """Send time of each attempt: the call's start plus the earlier attempts and the waits after them."""
    out: list[str] = []
    offset = 0.0
    for attempt in attempts:
        out.append(_shift(started_at, offset))
        offset += attempt.duration_ms + attempt.wait_after_ms
    return out


def calls_from_turn(
    turn: ModelTurn, *, role: CallRole, step: int | None, started_at: str, price: WvPrice | None,
) -> list[ModelCall]:
    """The requests of one successful model call: its failed attempts (retried, no usage) and the last, ok one
    with the turn's usage and cost. `started_at` is when the call began."""
    attempts = list(turn.attempts) or [Attempt(outcome="ok", status=None, duration_ms=turn.latency_ms)]
    starts = _starts(started_at, attempts)
    calls = [
        _failed(a, index=i, role=role, step=step, started_at=starts[i], model=turn.model, error=None)
        for i, a in enumerate(attempts[:-1])
    ]
    last = attempts[-1]
    usage = turn.usage if turn.usage.known() else None
    amount, long_context = cost(price, usage) if usage is not None else (None, False)
    calls.append(ModelCall(
        role=role, step=step, retry=len(attempts) > 1, started_at=starts[-1], duration_ms=max(0.0, last.duration_ms),
        outcome="ok", status=last.status, model=turn.model, usage=usage, usage_expected=True,
        cost_usd=amount, long_context=long_context,
    ))
    return calls


def calls_from_error(
    exc: ModelCallError, *, role: CallRole, step: int | None, started_at: str, price: WvPrice | None,
    model: str | None,
) -> list[ModelCall]:
    """The requests of a model call that failed for good: every attempt, none with usage; the last carries the
    error line (already scrubbed of the key). `price` is unused (no usage came back) but kept for symmetry."""
    del price
    attempts = list(exc.attempt_log) or [Attempt(outcome=exc.kind, status=exc.status, duration_ms=0.0)]
    starts = _starts(started_at, attempts)
    last = len(attempts) - 1
    return [
        _failed(a, index=i, role=role, step=step, started_at=starts[i], model=model,
                error=exc.message if i == last else None)
        for i, a in enumerate(attempts)
    ]


def _observed(parts: Iterable[Tokens]) -> Tokens:
    """Field-wise sum of the counts that were reported; a field no request reported stays null."""
    sums: dict[str, int | None] = {"input_new": None, "cache_read": None, "cache_write": None, "output": None}
    for part in parts:
        for name, count in part:
            if count is not None:
                sums[name] = (sums[name] or 0) + count
    return Tokens.model_validate(sums)


def totals(calls: Sequence[ModelCall]) -> UsageTotals:
    """Totals over `calls`: complete tokens and cost, or null when a billed request lacks usage (tokens, cost)
    or a request with usage has no cost (cost); the observed sums are kept either way, as lower bounds.

    No requests means nothing was billed: zero tokens and cost, not unknown. A caller that lost the calls of an
    attempt must not pass an empty list for them.
    """
    reported = [c.usage for c in calls if c.usage is not None]
    missing = sum(1 for c in calls if c.usage is None and c.usage_expected)
    unpriced = sum(1 for c in calls if c.usage is not None and c.cost_usd is None)
    observed_cost = sum(c.cost_usd for c in calls if c.cost_usd is not None)
    zero = Tokens(input_new=0, cache_read=0, cache_write=0, output=0)
    return UsageTotals(
        tokens=None if missing else (Tokens.total(reported) if reported else zero),
        tokens_observed=_observed(reported) if reported else Tokens(),
        usage_missing_calls=missing,
        unpriced_calls=unpriced,
        cost_usd=None if missing or unpriced else observed_cost,
        cost_observed_usd=observed_cost,
        request_count=len(calls),
        retry_count=sum(1 for c in calls if c.retry),
    )
