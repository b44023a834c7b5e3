"""Names that become one path component: run ids and labels.

A run id names `runs/<id>/` and, on the phone, `eval/<id>…/`; a name such as `../x` or `/tmp/x`
would put a run (and the phone's eval tree) outside the runs directory. A run directory is also copied
elsewhere (a Windows share, a zip, an artifact store), so a name must be one every file system keeps:
no Windows device name (`CON`, `nul.txt`), no trailing dot (Windows drops it), at most 100 characters
(room for the files under it within common path limits). Every such name from the outside is checked
here, once, by `name_problem`.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

from farm.errors import FarmError

MAX_NAME = 100
"""Longest name accepted (characters)."""

SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
"""Letters, digits, `.`, `_` and `-`, starting with a letter or digit (the length is `MAX_NAME`)."""

WINDOWS_DEVICES = frozenset(
    ["CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(10)), *(f"LPT{i}" for i in range(10))]
)
"""Names Windows opens as devices whatever follows the first dot (`nul.tar.gz` is `NUL`), in any case.
`COM0` and `LPT0` are in: some Windows versions and tools reserve them too, and no run needs those names."""

SAFE_NAME_HINT = (
    f"use letters, digits, '.', '_' and '-' (at most {MAX_NAME}, starting with a letter or digit, not ending "
    "with '.'), and not a Windows device name (CON, PRN, AUX, NUL, COM0-9, LPT0-9, also as con.txt)"
)


def name_problem(value: str) -> str | None:
    """Why `value` cannot be one path component everywhere it is used; None when it can."""
    if len(value) > MAX_NAME:
        return f"{len(value)} characters, more than {MAX_NAME}"
    if SAFE_NAME.fullmatch(value) is None:
        return "a character outside letters, digits, '.', '_' and '-', or not starting with a letter or digit"
    if ".." in value:
        return "holds '..'"
    if value.endswith("."):
        # Windows strips trailing dots: `run.` and `run` would be one directory there.
        return "ends with '.'"
    device = value.split(".", 1)[0].upper()
    if device in WINDOWS_DEVICES:
        return f"{device} is a Windows device name"
    return None


def is_safe_name(value: str) -> bool:
    """Whether `value` can be one path component everywhere it is used (see `name_problem`)."""
    return name_problem(value) is None


def _shown(value: str) -> str:
    # The error line stays one readable line however long the name given was.
    return repr(value) if len(value) <= MAX_NAME + 20 else f"{value[:MAX_NAME]!r}…"


def check_name(value: str, what: str) -> str:
    """`value` if it is a safe name; else a one-line FarmError naming `what` (a flag or field) and the reason."""
    problem = name_problem(value)
    if problem is not None:
        raise FarmError(f"{what} {_shown(value)}: not a safe name ({problem})", hint=SAFE_NAME_HINT)
    return value


def _validate(value: str) -> str:
    problem = name_problem(value)
    if problem is not None:
        raise ValueError(f"{_shown(value)} is not a safe name ({problem}): {SAFE_NAME_HINT}")
    return value


SafeName = Annotated[str, AfterValidator(_validate)]
"""A pydantic field type for names that become a path component."""
