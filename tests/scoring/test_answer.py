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


def test_answer_contains_does_not_find_a_number_inside_a_year() -> None:
    from farm.scoring.answer import answer_contains

    assert not answer_contains("发布于 2014 年", ["14"]).passed
    assert answer_contains("共 14 条", ["14"]).passed


def test_declares_impossible_recognises_refusals_and_not_results() -> None:
    from farm.scoring.answer import declares_impossible

    assert declares_impossible("2 月没有 30 号,无法设置这个闹钟")
    assert declares_impossible("This can't be done: there is no such app.")
    assert not declares_impossible("闹钟已设好:8:00")
    assert not declares_impossible(None)
