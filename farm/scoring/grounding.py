"""answer_grounded: every number, quoted name and `label: value` of the answer must have been on screen.

"On screen" means the visible text of the reads (text and content-desc), never class names, ids,
flags or the app header; items are found with the shared matcher (token boundaries, numbers by value).

Only the last few screen reads count, so a value must have been seen recently, not guessed
earlier and carried along.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from farm.results.record import CheckResult
from farm.scoring.text import clip, find, norm
from farm.scoring.visible import screen_text

DEFAULT_WINDOW = 5
"""How many of the last screen reads a grounded item may come from."""

ItemKind = Literal["number", "version", "quoted", "labelled"]

_QUOTES = re.compile(
    r"“([^”]{1,80})”|\"([^\"]{1,80})\"|「([^」]{1,80})」|『([^』]{1,80})』|《([^》]{1,80})》|‘([^’]{1,80})’"
)
# `label: value` — the label holds a non-digit (so 12:30 is a time, not a label), the value runs to a separator.
_LABEL_CHAR = r"[^\s:,;。、!?()\[\]]"
_LABELLED = re.compile(
    rf"({_LABEL_CHAR}{{0,20}}[^\d\s:,;。、!?()\[\]]{_LABEL_CHAR}{{0,20}})\s*:\s*([^,;。、!?\n]{{1,80}})"
)
# Number tokens of the answer; a dotted run with two or more dots is a version, compared as text.
_NUMBER = re.compile(r"\d+(?:\.\d+)*")
_TRAILING = " \t.…'\"“”)）】」』》"


@dataclass(frozen=True)
class Item:
    """One checkable claim found in an answer."""

    kind: ItemKind
    text: str


def extract_items(answer: str) -> list[Item]:
    """Quoted names, then `label: value` values, then numbers not already inside one of those."""
    text = _prepare(answer)
    taken: list[tuple[int, int]] = []
    items: list[Item] = []
    seen: set[tuple[str, str]] = set()

    def add(kind: ItemKind, value: str, span: tuple[int, int]) -> None:
        taken.append(span)
        key = (kind, norm(value))
        if key[1] and key not in seen:
            seen.add(key)
            items.append(Item(kind, value))

    for m in _QUOTES.finditer(text):
        value = next(g for g in m.groups() if g is not None).strip()
        add("quoted", value, m.span())
    for m in _LABELLED.finditer(text):
        if any(a <= m.start(2) < b for a, b in taken) or m.group(2).startswith("/"):
            continue
        value = m.group(2).strip().rstrip(_TRAILING)
        if value:
            add("labelled", value, m.span(2))
    for m in _NUMBER.finditer(text):
        if not any(a <= m.start() < b for a, b in taken):
            add("version" if m.group(0).count(".") > 1 else "number", m.group(0), m.span())
    return items


def _prepare(text: str) -> str:
    # NFKC maps full-width digits and colons; thousands separators go so "56,088" is one number.
    return re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", unicodedata.normalize("NFKC", text))


def is_grounded(item: Item, screen: str) -> bool:
    """Whether one item is on the screen's visible text (shared matcher: token boundaries, numbers by value)."""
    return find(screen, item.text)


def answer_grounded(
    answer: str | None, screen_reads: Sequence[str], min_items: int = 1, *, window: int = DEFAULT_WINDOW
) -> CheckResult:
    """Pass when the answer has at least `min_items` items and each occurs in the last `window` reads."""
    if not answer:
        return CheckResult(type="answer_grounded", passed=False, detail="no answer was given")
    items = extract_items(answer)
    recent = "\n".join(screen_text(read) for read in screen_reads[-window:]) if window > 0 else ""
    ungrounded = [i for i in items if not is_grounded(i, recent)]
    if ungrounded:
        listed = ", ".join(repr(i.text) for i in ungrounded[:5])
        return CheckResult(
            type="answer_grounded",
            passed=False,
            detail=f"not in the last {window} screen reads: {listed}",
        )
    if len(items) < min_items:
        return CheckResult(
            type="answer_grounded",
            passed=False,
            detail=f"answer names {len(items)} checkable item(s), needs {min_items}: {clip(answer)!r}",
        )
    listed = ", ".join(repr(i.text) for i in items[:5])
    return CheckResult(type="answer_grounded", passed=True, detail=f"{len(items)} item(s) on screen: {listed}")
