"""OpenAI chat.completions (and OpenAI-compatible endpoints) behind the neutral ModelClient."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

import openai

from farm.llm.client import ModelClient, ProviderReply
from farm.llm.config import LLMConfig
from farm.llm.retry import BadResponse, Failure, classify_sdk_error
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
        )

    def _send(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ProviderReply:
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
            resp = self._sdk.chat.completions.create(**kwargs)
        except json.JSONDecodeError as exc:
            raise BadResponse(f"response body is not JSON ({exc.msg})") from None
        return parse_openai_response(resp)


def parse_openai_response(resp: Any) -> ProviderReply:
    """A ChatCompletion -> ProviderReply (first choice)."""
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
