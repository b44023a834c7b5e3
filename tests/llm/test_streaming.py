"""Streamed model calls through the real SDKs against the stub's server-sent events: the same ModelTurn as
a whole reply, the first non-empty delta timed, a cut stream retried like any transport failure."""

from __future__ import annotations

import anthropic
import httpx2
import pytest

from farm.llm.client import ModelCallError, make_client
from farm.llm.model_config import LLMConfig, Provider, ReasoningEffort
from farm.llm.retry import Failure, classify_sdk_error
from farm.llm.stub import ModelStub, StubReply, StubUsage
from farm.llm.types import Message, ModelTurn, ToolSpec
from tests.llm.conftest import MakeClient

PROVIDERS: list[Provider] = ["openai", "anthropic"]
TAP = ToolSpec(name="tap", description="Tap.", parameters={"type": "object", "properties": {}})
DELAY_S = 0.15


def convo() -> list[Message]:
    return [Message.system("You operate a phone."), Message.user("Open settings.")]


def _fresh_turn(
    provider: Provider, reply: StubReply, *, stream: bool, effort: ReasoningEffort | None = None,
) -> ModelTurn:
    """One call on a stub of its own, so ids and signatures (numbered per stub) compare equal."""
    with ModelStub() as stub:
        stub.script([reply])
        cfg = LLMConfig(provider=provider, model="m", base_url=stub.base_url(provider), api_key_env="K",
                        max_retries=0, reasoning_effort=effort)
        with make_client(cfg, environ={"K": "k"}) as client:
            return client.complete(convo(), [TAP], stream=stream)


def _same(a: ModelTurn, b: ModelTurn) -> None:
    fields = {"text", "tool_calls", "usage", "cost_usd", "raw_stop_reason", "stop", "model", "thinking", "retries"}
    assert a.model_dump(include=fields) == b.model_dump(include=fields)


REPLIES: dict[str, StubReply] = {
    "text": StubReply(text="Settings is open now, with the Wi-Fi page shown."),
    "tool calls": StubReply(tool_calls=[("tap", {"x": 12, "y": 340, "label": "Wi‑Fi ✓"}), ("tap", {})]),
    "text and a call": StubReply(text="Tapping.", tool_calls=[("tap", {"x": 1})]),
    "malformed call": StubReply(tool_calls=[("tap", '{"x": 1, "y"')]),
    "usage with cache": StubReply(text="ok", usage=StubUsage(input=120, cached=30, cache_write=7, output=44)),
    "usage without cache fields": StubReply(text="ok", usage=StubUsage(input=9, output=3, report_cache=False)),
    "no usage": StubReply(text="ok", usage=None),
}


@pytest.mark.parametrize("case", list(REPLIES))
@pytest.mark.parametrize("provider", PROVIDERS)
def test_streamed_reply_equals_the_whole_reply(provider: Provider, case: str) -> None:
    whole = _fresh_turn(provider, REPLIES[case], stream=False)
    streamed = _fresh_turn(provider, REPLIES[case], stream=True)
    _same(whole, streamed)
    assert streamed.streamed and not whole.streamed
    assert whole.first_delta_ms is None


def test_streamed_usage_stays_unknown_when_not_reported() -> None:
    for provider in PROVIDERS:
        turn = _fresh_turn(provider, StubReply(text="ok", usage=None), stream=True)
        assert (turn.usage.input_new, turn.usage.output) == (None, None)
        assert turn.cost_usd is None


def test_streamed_anthropic_thinking_keeps_its_signature() -> None:
    reply = StubReply(thinking="First, look for the Settings icon on the home screen.", text="Opening.")
    whole = _fresh_turn("anthropic", reply, stream=False, effort="low")
    streamed = _fresh_turn("anthropic", reply, stream=True, effort="low")
    _same(whole, streamed)
    assert streamed.thinking[0].signature == "sig-stub-1"
    assert streamed.thinking[0].text == "First, look for the Settings icon on the home screen."


@pytest.mark.parametrize("provider", PROVIDERS)
def test_first_delta_time_is_recorded_once(provider: Provider, stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(text="abcdefghijklmnopqrstuvwx", chunk_delay_s=DELAY_S)])
    calls: list[int] = []
    turn = client_for(provider).complete(convo(), stream=True, on_first_delta=lambda: calls.append(1))
    assert calls == [1]
    assert turn.first_delta_ms is not None
    # The opening event (role chunk / message_start) carries no output, so the first delta comes later
    # and the whole reply later still (three 8-character text pieces, one delay each).
    assert turn.first_delta_ms >= DELAY_S * 1000
    assert turn.latency_ms >= turn.first_delta_ms + 2 * DELAY_S * 1000


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_empty_first_delta_does_not_count(provider: Provider, stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(text="abcdefgh", empty_first_delta=True, chunk_delay_s=DELAY_S)])
    turn = client_for(provider).complete(convo(), stream=True)
    assert turn.text == "abcdefgh"
    assert turn.first_delta_ms is not None
    # The empty delta arrives one delay before the text one; counting it would undercut this bound.
    events_before_text = {"openai": 2, "anthropic": 4}[provider]
    assert turn.first_delta_ms >= events_before_text * DELAY_S * 1000


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_reply_without_output_has_no_first_delta(provider: Provider, stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(text="", empty_first_delta=True)])
    calls: list[int] = []
    turn = client_for(provider).complete(convo(), stream=True, on_first_delta=lambda: calls.append(1))
    assert turn.first_delta_ms is None
    assert calls == []


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_stream_cut_in_the_middle_is_retried(provider: Provider, stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(text="a long answer that will not arrive whole", cut_after_events=4),
                 StubReply(text="the retried answer")])
    turn = client_for(provider).complete(convo(), stream=True)
    assert turn.text == "the retried answer"
    assert [a.outcome for a in turn.attempts] == ["connection", "ok"]
    assert turn.retries == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_cut_stream_past_the_retries_is_a_connection_error(
    provider: Provider, stub: ModelStub, client_for: MakeClient,
) -> None:
    stub.script([StubReply(text="abcdefghijklmnopqrstuvwxyz", cut_after_events=3)] * 2)
    with pytest.raises(ModelCallError) as caught:
        client_for(provider, max_retries=1).complete(convo(), stream=True)
    assert caught.value.kind == "connection"
    assert caught.value.attempts == 2
    assert stub.pending == 0


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_stream_cut_before_any_output_still_fails(
    provider: Provider, stub: ModelStub, client_for: MakeClient,
) -> None:
    # Cut after the opening event only: nothing the client could mistake for a complete reply.
    stub.script([StubReply(text="never", cut_after_events=1)])
    with pytest.raises(ModelCallError) as caught:
        client_for(provider, max_retries=0).complete(convo(), stream=True)
    assert caught.value.kind == "connection"


def _in_stream_error(kind: str) -> Failure | None:
    response = httpx2.Response(200, request=httpx2.Request("POST", "http://127.0.0.1/v1/messages"))
    exc = anthropic.APIStatusError("stream error", response=response,
                                   body={"type": "error", "error": {"type": kind, "message": "x"}})
    return classify_sdk_error(exc, status_error=anthropic.APIStatusError, timeout_error=anthropic.APITimeoutError,
                              connection_error=anthropic.APIConnectionError,
                              validation_error=anthropic.APIResponseValidationError, api_error=anthropic.APIError)


def test_an_overloaded_error_event_in_a_stream_is_retryable() -> None:
    failure = _in_stream_error("overloaded_error")
    assert failure is not None and failure.kind == "server" and failure.retryable


def test_an_invalid_request_error_event_in_a_stream_is_not_retried() -> None:
    failure = _in_stream_error("invalid_request_error")
    assert failure is not None and failure.kind == "client" and not failure.retryable
