"""One classifier for model-provider errors, shared by every lane (host executor, web lane, WebVoyager).

`classify` is a pure function of what a failed (or suspicious) response gives: the HTTP status, the headers, the
body (JSON or text; at most `MAX_BODY_BYTES` of it are looked at) and the type of the SDK exception that carried
it. It returns a `ProviderVerdict`: the kind, whether another try may succeed, whether the run must stop
dispatching new work, and a one-line reason.

The rules, as seed 002 states them for the WebVoyager lane and every lane now follows:

- HTTP 429, 5xx (408/409 too), timeouts and transport errors are transient: retried within the same model step,
  a valid Retry-After first, else exponential backoff with jitter.
- A used-up quota or balance (OpenAI `insufficient_quota` / `billing_hard_limit_reached`, Anthropic
  `billing_error` or usage-limit wording, HTTP 402, MiniMax 2056 / 1008) and a refused key (401/403, OpenAI
  `invalid_api_key`, Anthropic `authentication_error` / `permission_error`, MiniMax 1004 / 2049) are never retried
  in the run: they stop dispatch, and what they interrupted is kept for `--resume`.
- The same holds when the provider says it inside an HTTP 200: an error body instead of a completion, MiniMax's
  `base_resp`, an error event in an event stream. Only the body's own error fields are read there, never the
  completion's content: an answer that merely mentions "insufficient_quota" is an answer.
- A timeout or cut connection that follows a quota refusal in the same model step is the quota still
  (`call_verdict`): an outer timeout must not hide why the step failed.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Literal

ProviderErrorKind = Literal["quota", "auth", "rate_limit", "server", "bad_request", "bad_response", "network", "ok"]
"""`quota`: quota or balance used up; `auth`: key refused; `rate_limit`: slow down (429); `server`: the provider
failed (5xx, overloaded); `bad_request`: the provider refused this request (other 4xx); `bad_response`: the
endpoint answered something that is not a model response; `network`: timeout or transport failure; `ok`: no
error."""

LaneErrorKind = Literal["quota", "auth", "service_unavailable", "model_error"]
"""How a model call that failed for good counts in a lane's results (the WebVoyager lane's error kinds)."""

RETRYABLE_KINDS: frozenset[str] = frozenset({"rate_limit", "server", "network"})
"""Kinds another request may cure without anyone acting."""
STOPPING_KINDS: frozenset[str] = frozenset({"quota", "auth"})
"""Kinds that fail every request of the run until someone acts (a new quota window, a top-up, a valid key): the
run stops dispatching and keeps what they interrupted for `--resume`."""

MAX_BODY_BYTES = 64 * 1024
"""Most of a body the classifier reads: provider error bodies are small; a huge one is cut, never parsed whole."""
MAX_REASON_CHARS = 240
"""Length bound of a verdict's one-line reason."""
_MAX_LIST_ITEMS = 8
"""Items of a JSON array body looked at (some gateways wrap the error object in a list)."""

MINIMAX_STATUS_KINDS: dict[int, ProviderErrorKind] = {
    2056: "quota",  # usage limit exceeded (Token Plan window)
    1008: "quota",  # insufficient balance
    1004: "auth",  # not authorized
    2049: "auth",  # invalid api key
    1002: "rate_limit",  # rate limit: "retry later", as MiniMax documents
    1000: "server",  # unknown error: retry later
    1001: "server",  # request timeout (on the provider's side): retry later
    1024: "server",  # internal error: retry later
}
"""MiniMax `base_resp.status_code` -> kind; any other non-zero code is a bad response."""

QUOTA_CODES: frozenset[str] = frozenset({
    "insufficient_quota", "billing_hard_limit_reached", "billing_error", "2056", "1008",
})
"""Error `code` / `type` values that mean the quota or balance is used up (OpenAI, Anthropic, MiniMax)."""

AUTH_CODES: frozenset[str] = frozenset({
    "invalid_api_key", "authentication_error", "permission_error", "invalid_authentication", "1004", "2049",
})
"""Error `code` / `type` values that mean the key (or its permissions) was refused."""

_TYPE_KINDS: dict[str, ProviderErrorKind] = {
    "overloaded_error": "server",
    "api_error": "server",
    "server_error": "server",
    "rate_limit_error": "rate_limit",
    "rate_limit_exceeded": "rate_limit",
    "timeout_error": "network",
    "invalid_request_error": "bad_request",
    "not_found_error": "bad_request",
    "request_too_large": "bad_request",
}
"""Error `type` / `code` values (OpenAI, Anthropic) that name neither a quota nor a key."""

# Messages of Anthropic-compatible endpoints carry no quota code field, only words (and MiniMax's code in
# parentheses: "usage limit exceeded, ... (2056)"). Plain rate limits never use these words.
_QUOTA_TEXT = re.compile(
    r"insufficient_quota|\bquota\b|\bcredits?\b|\busage limits?\b|\bbalance\b|\bbilling\b|\((?:2056|1008)\)",
    re.IGNORECASE,
)

# SDK exception classes by name (walked along the MRO), so this module stays independent of the SDK versions and
# of which HTTP library (httpx or the SDK's vendored copy) raised. Timeouts first: they subclass connection errors.
_TIMEOUT_TYPES = frozenset({"StreamTimeout", "APITimeoutError", "TimeoutException", "TimeoutError"})
_CONNECTION_TYPES = frozenset({"StreamCut", "APIConnectionError", "TransportError", "ConnectionError"})
_MALFORMED_TYPES = frozenset({"BadResponse", "APIResponseValidationError", "JSONDecodeError"})


@dataclass(frozen=True)
class ProviderVerdict:
    """What a provider's answer (or its absence) means for the run."""

    kind: ProviderErrorKind
    """The failure's kind (`ok`: none)."""
    reason: str
    """One line saying why (bounded; no credentials: only the provider's code and message)."""
    status: int | None = None
    """HTTP status when a response arrived."""
    retry_after_s: float | None = None
    """The provider's Retry-After, when it sent a valid one."""
    timed_out: bool = False
    """`network` only: the request timed out (rather than the connection failing or being cut)."""

    @property
    def retryable(self) -> bool:
        """Whether another request in the same model step may succeed."""
        return self.kind in RETRYABLE_KINDS

    @property
    def stops_dispatch(self) -> bool:
        """Whether the run must start no new work: every request would fail the same way until someone acts."""
        return self.kind in STOPPING_KINDS


@dataclass(frozen=True)
class _Signal:
    """One error statement found in a body: a code, a type, a message, a MiniMax status code."""

    code: str | None = None
    type: str | None = None
    message: str | None = None
    minimax: int | None = None

    def label(self) -> str:
        return self.code or self.type or (f"status {self.minimax}" if self.minimax is not None else "error")


def classify(
    status: int | None,
    headers: Mapping[str, str] | None = None,
    body: object = None,
    *,
    exc_type: type[BaseException] | None = None,
) -> ProviderVerdict:
    """The verdict on one provider response or failure.

    `status`: the HTTP status (None when no response arrived, or for an error event read from a stream).
    `body`: the response body as bytes or text (at most MAX_BODY_BYTES are read), or already parsed JSON.
    `exc_type`: the SDK exception that carried the failure, if any. Without one, a 2xx body is a response being
    checked: only its top-level `error` / `base_resp` fields can make it an error. With one (or with an error
    status), the body may be the error object itself.
    """
    retry_after = parse_retry_after(headers)
    names = {cls.__name__ for cls in exc_type.__mro__} if exc_type is not None else set()
    if names & _MALFORMED_TYPES:
        return _verdict("bad_response", status, "the endpoint answered with something that is not a model response",
                        retry_after)
    if status is None and names & _TIMEOUT_TYPES:
        return _verdict("network", None, "the request timed out", retry_after, timed_out=True)
    if status is None and names & _CONNECTION_TYPES:
        return _verdict("network", None, "the connection failed or was cut", retry_after)
    parsed = _parse(body)
    error_shaped = exc_type is not None or (status is not None and status >= 400)
    signals = _signals(parsed, top_is_error=error_shaped)
    if status is None or 200 <= status < 300:
        if not error_shaped and isinstance(parsed, _Text):
            return _verdict("bad_response", status, f"the body is not JSON: {parsed.text[:80]!r}", retry_after)
        if not error_shaped and parsed is not None and not isinstance(parsed, Mapping):
            return _verdict("bad_response", status, f"the body is a JSON {type(parsed).__name__}, not an object",
                            retry_after)
        if not signals:
            if error_shaped:
                # An SDK error without a readable body (an error event it could not parse): the request was
                # accepted, so the provider failed.
                return _verdict("server", status, "error without details", retry_after)
            return _verdict("ok", status, "ok", retry_after)
        kind, signal = _signal_kind(signals)
        return _verdict(kind, status, _describe(signal), retry_after, timed_out=kind == "network")
    if status >= 400:
        kind = _response_kind(status, signals)
        chosen = _pick(signals, kind)
        why = f"HTTP {status}" + (f": {_describe(chosen)}" if chosen is not None else "")
        return _verdict(kind, status, why, retry_after)
    return _verdict("bad_response", status, f"HTTP {status} is not a model response", retry_after)


def call_verdict(final: ProviderVerdict, earlier: Sequence[str]) -> ProviderVerdict:
    """The verdict on a model call that failed for good, given the outcomes of its earlier requests: a transient
    failure after a quota refusal of the same step is the quota still (a provider that stalls or drops the
    connection once the quota is gone must not turn it into a service failure)."""
    if final.kind in RETRYABLE_KINDS and "quota" in earlier:
        why = f"quota: an earlier request of this step was refused for quota; the last one: {final.reason}"
        return ProviderVerdict("quota", _line(why), final.status, final.retry_after_s)
    return final


def lane_error_kind(verdict: ProviderVerdict) -> LaneErrorKind:
    """How a model call that failed for good counts: quota and auth as such (they stop dispatch), transient kinds
    past the retry budget as the service being unavailable, the rest as the model's (or request's) error."""
    if verdict.kind == "quota":
        return "quota"
    if verdict.kind == "auth":
        return "auth"
    if verdict.kind in RETRYABLE_KINDS:
        return "service_unavailable"
    return "model_error"


def status_kind(status: int) -> ProviderErrorKind:
    """The kind an HTTP status gives on its own, before any body is read (401/403 refuse the key)."""
    if status in (401, 403):
        return "auth"
    if status == 402:
        return "quota"
    if status == 429:
        return "rate_limit"
    if status >= 500 or status in (408, 409):
        return "server"
    if 400 <= status < 500:
        return "bad_request"
    return "ok" if 200 <= status < 300 else "bad_response"


def says_quota(bodies: Sequence[object]) -> bool:
    """Whether any of the bodies (parsed JSON, an error object, or raw text) names a used-up quota or balance."""
    return any(_is_quota(s) for body in bodies for s in _signals(_parse(body), top_is_error=True))


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


# -- internals ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Text:
    """A body that is not JSON (an HTML error page, plain text), already cut to the bound."""

    text: str


def _parse(body: object) -> object:
    """The body as parsed JSON, `_Text`, or None; bytes and text are cut to MAX_BODY_BYTES before parsing (a cut
    JSON body no longer parses and is read as text)."""
    if body is None:
        return None
    if isinstance(body, (bytes, bytearray, memoryview)):
        raw = bytes(body[:MAX_BODY_BYTES])
        text = raw.decode("utf-8", errors="replace")
    elif isinstance(body, str):
        text = body[:MAX_BODY_BYTES]
    else:
        return body
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except ValueError:
        return _Text(text)


def _signals(parsed: object, *, top_is_error: bool, depth: int = 0) -> list[_Signal]:
    """The error statements of a parsed body. The top level counts as an error object only when the body is
    known to be an error (`top_is_error`); a 2xx response is read for its `error` and `base_resp` fields alone."""
    out: list[_Signal] = []
    if isinstance(parsed, _Text):
        return [_Signal(message=parsed.text)] if top_is_error else []
    if isinstance(parsed, list) and depth == 0:
        for item in parsed[:_MAX_LIST_ITEMS]:
            out += _signals(item, top_is_error=top_is_error, depth=1)
        return out
    if not isinstance(parsed, Mapping):
        text = parsed[:MAX_BODY_BYTES] if isinstance(parsed, str) else ""
        return [_Signal(message=text)] if top_is_error and text else []
    base = minimax_status(parsed.get("base_resp")) if isinstance(parsed.get("base_resp"), Mapping) else None
    if base is None and top_is_error:
        base = minimax_status(parsed) if "status_code" in parsed and "status_msg" in parsed else None
    if base is not None:
        out.append(_Signal(minimax=base[0], message=base[1] or None))
    error = parsed.get("error")
    if isinstance(error, Mapping) and error:
        out.append(_object_signal(error))
    elif isinstance(error, str) and error.strip():
        out.append(_Signal(message=error[:MAX_BODY_BYTES]))
    if top_is_error and not isinstance(error, Mapping):
        own = _object_signal(parsed)
        if own.code or own.type or own.message:
            out.append(own)
    return out


def _object_signal(obj: Mapping[object, object]) -> _Signal:
    """The code, type and message of one error object (the `error` type of Anthropic's wrapper is no code)."""
    code = obj.get("code")
    kind = obj.get("type")
    message = obj.get("message")
    return _Signal(
        code=str(code) if code not in (None, "") and not isinstance(code, (dict, list)) else None,
        type=str(kind) if isinstance(kind, str) and kind and kind != "error" else None,
        message=message[:MAX_BODY_BYTES] if isinstance(message, str) and message else None,
    )


def _is_quota(signal: _Signal) -> bool:
    if signal.minimax is not None and MINIMAX_STATUS_KINDS.get(signal.minimax) == "quota":
        return True
    if signal.code in QUOTA_CODES or signal.type in QUOTA_CODES:
        return True
    return signal.message is not None and _QUOTA_TEXT.search(signal.message) is not None


def _is_auth(signal: _Signal) -> bool:
    if signal.minimax is not None and MINIMAX_STATUS_KINDS.get(signal.minimax) == "auth":
        return True
    return signal.code in AUTH_CODES or signal.type in AUTH_CODES


def _signal_kind(signals: list[_Signal]) -> tuple[ProviderErrorKind, _Signal]:
    """The kind the error statements of a 2xx body (or a stream's error event) give: a quota first, then a key,
    then MiniMax's code, then the type; an unknown type is the provider failing, since the request was taken."""
    for test, kind in ((_is_quota, "quota"), (_is_auth, "auth")):
        for signal in signals:
            if test(signal):
                return kind, signal  # type: ignore[return-value]
    for signal in signals:
        if signal.minimax is not None:
            return MINIMAX_STATUS_KINDS.get(signal.minimax, "bad_response"), signal
    for signal in signals:
        for name in (signal.type, signal.code):
            if name is not None and name in _TYPE_KINDS:
                return _TYPE_KINDS[name], signal
    return "server", signals[0]


def _response_kind(status: int, signals: list[_Signal]) -> ProviderErrorKind:
    """The kind of an HTTP error response: 401 refuses the key; a 4xx that names a used-up quota (or a 402) is
    quota; 403 refuses the key; then the status. A 5xx's wording never makes it a quota: it is retried, and a
    provider out of quota says so with a 4xx or inside a 200."""
    if status == 401:
        return "auth"
    if 400 <= status < 500 and (status == 402 or any(_is_quota(s) for s in signals)):
        return "quota"
    kind = status_kind(status)
    if kind == "bad_request" and any(_is_auth(s) for s in signals):
        return "auth"
    return kind


def _pick(signals: list[_Signal], kind: ProviderErrorKind) -> _Signal | None:
    """The statement that best explains `kind` (the quota one for a quota), else the first."""
    test = _is_quota if kind == "quota" else _is_auth if kind == "auth" else None
    chosen = next((s for s in signals if test(s)), None) if test is not None else None
    return chosen or (signals[0] if signals else None)


def _describe(signal: _Signal | None) -> str:
    if signal is None:
        return "error"
    message = signal.message or ""
    label = signal.label()
    if signal.minimax is not None and signal.code is None and signal.type is None:
        label = f"provider status {signal.minimax}"
    return f"{label}: {message}" if message else label


def _line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_REASON_CHARS else line[: MAX_REASON_CHARS - 3] + "..."


def _verdict(kind: ProviderErrorKind, status: int | None, why: str, retry_after: float | None, *,
             timed_out: bool = False) -> ProviderVerdict:
    # The kind leads the line, so a reason read alone (a progress note, a record) still says what happened.
    text = why if kind == "ok" or why.startswith(f"{kind}:") else f"{kind}: {why}"
    return ProviderVerdict(kind, _line(text), status, retry_after, timed_out=timed_out)
