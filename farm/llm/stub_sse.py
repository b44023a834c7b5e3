"""The model stub's streamed replies: a scripted reply as the server-sent events each provider sends.

OpenAI chat.completions: `chat.completion.chunk` objects (a role chunk, content and tool-call fragments, a
finish chunk, then — with `stream_options.include_usage` — a usage chunk with no choices) and `data: [DONE]`.
Anthropic messages: message_start, then per content block content_block_start / content_block_delta
(text_delta, thinking_delta + signature_delta, input_json_delta) / content_block_stop, message_delta with
the stop reason and output tokens, message_stop.
"""

from __future__ import annotations

import json
import threading
import time
from io import BufferedIOBase
from typing import Any

from farm.llm.stub_wire import StubReply, anthropic_body, openai_body

PIECE = 8
"""Characters per streamed fragment, so clients really have to join them."""


def _pieces(text: str) -> list[str]:
    return [text[i:i + PIECE] for i in range(0, len(text), PIECE)] or [""]


def _frame(data: dict[str, Any] | str, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def openai_stream(n: int, model: str, reply: StubReply, *, include_usage: bool) -> list[bytes]:
    """The SSE frames of `reply` as a streamed chat completion."""
    whole = openai_body(n, model, reply)
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        body: dict[str, Any] = {
            "id": whole["id"], "object": "chat.completion.chunk", "created": created, "model": model,
            "system_fingerprint": None,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if include_usage:
            body["usage"] = None
        return _frame(body)

    message = whole["choices"][0]["message"]
    frames = [chunk({"role": "assistant", "content": "" if reply.text is not None else None, "refusal": None})]
    if reply.empty_first_delta:
        frames.append(chunk({"content": ""}))
    if reply.text is not None:
        frames += [chunk({"content": piece}) for piece in _pieces(reply.text)]
    for i, call in enumerate(message.get("tool_calls", [])):
        head = {"index": i, "id": call["id"], "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""}}
        frames.append(chunk({"tool_calls": [head]}))
        frames += [chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
                   for piece in _pieces(call["function"]["arguments"])]
    frames.append(chunk({}, whole["choices"][0]["finish_reason"]))
    if include_usage and "usage" in whole:
        frames.append(_frame({"id": whole["id"], "object": "chat.completion.chunk", "created": created,
                              "model": model, "system_fingerprint": None, "choices": [], "usage": whole["usage"]}))
    frames.append(_frame("[DONE]"))
    return frames


def anthropic_stream(n: int, model: str, reply: StubReply) -> list[bytes]:
    """The SSE frames of `reply` as a streamed message."""
    whole = anthropic_body(n, model, reply)
    start = {k: v for k, v in whole.items() if k not in ("content", "usage")} | {
        "content": [], "stop_reason": None, "stop_sequence": None,
    }
    usage = whole.get("usage")
    if usage is not None:
        # Like the API: input and cache counts up front, output counted at the end.
        start["usage"] = usage | {"output_tokens": 1}
    frames = [_frame({"type": "message_start", "message": start}, "message_start"),
              _frame({"type": "ping"}, "ping")]

    def event(kind: str, **fields: Any) -> None:
        frames.append(_frame({"type": kind, **fields}, kind))

    for index, block in enumerate(whole["content"]):
        kind = block["type"]
        if kind == "thinking":
            event("content_block_start", index=index,
                  content_block={"type": "thinking", "thinking": "", "signature": ""})
            for piece in _pieces(block["thinking"]):
                event("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": piece})
            event("content_block_delta", index=index,
                  delta={"type": "signature_delta", "signature": block["signature"]})
        elif kind == "text":
            event("content_block_start", index=index, content_block={"type": "text", "text": ""})
            pieces = ([""] if reply.empty_first_delta else []) + _pieces(block["text"])
            for piece in pieces:
                event("content_block_delta", index=index, delta={"type": "text_delta", "text": piece})
        else:
            raw = block["input"] if isinstance(block["input"], str) else json.dumps(block["input"])
            event("content_block_start", index=index,
                  content_block={"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}})
            for piece in _pieces(raw):
                event("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": piece})
        event("content_block_stop", index=index)
    delta_event: dict[str, Any] = {"delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None}}
    if usage is not None:
        delta_event["usage"] = {"output_tokens": usage["output_tokens"]}
    event("message_delta", **delta_event)
    event("message_stop")
    return frames


def write_chunked(
    out: BufferedIOBase, frames: list[bytes], reply: StubReply, stopping: threading.Event,
) -> bool:
    """Write `frames` as HTTP/1.1 chunks, pausing `reply.chunk_delay_s` between them. Returns False when
    the body was left unfinished (a scripted cut, or the stub stopping) so the caller hangs up: without
    the terminating chunk the client sees a dropped connection, not a short reply."""
    for i, frame in enumerate(frames):
        if reply.cut_after_events is not None and i >= reply.cut_after_events:
            return False
        if i and reply.chunk_delay_s > 0 and stopping.wait(reply.chunk_delay_s):
            return False
        out.write(f"{len(frame):x}\r\n".encode() + frame + b"\r\n")
        out.flush()
    out.write(b"0\r\n\r\n")
    return True
