"""OpenAI chat.completions (and OpenAI-compatible endpoints) behind the neutral ModelClient."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import openai

from farm.llm.client import ModelClient, ProviderReply
from farm.llm.model_config import LLMConfig
from farm.llm.retry import (
    BadResponse,
    Failure,
    ProviderError,
    StreamCut,
    body_failure,
    classify_sdk_error,
    guarded_stream,
    non_stream_body,
)
from farm.llm.types import Message, StopKind, ToolCall, ToolSpec, image_media_type
from farm.results.record import Tokens

_STOP: dict[str, StopKind] = {
    "stop": "end",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def _image_part(jpeg: bytes) -> dict[str, Any]:
    data = base64.b64encode(jpeg).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:{image_media_type(jpeg)};base64,{data}"}}


def to_openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Neutral messages -> chat.completions `messages`.

    Tool messages cannot carry images in this API, so images returned by tools travel in one user
    message placed right after the run of tool results.
    """
    out: list[dict[str, Any]] = []
    pending_images: list[bytes] = []

    def flush() -> None:
        if pending_images:
            parts: list[dict[str, Any]] = [{"type": "text", "text": "Images returned by the tool calls above:"}]
            parts += [_image_part(img) for img in pending_images]
            out.append({"role": "user", "content": parts})
            pending_images.clear()

    for msg in messages:
        if msg.role != "tool":
            flush()
        if msg.role == "system":
            out.append({"role": "system", "content": msg.text or ""})
        elif msg.role == "user":
            if msg.images:
                parts = [{"type": "text", "text": msg.text}] if msg.text else []
                parts += [_image_part(img) for img in msg.images]
                out.append({"role": "user", "content": parts})
            else:
                out.append({"role": "user", "content": msg.text or ""})
        elif msg.role == "assistant":
            # content may be null only when tool calls carry the turn.
            entry: dict[str, Any] = {"role": "assistant", "content": msg.text or (None if msg.tool_calls else "")}
            if msg.tool_calls:
                entry["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_json}}
                    for c in msg.tool_calls
                ]
            out.append(entry)
        else:
            out.append({"role": "tool", "tool_call_id": msg.tool_call_id or "", "content": msg.text or ""})
            pending_images.extend(msg.images)
    flush()
    return out


def to_openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Neutral tool specs -> chat.completions `tools`."""
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in tools
    ]


def usage_tokens(usage: Any) -> Tokens:
    """OpenAI usage -> Tokens. `prompt_tokens` includes cached ones; cache writes are not reported.

    An endpoint that reports no cache details bills every prompt token as new, so input_new is
    prompt_tokens and cache_read stays unknown.
    """
    if usage is None:
        return Tokens()
    prompt = getattr(usage, "prompt_tokens", None)
    output = getattr(usage, "completion_tokens", None)
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    input_new = None if prompt is None else prompt - (cached or 0)
    return Tokens(input_new=input_new, cache_read=cached, cache_write=None, output=output)


class OpenAIModelClient(ModelClient):
    """chat.completions with function tools; the SDK's own retries are off (the base class retries)."""

    provider = "openai"

    def __init__(self, cfg: LLMConfig, api_key: str) -> None:
        super().__init__(cfg)
        self._secret = api_key
        self._sdk = openai.OpenAI(api_key=api_key, base_url=cfg.base_url, timeout=cfg.timeout_s, max_retries=0)

    def close(self) -> None:
        self._sdk.close()

    def _probe(self, timeout_s: float) -> None:
        self._sdk.with_options(timeout=timeout_s, max_retries=0).models.list()

    def _classify(self, exc: Exception) -> Failure | None:
        return classify_sdk_error(
            exc,
            status_error=openai.APIStatusError,
            timeout_error=openai.APITimeoutError,
            connection_error=openai.APIConnectionError,
            validation_error=openai.APIResponseValidationError,
            api_error=openai.APIError,
        )

    def _send(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], on_delta: Callable[[], None] | None = None,
    ) -> ProviderReply:
        cfg = self.config
        kwargs: dict[str, Any] = {
            "model": cfg.model,
            "messages": to_openai_messages(messages),
            cfg.openai_max_tokens_param: cfg.max_output_tokens,
        }
        if tools:
            kwargs["tools"] = to_openai_tools(tools)
        if cfg.reasoning_effort is not None:
            kwargs["reasoning_effort"] = cfg.reasoning_effort
        if cfg.temperature is not None:
            kwargs["temperature"] = cfg.temperature
        try:
            if on_delta is None:
                return parse_openai_response(self._sdk.chat.completions.create(**kwargs))
            # Without include_usage a streamed reply carries no token counts at all.
            chunks = self._sdk.chat.completions.create(**kwargs, stream=True, stream_options={"include_usage": True})
            # An error answered as plain JSON (MiniMax's base_resp) instead of an event stream.
            non_stream_body(chunks.response)
            return read_openai_stream(chunks, on_delta)
        except json.JSONDecodeError as exc:
            raise BadResponse(f"response body is not JSON ({exc.msg})") from None


def parse_openai_response(resp: Any) -> ProviderReply:
    """A ChatCompletion -> ProviderReply (first choice); an error the body states (an `error` object in a 200, a
    MiniMax `base_resp`) raises ProviderError."""
    _raise_body_error(resp)
    choices = getattr(resp, "choices", None) or []
    if not choices:
        raise BadResponse(f"response is not a chat completion (no choices; got {type(resp).__name__})")
    choice = choices[0]
    msg = choice.message
    calls: list[ToolCall] = []
    for call in msg.tool_calls or []:
        function = getattr(call, "function", None)
        if function is None:  # custom (non-function) tools are not offered by this client
            continue
        arguments = function.arguments
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        calls.append(ToolCall(id=call.id, name=function.name, arguments_json=arguments))
    text = msg.content
    refusal = getattr(msg, "refusal", None)
    stop = _STOP.get(choice.finish_reason or "", "other")
    if refusal and not text:
        text, stop = refusal, "refusal"
    return ProviderReply(
        text=text,
        tool_calls=calls,
        usage=usage_tokens(getattr(resp, "usage", None)),
        raw_stop_reason=choice.finish_reason,
        stop=stop,
        model=getattr(resp, "model", None),
    )


def _raise_body_error(obj: Any) -> None:
    """Raise the failure a 200 body states in fields a completion does not have (the SDK keeps them in
    `model_extra`): an OpenAI-style `error` object (a gateway's `insufficient_quota`), MiniMax's `base_resp`."""
    extra = getattr(obj, "model_extra", None)
    failure = body_failure(extra) if isinstance(extra, dict) else None
    if failure is not None:
        raise ProviderError(failure)


@dataclass
class _CallParts:
    """A streamed tool call being assembled from its deltas."""

    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


def _reasoning_delta(delta: Any) -> bool:
    # Not in the OpenAI schema, but OpenAI-compatible reasoning servers stream it under one of these names.
    extra = getattr(delta, "model_extra", None) or {}
    return any(isinstance(extra.get(k), str) and extra[k] for k in ("reasoning_content", "reasoning"))


def read_openai_stream(chunks: Iterable[Any], on_delta: Callable[[], None]) -> ProviderReply:
    """ChatCompletionChunks (first choice) -> the ProviderReply the non-streamed response gives.

    `on_delta()` is called for each chunk carrying non-empty text, refusal, reasoning, or a tool call's
    name or argument fragment; a stream without a finish_reason was cut (StreamCut).
    """
    text: list[str] = []
    refusal: list[str] = []
    calls: dict[int, _CallParts] = {}
    finish: str | None = None
    model: str | None = None
    usage: Any = None
    for chunk in guarded_stream(chunks):
        _raise_body_error(chunk)
        model = getattr(chunk, "model", None) or model
        if getattr(chunk, "usage", None) is not None:
            usage = chunk.usage
        for choice in getattr(chunk, "choices", None) or []:
            if choice.index != 0 or choice.delta is None:
                continue
            delta = choice.delta
            fresh = _reasoning_delta(delta)
            if delta.content is not None:
                text.append(delta.content)
                fresh = fresh or bool(delta.content)
            if getattr(delta, "refusal", None):
                refusal.append(delta.refusal)
                fresh = True
            for part in delta.tool_calls or []:
                call = calls.setdefault(part.index, _CallParts())
                call.id = part.id or call.id
                if part.function is not None:
                    call.name = part.function.name or call.name
                    call.arguments.append(part.function.arguments or "")
                    fresh = fresh or bool(part.function.name or part.function.arguments)
            finish = choice.finish_reason or finish
            if fresh:
                on_delta()
    if finish is None:
        raise StreamCut("the stream ended without a finish_reason")
    tool_calls = [
        ToolCall(id=c.id, name=c.name, arguments_json="".join(c.arguments)) for _, c in sorted(calls.items()) if c.name
    ]
    joined = "".join(text)
    out_text = joined if text and (joined or not tool_calls) else None
    stop = _STOP.get(finish, "other")
    if refusal and not out_text:
        out_text, stop = "".join(refusal), "refusal"
    return ProviderReply(
        text=out_text, tool_calls=tool_calls, usage=usage_tokens(usage), raw_stop_reason=finish, stop=stop, model=model,
    )
