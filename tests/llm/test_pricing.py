"""Cost from price and tokens: unknown stays None, never 0."""

from __future__ import annotations

import pytest

from farm.llm.model_config import ModelPrice
from farm.llm.pricing import cost_usd
from farm.results.record import Tokens

PRICE = ModelPrice(input_per_m=3.0, output_per_m=15.0, cache_read_per_m=0.3, cache_write_per_m=3.75)


def test_cost_sums_every_billed_part() -> None:
    tokens = Tokens(input_new=10_000, cache_read=50_000, cache_write=2_000, output=1_000)
    expected = (10_000 * 3.0 + 50_000 * 0.3 + 2_000 * 3.75 + 1_000 * 15.0) / 1e6
    assert cost_usd(PRICE, tokens) == pytest.approx(expected)


def test_unknown_price_gives_none() -> None:
    assert cost_usd(None, Tokens(input_new=1, cache_read=0, cache_write=0, output=1)) is None


@pytest.mark.parametrize("tokens", [Tokens(input_new=None, output=5), Tokens(input_new=5, output=None), Tokens()])
def test_unknown_billed_counts_give_none(tokens: Tokens) -> None:
    assert cost_usd(PRICE, tokens) is None


def test_unreported_cache_writes_add_nothing() -> None:
    tokens = Tokens(input_new=1_000_000, cache_read=0, cache_write=None, output=0)
    assert cost_usd(PRICE, tokens) == pytest.approx(3.0)


def test_cache_use_with_unknown_cache_price_gives_none() -> None:
    price = ModelPrice(input_per_m=1.0, output_per_m=2.0)
    assert cost_usd(price, Tokens(input_new=10, cache_read=5, output=1)) is None
    assert cost_usd(price, Tokens(input_new=10, cache_read=0, output=1)) == pytest.approx(12 / 1e6)


def test_zero_tokens_cost_zero_when_everything_is_known() -> None:
    assert cost_usd(PRICE, Tokens(input_new=0, cache_read=0, cache_write=0, output=0)) == 0.0


def test_negative_prices_are_refused() -> None:
    with pytest.raises(ValueError):
        ModelPrice(input_per_m=-1, output_per_m=1)
