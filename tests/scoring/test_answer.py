from farm.scoring.answer import answer_contains, answer_regex


def test_answer_contains_ignores_case_and_width() -> None:
    assert answer_contains("Android ＶＥＲＳＩＯＮ 14", ["version 14"]).passed


def test_answer_contains_fails_without_answer() -> None:
    result = answer_contains(None, ["14"])
    assert not result.passed and "no answer" in result.detail


def test_answer_contains_names_missing_text() -> None:
    result = answer_contains("it is 13", ["14"])
    assert not result.passed and "'14'" in result.detail


def test_answer_regex_matches_thousands_separator_variants() -> None:
    assert answer_regex("结果是 56,088", r"56,?088").passed
    assert answer_regex("结果是 56088", r"56,?088").passed


def test_answer_regex_matches_full_width_digits() -> None:
    assert answer_regex("结果是５６０８８", r"56,?088").passed


def test_answer_regex_wrong_answer_fails() -> None:
    assert not answer_regex("结果是 56,086", r"56,?088").passed


def test_answer_regex_invalid_pattern_fails_with_detail() -> None:
    result = answer_regex("x", "(")
    assert not result.passed and "invalid pattern" in result.detail
