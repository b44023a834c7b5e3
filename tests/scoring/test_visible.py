"""Visible evidence: the text and content-desc of nodes, never classes, ids, flags or the app header."""

from farm.scoring.visible import screen_text, visible_texts

_SCREEN = (
    "app: com.android.calculator2/.Calculator\n"
    '[1] TextView "aa" (btn_login_entry) click\n'
    '[2] Switch "Wi-Fi" desc="无线网络" unchecked\n'
    "[3] ImageButton (captcha_icon) click\n"
)


def test_only_text_and_desc_are_visible() -> None:
    assert visible_texts(_SCREEN) == ["aa", "Wi-Fi", "无线网络"]


def test_structure_never_reaches_screen_text() -> None:
    text = screen_text(_SCREEN)
    for word in ("TextView", "btn_login_entry", "unchecked", "click", "calculator2", "captcha"):
        assert word not in text


def test_plain_text_lines_of_other_transcripts_count_as_visible() -> None:
    assert visible_texts("计算结果 56,088") == ["计算结果 56,088"]
