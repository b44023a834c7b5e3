"""Old flag spellings kept working, out of sight: each command shows one name per concept.

An alias is its own hidden option (typer would list a second name beside the first in `--help`); the
command folds it into the primary flag here and names, in any message, the spelling the user typed.
"""

from __future__ import annotations

from typing import TypeVar

from farm.errors import FarmError

T = TypeVar("T")


def either(primary: T | None, alias: T | None, name: str, alias_name: str) -> tuple[T | None, str]:
    """The value given under `name` or its old spelling `alias_name`, and the spelling used; both given is a
    one-line FarmError."""
    if alias is None:
        return primary, name
    if primary is not None and primary != alias:
        raise FarmError(f"{name} and {alias_name} both given", hint=f"{alias_name} is the old name of {name}: pass one")
    return alias, alias_name
