"""Cost of a request, model requests as ModelCalls, and totals that stay null when something is unknown."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from farm.llm.client import ModelCallError, ModelClient, make_client
from farm.llm.model_config import LLMConfig
from farm.llm.stub import ModelStub, StubReply, StubUsage
from farm.llm.types import Attempt, Message, ModelTurn
from farm.results.record import Tokens
from web_bench.webvoyager.accounting import calls_from_error, calls_from_turn, cost, totals
from web_bench.webvoyager.model import ModelCall
from web_bench.webvoyager.model_setup import MINIMAX_M3_PRICE, WvPrice

T0 = "2026-09-16T08:00:00.000000Z"
KEY_ENV = "WV_TEST_KEY"


def tokens(input_new: int | None, cache_read: int | None = 0, cache_write: int | None = 0,
           output: int | None = 0) -> Tokens:
    return Tokens(input_new=input_new, cache_read=cache_read, cache_write=cache_write, output=output)


def turn(usage: Tokens, attempts: list[Attempt] | None = None) -> ModelTurn:
    return ModelTurn(text="ok", usage=usage, model="MiniMax-M3", attempts=attempts or [
        Attempt(outcome="ok", status=200, duration_ms=100.0)])


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ModelStub, ModelClient]]:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with ModelStub() as stub:
        cfg = LLMConfig(provider="anthropic", model="MiniMax-M3", base_url=stub.base_url_anthropic,
                        api_key_env=KEY_ENV, max_retries=2, backoff_initial_s=0.01, backoff_max_s=0.02,
                        timeout_s=0.5)
        with make_client(cfg) as made:
            yield stub, made


def failure(client: ModelClient) -> ModelCallError:
    with pytest.raises(ModelCallError) as err:
        client.complete([Message.user("hi")])
    return err.value


# -- cost ------------------------------------------------------------------------------------------------------
def test_minimax_cost_is_exact() -> None:
    amount, long_context = cost(MINIMAX_M3_PRICE, tokens(100_000, cache_read=50_000, output=10_000))
    # 100k × 0.30 + 50k × 0.06 + 10k × 1.20 = 30 000 + 3 000 + 12 000 micro-dollars.
    assert amount == pytest.approx(0.045, rel=1e-12)
    assert long_context is False


def test_above_512k_input_the_whole_request_costs_double() -> None:
    amount, long_context = cost(MINIMAX_M3_PRICE, tokens(500_000, cache_read=20_000, output=1_000))
    # (500k × 0.30 + 20k × 0.06 + 1k × 1.20) × 2 = (150 000 + 1 200 + 1 200) × 2 micro-dollars.
    assert amount == pytest.approx(0.3048, rel=1e-12)
    assert long_context is True


def test_exactly_at_the_threshold_is_not_long_context() -> None:
    amount, long_context = cost(MINIMAX_M3_PRICE, tokens(512_000, output=0))
    assert amount == pytest.approx(0.1536, rel=1e-12)
    assert long_context is False


def test_cache_writes_at_an_unknown_price_make_the_cost_unknown() -> None:
    amount, long_context = cost(MINIMAX_M3_PRICE, tokens(1_000, cache_write=10, output=10))
    assert amount is None
    assert long_context is False


def test_unreported_or_zero_cache_counts_add_nothing() -> None:
    price = WvPrice(input=1, output=2)
    assert cost(price, tokens(1_000_000, cache_read=None, cache_write=None, output=0))[0] == pytest.approx(1.0)
    assert cost(price, tokens(1_000_000, cache_read=0, cache_write=0, output=500_000))[0] == pytest.approx(2.0)


def test_unknown_price_or_counts_cost_null_not_zero() -> None:
    assert cost(None, tokens(10, output=10)) == (None, False)
    assert cost(MINIMAX_M3_PRICE, tokens(None, output=10))[0] is None
    assert cost(MINIMAX_M3_PRICE, tokens(10, output=None))[0] is None


def test_output_is_billed_once() -> None:
    # Output already includes reasoning tokens: 1M output at 1.20 is 1.20, nothing more.
    assert cost(MINIMAX_M3_PRICE, tokens(0, output=1_000_000))[0] == pytest.approx(1.20, rel=1e-12)


# -- calls from a turn -----------------------------------------------------------------------------------------
def test_one_call_per_attempt_only_the_last_with_usage() -> None:
    attempts = [Attempt(outcome="rate_limit", status=429, duration_ms=50.0, wait_after_ms=500.0),
                Attempt(outcome="server", status=503, duration_ms=30.0, wait_after_ms=1000.0),
                Attempt(outcome="ok", status=200, duration_ms=200.0)]
    calls = calls_from_turn(turn(tokens(1_000, output=100), attempts), role="agent", step=3, started_at=T0,
                            price=MINIMAX_M3_PRICE)
    assert [c.outcome for c in calls] == ["rate_limit", "server", "ok"]
    assert [c.retry for c in calls] == [False, True, True]
    assert [c.usage_expected for c in calls] == [False, False, True]
    assert [c.usage is None for c in calls] == [True, True, False]
    assert [c.cost_usd is None for c in calls] == [True, True, False]
    assert all(c.step == 3 and c.role == "agent" for c in calls)
    assert [c.started_at for c in calls] == [T0, "2026-09-16T08:00:00.550000Z", "2026-09-16T08:00:01.580000Z"]
    assert calls[2].cost_usd == pytest.approx((1_000 * 0.30 + 100 * 1.20) / 1e6, rel=1e-12)


def test_a_turn_without_usage_is_missing_usage() -> None:
    calls = calls_from_turn(turn(Tokens()), role="judge", step=1, started_at=T0, price=MINIMAX_M3_PRICE)
    assert calls[0].usage is None and calls[0].usage_expected
    total = totals(calls)
    assert total.tokens is None and total.cost_usd is None
    assert total.usage_missing_calls == 1


def test_long_context_is_flagged_on_the_call() -> None:
    calls = calls_from_turn(turn(tokens(600_000, output=1)), role="agent", step=1, started_at=T0,
                            price=MINIMAX_M3_PRICE)
    assert calls[0].long_context is True
    assert calls[0].cost_usd == pytest.approx((600_000 * 0.30 + 1.20) * 2 / 1e6, rel=1e-12)


def test_calls_from_a_real_retried_turn(client: tuple[ModelStub, ModelClient]) -> None:
    stub, made = client
    stub.script([StubReply.rate_limited(), StubReply(text="done", usage=StubUsage(input=700, cached=300, output=50))])
    calls = calls_from_turn(made.complete([Message.user("hi")]), role="agent", step=1, started_at=T0,
                            price=MINIMAX_M3_PRICE)
    assert [(c.outcome, c.status, c.retry) for c in calls] == [("rate_limit", 429, False), ("ok", 200, True)]
    assert calls[1].usage == tokens(700, cache_read=300, cache_write=0, output=50)
    assert totals(calls).retry_count == 1


# -- calls from an error ---------------------------------------------------------------------------------------
def test_a_refused_429_quota_request_is_not_missing_usage(client: tuple[ModelStub, ModelClient]) -> None:
    stub, made = client
    stub.script([StubReply.quota(status=429, code=2056)])
    calls = calls_from_error(failure(made), role="agent", step=2, started_at=T0, price=MINIMAX_M3_PRICE,
                             model="MiniMax-M3")
    assert [(c.outcome, c.status, c.usage_expected) for c in calls] == [("quota", 429, False)]
    assert calls[0].error is not None and "2056" in calls[0].error
    total = totals(calls)
    assert total.usage_missing_calls == 0
    assert total.tokens == tokens(0)
    assert total.cost_usd == 0.0
    assert total.request_count == 1


def test_a_timed_out_request_is_missing_usage(client: tuple[ModelStub, ModelClient]) -> None:
    stub, made = client
    stub.script([StubReply.slow(10.0)] * 3)
    calls = calls_from_error(failure(made), role="agent", step=1, started_at=T0, price=MINIMAX_M3_PRICE,
                             model="MiniMax-M3")
    assert [(c.outcome, c.retry, c.usage_expected) for c in calls] == [
        ("timeout", False, True), ("timeout", True, True), ("timeout", True, True)]
    assert calls[-1].error is not None and "timeout" in calls[-1].error
    total = totals(calls)
    assert total.tokens is None and total.cost_usd is None
    assert total.usage_missing_calls == 3
    assert (total.request_count, total.retry_count) == (3, 2)


def test_an_error_without_an_attempt_log_still_counts_one_request() -> None:
    exc = ModelCallError("llm: auth", kind="auth", status=401, attempt_log=[])
    calls = calls_from_error(exc, role="preflight", step=None, started_at=T0, price=None, model="m")
    assert [(c.outcome, c.status, c.usage_expected) for c in calls] == [("auth", 401, False)]


# -- totals ----------------------------------------------------------------------------------------------------
def ok(usage: Tokens | None, cost_usd: float | None, *, retry: bool = False) -> ModelCall:
    return ModelCall(role="agent", step=1, retry=retry, started_at=T0, duration_ms=1.0, outcome="ok",
                     usage=usage, usage_expected=True, cost_usd=cost_usd)


def refused(outcome: str = "rate_limit", *, expected: bool = False) -> ModelCall:
    return ModelCall.model_validate({"role": "agent", "step": 1, "started_at": T0, "duration_ms": 1.0,
                                     "outcome": outcome, "usage_expected": expected, "retry": True})


def test_complete_totals_are_sums() -> None:
    total = totals([ok(tokens(10, 2, 1, 5), 0.5), refused(), ok(tokens(20, 0, 0, 7), 0.25)])
    assert total.tokens == tokens(30, 2, 1, 12)
    assert total.tokens_observed == tokens(30, 2, 1, 12)
    assert total.cost_usd == pytest.approx(0.75)
    assert (total.request_count, total.retry_count, total.usage_missing_calls, total.unpriced_calls) == (3, 1, 0, 0)


def test_a_billed_request_without_usage_nulls_tokens_and_cost_but_keeps_observed() -> None:
    total = totals([ok(tokens(10, 0, 0, 5), 0.5), refused("timeout", expected=True)])
    assert total.tokens is None
    assert total.cost_usd is None
    assert total.tokens_observed == tokens(10, 0, 0, 5)
    assert total.cost_observed_usd == pytest.approx(0.5)
    assert total.usage_missing_calls == 1


def test_an_unpriced_request_nulls_the_cost_only() -> None:
    total = totals([ok(tokens(10, 0, 0, 5), 0.5), ok(tokens(10, 0, 3, 5), None)])
    assert total.tokens == tokens(20, 0, 3, 10)
    assert total.cost_usd is None
    assert total.cost_observed_usd == pytest.approx(0.5)
    assert total.unpriced_calls == 1


def test_cache_writes_under_minimax_price_are_unpriced_end_to_end() -> None:
    calls = calls_from_turn(turn(tokens(1_000, cache_write=64, output=10)), role="agent", step=1, started_at=T0,
                            price=MINIMAX_M3_PRICE)
    total = totals(calls)
    assert calls[0].cost_usd is None
    assert (total.unpriced_calls, total.cost_usd, total.cost_observed_usd) == (1, None, 0.0)
    assert total.tokens == tokens(1_000, cache_write=64, output=10)


def test_an_unreported_count_stays_null_in_complete_totals() -> None:
    total = totals([ok(tokens(10, None, None, 5), 0.1), ok(tokens(10, 4, None, 5), 0.1)])
    assert total.tokens == tokens(20, None, None, 10)
    # Observed sums add what was reported; a field nobody reported stays null.
    assert total.tokens_observed == tokens(20, 4, None, 10)


def test_no_requests_billed_nothing() -> None:
    total = totals([])
    assert total.tokens == tokens(0) and total.cost_usd == 0.0 and total.request_count == 0
