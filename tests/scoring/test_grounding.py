from hypothesis import given
from hypothesis import strategies as st

from farm.scoring.grounding import Item, answer_grounded, extract_items

_NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz布丁猫咪", min_size=2, max_size=8)


def test_extract_items_finds_quotes_labels_and_numbers() -> None:
    items = extract_items("“小明”的电量: 87%，还有 3 条")
    assert Item("quoted", "小明") in items
    assert Item("labelled", "87%") in items
    assert Item("number", "3") in items


def test_time_is_two_numbers_not_a_label() -> None:
    assert extract_items("闹钟 7:30") == [Item("number", "7"), Item("number", "30")]


def test_thousands_separator_is_one_number() -> None:
    assert extract_items("56,088") == [Item("number", "56088")]


def test_refs_of_observation_lines_are_not_screen_content() -> None:
    assert not answer_grounded("3", ['[3] Button "OK"']).passed


def test_decimal_value_matches_by_value() -> None:
    assert answer_grounded("价格 12.5 元", ['[1] TextView "¥12.50"']).passed


def test_min_items_not_reached_fails() -> None:
    result = answer_grounded("是 42", ['[1] TextView "42"'], min_items=2)
    assert not result.passed and "needs 2" in result.detail


def test_reads_older_than_window_do_not_count() -> None:
    screens = ['[1] TextView "777"'] + ['[1] TextView "home"'] * 5
    assert not answer_grounded("777", screens, window=5).passed
    assert answer_grounded("777", screens, window=6).passed


@given(st.lists(st.integers(min_value=0, max_value=10**9), min_size=1, max_size=6, unique=True))
def test_numbers_shown_on_screen_are_grounded(values: list[int]) -> None:
    screen = "\n".join(f'[{i}] TextView "{v:,}"' for i, v in enumerate(values))
    answer = "、".join(str(v) for v in values)
    assert answer_grounded(answer, [screen], min_items=len(values)).passed


@given(
    st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=5, unique=True),
    st.integers(min_value=0, max_value=10**6),
)
def test_a_number_never_shown_is_not_grounded(shown: list[int], extra: int) -> None:
    if extra in shown:
        extra = max(shown) + 1
    screen = " ".join(f'"{v}"' for v in shown)
    answer = " ".join(str(v) for v in [*shown, extra])
    assert not answer_grounded(answer, [screen]).passed


@given(st.lists(_NAMES, min_size=1, max_size=4, unique=True))
def test_quoted_names_from_screen_are_grounded(names: list[str]) -> None:
    screen = "\n".join(f'[{i}] TextView "{n}"' for i, n in enumerate(names))
    answer = "，".join(f"“{n}”" for n in names)
    result = answer_grounded(answer, [screen], min_items=len(names))
    assert result.passed, result.detail


@given(_NAMES, _NAMES)
def test_quoted_name_absent_from_screen_fails(shown: str, other: str) -> None:
    if other.casefold() in shown.casefold():
        other = other + "x" + shown
    assert not answer_grounded(f"“{other}”", [f'[1] TextView "{shown}"']).passed


def test_quoted_text_only_in_a_class_name_is_not_grounded() -> None:
    assert not answer_grounded("“te”", ['[1] TextView "aa"']).passed


def test_labelled_state_only_in_flag_words_is_not_grounded() -> None:
    assert not answer_grounded("Wi-Fi: checked", ['[1] Switch "Wi-Fi" unchecked']).passed


def test_number_only_in_the_app_header_is_not_grounded() -> None:
    screen = 'app: com.android.calculator2/.Calculator\n[1] TextView "0"'
    assert not answer_grounded("2", [screen]).passed


def test_number_only_in_a_resource_id_is_not_grounded() -> None:
    assert not answer_grounded("7", ['[1] Button "OK" (button7) click']).passed


def test_number_inside_a_bigger_number_is_not_grounded() -> None:
    assert not answer_grounded("14", ['[1] TextView "2014"']).passed


def test_content_desc_is_visible_evidence() -> None:
    assert answer_grounded("“电池”", ['[1] ImageView desc="电池"']).passed
