"""The shared matcher: token boundaries, numbers by value, CJK without boundaries."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from farm.scoring.text import find, number_value, numbers_in


def test_letters_inside_a_word_do_not_match() -> None:
    assert not find("TextView", "te")


def test_checked_is_not_found_in_unchecked() -> None:
    assert not find("Wi-Fi unchecked", "checked")
    assert find("Wi-Fi checked", "checked")


@pytest.mark.parametrize("needle", ["99", "29", "1,29"])
def test_amount_inside_a_bigger_amount_does_not_match(needle: str) -> None:
    assert not find("¥1,299.00", needle)


def test_amount_matches_by_value() -> None:
    assert find("¥1,299.00", "1299")
    assert find("合计 1299 元", "1,299.00")


def test_year_does_not_contain_a_smaller_number() -> None:
    assert not find("发布于 2014 年", "14")


def test_integer_is_not_the_start_of_a_decimal() -> None:
    assert not find("评分 14.5", "14")
    assert not find("评分 4.55", "4.5")


def test_version_is_not_a_number() -> None:
    assert not find("Android 14.0.1", "14")
    assert find("Android 14.0.1", "14.0.1")
    assert numbers_in("14.0.1 and 3") == {3}


def test_digit_glued_to_letters_is_not_a_number_token_match() -> None:
    assert not find("com.android.calculator2", "calculator")
    assert find("version 2 ready", "2")


def test_chinese_matches_inside_a_run_of_characters() -> None:
    assert find("请登录后继续", "登录")


def test_full_width_and_case_are_normalised() -> None:
    assert find("ＷＩ-ＦＩ 已连接", "wi-fi")


def test_empty_needle_never_matches() -> None:
    assert not find("anything", "")
    assert not find("anything", "   ")


def test_number_value_only_for_plain_numbers() -> None:
    assert number_value("1,299.00") == 1299
    assert number_value("14.0.1") is None
    assert number_value("12 元") is None


@given(st.integers(min_value=0, max_value=10**9), st.integers(min_value=1, max_value=9))
def test_a_number_never_matches_inside_a_longer_number(value: int, prefix: int) -> None:
    assert not find(f"total {prefix}{value}", str(value))
    assert find(f"total {value}", str(value))
