"""Cost of a model call from its price and token usage. Unknown stays unknown: None, never 0."""

from __future__ import annotations

from farm.llm.model_config import ModelPrice
from farm.results.record import Tokens


def cost_usd(price: ModelPrice | None, tokens: Tokens) -> float | None:
    """USD cost of `tokens` at `price`, or None when the price or a billed count is unknown.

    Uncached input and output counts are required. Cache counts that are unknown (None) or zero
    add nothing (providers that do not report them do not bill them separately); a non-zero cache
    count whose price is unknown makes the whole cost unknown.
    """
    if price is None or tokens.input_new is None or tokens.output is None:
        return None
    total = tokens.input_new * price.input_per_m + tokens.output * price.output_per_m
    for count, rate in (
        (tokens.cache_read, price.cache_read_per_m),
        (tokens.cache_write, price.cache_write_per_m),
    ):
        if not count:
            continue
        if rate is None:
            return None
        total += count * rate
    return total / 1_000_000

