"""Retry policy for model calls: which failures are transient, and how long to wait before the next try."""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Literal

FailureKind = Literal["rate_limit", "server", "timeout", "connection", "client", "bad_response"]
RETRYABLE: frozenset[str] = frozenset({"rate_limit", "server", "timeout", "connection"})


class BadResponse(Exception):
    """The endpoint answered 2xx with something that is not a usable model response."""


@dataclass(frozen=True)
class Failure:
    """A failed attempt, reduced to what the retry policy and the error message need."""

    kind: FailureKind
    status: int | None
    retry_after_s: float | None
    detail: str

    @property
    def retryable(self) -> bool:
        """Whether another attempt may succeed."""
        return self.kind in RETRYABLE


def kind_for_status(status: int) -> FailureKind:
    """Map an HTTP status to a failure kind (408/409 are transient too, as providers document)."""
    if status == 429:
        return "rate_limit"
    if status >= 500 or status in (408, 409):
        return "server"
    return "client"


def parse_retry_after(headers: Mapping[str, str] | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `retry-after` (seconds or an HTTP date); None if absent."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def backoff_s(attempt: int, *, initial_s: float, max_s: float, rng: random.Random | None = None) -> float:
    """Exponential backoff with jitter for the wait after failed attempt number `attempt` (1-based).

    Half of the step is fixed and half random, so concurrent clients spread out but never hammer.
    """
    step = min(max_s, initial_s * (2 ** max(0, attempt - 1)))
    return step / 2 + (rng or random).uniform(0, step / 2)


def wait_s(failure: Failure, attempt: int, *, initial_s: float, max_s: float, retry_after_max_s: float) -> float:
    """How long to sleep after `failure`: the server's Retry-After (capped) when given, else backoff."""
    if failure.retry_after_s is not None:
        return min(retry_after_max_s, failure.retry_after_s)
    return backoff_s(attempt, initial_s=initial_s, max_s=max_s)


def classify_sdk_error(
    exc: Exception,
    *,
    status_error: type[Exception],
    timeout_error: type[Exception],
    connection_error: type[Exception],
    validation_error: type[Exception],
) -> Failure | None:
    """Map an openai/anthropic SDK exception (both share this hierarchy) to a Failure."""
    if isinstance(exc, BadResponse):
        return Failure("bad_response", None, None, str(exc))
    if isinstance(exc, validation_error):
        return Failure("bad_response", getattr(exc, "status_code", None), None, str(exc))
    if isinstance(exc, status_error):
        status = int(getattr(exc, "status_code", 0))
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
        retry_after = parse_retry_after(dict(headers.items()) if headers is not None else None)
        return Failure(kind_for_status(status), status, retry_after, str(exc))
    if isinstance(exc, timeout_error):
        return Failure("timeout", None, None, "request timed out")
    if isinstance(exc, connection_error):
        cause = exc.__cause__ or exc.__context__
        return Failure("connection", None, None, f"{exc}: {cause}" if cause else str(exc))
    return None
