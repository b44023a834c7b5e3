"""Retry policy for model calls: which failures are transient, and how long to wait before the next try."""

from __future__ import annotations

import random
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Literal, TypeVar

import httpx
import httpx2

FailureKind = Literal["rate_limit", "server", "timeout", "connection", "client", "bad_response"]
RETRYABLE: frozenset[str] = frozenset({"rate_limit", "server", "timeout", "connection"})


class BadResponse(Exception):
    """The endpoint answered 2xx with something that is not a usable model response."""


class StreamCut(Exception):
    """A streamed reply stopped before the provider's end event (connection dropped or closed early)."""


class StreamTimeout(StreamCut):
    """A streamed reply stalled past the read timeout."""


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


T = TypeVar("T")


def guarded_stream(events: Iterable[T]) -> Iterator[T]:
    """Iterate a provider's event stream with the HTTP library's read errors turned into StreamCut /
    StreamTimeout (the SDKs raise them unwrapped once the response has started)."""
    try:
        yield from events
    except (httpx2.TimeoutException, httpx.TimeoutException) as exc:
        raise StreamTimeout(str(exc) or type(exc).__name__) from None
    except (httpx2.TransportError, httpx.TransportError) as exc:
        raise StreamCut(str(exc) or type(exc).__name__) from None


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
    api_error: type[Exception] | None = None,
) -> Failure | None:
    """Map an openai/anthropic SDK exception (both share this hierarchy) to a Failure."""
    if isinstance(exc, BadResponse):
        return Failure("bad_response", None, None, str(exc))
    if isinstance(exc, StreamTimeout):
        return Failure("timeout", None, None, f"stream stalled: {exc}")
    if isinstance(exc, StreamCut):
        return Failure("connection", None, None, f"stream cut: {exc}")
    if isinstance(exc, validation_error):
        return Failure("bad_response", getattr(exc, "status_code", None), None, str(exc))
    if isinstance(exc, status_error):
        status = int(getattr(exc, "status_code", 0))
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
        retry_after = parse_retry_after(dict(headers.items()) if headers is not None else None)
        if 200 <= status < 300:
            # An error event inside a 200 stream: its body's type says what an HTTP status would have.
            return Failure(_stream_error_kind(getattr(exc, "body", None)), None, retry_after, str(exc))
        return Failure(kind_for_status(status), status, retry_after, str(exc))
    if isinstance(exc, timeout_error):
        return Failure("timeout", None, None, "request timed out")
    if isinstance(exc, connection_error):
        cause = exc.__cause__ or exc.__context__
        return Failure("connection", None, None, f"{exc}: {cause}" if cause else str(exc))
    if api_error is not None and isinstance(exc, api_error):
        # The SDK's base error without a status: an error event read from a stream.
        return Failure(_stream_error_kind(getattr(exc, "body", None)), None, None, str(exc))
    return None


_STREAM_ERROR_KINDS: dict[str, FailureKind] = {
    "overloaded_error": "server",
    "api_error": "server",
    "server_error": "server",
    "rate_limit_error": "rate_limit",
    "timeout_error": "timeout",
}


def _stream_error_kind(body: object) -> FailureKind:
    """Failure kind of an in-stream error event body (`{"type": "error", "error": {"type": ...}}` or the inner
    object); an unknown type is a server failure, since the request itself was accepted."""
    error = body.get("error", body) if isinstance(body, dict) else None
    kind = error.get("type") if isinstance(error, dict) else None
    if kind in ("invalid_request_error", "authentication_error", "permission_error", "not_found_error"):
        return "client"
    return _STREAM_ERROR_KINDS.get(str(kind), "server")
