"""confirmation_shows: the confirmation card names the right action, target, content and amount."""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation

from farm.results.record import CheckResult
from farm.scoring.evidence import ConfirmationCard
from farm.scoring.text import contains

_AMOUNT = re.compile(r"\d+(?:\.\d+)?")


def _amount_matches(card_amount: str, wanted: str) -> bool:
    if contains(card_amount, wanted):
        return True
    try:
        want = {Decimal(m) for m in _AMOUNT.findall(wanted.replace(",", ""))}
        have = {Decimal(m) for m in _AMOUNT.findall(card_amount.replace(",", ""))}
    except InvalidOperation:
        return False
    return bool(want) and want <= have


def card_mismatches(card: ConfirmationCard, wanted: dict[str, str]) -> list[str]:
    """The fields of `wanted` (non-empty ones) that the card does not show."""
    wrong: list[str] = []
    for field, value in wanted.items():
        if not value:
            continue
        shown = getattr(card, field)
        ok = _amount_matches(shown, value) if field == "amount" else contains(shown, value)
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
    """Pass when some card shows every field the check names (text containment; amounts by value)."""
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
