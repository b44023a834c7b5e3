"""The real openai/anthropic SDKs against the loopback stub: replies, tools, usage, cost."""

from __future__ import annotations

import base64

import pytest

from farm.llm.client import ModelCallError
from farm.llm.model_config import ModelPrice, Provider
from farm.llm.stub import ModelStub, StubReply, StubUsage
from farm.llm.types import Message, ToolSpec
from tests.llm.conftest import CANARY_KEY, MakeClient

PROVIDERS: list[Provider] = ["openai", "anthropic"]
TAP = ToolSpec(
    name="tap",
    description="Tap a point on the screen.",
    parameters={"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}},
)
JPEG = b"\xff\xd8\xff\xe0fake-jpeg\xff\xd9"


def convo() -> list[Message]:
    return [Message.system("You operate a phone."), Message.user("Open settings.")]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_text_reply(provider: Provider, stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(text="Settings is open.")])
    turn = client_for(provider).complete(convo(), [TAP])
    assert turn.text == "Settings is open."
    assert turn.tool_calls == []
    assert turn.stop == "end"
    assert turn.model == f"{provider}-test-model"
    assert turn.retries == 0


@pytest.mark.parametrize("provider", PROVIDERS)
def test_tool_call_reply_becomes_tool_calls(provider: Provider, stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(tool_calls=[("tap", {"x": 10, "y": 20}), ("tap", {"x": 1, "y": 2})])])
    turn = client_for(provider).complete(convo(), [TAP])
    assert [c.name for c in turn.tool_calls] == ["tap", "tap"]
    assert turn.tool_calls[0].arguments() == {"x": 10, "y": 20}
    assert turn.tool_calls[1].arguments() == {"x": 1, "y": 2}
    assert len({c.id for c in turn.tool_calls}) == 2
    assert turn.stop == "tool_calls"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_malformed_tool_arguments_are_kept_raw(provider: Provider, stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(tool_calls=[("tap", "{x: 10,")])])
    turn = client_for(provider).complete(convo(), [TAP])
    assert turn.tool_calls[0].arguments_json == "{x: 10,"
    with pytest.raises(ValueError, match="not valid JSON"):
        turn.tool_calls[0].arguments()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_tools_are_offered_in_the_provider_format(provider: Provider, stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(text="ok")])
    client_for(provider).complete(convo(), [TAP])
    tools = stub.requests[0].body["tools"]
    if provider == "openai":
        assert tools[0]["function"]["name"] == "tap"
        assert tools[0]["function"]["parameters"]["properties"]["x"] == {"type": "integer"}
    else:
        assert tools[0]["name"] == "tap"
        assert tools[0]["input_schema"]["properties"]["y"] == {"type": "integer"}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_tool_result_reaches_the_model(provider: Provider, stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(tool_calls=[("tap", {"x": 1, "y": 2})]), StubReply(text="done")])
    client = client_for(provider)
    messages = convo()
    first = client.complete(messages, [TAP])
    messages += [first.as_message(), Message.tool_result(first.tool_calls[0].id, "tapped; Wi-Fi row visible")]
    second = client.complete(messages, [TAP])
    assert second.text == "done"
    sent = stub.requests[1]
    assert sent.tool_results() == ["tapped; Wi-Fi row visible"]
    call_id = first.tool_calls[0].id
    if provider == "openai":
        assert sent.body["messages"][2]["tool_calls"][0]["id"] == call_id
        assert sent.body["messages"][3]["tool_call_id"] == call_id
    else:
        assert sent.body["messages"][1]["content"][0] == {
            "type": "tool_use",
            "id": call_id,
            "name": "tap",
            "input": {"x": 1, "y": 2},
        }
        assert sent.body["messages"][2]["content"][0]["tool_use_id"] == call_id


@pytest.mark.parametrize("provider", PROVIDERS)
def test_images_are_sent_as_base64_jpeg(provider: Provider, stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(text="I see it")])
    client_for(provider).complete([Message.user("What is on screen?", images=[JPEG])])
    content = stub.requests[0].body["messages"][0]["content"]
    encoded = base64.b64encode(JPEG).decode()
    if provider == "openai":
        urls = [p["image_url"]["url"] for p in content if p["type"] == "image_url"]
        assert urls == [f"data:image/jpeg;base64,{encoded}"]
    else:
        images = [b["source"] for b in content if b["type"] == "image"]
        assert images == [{"type": "base64", "media_type": "image/jpeg", "data": encoded}]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_tool_result_images_reach_the_model(provider: Provider, stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(tool_calls=[("screenshot", {})]), StubReply(text="seen")])
    client = client_for(provider)
    messages = convo()
    first = client.complete(messages)
    messages += [first.as_message(), Message.tool_result(first.tool_calls[0].id, "screenshot", images=[JPEG])]
    client.complete(messages)
    assert stub.requests[1].image_count() == 1
    assert stub.requests[1].tool_results() == ["screenshot"]


def test_anthropic_system_prompt_is_separate(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(text="ok")])
    client_for("anthropic").complete(convo())
    body = stub.requests[0].body
    assert body["system"] == "You operate a phone."
    assert [m["role"] for m in body["messages"]] == ["user"]


def test_openai_usage_splits_cached_tokens(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(text="ok", usage=StubUsage(input=700, cached=300, output=42))])
    turn = client_for("openai").complete(convo())
    assert turn.usage.input_new == 700
    assert turn.usage.cache_read == 300
    assert turn.usage.cache_write is None
    assert turn.usage.output == 42


def test_anthropic_usage_reports_cache_reads_and_writes(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(text="ok", usage=StubUsage(input=120, cached=900, cache_write=64, output=17))])
    turn = client_for("anthropic").complete(convo())
    assert turn.usage.input_new == 120
    assert turn.usage.cache_read == 900
    assert turn.usage.cache_write == 64
    assert turn.usage.output == 17


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cost_is_computed_from_the_price(provider: Provider, stub: ModelStub, client_for: MakeClient) -> None:
    price = ModelPrice(input_per_m=2.0, output_per_m=10.0, cache_read_per_m=0.5, cache_write_per_m=2.5)
    stub.script([StubReply(text="ok", usage=StubUsage(input=1000, cached=2000, cache_write=400, output=100))])
    turn = client_for(provider, pricing=price).complete(convo())
    cache_write = 400 * 2.5 if provider == "anthropic" else 0.0
    expected = (1000 * 2.0 + 2000 * 0.5 + 100 * 10.0 + cache_write) / 1_000_000
    assert turn.cost_usd == pytest.approx(expected)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cost_is_none_without_a_price(provider: Provider, stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(text="ok")])
    turn = client_for(provider).complete(convo())
    assert turn.cost_usd is None
    assert turn.usage.output == 5


def test_openai_reasoning_effort_is_sent_only_when_set(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(text="a"), StubReply(text="b")])
    client_for("openai", reasoning_effort="low").complete(convo())
    client_for("openai").complete(convo())
    assert stub.requests[0].body["reasoning_effort"] == "low"
    assert "reasoning_effort" not in stub.requests[1].body


def test_anthropic_reasoning_effort_becomes_a_thinking_budget(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(text="a"), StubReply(text="b")])
    client_for("anthropic", reasoning_effort="medium", max_output_tokens=1000).complete(convo())
    client_for("anthropic", max_output_tokens=1000).complete(convo())
    first, second = (r.body for r in stub.requests)
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert first["max_tokens"] == 1000 + 8192
    assert "thinking" not in second
    assert second["max_tokens"] == 1000


def test_anthropic_thinking_blocks_are_replayed(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(thinking="Plan: tap.", tool_calls=[("tap", {"x": 1, "y": 1})]), StubReply(text="ok")])
    client = client_for("anthropic", reasoning_effort="low")
    messages = convo()
    first = client.complete(messages, [TAP])
    assert [t.text for t in first.thinking] == ["Plan: tap."]
    messages += [first.as_message(), Message.tool_result(first.tool_calls[0].id, "done")]
    client.complete(messages, [TAP])
    replayed = stub.requests[1].body["messages"][1]["content"][0]
    assert replayed["type"] == "thinking"
    assert replayed["thinking"] == "Plan: tap."
    assert replayed["signature"] == first.thinking[0].signature


@pytest.mark.parametrize("provider", PROVIDERS)
def test_api_key_is_sent_to_the_endpoint(provider: Provider, stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(text="ok")])
    client_for(provider).complete(convo())
    headers = stub.requests[0].headers
    # The SDK chooses the header (Authorization: Bearer or x-api-key, depending on its version).
    sent = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
    assert sent == CANARY_KEY


def test_openai_output_limit_parameter_is_configurable(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(text="a"), StubReply(text="b")])
    client_for("openai", max_output_tokens=321).complete(convo())
    client_for("openai", max_output_tokens=321, openai_max_tokens_param="max_tokens").complete(convo())
    first, second = (r.body for r in stub.requests)
    assert first["max_completion_tokens"] == 321 and "max_tokens" not in first
    assert second["max_tokens"] == 321 and "max_completion_tokens" not in second


def test_anthropic_effort_none_sends_no_thinking(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(text="a")])
    client_for("anthropic", reasoning_effort="none", temperature=0.0).complete(convo())
    body = stub.requests[0].body
    assert "thinking" not in body
    assert body["temperature"] == 0.0


@pytest.mark.parametrize("provider", PROVIDERS)
def test_text_and_tool_calls_together(provider: Provider, stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(text="Tapping the button.", tool_calls=[("tap", {"x": 5, "y": 6})]), StubReply(text="k")])
    client = client_for(provider)
    messages = convo()
    turn = client.complete(messages, [TAP])
    assert turn.text == "Tapping the button."
    assert turn.tool_calls[0].arguments() == {"x": 5, "y": 6}
    messages += [turn.as_message(), Message.tool_result(turn.tool_calls[0].id, "ok")]
    client.complete(messages, [TAP])
    assert stub.requests[1].user_texts() == ["Open settings."]
    assert stub.requests[1].tool_results() == ["ok"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_malformed_call_can_be_answered_and_replayed(
    provider: Provider, stub: ModelStub, client_for: MakeClient
) -> None:
    stub.script([StubReply(tool_calls=[("tap", "{oops")]), StubReply(text="fixed")])
    client = client_for(provider)
    messages = convo()
    turn = client.complete(messages, [TAP])
    messages += [turn.as_message(), Message.tool_result(turn.tool_calls[0].id, "Error: arguments are not valid JSON")]
    assert client.complete(messages, [TAP]).text == "fixed"
    assert stub.requests[1].tool_results() == ["Error: arguments are not valid JSON"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_empty_tool_result_is_sent_without_empty_text(
    provider: Provider, stub: ModelStub, client_for: MakeClient
) -> None:
    stub.script([StubReply(tool_calls=[("press_back", {})]), StubReply(text="k")])
    client = client_for(provider)
    messages = convo()
    turn = client.complete(messages)
    messages += [turn.as_message(), Message.tool_result(turn.tool_calls[0].id, "")]
    client.complete(messages)
    assert stub.requests[1].tool_results() == [""]
    if provider == "anthropic":
        assert "content" not in stub.requests[1].body["messages"][-1]["content"][0]


PRICE = ModelPrice(input_per_m=1.0, output_per_m=4.0, cache_read_per_m=0.1, cache_write_per_m=1.25)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_missing_usage_leaves_tokens_and_cost_unknown(
    provider: Provider, stub: ModelStub, client_for: MakeClient
) -> None:
    stub.script([StubReply(text="ok", usage=None)])
    turn = client_for(provider, pricing=PRICE).complete(convo())
    assert turn.usage.model_dump() == {"input_new": None, "cache_read": None, "cache_write": None, "output": None}
    assert turn.cost_usd is None


@pytest.mark.parametrize("provider", PROVIDERS)
def test_endpoint_without_cache_reporting(provider: Provider, stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(text="ok", usage=StubUsage(input=2000, output=100, report_cache=False))])
    turn = client_for(provider, pricing=PRICE).complete(convo())
    assert (turn.usage.input_new, turn.usage.cache_read, turn.usage.cache_write) == (2000, None, None)
    assert turn.cost_usd == pytest.approx((2000 * 1.0 + 100 * 4.0) / 1e6)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"<html>502 Bad Gateway</html>", "text/html"),
        (b'{"unexpected": true}', "application/json"),
        (b"{truncated", "application/json"),
    ],
)
def test_a_non_model_response_is_a_bad_response_error(
    provider: Provider, body: bytes, content_type: str, stub: ModelStub, client_for: MakeClient
) -> None:
    stub.script([StubReply(raw_body=body, content_type=content_type)])
    with pytest.raises(ModelCallError) as err:
        client_for(provider).complete(convo())
    assert err.value.kind == "bad_response"
    assert err.value.attempts == 1


def test_anthropic_prompt_cache_is_requested_only_when_configured(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(text="a"), StubReply(text="b")])
    client_for("anthropic", anthropic_prompt_cache=True).complete(convo())
    client_for("anthropic").complete(convo())
    first, second = (r.body for r in stub.requests)
    assert first["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in second
