"""What the model stub sends: scripted replies and their rendering as OpenAI / Anthropic JSON."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal

StubProvider = Literal["openai", "anthropic"]
ToolArgs = dict[str, Any] | str


@dataclass
class StubUsage:
    """Token usage the stub reports, in neutral terms (rendered per provider)."""

    input: int = 10
    """Uncached input tokens (OpenAI prompt_tokens = input + cached)."""
    cached: int = 0
    """Input tokens read from cache."""
    cache_write: int = 0
    """Input tokens written to cache (Anthropic only; OpenAI does not report it)."""
    output: int = 5
    """Output tokens."""
    report_cache: bool = True
    """False = leave the cache fields out, like endpoints without prompt caching."""


@dataclass
class StubReply:
    """One scripted answer. `tool_calls` are (name, arguments); a str argument is sent verbatim
    (so malformed JSON can be scripted), a dict is JSON-encoded."""

    text: str | None = None
    tool_calls: list[tuple[str, ToolArgs]] = field(default_factory=list)
    usage: StubUsage | None = field(default_factory=StubUsage)
    """None = no `usage` object in the response."""
    status: int = 200
    retry_after: float | str | None = None
    """Retry-After header value (seconds, or an HTTP date string) sent with the reply."""
    delay_s: float = 0.0
    """Sleep before answering (longer than the client timeout = a timeout)."""
    stop_reason: str | None = None
    """Override of finish_reason / stop_reason; default derived from the content."""
    thinking: str | None = None
    """Anthropic only: a thinking block placed before the text."""
    error_message: str = "scripted error"
    headers: dict[str, str] = field(default_factory=dict)
    raw_body: bytes | None = None
    """Sent verbatim instead of a rendered response (e.g. an HTML error page from a proxy)."""
    content_type: str = "application/json"
    """Content type of `raw_body`."""
    chunk_delay_s: float = 0.0
    """Streamed replies: pause before every server-sent event after the first."""
    cut_after_events: int | None = None
    """Streamed replies: hang up mid-body after this many events (a stream cut in the middle)."""
    empty_first_delta: bool = False
    """Streamed replies: a text delta with empty text before the real content (it must not count as output)."""
    quota_code: int | str | None = None
    """A quota refusal with this code (MiniMax 2056 / 1008, OpenAI `insufficient_quota`), see `quota()`."""
    quota_event: bool = False
    """Streamed quota refusals: send the error as a server-sent event in a 200 stream, not as a JSON body."""

    @classmethod
    def rate_limited(cls, retry_after: float | str | None = None) -> StubReply:
        """A 429, optionally with Retry-After."""
        return cls(status=429, retry_after=retry_after, error_message="rate limited")

    @classmethod
    def server_error(cls, status: int = 500) -> StubReply:
        """A 5xx."""
        return cls(status=status, error_message="internal error")

    @classmethod
    def quota(
        cls, status: int = 429, code: int | str = 2056, message: str | None = None, *, as_event: bool = False,
    ) -> StubReply:
        """A used-up quota: with status 200 and an int code MiniMax's `base_resp` in a 200 body; with status 200 and a
        str code (`insufficient_quota`) an OpenAI-style `error` object in a 200 body, as OpenAI-compatible gateways
        send it; otherwise an error body carrying the code. `as_event` sends it inside a 200 event stream when the
        request streams."""
        text = message or QUOTA_MESSAGES.get(code, "quota exceeded")
        return cls(status=status, quota_code=code, error_message=text, quota_event=as_event, usage=None)

    @classmethod
    def slow(cls, delay_s: float, text: str = "late") -> StubReply:
        """A reply that only comes after `delay_s` seconds."""
        return cls(text=text, delay_s=delay_s)


QUOTA_MESSAGES: dict[int | str, str] = {
    2056: "usage limit exceeded, 5-hour usage limit reached for Token Plan (0/0 used)",
    1008: "insufficient balance",
    "insufficient_quota": "You exceeded your current quota, please check your plan and billing details.",
}
"""Default message of `StubReply.quota` per code, as the providers word it."""


def _arguments_string(args: ToolArgs) -> str:
    return args if isinstance(args, str) else json.dumps(args)


def openai_body(n: int, model: str, reply: StubReply) -> dict[str, Any]:
    calls = [
        {"id": f"call_stub_{n}_{i}", "type": "function", "function": {"name": name, "arguments": _arguments_string(a)}}
        for i, (name, a) in enumerate(reply.tool_calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None}
    if calls:
        message["tool_calls"] = calls
    body: dict[str, Any] = {
        "id": f"chatcmpl-stub-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": None,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": reply.stop_reason or ("tool_calls" if calls else "stop"),
            }
        ],
    }
    u = reply.usage
    if u is not None:
        prompt = u.input + u.cached
        usage: dict[str, Any] = {
            "prompt_tokens": prompt,
            "completion_tokens": u.output,
            "total_tokens": prompt + u.output,
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        }
        if u.report_cache:
            usage["prompt_tokens_details"] = {"cached_tokens": u.cached, "audio_tokens": 0}
        body["usage"] = usage
    return body


def _anthropic_input(args: ToolArgs) -> Any:
    if isinstance(args, dict):
        return args
    try:
        parsed = json.loads(args)
    except json.JSONDecodeError:
        return args  # malformed on purpose: the client must cope
    return parsed if isinstance(parsed, dict) else args


def anthropic_body(n: int, model: str, reply: StubReply) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.thinking is not None:
        content.append({"type": "thinking", "thinking": reply.thinking, "signature": f"sig-stub-{n}"})
    if reply.text is not None:
        content.append({"type": "text", "text": reply.text, "citations": None})
    for i, (name, a) in enumerate(reply.tool_calls):
        content.append({"type": "tool_use", "id": f"toolu_stub_{n}_{i}", "name": name, "input": _anthropic_input(a)})
    body: dict[str, Any] = {
        "id": f"msg_stub_{n}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn"),
        "stop_sequence": None,
    }
    u = reply.usage
    if u is not None:
        usage: dict[str, Any] = {"input_tokens": u.input, "output_tokens": u.output}
        if u.report_cache:
            usage |= {"cache_read_input_tokens": u.cached, "cache_creation_input_tokens": u.cache_write}
        body["usage"] = usage
    return body


def error_body(provider: StubProvider, status: int, message: str) -> dict[str, Any]:
    kind = {
        400: "invalid_request_error",
        401: "authentication_error",
        404: "not_found_error",
        429: "rate_limit_error",
        529: "overloaded_error",
    }.get(status, "api_error")
    if provider == "openai":
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return {"type": "error", "error": {"type": kind, "message": message}}


def models_body(provider: StubProvider) -> dict[str, Any]:
    """A one-model `GET /v1/models` page in the provider's shape."""
    if provider == "openai":
        return {"object": "list", "data": [{"id": "stub-model", "object": "model", "created": 0, "owned_by": "stub"}]}
    return {
        "data": [{"type": "model", "id": "stub-model", "display_name": "stub", "created_at": "2026-01-01T00:00:00Z"}],
        "has_more": False, "first_id": "stub-model", "last_id": "stub-model",
    }


def quota_body(provider: StubProvider, n: int, model: str, reply: StubReply) -> dict[str, Any]:
    """The body of a quota refusal (`StubReply.quota`). 200: MiniMax's shape, `base_resp` beside an empty
    completion (OpenAI: `choices` null; Anthropic: a message with no content). Otherwise an error body: OpenAI
    with the code in `error.code`; Anthropic as MiniMax's Anthropic endpoint words it, the code only in the
    message ("… (2056)")."""
    code = reply.quota_code
    if reply.status == 200 and isinstance(code, str):
        error = {"message": reply.error_message, "type": code, "param": None, "code": code}
        if provider == "openai":
            return {"error": error}
        return {"type": "error", "error": error, "request_id": f"req_stub_{n}"}
    if reply.status == 200:
        base = {"status_code": code, "status_msg": reply.error_message}
        if provider == "openai":
            return {"id": f"chatcmpl-stub-{n}", "object": "chat.completion", "created": int(time.time()),
                    "model": model, "choices": None, "usage": None, "base_resp": base}
        return {"id": f"msg_stub_{n}", "type": "message", "role": "assistant", "model": model, "content": [],
                "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 0, "output_tokens": 0},
                "base_resp": base}
    if provider == "openai":
        kind = code if isinstance(code, str) else "rate_limit_error"
        return {"error": {"message": reply.error_message, "type": kind, "param": None, "code": str(code)}}
    suffix = f" ({code})" if isinstance(code, int) else ""
    return {"type": "error", "error": {"type": error_body(provider, reply.status, "")["error"]["type"],
                                       "message": reply.error_message + suffix}, "request_id": f"req_stub_{n}"}


def quota_frames(provider: StubProvider, n: int, model: str, reply: StubReply) -> list[bytes]:
    """A quota refusal inside a 200 event stream: OpenAI a chunk carrying `base_resp` (then `[DONE]`), Anthropic
    an `error` event whose message and `base_resp` carry the code. A str code is an `error` object in either."""
    if isinstance(reply.quota_code, str):
        error = {"message": reply.error_message, "type": reply.quota_code, "code": reply.quota_code}
        if provider == "openai":
            return [f"data: {json.dumps({'error': error})}\n\n".encode()]
        return [f"event: error\ndata: {json.dumps({'type': 'error', 'error': error})}\n\n".encode()]
    base = {"status_code": reply.quota_code, "status_msg": reply.error_message}
    if provider == "openai":
        chunk = {"id": f"chatcmpl-stub-{n}", "object": "chat.completion.chunk", "created": int(time.time()),
                 "model": model, "choices": [], "base_resp": base}
        return [f"data: {json.dumps(chunk)}\n\n".encode(), b"data: [DONE]\n\n"]
    event = {"type": "error", "error": {"type": "api_error", "message": f"{reply.error_message} ({reply.quota_code})"},
             "base_resp": base}
    return [f"event: error\ndata: {json.dumps(event)}\n\n".encode()]
