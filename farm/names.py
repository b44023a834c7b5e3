"""Names that become one path component: run ids and labels.

A run id names `runs/<id>/` and, on the phone, `eval/<id>…/`; a name such as `../x` or `/tmp/x`
would put a run (and the phone's eval tree) outside the runs directory. Every such name from the
outside is checked here, once, against one pattern.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

from farm.errors import FarmError

SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
"""Letters, digits, `.`, `_` and `-`; starting with a letter or digit; at most 128 characters."""

SAFE_NAME_HINT = "use letters, digits, '.', '_' and '-' (at most 128, starting with a letter or digit)"


def is_safe_name(value: str) -> bool:
    """Whether `value` can be one path component everywhere it is used (no separator, no `..`)."""
    return SAFE_NAME.fullmatch(value) is not None and ".." not in value


def check_name(value: str, what: str) -> str:
    """`value` if it is a safe name; else a one-line FarmError naming `what` (a flag or field)."""
    if not is_safe_name(value):
        raise FarmError(f"{what} {value!r}: not a safe name", hint=SAFE_NAME_HINT)
    return value


def _validate(value: str) -> str:
    if not is_safe_name(value):
        raise ValueError(f"{value!r} is not a safe name: {SAFE_NAME_HINT}")
    return value


SafeName = Annotated[str, AfterValidator(_validate)]
"""A pydantic field type for names that become a path component."""
