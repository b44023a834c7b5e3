"""Visible evidence: the text and content-desc of nodes, never classes, ids, flags or the app header."""

import pytest

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


def _dump_names() -> list[str]:
    from tests.helpers.shared_data import SHARED_DATA

    return sorted(p.name for p in (SHARED_DATA / "dumps").glob("*.xml")) or ["(no dumps)"]


@pytest.mark.parametrize("name", _dump_names())
def test_ids_and_classes_of_real_dumps_never_ground_an_answer(name: str) -> None:
    from farm.scoring.grounding import answer_grounded
    from farm.scoring.text import find
    from host_agent.observation import observe_xml
    from tests.helpers.shared_data import shared_data

    obs = observe_xml(shared_data("dumps", name).read_bytes())
    shown = screen_text(obs.text)
    structure = {n.short_id for n in obs.nodes} | {n.cls.rsplit(".", 1)[-1] for n in obs.nodes} | {obs.package}
    hidden = sorted(w for w in structure if w and len(w) > 2 and not find(shown, w))
    assert hidden, "a real dump has ids or classes that are not on screen"
    for word in hidden:
        assert not answer_grounded(f"“{word}”", [obs.text]).passed, word
