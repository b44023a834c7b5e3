"""The one provider-error classifier: a table of what providers send (HTTP status, headers, body, SDK exception)
and the verdict each must get, the seed-002 cases included; then adversarial bodies; then the real SDK clients
against the loopback stub (a 200 carrying an OpenAI-style quota error is quota, not a bad response)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import anthropic
import openai
import pytest

from farm.llm.client import ModelCallError
from farm.llm.model_config import Provider
from farm.llm.provider_errors import (
    MAX_BODY_BYTES,
    ProviderErrorKind,
    ProviderVerdict,
    call_verdict,
    classify,
    lane_error_kind,
)
from farm.llm.retry import StreamCut, StreamTimeout
from farm.llm.stub import ModelStub, StubReply
from farm.llm.types import Message
from tests.llm.conftest import CANARY_KEY, MakeClient

PROVIDERS: list[Provider] = ["openai", "anthropic"]


@dataclass(frozen=True)
class Case:
    """One provider answer and the verdict it must get."""

    name: str
    status: int | None
    body: object
    kind: ProviderErrorKind
    exc: type[BaseException] | None = None
    headers: dict[str, str] | None = None
    says: str | None = None
    """A piece the one-line reason must carry (the provider's code or status)."""


def _openai_error(code: str | None, message: str, kind: str | None = None) -> dict[str, object]:
    return {"error": {"message": message, "type": kind or code, "param": None, "code": code}}


def _anthropic_error(kind: str, message: str) -> dict[str, object]:
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_1"}


_QUOTA_MSG = "You exceeded your current quota, please check your plan and billing details."
_COMPLETION = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "fine"}, "finish_reason": "stop"}],
}

CASES = [
    # -- OpenAI codes, as an error response and inside a 200 -------------------------------------------------
    Case("openai 429 insufficient_quota", 429, _openai_error("insufficient_quota", _QUOTA_MSG), "quota",
         says="insufficient_quota"),
    Case("openai 200 insufficient_quota", 200, _openai_error("insufficient_quota", _QUOTA_MSG), "quota",
         says="insufficient_quota"),
    Case("openai 200 insufficient_quota as raw bytes", 200,
         json.dumps(_openai_error("insufficient_quota", _QUOTA_MSG)).encode(), "quota"),
    Case("openai 400 billing_hard_limit_reached", 400,
         _openai_error("billing_hard_limit_reached", "Billing hard limit has been reached"), "quota"),
    Case("openai 200 billing_hard_limit_reached", 200,
         _openai_error("billing_hard_limit_reached", "Billing hard limit has been reached"), "quota"),
    Case("openai 401 invalid_api_key", 401, _openai_error("invalid_api_key", "Incorrect API key provided"), "auth",
         says="invalid_api_key"),
    Case("openai 200 invalid_api_key", 200,
         _openai_error("invalid_api_key", "Incorrect API key provided", "invalid_request_error"), "auth"),
    Case("openai 429 plain rate limit", 429,
         _openai_error("rate_limit_exceeded", "Rate limit reached for gpt-4 on tokens per min (TPM): Limit 10000",
                       "tokens"), "rate_limit"),
    Case("openai inner error object of an SDK error (exc.body)", 429,
         {"message": _QUOTA_MSG, "type": "insufficient_quota", "code": "insufficient_quota"}, "quota",
         exc=openai.RateLimitError),
    Case("openai stream error event (APIError, no status)", None,
         {"message": _QUOTA_MSG, "type": "insufficient_quota", "code": "insufficient_quota"}, "quota",
         exc=openai.APIError),
    # -- Anthropic types ---------------------------------------------------------------------------------------
    Case("anthropic 401 authentication_error", 401, _anthropic_error("authentication_error", "invalid x-api-key"),
         "auth"),
    Case("anthropic 403 permission_error", 403, _anthropic_error("permission_error", "not allowed"), "auth"),
    Case("anthropic 400 authentication_error", 400, _anthropic_error("authentication_error", "bad key"), "auth"),
    Case("anthropic 429 rate_limit_error", 429, _anthropic_error("rate_limit_error", "Number of requests exceeded"),
         "rate_limit"),
    Case("anthropic 529 overloaded_error", 529, _anthropic_error("overloaded_error", "Overloaded"), "server"),
    Case("anthropic 402 billing_error", 402, _anthropic_error("billing_error", "payment issue"), "quota"),
    Case("anthropic 429 usage limits", 429, _anthropic_error(
        "rate_limit_error", "You have reached your specified API usage limits. You will regain access on 2026-10-01."),
         "quota"),
    Case("anthropic 400 credit balance", 400, _anthropic_error(
        "invalid_request_error", "Your credit balance is too low to access the Anthropic API."), "quota"),
    Case("anthropic 200 error body (not a message)", 200, _anthropic_error("overloaded_error", "Overloaded"),
         "server"),
    Case("anthropic 200 authentication_error body", 200, _anthropic_error("authentication_error", "bad key"), "auth"),
    Case("anthropic stream error event overloaded", 200, _anthropic_error("overloaded_error", "Overloaded"), "server",
         exc=anthropic.APIStatusError),
    Case("anthropic stream error event invalid_request", 200, _anthropic_error("invalid_request_error", "x"),
         "bad_request", exc=anthropic.APIStatusError),
    # -- HTTP status alone -------------------------------------------------------------------------------------
    Case("401 without a body", 401, None, "auth"),
    Case("403 without a body", 403, None, "auth"),
    Case("402 without a body", 402, None, "quota"),
    Case("429 without a body", 429, None, "rate_limit"),
    Case("500", 500, None, "server"),
    Case("502 HTML from a proxy", 502, b"<html><body>Bad Gateway</body></html>", "server"),
    Case("503", 503, None, "server"),
    Case("408", 408, None, "server"),
    Case("409", 409, None, "server"),
    Case("400", 400, _openai_error(None, "messages: field required", "invalid_request_error"), "bad_request"),
    Case("404", 404, _anthropic_error("not_found_error", "model: x"), "bad_request"),
    Case("302", 302, None, "bad_response"),
    # -- seed 002: MiniMax codes, 200 bodies, 5xx never quota ---------------------------------------------------
    Case("minimax 200 base_resp 2056", 200,
         {"choices": None, "base_resp": {"status_code": 2056, "status_msg": "usage limit exceeded"}}, "quota",
         says="2056"),
    Case("minimax 200 base_resp 1008", 200,
         {"choices": None, "base_resp": {"status_code": 1008, "status_msg": "insufficient balance"}}, "quota"),
    Case("minimax 200 base_resp 1004", 200, {"base_resp": {"status_code": 1004, "status_msg": "not authorized"}},
         "auth"),
    Case("minimax 200 base_resp 2049", 200, {"base_resp": {"status_code": 2049, "status_msg": "invalid api key"}},
         "auth"),
    Case("minimax 200 base_resp 1002", 200, {"base_resp": {"status_code": 1002, "status_msg": "rate limit"}},
         "rate_limit"),
    Case("minimax 200 base_resp 1024", 200, {"base_resp": {"status_code": 1024, "status_msg": "internal"}}, "server"),
    Case("minimax 200 unknown base_resp code", 200,
         {"base_resp": {"status_code": 2013, "status_msg": "invalid params"}}, "bad_response"),
    Case("minimax 200 base_resp 0 is success", 200,
         {**_COMPLETION, "base_resp": {"status_code": 0, "status_msg": ""}}, "ok"),
    Case("minimax 429 with only the code in the message", 429,
         _anthropic_error("rate_limit_error", "usage limit exceeded, 5-hour usage limit reached (2056)"), "quota"),
    Case("minimax 429 code field", 429, {"error": {"code": "2056", "message": "x"}}, "quota"),
    Case("minimax 429 base_resp", 429, {"base_resp": {"status_code": 1008, "status_msg": "x"}}, "quota"),
    Case("5xx wording never makes quota", 503, {"message": "quota service: no healthy upstream"}, "server"),
    # -- transport ---------------------------------------------------------------------------------------------
    Case("openai timeout", None, None, "network", exc=openai.APITimeoutError),
    Case("anthropic connection error", None, None, "network", exc=anthropic.APIConnectionError),
    Case("stream cut", None, None, "network", exc=StreamCut),
    Case("stream stalled", None, None, "network", exc=StreamTimeout),
    Case("validation error", 200, None, "bad_response", exc=openai.APIResponseValidationError),
    # -- success -----------------------------------------------------------------------------------------------
    Case("a completion", 200, _COMPLETION, "ok"),
    Case("a completion whose answer names the quota code", 200, {**_COMPLETION, "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "The API said insufficient_quota (code 2056); "
                                 "check your billing and credit balance."}, "finish_reason": "stop"}]}, "ok"),
    Case("an anthropic message whose answer names the quota code", 200, {
        "type": "message", "role": "assistant", "model": "m", "stop_reason": "end_turn",
        "content": [{"type": "text", "text": '{"error": {"code": "insufficient_quota"}} is what the API sent'}]},
         "ok"),
    Case("error: null beside a completion", 200, {**_COMPLETION, "error": None}, "ok"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_classifier_table(case: Case) -> None:
    verdict = classify(case.status, case.headers, case.body, exc_type=case.exc)
    assert verdict.kind == case.kind, verdict.reason
    assert verdict.retryable == (case.kind in ("rate_limit", "server", "network"))
    assert verdict.stops_dispatch == (case.kind in ("quota", "auth"))
    assert "\n" not in verdict.reason and len(verdict.reason) <= 240
    if case.says is not None:
        assert case.says in verdict.reason
    if case.kind != "ok":
        assert verdict.reason.startswith(f"{case.kind}: ")


# -- adversarial bodies ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", [b'{"error": {"code": "insufficient_quota"', b"{not json", b"\xff\xfe\x00garbage"])
def test_malformed_json_in_a_200_is_a_bad_response_not_a_quota(raw: bytes) -> None:
    verdict = classify(200, None, raw)
    assert verdict.kind == "bad_response"
    assert not verdict.stops_dispatch and not verdict.retryable


def test_malformed_json_in_an_error_status_goes_by_the_status_and_its_words() -> None:
    assert classify(429, None, b'{"error": "insufficient_quota" ...').kind == "quota"
    assert classify(429, None, b"{broken").kind == "rate_limit"
    assert classify(503, None, b"{broken").kind == "server"


@pytest.mark.parametrize("body", [[1, 2], "just text", 42, True])
def test_a_200_body_that_is_not_an_object_is_a_bad_response(body: object) -> None:
    raw = json.dumps(body).encode() if not isinstance(body, str) else body.encode()
    assert classify(200, None, raw).kind == "bad_response"


def test_a_huge_body_is_read_only_up_to_the_bound() -> None:
    # The quota code sits past the bound: it is never read, so the huge body cannot be parsed or searched whole.
    padding = "x" * (MAX_BODY_BYTES + 10)
    huge = json.dumps({"error": {"message": padding, "code": "insufficient_quota"}}).encode()
    verdict = classify(200, None, huge)
    assert verdict.kind == "bad_response"
    assert len(verdict.reason) <= 240
    # Within the bound, the same shape is read.
    small = json.dumps({"error": {"message": "short", "code": "insufficient_quota"}}).encode()
    assert classify(200, None, small).kind == "quota"


def test_a_huge_error_page_is_bounded_too() -> None:
    page = b"<html>" + b"A" * (10 * MAX_BODY_BYTES) + b" quota </html>"
    # The quota word is past the bound, so a 429 stays a rate limit (retried), never read as quota.
    assert classify(429, None, page).kind == "rate_limit"


def test_retry_after_is_kept_on_the_verdict() -> None:
    verdict = classify(429, {"Retry-After": "3"}, _anthropic_error("rate_limit_error", "slow down"))
    assert (verdict.kind, verdict.retry_after_s) == ("rate_limit", 3.0)


def test_an_error_string_in_a_200_is_a_provider_failure() -> None:
    assert classify(200, None, {"error": "upstream failed"}).kind == "server"
    assert classify(200, None, {"error": "You exceeded your current quota"}).kind == "quota"


def test_the_key_is_never_in_a_reason_the_body_did_not_carry() -> None:
    verdict = classify(401, {"authorization": f"Bearer {CANARY_KEY}"}, None)
    assert CANARY_KEY not in verdict.reason


# -- a failed call, and how lanes count it ---------------------------------------------------------------------


def test_a_timeout_after_a_quota_refusal_in_the_same_step_is_the_quota() -> None:
    timeout = ProviderVerdict("network", "network: the request timed out", timed_out=True)
    assert call_verdict(timeout, ["quota"]).kind == "quota"
    assert call_verdict(timeout, ["rate_limit"]).kind == "network"
    bad = ProviderVerdict("bad_response", "bad_response: x")
    assert call_verdict(bad, ["quota"]).kind == "bad_response"


@pytest.mark.parametrize(("kind", "lane"), [
    ("quota", "quota"), ("auth", "auth"), ("rate_limit", "service_unavailable"), ("server", "service_unavailable"),
    ("network", "service_unavailable"), ("bad_request", "model_error"), ("bad_response", "model_error"),
])
def test_lane_error_kinds(kind: ProviderErrorKind, lane: str) -> None:
    assert lane_error_kind(ProviderVerdict(kind, f"{kind}: x")) == lane


# -- the real SDK clients against the loopback stub ------------------------------------------------------------


def _fail(client_for: MakeClient, provider: Provider, stream: bool) -> ModelCallError:
    with pytest.raises(ModelCallError) as err:
        client_for(provider, max_retries=5).complete([Message.user("hello")], stream=stream)
    return err.value


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_200_with_an_openai_style_quota_error_is_quota_and_stops_dispatch(
    provider: Provider, stream: bool, stub: ModelStub, client_for: MakeClient,
) -> None:
    stub.script([StubReply.quota(status=200, code="insufficient_quota"), StubReply(text="never")])
    err = _fail(client_for, provider, stream)
    assert (err.kind, err.verdict.kind) == ("quota", "quota")
    assert err.stops_dispatch and "insufficient_quota" in err.verdict.reason
    assert [a.outcome for a in err.attempt_log] == ["quota"] and stub.pending == 1
    line = err.stop_line()
    assert line.startswith(f"model provider {provider} at 127.0.0.1:{stub.port}: quota: ") and "\n" not in line


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_quota_error_event_in_a_200_stream_is_quota(provider: Provider, stub: ModelStub,
                                                       client_for: MakeClient) -> None:
    stub.script([StubReply.quota(status=200, code="insufficient_quota", as_event=True), StubReply(text="never")])
    err = _fail(client_for, provider, True)
    assert err.verdict.kind == "quota" and len(stub.requests) == 1


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_200_with_an_invalid_key_error_is_auth(provider: Provider, stream: bool, stub: ModelStub,
                                                  client_for: MakeClient) -> None:
    body = _openai_error("invalid_api_key", "Incorrect API key provided", "invalid_request_error")
    stub.script([StubReply(raw_body=json.dumps(body).encode()), StubReply(text="never")])
    err = _fail(client_for, provider, stream)
    assert (err.kind, err.verdict.kind) == ("auth", "auth") and err.stops_dispatch
    assert len(stub.requests) == 1


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_answer_that_mentions_insufficient_quota_is_an_answer(provider: Provider, stream: bool, stub: ModelStub,
                                                                 client_for: MakeClient) -> None:
    text = 'The server replied {"error": {"code": "insufficient_quota"}} (2056); your billing balance is low.'
    stub.script([StubReply(text=text)])
    turn = client_for(provider).complete([Message.user("what did it say?")], stream=stream)
    assert turn.text == text and [a.outcome for a in turn.attempts] == ["ok"]


def test_a_huge_200_error_body_on_a_streamed_request_is_bounded(stub: ModelStub, client_for: MakeClient) -> None:
    huge = json.dumps({"error": {"message": "x" * (4 * MAX_BODY_BYTES), "code": "insufficient_quota"}}).encode()
    stub.script([StubReply(raw_body=huge)])
    err = _fail(client_for, "openai", True)
    # Cut at the bound, the body no longer parses: a bad response (not retried), never a read of 256 KiB of JSON.
    assert err.verdict.kind == "bad_response" and len(stub.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_preflight_refuses_a_used_up_quota_in_one_line(provider: Provider, monkeypatch: pytest.MonkeyPatch) -> None:
    from farm.errors import FarmError
    from farm.llm.client import make_client
    from farm.llm.model_config import LLMConfig
    from tests.llm.conftest import KEY_ENV

    monkeypatch.setenv(KEY_ENV, CANARY_KEY)
    with ModelStub(models_reply=StubReply.quota(status=429, code="insufficient_quota")) as stub:
        cfg = LLMConfig(provider=provider, model="m", base_url=stub.base_url(provider), api_key_env=KEY_ENV)
        with make_client(cfg) as client, pytest.raises(FarmError) as err:
            client.preflight()
    assert "quota or balance is used up" in str(err.value) and "exceeded your current quota" in str(err.value)
    assert CANARY_KEY not in str(err.value)
