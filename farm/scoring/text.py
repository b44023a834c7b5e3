"""Text normalisation shared by the checks: compare what a person would call the same text."""

from __future__ import annotations

import re
import unicodedata

_SPACE = re.compile(r"\s+")
# A thousands separator between digit groups ("56,088" → "56088"); NFKC has already mapped "，".
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")


def norm(text: str) -> str:
    """NFKC, case-folded, whitespace collapsed, thousands separators dropped."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _THOUSANDS.sub("", _SPACE.sub(" ", folded)).strip()


def contains(haystack: str, needle: str) -> bool:
    """Whether `needle` occurs in `haystack` after normalising both (an empty needle never does)."""
    n = norm(needle)
    return bool(n) and n in norm(haystack)


def clip(text: str, limit: int = 120) -> str:
    """A one-line excerpt for check details."""
    flat = _SPACE.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
