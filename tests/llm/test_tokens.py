"""The one token model: sums keep unknown counts unknown, both on-disk spellings read, counts bounded in files."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from farm.results.record import MAX_TOKENS, Record, Tokens


def test_a_sum_keeps_a_count_unknown_on_either_side_unknown() -> None:
    a = Tokens(input_new=1, cache_read=2, cache_write=None, output=4)
    b = Tokens(input_new=10, cache_read=20, cache_write=30, output=40)
    assert a.plus(b) == Tokens(input_new=11, cache_read=22, cache_write=None, output=44)


def test_a_step_without_usage_makes_the_total_unknown_not_smaller() -> None:
    steps = [Tokens(input_new=100, output=5), Tokens(), Tokens(input_new=100, output=5)]
    assert Tokens.total(steps) == Tokens()


def test_no_parts_total_to_unknown_never_zero() -> None:
    total = Tokens.total([])
    assert total == Tokens() and not total.known()


def test_known_is_true_once_any_count_was_reported() -> None:
    assert Tokens(output=0).known() and not Tokens().known()


def test_prompt_is_new_input_plus_both_cache_counts() -> None:
    assert Tokens(input_new=10, cache_read=5, cache_write=1, output=3).prompt() == 16


def test_prompt_without_new_input_is_unknown() -> None:
    assert Tokens(cache_read=5, cache_write=1, output=3).prompt() is None


def test_an_unreported_cache_count_adds_nothing_to_the_prompt() -> None:
    assert Tokens(input_new=10, cache_read=None, cache_write=None).prompt() == 10


def test_the_record_spelling_and_the_web_spelling_read_to_one_field() -> None:
    assert Tokens.model_validate({"input_new": 7}) == Tokens.model_validate({"newInput": 7}) == Tokens(input_new=7)
    assert Tokens.model_validate({"cacheRead": 1, "cacheWrite": 2}) == Tokens(cache_read=1, cache_write=2)


def test_a_record_still_writes_input_new() -> None:
    record = Record(run="r", lane="web", device="playwright", task_id="t", outcome="succeeded", passed=True,
                    execution="controlled", tokens=Tokens(input_new=3, output=1))
    assert '"tokens":{"input_new":3,"cache_read":null,"cache_write":null,"output":1}' in record.model_dump_json()


def test_both_spellings_of_one_count_at_once_are_refused() -> None:
    with pytest.raises(ValidationError, match="newInput"):
        Tokens.model_validate({"input_new": 1, "newInput": 2})


@pytest.mark.parametrize("count", [-1, MAX_TOKENS + 1])
def test_a_count_out_of_range_is_refused_where_it_enters_a_record(count: int) -> None:
    with pytest.raises(ValidationError) as err:
        Record(run="r", lane="web", device="d", task_id="t", outcome="failed", passed=False, execution="live",
               tokens=Tokens(cache_read=count))
    assert err.value.errors()[0]["loc"] == ("tokens", "cache_read")


def test_a_model_client_may_hold_an_odd_count_without_failing() -> None:
    # A provider's odd usage must not fail the model call; the bound applies where the count enters a file.
    assert Tokens(input_new=-3).input_new == -3
