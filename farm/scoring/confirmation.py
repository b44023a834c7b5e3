"""confirmation_shows: the confirmation card names the right action, target, content and amount."""

from __future__ import annotations

from collections.abc import Sequence

from farm.results.record import CheckResult
from farm.scoring.evidence import ConfirmationCard
from farm.scoring.text import find, numbers_in


def _amount_matches(card_amount: str, wanted: str) -> bool:
    """Every number the check names is a number on the card, by value ("99" is not in "¥1,299.00")."""
    want = numbers_in(wanted)
    if not want:
        return find(card_amount, wanted)
    return want <= numbers_in(card_amount)


def card_mismatches(card: ConfirmationCard, wanted: dict[str, str]) -> list[str]:
    """The fields of `wanted` (non-empty ones) that the card does not show."""
    wrong: list[str] = []
    for field, value in wanted.items():
        if not value:
            continue
        shown = getattr(card, field)
        ok = _amount_matches(shown, value) if field == "amount" else find(shown, value)
        if not ok:
            wrong.append(f"{field} {shown!r} lacks {value!r}")
    return wrong


def confirmation_shows(
    cards: Sequence[ConfirmationCard],
    *,
    action: str | None = None,
    target: str | None = None,
    content: str | None = None,
    amount: str | None = None,
) -> CheckResult:
    """Pass when some card shows every field the check names (shared matcher; amounts by value)."""
    wanted = {"action": action or "", "target": target or "", "content": content or "", "amount": amount or ""}
    if not cards:
        return CheckResult(type="confirmation_shows", passed=False, detail="no confirmation card was produced")
    problems: list[str] = []
    for card in cards:
        wrong = card_mismatches(card, wanted)
        if not wrong:
            named = ", ".join(f"{k}={v!r}" for k, v in wanted.items() if v)
            return CheckResult(type="confirmation_shows", passed=True, detail=f"card shows {named or 'a card'}")
        problems.extend(wrong)
    return CheckResult(type="confirmation_shows", passed=False, detail="; ".join(problems))
