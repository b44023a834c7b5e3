"""Retry policy for model calls: which failures are transient, and how long to wait before the next try."""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Literal, TypeVar

import httpx
import httpx2

FailureKind = Literal["rate_limit", "server", "timeout", "connection", "client", "bad_response", "quota", "auth"]
"""`quota`: the provider's quota or balance is used up; `auth`: the key was refused. Neither is retried: another
request cannot succeed until someone acts (a new quota window, a top-up, a valid key)."""
RETRYABLE: frozenset[str] = frozenset({"rate_limit", "server", "timeout", "connection"})

MINIMAX_STATUS_KINDS: dict[int, FailureKind] = {
    2056: "quota",  # usage limit exceeded (Token Plan window)
    1008: "quota",  # insufficient balance
    1004: "auth",  # not authorized
    2049: "auth",  # invalid api key
    1002: "rate_limit",  # rate limit: "retry later", as MiniMax documents
    1000: "server",  # unknown error: retry later
    1001: "server",  # request timeout: retry later
    1024: "server",  # internal error: retry later
}
"""MiniMax `base_resp.status_code` -> failure kind; any other non-zero code is a bad response."""

QUOTA_CODES: frozenset[str] = frozenset({"insufficient_quota", "2056", "1008", "billing_hard_limit_reached"})
"""Error `code` / `type` values that mean the quota or balance is used up (OpenAI and MiniMax)."""

# Messages of Anthropic-compatible endpoints carry no quota code field, only words (and MiniMax's code in
# parentheses: "usage limit exceeded, ... (2056)"). Plain rate limits never use these words.
_QUOTA_TEXT = re.compile(
    r"insufficient_quota|\bquota\b|\bcredits?\b|\busage limits?\b|\bbalance\b|\bbilling\b|\((?:2056|1008)\)",
    re.IGNORECASE,
)


class BadResponse(Exception):
    """The endpoint answered 2xx with something that is not a usable model response."""


class ProviderError(Exception):
    """A 2xx response whose body carries the provider's own error status (MiniMax `base_resp.status_code`)."""

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
    if isinstance(exc, ProviderError):
        return exc.failure
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
        bodies = _error_bodies(exc)
        if 200 <= status < 300:
            # An error event inside a 200 stream: its body's type says what an HTTP status would have.
            return Failure(_stream_error_kind(bodies), None, retry_after, str(exc))
        return Failure(kind_for_response(status, bodies), status, retry_after, str(exc))
    if isinstance(exc, timeout_error):
        return Failure("timeout", None, None, "request timed out")
    if isinstance(exc, connection_error):
        cause = exc.__cause__ or exc.__context__
        return Failure("connection", None, None, f"{exc}: {cause}" if cause else str(exc))
    if api_error is not None and isinstance(exc, api_error):
        # The SDK's base error without a status: an error event read from a stream.
        return Failure(_stream_error_kind(_error_bodies(exc)), None, None, str(exc))
    return None


_STREAM_ERROR_KINDS: dict[str, FailureKind] = {
    "overloaded_error": "server",
    "api_error": "server",
    "server_error": "server",
    "rate_limit_error": "rate_limit",
    "timeout_error": "timeout",
    "invalid_request_error": "client",
    "not_found_error": "client",
    "authentication_error": "auth",
    "permission_error": "auth",
}


def kind_for_response(status: int, bodies: Sequence[object] = ()) -> FailureKind:
    """Failure kind of an HTTP error response: 401/403 refuse the key (`auth`), a 4xx whose body names a used-up
    quota or balance (or a 402) is `quota`, anything else goes by the status (`kind_for_status`)."""
    if status == 401:
        return "auth"
    if 400 <= status < 500 and (status == 402 or says_quota(bodies)):
        return "quota"
    if status == 403:
        return "auth"
    return kind_for_status(status)


def says_quota(bodies: Sequence[object]) -> bool:
    """Whether any of the error bodies (whole JSON bodies, their inner `error` object, or raw text) names a used-up
    quota or balance: a quota code, a MiniMax status code, or quota words in the message."""
    for body in bodies:
        if isinstance(body, str):
            if _QUOTA_TEXT.search(body):
                return True
            continue
        for part in _parts(body):
            base = minimax_status(part)
            if base is not None and MINIMAX_STATUS_KINDS.get(base[0]) == "quota":
                return True
            for key in ("code", "type", "status_code"):
                if str(part.get(key)) in QUOTA_CODES:
                    return True
            for key in ("message", "status_msg"):
                text = part.get(key)
                if isinstance(text, str) and _QUOTA_TEXT.search(text):
                    return True
    return False


def minimax_status(payload: object) -> tuple[int, str] | None:
    """(`status_code`, `status_msg`) of a MiniMax `base_resp` in `payload` (a body, or the base_resp itself);
    None when there is none or it says success (0)."""
    if not isinstance(payload, Mapping):
        return None
    base = payload.get("base_resp", payload)
    if not isinstance(base, Mapping) or "status_code" not in base:
        return None
    try:
        code = int(base["status_code"])
    except (TypeError, ValueError):
        return None
    if code == 0:
        return None
    return code, str(base.get("status_msg") or "")


def minimax_failure(payload: object, *, status: int | None = 200) -> Failure | None:
    """The failure a 2xx body's MiniMax `base_resp` reports (quota for 2056/1008, auth for 1004/2049, transient
    codes as MiniMax documents them, else a bad response); None when the body reports no error."""
    found = minimax_status(payload)
    if found is None:
        return None
    code, message = found
    kind = MINIMAX_STATUS_KINDS.get(code, "bad_response")
    return Failure(kind, status, None, f"provider status {code}: {message or 'no message'}")


def _parts(body: object) -> list[Mapping[str, object]]:
    """The objects of an error body that may carry a code: the body, its `error` object and its `base_resp`."""
    if not isinstance(body, Mapping):
        return []
    parts: list[Mapping[str, object]] = [body]
    for key in ("error", "base_resp"):
        inner = body.get(key)
        if isinstance(inner, Mapping):
            parts.append(inner)
    return parts


def _error_bodies(exc: Exception) -> list[object]:
    """What an SDK error knows of the response body: `exc.body` (the OpenAI SDK keeps only the inner `error`
    object) and the whole response body when it was read (so a top-level `base_resp` is seen too)."""
    bodies: list[object] = [getattr(exc, "body", None)]
    response = getattr(exc, "response", None)
    if response is not None and int(getattr(response, "status_code", 0)) >= 300:
        try:
            text = response.text
        except Exception:  # noqa: BLE001 - a body not read (or not readable) adds nothing
            return bodies
        try:
            bodies.append(json.loads(text))
        except ValueError:
            bodies.append(text)
    return bodies


def _stream_error_kind(bodies: Sequence[object]) -> FailureKind:
    """Failure kind of an in-stream error event (`{"type": "error", "error": {"type": ...}}` or the inner object):
    a quota code or a MiniMax status first, then the error type; an unknown type is a server failure, since the
    request itself was accepted."""
    if says_quota(bodies):
        return "quota"
    for body in bodies:
        base = minimax_failure(body, status=None)
        if base is not None:
            return base.kind
        error = body.get("error", body) if isinstance(body, Mapping) else None
        kind = error.get("type") if isinstance(error, Mapping) else None
        if kind is not None:
            return _STREAM_ERROR_KINDS.get(str(kind), "server")
    return "server"


def non_stream_body(response: object) -> None:
    """Check that a streamed request got an event stream. A 2xx answered with a plain body instead (MiniMax
    sends its `base_resp` errors as JSON) raises that body's failure, or BadResponse; without this the SDK
    would find no events in it and the reply would look like a dropped connection, which is retried."""
    headers = getattr(response, "headers", None)
    content_type = str(headers.get("content-type", "")) if headers is not None else ""
    if not content_type or content_type.lower().startswith("text/event-stream"):
        return
    read = getattr(response, "read", None)
    raw = read() if callable(read) else b""
    try:
        body = json.loads(raw)
    except ValueError:
        raise BadResponse(f"a streamed request was answered with {content_type}, not an event stream") from None
    failure = minimax_failure(body) or (
        Failure(_stream_error_kind([body]), 200, None, f"error body instead of a stream: {body.get('error')}")
        if isinstance(body, Mapping) and body.get("error") else None
    )
    if failure is not None:
        raise ProviderError(failure)
    raise BadResponse(f"a streamed request was answered with a {content_type} body, not an event stream")
