"""Retry policy for model calls: which failures are transient, and how long to wait before the next try."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

import httpx
import httpx2

from farm.llm.provider_errors import (
    MAX_BODY_BYTES,
    QUOTA_CODES,
    ProviderErrorKind,
    ProviderVerdict,
    classify,
    minimax_status,
    parse_retry_after,
    says_quota,
)

__all__ = [
    "QUOTA_CODES", "RETRYABLE", "BadResponse", "Failure", "FailureKind", "ProviderError", "StreamCut", "StreamTimeout",
    "backoff_s", "body_failure", "classify_sdk_error", "failure_kind", "guarded_stream", "kind_for_response",
    "kind_for_status", "minimax_failure", "minimax_status", "non_stream_body", "parse_retry_after", "says_quota",
    "wait_s",
]

FailureKind = Literal["rate_limit", "server", "timeout", "connection", "client", "bad_response", "quota", "auth"]
"""A failed request's kind as attempt logs record it: the classifier's kinds (`farm.llm.provider_errors`), with
`network` split into `timeout` and `connection` and `bad_request` named `client`. `quota` and `auth` are never
retried: another request cannot succeed until someone acts (a new quota window, a top-up, a valid key)."""
RETRYABLE: frozenset[str] = frozenset({"rate_limit", "server", "timeout", "connection"})


def failure_kind(verdict: ProviderVerdict) -> FailureKind:
    """The attempt-log kind of a classifier verdict (which must be a failure)."""
    kind = verdict.kind
    if kind == "network":
        return "timeout" if verdict.timed_out else "connection"
    if kind == "bad_request":
        return "client"
    if kind == "ok":
        raise ValueError("an ok verdict is no failure")
    return kind


def _verdict_kind(kind: FailureKind) -> ProviderErrorKind:
    if kind == "timeout" or kind == "connection":
        return "network"
    if kind == "client":
        return "bad_request"
    return kind


class BadResponse(Exception):
    """The endpoint answered 2xx with something that is not a usable model response."""


class ProviderError(Exception):
    """A 2xx response whose body says the request failed (an `error` object, MiniMax `base_resp.status_code`)."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.detail)
        self.failure = failure


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
    reason: str | None = None
    """The classifier's one-line reason (the provider's code and message); `detail` is the SDK's own text."""

    @property
    def retryable(self) -> bool:
        """Whether another attempt may succeed."""
        return self.kind in RETRYABLE

    @property
    def verdict(self) -> ProviderVerdict:
        """This failure as the classifier's verdict (kind, whether it stops dispatch, one-line reason)."""
        kind = _verdict_kind(self.kind)
        reason = self.reason or " ".join(f"{kind}: {self.detail}".split())[:240]
        return ProviderVerdict(kind, reason, self.status, self.retry_after_s, timed_out=self.kind == "timeout")

    @classmethod
    def of(cls, verdict: ProviderVerdict, detail: str | None = None, *, status: int | None = None) -> Failure:
        """The failure a classifier verdict describes; `detail` defaults to its reason."""
        return cls(failure_kind(verdict), status if status is not None else verdict.status, verdict.retry_after_s,
                   detail if detail is not None else verdict.reason, verdict.reason)


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
    """Map an HTTP status alone to a failure kind (408/409 are transient too, as providers document); the body
    may say more (`kind_for_response`)."""
    if status == 429:
        return "rate_limit"
    if status >= 500 or status in (408, 409):
        return "server"
    return "client"


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
    """Map an openai/anthropic SDK exception (both share this hierarchy) to a Failure, through the one classifier
    (`farm.llm.provider_errors.classify`); None for exceptions that are not API failures."""
    if isinstance(exc, ProviderError):
        return exc.failure
    if isinstance(exc, BadResponse):
        return _by_type(exc, str(exc))
    if isinstance(exc, StreamTimeout):
        return _by_type(exc, f"stream stalled: {exc}")
    if isinstance(exc, StreamCut):
        return _by_type(exc, f"stream cut: {exc}")
    if isinstance(exc, validation_error):
        return _by_type(exc, str(exc), getattr(exc, "status_code", None))
    if isinstance(exc, status_error):
        status = int(getattr(exc, "status_code", 0))
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
        plain = dict(headers.items()) if headers is not None else None
        verdict = classify(status, plain, _error_body(exc), exc_type=type(exc))
        if status < 300:
            # An error event inside a 200 stream: it has no HTTP status of its own.
            return Failure(failure_kind(verdict), None, verdict.retry_after_s, str(exc), verdict.reason)
        return Failure.of(verdict, str(exc))
    if isinstance(exc, timeout_error):
        return _by_type(exc, "request timed out")
    if isinstance(exc, connection_error):
        cause = exc.__cause__ or exc.__context__
        return _by_type(exc, f"{exc}: {cause}" if cause else str(exc))
    if api_error is not None and isinstance(exc, api_error):
        # The SDK's base error without a status: an error event read from a stream.
        return Failure.of(classify(None, None, _error_body(exc), exc_type=type(exc)), str(exc))
    return None


def _by_type(exc: Exception, detail: str, status: int | None = None) -> Failure:
    """A failure its exception's type tells (no body to read): the reason is then the detail."""
    verdict = classify(None, exc_type=type(exc))
    return Failure(failure_kind(verdict), status, None, detail)


def kind_for_response(status: int, bodies: Sequence[object] = ()) -> FailureKind:
    """Failure kind of an HTTP error response whose body was read as `bodies` (alternative readings of one body:
    parsed JSON, the inner error object, raw text), by the classifier's rules."""
    verdict = classify(status, None, [b for b in bodies if b is not None], exc_type=None)
    return failure_kind(verdict) if verdict.kind != "ok" else kind_for_status(status)


def minimax_failure(payload: object, *, status: int | None = 200) -> Failure | None:
    """The failure a 2xx body's MiniMax `base_resp` reports (quota for 2056/1008, auth for 1004/2049, transient
    codes as MiniMax documents them, else a bad response); None when the body reports no error. `payload` is the
    body or the base_resp itself."""
    if minimax_status(payload) is None:
        return None
    body = payload if isinstance(payload, Mapping) and "base_resp" in payload else {"base_resp": payload}
    return body_failure(body, status=status)


def body_failure(body: object, *, status: int | None = 200) -> Failure | None:
    """The failure a 2xx response's body states in its own error fields (an `error` object, as OpenAI-compatible
    gateways send a used-up quota inside a 200; MiniMax's `base_resp`); None when it states none. The completion's
    content is never read: an answer that mentions an error code is an answer."""
    if not isinstance(body, Mapping) or not (body.get("error") or minimax_status(body.get("base_resp"))):
        return None
    verdict = classify(200, None, body)
    if verdict.kind == "ok":
        return None
    return Failure(failure_kind(verdict), status, verdict.retry_after_s, verdict.reason, verdict.reason)


def _error_body(exc: Exception) -> object:
    """What an SDK error knows of the response body: the whole body when it was read (so a top-level `base_resp`
    is seen too; at most MAX_BODY_BYTES of it), else `exc.body` (the OpenAI SDK keeps only the inner `error`
    object there)."""
    response = getattr(exc, "response", None)
    if response is not None and int(getattr(response, "status_code", 0)) >= 300:
        try:
            content = response.content
        except Exception:  # noqa: BLE001 - a body not read (or not readable): exc.body is what there is
            content = None
        if isinstance(content, bytes) and content.strip():
            return content[:MAX_BODY_BYTES]
    return getattr(exc, "body", None)


def non_stream_body(response: object) -> None:
    """Check that a streamed request got an event stream. A 2xx answered with a plain body instead (MiniMax sends
    its `base_resp` errors as JSON, gateways an OpenAI-style `error`) raises that body's failure, or BadResponse;
    without this the SDK would find no events in it and the reply would look like a dropped connection, which is
    retried. At most MAX_BODY_BYTES of the body are read."""
    headers = getattr(response, "headers", None)
    content_type = str(headers.get("content-type", "")) if headers is not None else ""
    if not content_type or content_type.lower().startswith("text/event-stream"):
        return
    raw = _read_bounded(response)
    try:
        body = json.loads(raw)
    except ValueError:
        body = None  # not JSON, or cut at the bound: nothing the provider stated can be read from it
    failure = body_failure(body)
    if failure is not None:
        raise ProviderError(failure)
    raise BadResponse(f"a streamed request was answered with a {content_type} body, not an event stream")


def _read_bounded(response: object) -> bytes:
    """Up to MAX_BODY_BYTES of a streamed response's body (the rest is never read: the response is closed)."""
    chunks = getattr(response, "iter_bytes", None)
    if not callable(chunks):
        read = getattr(response, "read", None)
        raw = read() if callable(read) else b""
        return bytes(raw[:MAX_BODY_BYTES])
    got = bytearray()
    try:
        for chunk in chunks():
            got += chunk
            if len(got) >= MAX_BODY_BYTES:
                break
    finally:
        close = getattr(response, "close", None)
        if callable(close):
            close()
    return bytes(got[:MAX_BODY_BYTES])
