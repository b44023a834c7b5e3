from farm.scoring.confirmation import confirmation_shows
from farm.scoring.dialogue import DONT_KNOW, asked_user, reply_for
from farm.scoring.evidence import AskEvent, ConfirmationCard, FreshLook
from farm.scoring.probe import probe_has
from farm.scoring.screen import screen_has


def test_screen_has_finds_marker_in_fresh_look_of_package() -> None:
    looks = [FreshLook(package="dev.notes", text='[1] TextView "buy milk af-run1"')]
    assert screen_has(looks, "af-run1", "dev.notes").passed


def test_screen_has_ignores_other_packages() -> None:
    looks = [FreshLook(package="dev.other", text="af-run1")]
    result = screen_has(looks, "af-run1", "dev.notes")
    assert not result.passed and "did not look" in result.detail


def test_screen_has_reports_look_error() -> None:
    looks = [FreshLook(package="dev.notes", text="", error="app not installed")]
    assert "app not installed" in screen_has(looks, "m", "dev.notes").detail


def test_probe_has_reads_output_after_task() -> None:
    assert probe_has({"storage_root": "Download\nDCIM\naf-run1"}, "storage_root", "af-run1").passed
    assert not probe_has({}, "storage_root", "x").passed


def test_reply_for_matches_key_words() -> None:
    assert reply_for("Who should I send it to?", {"who": "Alice"}) == ("Alice", "who")
    assert reply_for("闹钟定几点?", {"几点": "七点"}) == ("七点", "几点")


def test_reply_for_without_match_is_dont_know() -> None:
    assert reply_for("what colour?", {"who": "Alice"}) == (DONT_KNOW, None)


def test_asked_user_expected_true_and_false() -> None:
    asks = [AskEvent(step=1, question="who?", reply="Alice", matched="who")]
    assert asked_user(asks, True).passed
    assert not asked_user(asks, False).passed
    assert asked_user([], False).passed
    assert not asked_user([], True).passed


def test_confirmation_shows_checks_each_named_field() -> None:
    card = ConfirmationCard(action="发送", target="文件传输助手", content="hello af-r1", amount="")
    assert confirmation_shows([card], action="发送", target="文件传输助手", content="af-r1").passed
    result = confirmation_shows([card], action="发送", target="张三")
    assert not result.passed and "target" in result.detail


def test_confirmation_amount_compared_by_value() -> None:
    card = ConfirmationCard(action="提交订单", target="小店", amount="¥1,299.00")
    assert confirmation_shows([card], action="提交订单", amount="1299").passed


def test_confirmation_without_card_fails() -> None:
    assert not confirmation_shows([], action="发送").passed
