"""Quota and auth failures through the real SDK clients against the loopback stub: never retried, always named."""

from __future__ import annotations

import json

import pytest

from farm.errors import FarmError
from farm.llm.client import ModelCallError, make_client
from farm.llm.model_config import LLMConfig, Provider
from farm.llm.retry import kind_for_response, minimax_failure, says_quota
from farm.llm.stub import ModelStub, StubReply
from farm.llm.types import Message
from tests.llm.conftest import KEY_ENV, MakeClient

PROVIDERS: list[Provider] = ["openai", "anthropic"]
MODES = [False, True]


def ask() -> list[Message]:
    return [Message.user("hello")]


def fail(client_for: MakeClient, provider: Provider, stream: bool, **fields: object) -> ModelCallError:
    with pytest.raises(ModelCallError) as err:
        client_for(provider, max_retries=5, **fields).complete(ask(), stream=stream)
    return err.value


@pytest.mark.parametrize("stream", MODES)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_429_with_a_quota_code_is_quota_and_not_retried(
    provider: Provider, stream: bool, stub: ModelStub, client_for: MakeClient
) -> None:
    stub.script([StubReply.quota(status=429, code=2056), StubReply(text="never")])
    err = fail(client_for, provider, stream)
    assert (err.kind, err.status) == ("quota", 429)
    assert [a.outcome for a in err.attempt_log] == ["quota"]
    assert len(stub.requests) == 1
    assert stub.pending == 1


@pytest.mark.parametrize("stream", MODES)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_openai_insufficient_quota_code_is_quota(
    provider: Provider, stream: bool, stub: ModelStub, client_for: MakeClient
) -> None:
    stub.script([StubReply.quota(status=429, code="insufficient_quota"), StubReply(text="never")])
    assert fail(client_for, provider, stream).kind == "quota"
    assert len(stub.requests) == 1


@pytest.mark.parametrize("stream", MODES)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_plain_429_is_still_retried(provider: Provider, stream: bool, stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply.rate_limited(), StubReply(text="after the wait")])
    turn = client_for(provider, max_retries=5).complete(ask(), stream=stream)
    assert turn.text == "after the wait"
    assert [a.outcome for a in turn.attempts] == ["rate_limit", "ok"]
    assert len(stub.requests) == 2


@pytest.mark.parametrize("stream", MODES)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_http_200_with_minimax_2056_is_quota(
    provider: Provider, stream: bool, stub: ModelStub, client_for: MakeClient
) -> None:
    stub.script([StubReply.quota(status=200, code=2056), StubReply(text="never")])
    err = fail(client_for, provider, stream)
    assert (err.kind, err.status) == ("quota", 200)
    assert "2056" in str(err)
    assert len(stub.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_http_200_stream_carrying_1008_as_an_event_is_quota(
    provider: Provider, stub: ModelStub, client_for: MakeClient
) -> None:
    stub.script([StubReply.quota(status=200, code=1008, as_event=True), StubReply(text="never")])
    err = fail(client_for, provider, True)
    assert err.kind == "quota"
    assert len(stub.requests) == 1


@pytest.mark.parametrize("stream", MODES)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_http_200_with_an_unknown_minimax_code_is_a_bad_response(
    provider: Provider, stream: bool, stub: ModelStub, client_for: MakeClient
) -> None:
    stub.script([StubReply.quota(status=200, code=2013, message="invalid params"), StubReply(text="never")])
    err = fail(client_for, provider, stream)
    assert err.kind == "bad_response"
    assert len(stub.requests) == 1


def test_base_resp_status_0_is_success(stub: ModelStub, client_for: MakeClient) -> None:
    body = {
        "id": "x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "fine"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        "base_resp": {"status_code": 0, "status_msg": ""},
    }
    stub.script([StubReply(raw_body=json.dumps(body).encode())])
    assert client_for("openai").complete(ask()).text == "fine"


@pytest.mark.parametrize("status", [401, 403])
@pytest.mark.parametrize("stream", MODES)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_refused_key_is_auth_and_not_retried(
    provider: Provider, stream: bool, status: int, stub: ModelStub, client_for: MakeClient
) -> None:
    stub.script([StubReply(status=status, error_message="invalid api key"), StubReply(text="never")])
    err = fail(client_for, provider, stream)
    assert (err.kind, err.status) == ("auth", status)
    assert [a.outcome for a in err.attempt_log] == ["auth"]
    assert len(stub.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_preflight_still_says_the_key_was_refused(provider: Provider, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-wrong")
    with ModelStub(api_key="sk-right") as stub:
        cfg = LLMConfig(provider=provider, model="m", base_url=stub.base_url(provider), api_key_env=KEY_ENV)
        with make_client(cfg) as client, pytest.raises(FarmError) as err:
            client.preflight()
    assert "was refused (HTTP 401)" in str(err.value)


def test_plain_rate_limit_wording_is_not_quota() -> None:
    tpm = ("Rate limit reached for gpt-4 in organization org-x on tokens per min (TPM): Limit 10000, Used 9000. "
           "Please try again in 6ms.")
    assert not says_quota([{"message": tpm, "type": "tokens", "code": "rate_limit_exceeded"}])
    assert kind_for_response(429, [{"message": tpm}]) == "rate_limit"


def test_a_quota_code_alone_is_enough() -> None:
    assert kind_for_response(429, [{"code": "2056", "message": "x"}]) == "quota"
    assert kind_for_response(400, [{"error": {"type": "insufficient_quota", "message": "x"}}]) == "quota"
    assert kind_for_response(429, [{"base_resp": {"status_code": 1008, "status_msg": "x"}}]) == "quota"


def test_anthropic_style_usage_limit_message_is_quota() -> None:
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "You have reached your specified API "
                                        "usage limits. You will regain access on 2026-10-01."}}
    assert kind_for_response(429, [body]) == "quota"
    credit = {"type": "error", "error": {"type": "invalid_request_error", "message": "Your credit balance is too low"}}
    assert kind_for_response(400, [credit]) == "quota"


def test_5xx_wording_never_makes_quota() -> None:
    assert kind_for_response(503, [{"message": "load balancer: no healthy upstream"}]) == "server"


def test_minimax_codes_map_to_kinds() -> None:
    kinds = {code: minimax_failure({"base_resp": {"status_code": code, "status_msg": ""}})
             for code in (0, 2056, 1008, 1004, 1002, 2013)}
    assert kinds[0] is None
    assert {c: f.kind for c, f in kinds.items() if f is not None} == {
        2056: "quota", 1008: "quota", 1004: "auth", 1002: "rate_limit", 2013: "bad_response",
    }
    assert not any(f.retryable for c, f in kinds.items() if f is not None and c != 1002)
