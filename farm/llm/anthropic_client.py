"""Anthropic messages behind the neutral ModelClient."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Sequence
from types import SimpleNamespace
from typing import Any

import anthropic

from farm.errors import FarmError
from farm.llm.client import ModelClient, ProviderReply
from farm.llm.model_config import THINKING_BUDGET, LLMConfig
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
from farm.llm.types import Message, StopKind, ThinkingBlock, ToolCall, ToolSpec, image_media_type
from farm.results.record import Tokens

_STOP: dict[str, StopKind] = {
    "end_turn": "end",
    "stop_sequence": "end",
    "tool_use": "tool_calls",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "refusal": "refusal",
}



def _image_block(jpeg: bytes) -> dict[str, Any]:
    data = base64.b64encode(jpeg).decode("ascii")
    return {"type": "image", "source": {"type": "base64", "media_type": image_media_type(jpeg), "data": data}}


def _tool_input(call: ToolCall) -> dict[str, Any]:
    # The API only takes an object back; a malformed call is replayed under a key so the model sees it.
    try:
        return dict(call.arguments())
    except ValueError:
        return {"unparsed_arguments": call.arguments_json}


def to_anthropic_messages(messages: Sequence[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """Neutral messages -> (`system`, `messages`). Tool results become user tool_result blocks and
    consecutive user-side content is merged into one message, as the API alternates roles."""
    system_parts: list[str] = []
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for msg in messages:
        if msg.role == "system":
            if msg.text:
                system_parts.append(msg.text)
        elif msg.role == "user":
            blocks = [_image_block(img) for img in msg.images]
            if msg.text:
                blocks.append({"type": "text", "text": msg.text})
            add("user", blocks)
        elif msg.role == "tool":
            # The API refuses empty text blocks, so an empty result carries no content at all.
            content: list[dict[str, Any]] = [{"type": "text", "text": msg.text}] if msg.text else []
            content += [_image_block(img) for img in msg.images]
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": msg.tool_call_id or ""}
            if content:
                result["content"] = content
            add("user", [result])
        else:
            blocks = []
            for t in msg.thinking:
                if t.kind == "thinking":
                    blocks.append({"type": "thinking", "thinking": t.text, "signature": t.signature or ""})
                else:
                    blocks.append({"type": "redacted_thinking", "data": t.data or ""})
            if msg.text:
                blocks.append({"type": "text", "text": msg.text})
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": _tool_input(c)} for c in msg.tool_calls
            ]
            add("assistant", blocks)
    return ("\n\n".join(system_parts) or None), out


def to_anthropic_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Neutral tool specs -> messages `tools`."""
    return [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools]


def usage_tokens(usage: Any) -> Tokens:
    """Anthropic usage -> Tokens. `input_tokens` already excludes cache reads and writes."""
    if usage is None:
        return Tokens()
    return Tokens(
        input_new=getattr(usage, "input_tokens", None),
        cache_read=getattr(usage, "cache_read_input_tokens", None),
        cache_write=getattr(usage, "cache_creation_input_tokens", None),
        output=getattr(usage, "output_tokens", None),
    )


class AnthropicModelClient(ModelClient):
    """messages.create with tools; the SDK's own retries are off (the base class retries)."""

    provider = "anthropic"

    def __init__(self, cfg: LLMConfig, api_key: str) -> None:
        super().__init__(cfg)
        self._secret = api_key
        self._sdk = anthropic.Anthropic(api_key=api_key, base_url=cfg.base_url, timeout=cfg.timeout_s, max_retries=0)

    def close(self) -> None:
        self._sdk.close()

    def _probe(self, timeout_s: float) -> None:
        self._sdk.with_options(timeout=timeout_s, max_retries=0).models.list()

    def _classify(self, exc: Exception) -> Failure | None:
        return classify_sdk_error(
            exc,
            status_error=anthropic.APIStatusError,
            timeout_error=anthropic.APITimeoutError,
            connection_error=anthropic.APIConnectionError,
            validation_error=anthropic.APIResponseValidationError,
            api_error=anthropic.APIError,
        )

    def _send(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], on_delta: Callable[[], None] | None = None,
    ) -> ProviderReply:
        cfg = self.config
        system, converted = to_anthropic_messages(messages)
        if not converted:
            raise FarmError("llm: complete() got only system messages", hint="add a user message")
        kwargs: dict[str, Any] = {
            "model": cfg.model,
            "messages": converted,
            "max_tokens": cfg.max_output_tokens,
        }
        if system is not None:
            kwargs["system"] = system
        if cfg.anthropic_prompt_cache:
            # Agent conversations grow by appending, so caching up to the last block pays off each turn.
            kwargs["cache_control"] = {"type": "ephemeral"}
        if tools:
            kwargs["tools"] = to_anthropic_tools(tools)
        budget = THINKING_BUDGET.get(cfg.reasoning_effort or "none")
        if budget is not None:
            kwargs["thinking"] = {"type": "enabled", "budget_tokens": budget}
            kwargs["max_tokens"] = cfg.max_output_tokens + budget
        elif cfg.temperature is not None:
            # Not a named argument of this SDK's create(); sent as-is. The API refuses it with thinking.
            kwargs["extra_body"] = {"temperature": cfg.temperature}
        try:
            if on_delta is None:
                return parse_anthropic_response(self._sdk.messages.create(**kwargs))
            # The raw event stream rather than messages.stream(): its accumulator parses tool input as
            # JSON as it goes and fails on a malformed call, which the non-streamed path keeps verbatim.
            events = self._sdk.messages.create(**kwargs, stream=True)
            # An error answered as plain JSON (MiniMax's base_resp) instead of an event stream.
            non_stream_body(events.response)
            return read_anthropic_stream(events, on_delta)
        except json.JSONDecodeError as exc:
            raise BadResponse(f"response body is not JSON ({exc.msg})") from None


def parse_anthropic_response(resp: Any) -> ProviderReply:
    """A Message -> ProviderReply; an error the body states (an `error` object in a 200, a MiniMax `base_resp`)
    raises ProviderError, even beside content."""
    extra = getattr(resp, "model_extra", None)
    failure = body_failure(extra) if isinstance(extra, dict) else None
    if failure is not None:
        raise ProviderError(failure)
    blocks = getattr(resp, "content", None)
    if getattr(resp, "type", None) != "message" or not isinstance(blocks, list):
        raise BadResponse(f"response is not a message (got {type(resp).__name__})")
    texts: list[str] = []
    calls: list[ToolCall] = []
    thinking: list[ThinkingBlock] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
        elif kind == "tool_use":
            raw = block.input
            arguments = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
            calls.append(ToolCall(id=block.id, name=block.name, arguments_json=arguments))
        elif kind == "thinking":
            thinking.append(ThinkingBlock(kind="thinking", text=block.thinking, signature=block.signature))
        elif kind == "redacted_thinking":
            thinking.append(ThinkingBlock(kind="redacted_thinking", data=block.data))
    stop_reason = getattr(resp, "stop_reason", None)
    return ProviderReply(
        text="\n".join(texts) if texts else None,
        tool_calls=calls,
        usage=usage_tokens(getattr(resp, "usage", None)),
        raw_stop_reason=stop_reason,
        stop=_STOP.get(stop_reason or "", "other"),
        model=getattr(resp, "model", None),
        thinking=thinking,
    )


_USAGE_FIELDS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens")


def _tool_arguments(raw: str, start_input: Any) -> str:
    """A streamed tool input as the non-streamed path renders it: JSON objects re-serialised, anything
    else (malformed on purpose or by accident) kept verbatim."""
    if not raw:
        return json.dumps(start_input if start_input is not None else {}, ensure_ascii=False)
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return raw
    return json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else raw


def read_anthropic_stream(events: Iterable[Any], on_delta: Callable[[], None]) -> ProviderReply:
    """Raw message stream events -> the ProviderReply `parse_anthropic_response` gives for the same message.

    `on_delta()` is called on each non-empty text, thinking or tool-input delta and on each tool call's
    start (its name is output too); a stream without `message_stop` was cut (StreamCut).
    """
    blocks: dict[int, dict[str, Any]] = {}
    usage: dict[str, Any] = {}
    model: str | None = None
    stop_reason: str | None = None
    ended = False
    for event in guarded_stream(events):
        kind = getattr(event, "type", None)
        if kind == "message_start":
            model = getattr(event.message, "model", None)
            start_usage = getattr(event.message, "usage", None)
            if start_usage is not None:
                usage = {k: getattr(start_usage, k, None) for k in _USAGE_FIELDS}
        elif kind == "content_block_start":
            block = event.content_block
            blocks[event.index] = {
                "type": block.type, "parts": [getattr(block, "text", None) or getattr(block, "thinking", None) or ""],
                "signature": getattr(block, "signature", None) or None, "data": getattr(block, "data", None),
                "id": getattr(block, "id", None), "name": getattr(block, "name", None),
                "input": getattr(block, "input", None), "json": [],
            }
            if block.type == "tool_use" or blocks[event.index]["parts"][0]:
                on_delta()
        elif kind == "content_block_delta":
            if event.index not in blocks:
                raise BadResponse(f"stream delta for content block {event.index} that never started")
            open_block, delta = blocks[event.index], event.delta
            piece = ""
            if delta.type in ("text_delta", "thinking_delta"):
                piece = delta.text if delta.type == "text_delta" else delta.thinking
                open_block["parts"].append(piece)
            elif delta.type == "input_json_delta":
                piece = delta.partial_json
                open_block["json"].append(piece)
            elif delta.type == "signature_delta":
                open_block["signature"] = delta.signature
            if piece:
                on_delta()
        elif kind == "message_delta":
            stop_reason = getattr(event.delta, "stop_reason", None) or stop_reason
            later = getattr(event, "usage", None)
            # Counts on message_delta are cumulative totals; absent ones keep message_start's value.
            for key in _USAGE_FIELDS if later is not None else ():
                if getattr(later, key, None) is not None:
                    usage[key] = getattr(later, key)
        elif kind == "message_stop":
            ended = True
    if not ended:
        raise StreamCut("the stream ended before message_stop")
    content: list[Any] = []
    for _, b in sorted(blocks.items()):
        text = "".join(b["parts"])
        if b["type"] == "text":
            content.append(SimpleNamespace(type="text", text=text))
        elif b["type"] == "thinking":
            content.append(SimpleNamespace(type="thinking", thinking=text, signature=b["signature"]))
        elif b["type"] == "redacted_thinking":
            content.append(SimpleNamespace(type="redacted_thinking", data=b["data"]))
        elif b["type"] == "tool_use":
            arguments = _tool_arguments("".join(b["json"]), b["input"])
            content.append(SimpleNamespace(type="tool_use", id=b["id"], name=b["name"], input=arguments))
    message = SimpleNamespace(
        type="message", content=content, stop_reason=stop_reason, model=model,
        usage=SimpleNamespace(**usage) if usage else None,
    )
    return parse_anthropic_response(message)
