"""The one text matcher of every check: normalised text, token boundaries, numbers by value.

A needle matches only where it starts and ends on a token boundary: "te" is not found in
"TextView", "checked" is not found in "unchecked", "14" is not found in "2014" or "14.5". A needle
that is a number ("99", "1,299.00", "14.0") is compared by value with the numbers of the text, so
"99" is not in "¥1,299.00" but "1299" is. Scripts without spaces between words (Chinese,
Japanese) have no boundaries inside a run of characters: "登录" is found in "请登录后继续".
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal, InvalidOperation

_SPACE = re.compile(r"\s+")
# A thousands separator between digit groups ("56,088" → "56088"); NFKC has already mapped "，".
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
# Number tokens of a text: dotted runs stay whole, so a version "14.0.1" is never the number 14.
_NUMBER_TOKEN = re.compile(r"\d+(?:\.\d+)*")
_PLAIN_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")
# Below this code point letters and digits join into words (Latin, Greek, Cyrillic…); CJK does not.
_WORD_LIMIT = 0x2E80


def norm(text: str) -> str:
    """NFKC, case-folded, whitespace collapsed, thousands separators dropped."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _THOUSANDS.sub("", _SPACE.sub(" ", folded)).strip()


def _joins(char: str) -> bool:
    """Whether `char` continues a word (so a match may not start or end next to it)."""
    return char.isalnum() and ord(char) < _WORD_LIMIT


def _at_boundary(hay: str, start: int, end: int) -> bool:
    first, last = hay[start], hay[end - 1]
    if start > 0 and _joins(first) and _joins(hay[start - 1]):
        return False
    if end < len(hay):
        after = hay[end]
        if _joins(last) and _joins(after):
            return False
        # "14" inside "14.5" or "1.5" inside "1.55": a decimal point followed by a digit continues the number.
        if last.isdigit() and after == "." and end + 1 < len(hay) and hay[end + 1].isdigit():
            return False
    if first.isdigit() and start > 1 and hay[start - 1] == "." and hay[start - 2].isdigit():
        return False
    return True


def number_value(text: str) -> Decimal | None:
    """The value of a text that is one plain number ("1,299.00", "14", "-3.5"), else None."""
    n = norm(text)
    if not _PLAIN_NUMBER.fullmatch(n):
        return None
    try:
        return Decimal(n)
    except InvalidOperation:
        return None


def numbers_in(text: str) -> set[Decimal]:
    """Values of the plain numbers in a text (dotted versions such as 14.0.1 are not numbers)."""
    out: set[Decimal] = set()
    for m in _NUMBER_TOKEN.finditer(norm(text)):
        token = m.group(0)
        if token.count(".") <= 1:
            out.add(Decimal(token))
    return out


def find(haystack: str, needle: str) -> bool:
    """Whether `needle` occurs in `haystack` on token boundaries (numbers by value); empty never does."""
    value = number_value(needle)
    if value is not None:
        return value in numbers_in(haystack)
    n = norm(needle)
    if not n:
        return False
    hay = norm(haystack)
    start = hay.find(n)
    while start >= 0:
        if _at_boundary(hay, start, start + len(n)):
            return True
        start = hay.find(n, start + 1)
    return False


def contains(haystack: str, needle: str) -> bool:
    """Alias of `find`: the shared matcher (kept for readability at call sites that test containment)."""
    return find(haystack, needle)


def clip(text: str, limit: int = 120) -> str:
    """A one-line excerpt for check details."""
    flat = _SPACE.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
