"""The stub itself: routing, recording, responders, under-scripting."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from farm.llm.client import ModelCallError
from farm.llm.stub import ModelStub, StubReply, StubUsage
from farm.llm.types import Message
from tests.llm.conftest import MakeClient


def test_responder_decides_when_the_script_is_empty(stub: ModelStub, client_for: MakeClient) -> None:
    seen: list[int] = []

    def policy(body: dict[str, Any]) -> StubReply:
        seen.append(len(body["messages"]))
        return StubReply(text=f"{len(body['messages'])} messages")

    stub.responder = policy
    stub.script([StubReply(text="scripted first")])
    client = client_for("openai")
    assert client.complete([Message.user("a")]).text == "scripted first"
    assert client.complete([Message.user("a"), Message.user("b")]).text == "2 messages"
    assert seen == [2]


def test_default_reply_repeats(client_for: MakeClient, stub: ModelStub) -> None:
    stub.default = StubReply(text="again")
    client = client_for("anthropic")
    assert [client.complete([Message.user("x")]).text for _ in range(3)] == ["again"] * 3


def test_under_scripted_stub_fails_loudly(client_for: MakeClient) -> None:
    with pytest.raises(ModelCallError, match="no scripted reply left"):
        client_for("openai").complete([Message.user("x")])


def test_requests_are_recorded_in_order_with_provider(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(text="1"), StubReply(text="2")])
    client_for("openai").complete([Message.user("first")])
    client_for("anthropic").complete([Message.user("second")])
    assert [(r.provider, r.path) for r in stub.requests] == [
        ("openai", "/v1/chat/completions"),
        ("anthropic", "/v1/messages"),
    ]
    assert stub.requests[0].body["messages"][0]["content"] == "first"
    assert stub.requests[1].body["messages"][0]["content"] == [{"type": "text", "text": "second"}]


def test_unknown_route_is_404(stub: ModelStub) -> None:
    response = httpx.post(f"{stub.base_url_openai}/embeddings", json={}, timeout=10)
    assert response.status_code == 404
    assert stub.requests == []


def test_stop_interrupts_a_slow_reply() -> None:
    stub = ModelStub().start()
    stub.script([StubReply.slow(60.0)])
    # The client would wait 30 s; a disconnect (not a timeout) proves stop() cut the reply short.
    with pytest.raises(httpx.RemoteProtocolError):
        with httpx.Client(timeout=30) as http:
            import threading

            threading.Timer(0.3, stub.stop).start()
            http.post(f"{stub.base_url_openai}/chat/completions", json={"model": "m", "messages": []})


def _sse_data(text: str) -> list[str]:
    return [line.removeprefix("data: ") for line in text.splitlines() if line.startswith("data: ")]


def test_openai_stream_is_chunk_objects_then_done(stub: ModelStub) -> None:
    stub.script([StubReply(text="hello there, streaming", usage=StubUsage(input=4, output=2))])
    response = httpx.post(f"{stub.base_url_openai}/chat/completions", timeout=10, json={
        "model": "m", "messages": [], "stream": True, "stream_options": {"include_usage": True}})
    data = _sse_data(response.text)
    chunks = [json.loads(d) for d in data[:-1]]
    assert response.headers["content-type"] == "text/event-stream"
    assert data[-1] == "[DONE]"
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]) == (
        "hello there, streaming")
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["prompt_tokens"] == 4
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"


def test_openai_stream_has_no_usage_chunk_unless_asked(stub: ModelStub) -> None:
    stub.script([StubReply(text="hi")])
    response = httpx.post(f"{stub.base_url_openai}/chat/completions", timeout=10,
                          json={"model": "m", "messages": [], "stream": True})
    chunks = [json.loads(d) for d in _sse_data(response.text)[:-1]]
    assert all(c["choices"] for c in chunks)
    assert all("usage" not in c for c in chunks)


def test_anthropic_stream_follows_the_event_order(stub: ModelStub) -> None:
    stub.script([StubReply(text="ok", thinking="hmm", tool_calls=[("tap", {"x": 1})])])
    response = httpx.post(f"{stub.base_url_anthropic}/v1/messages", timeout=10, json={
        "model": "m", "messages": [], "max_tokens": 10, "stream": True})
    events = [line.removeprefix("event: ") for line in response.text.splitlines() if line.startswith("event: ")]
    payloads = [json.loads(d) for d in _sse_data(response.text)]
    deltas = [p["delta"]["type"] for p in payloads if p["type"] == "content_block_delta"]
    assert events == [p["type"] for p in payloads]
    assert events[:2] == ["message_start", "ping"] and events[-2:] == ["message_delta", "message_stop"]
    assert payloads[0]["message"]["content"] == []
    assert deltas == ["thinking_delta", "signature_delta", "text_delta", "input_json_delta"]
    assert events.count("content_block_start") == events.count("content_block_stop") == 3
    assert payloads[-2]["delta"]["stop_reason"] == "tool_use"


def test_a_scripted_cut_leaves_the_stream_unterminated(stub: ModelStub) -> None:
    stub.script([StubReply(text="abcdefghijklmnopqrstuvwxyz", cut_after_events=2)])
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.post(f"{stub.base_url_openai}/chat/completions", timeout=10,
                   json={"model": "m", "messages": [], "stream": True})


def test_responder_can_read_tool_results_of_either_api(stub: ModelStub, client_for: MakeClient) -> None:
    from farm.llm.stub import tool_results

    def policy(body: dict[str, Any]) -> StubReply:
        results = tool_results(body)
        if not results:
            return StubReply(tool_calls=[("read_screen", {})])
        return StubReply(text=f"answer from: {results[-1]}")

    stub.responder = policy
    for provider in ("openai", "anthropic"):
        client = client_for(provider)
        messages = [Message.user("what is the battery level?")]
        turn = client.complete(messages)
        messages += [turn.as_message(), Message.tool_result(turn.tool_calls[0].id, "Battery 87%")]
        assert client.complete(messages).text == "answer from: Battery 87%"
