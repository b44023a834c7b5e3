"""Retries through the real SDKs: 429 with Retry-After, 5xx, timeouts, connection errors, give-up."""

from __future__ import annotations

import socket
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from farm.llm.client import ModelCallError
from farm.llm.model_config import Provider
from farm.llm.stub import ModelStub, StubReply
from farm.llm.types import Message
from tests.llm.conftest import MakeClient

PROVIDERS: list[Provider] = ["openai", "anthropic"]


def ask() -> list[Message]:
    return [Message.user("hello")]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_429_with_retry_after_is_retried_and_the_wait_honoured(
    provider: Provider, stub: ModelStub, client_for: MakeClient
) -> None:
    stub.script([StubReply.rate_limited(retry_after=0.2), StubReply(text="after the wait")])
    turn = client_for(provider).complete(ask())
    assert turn.text == "after the wait"
    assert turn.retries == 1
    # The recorded wait is the server's Retry-After, not the (much shorter) backoff of this client.
    assert turn.retry_wait_ms == pytest.approx(200.0)
    assert len(stub.requests) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_retry_after_is_capped(provider: Provider, stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply.rate_limited(retry_after=3600), StubReply(text="ok")])
    turn = client_for(provider, retry_after_max_s=0.05).complete(ask())
    assert turn.retries == 1
    assert turn.retry_wait_ms == pytest.approx(50.0)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_500_then_success(provider: Provider, stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply.server_error(500), StubReply.server_error(503), StubReply(text="recovered")])
    turn = client_for(provider).complete(ask())
    assert turn.text == "recovered"
    assert turn.retries == 2
    assert turn.retry_wait_ms > 0
    assert len(stub.requests) == 3


@pytest.mark.parametrize("provider", PROVIDERS)
def test_timeouts_are_retried_then_surface_as_an_error(
    provider: Provider, stub: ModelStub, client_for: MakeClient
) -> None:
    stub.script([StubReply.slow(30.0), StubReply.slow(30.0), StubReply(text="never reached")])
    client = client_for(provider, timeout_s=0.5, max_retries=1)
    with pytest.raises(ModelCallError) as err:
        client.complete(ask())
    assert err.value.kind == "timeout"
    assert err.value.attempts == 2
    assert len(stub.requests) == 2
    assert stub.pending == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_rate_limit_past_max_retries_is_an_error(provider: Provider, stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply.rate_limited(retry_after=0.01)] * 3 + [StubReply(text="too late")])
    with pytest.raises(ModelCallError) as err:
        client_for(provider, max_retries=2).complete(ask())
    assert err.value.kind == "rate_limit"
    assert err.value.status == 429
    assert err.value.attempts == 3
    assert len(stub.requests) == 3


@pytest.mark.parametrize("provider", PROVIDERS)
def test_sdk_retries_are_disabled(provider: Provider, stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply.server_error(500), StubReply(text="the SDK must not fetch this")])
    with pytest.raises(ModelCallError) as err:
        client_for(provider, max_retries=0).complete(ask())
    assert err.value.kind == "server"
    assert len(stub.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_client_errors_are_not_retried(provider: Provider, stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(status=400, error_message="unknown model"), StubReply(text="unused")])
    with pytest.raises(ModelCallError) as err:
        client_for(provider).complete(ask())
    assert err.value.kind == "client"
    assert err.value.status == 400
    assert "unknown model" in str(err.value)
    assert len(stub.requests) == 1


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("provider", PROVIDERS)
def test_connection_errors_are_retried_then_reported(provider: Provider, client_for: MakeClient) -> None:
    port = _closed_port()
    base = f"http://127.0.0.1:{port}" + ("/v1" if provider == "openai" else "")
    with pytest.raises(ModelCallError) as err:
        client_for(provider, base_url=base, max_retries=1).complete(ask())
    assert err.value.kind == "connection"
    assert err.value.attempts == 2


def test_model_call_error_is_one_line(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(status=404, error_message="no such\nmodel")])
    with pytest.raises(ModelCallError) as err:
        client_for("openai").complete(ask())
    assert "\n" not in str(err.value)
    assert str(err.value).startswith("llm openai:openai-test-model: client (HTTP 404) after 1 attempt(s)")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_attempt_is_logged_on_the_turn(provider: Provider, stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply.rate_limited(retry_after=0.05), StubReply.server_error(502), StubReply(text="ok")])
    turn = client_for(provider).complete(ask())
    assert [(a.outcome, a.status) for a in turn.attempts] == [("rate_limit", 429), ("server", 502), ("ok", 200)]
    assert turn.attempts[0].wait_after_ms == pytest.approx(50.0)
    assert turn.attempts[-1].wait_after_ms == 0.0
    assert turn.retry_wait_ms == pytest.approx(sum(a.wait_after_ms for a in turn.attempts))
    assert turn.retries == 2


def test_the_error_keeps_the_attempt_log(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply.server_error(500), StubReply.rate_limited(retry_after=0.02)])
    with pytest.raises(ModelCallError) as err:
        client_for("anthropic", max_retries=1).complete(ask())
    assert [a.outcome for a in err.value.attempt_log] == ["server", "rate_limit"]
    assert err.value.kind == "rate_limit"
    assert err.value.retry_wait_ms > 0


@pytest.mark.parametrize("provider", PROVIDERS)
def test_retry_after_as_http_date_is_honoured(provider: Provider, stub: ModelStub, client_for: MakeClient) -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=60), usegmt=True)
    stub.script([StubReply.rate_limited(retry_after=when), StubReply(text="ok")])
    # A minute away, capped to 0.3 s: the recorded wait is the cap, not this client's 10 ms backoff.
    turn = client_for(provider, retry_after_max_s=0.3).complete(ask())
    assert turn.retry_wait_ms == pytest.approx(300.0)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_429_without_retry_after_backs_off_with_jitter(
    provider: Provider, stub: ModelStub, client_for: MakeClient
) -> None:
    stub.script([StubReply.rate_limited(), StubReply.rate_limited(), StubReply(text="ok")])
    turn = client_for(provider, backoff_initial_s=0.02, backoff_max_s=1.0).complete(ask())
    first, second = (a.wait_after_ms for a in turn.attempts[:2])
    assert 10.0 <= first <= 20.0
    assert 20.0 <= second <= 40.0


def test_one_client_serves_many_threads(stub: ModelStub, client_for: MakeClient) -> None:
    stub.responder = lambda body: StubReply(text=f"echo {body['messages'][0]['content']}")
    client = client_for("openai")
    with ThreadPoolExecutor(max_workers=8) as pool:
        texts = list(pool.map(lambda i: client.complete([Message.user(f"n{i}")]).text, range(16)))
    assert texts == [f"echo n{i}" for i in range(16)]
    assert len(stub.requests) == 16
