"""The task set's directory layout: its directories, their minimums, category/expect and holdout tolerance.

Holdout tolerance: a directory of n tasks has h holdout tasks with
`max(1, floor(0.2 n)) <= h <= max(1, ceil(0.4 n))` — about 30 %, at least one. In `skills/` and
`memory/` the unit is a pair or a session (they move between pools whole), not a task.
"""

from __future__ import annotations

import math

from farm.taskset.loader import SPECIAL_SETS

MINIMUMS: dict[str, int] = {
    "read/system": 10,
    "read/content": 15,
    "read/shopping": 10,
    "write": 10,
    "irreversible": 8,
    "impossible": 5,
    "barrier": 2,
    "web": 10,
}
"""Minimum number of tasks per directory (seed 003)."""
DIRECTORY_KIND: dict[str, tuple[str, str]] = {
    "read/system": ("read", "succeeded"),
    "read/content": ("read", "succeeded"),
    "read/shopping": ("read", "succeeded"),
    "write": ("write", "succeeded"),
    "irreversible": ("irreversible", "confirmation"),
    "impossible": ("impossible", "failed"),
    "barrier": ("barrier", "takeover"),
}
"""Category and expected outcome of every task in a directory (`web` and special sets vary)."""
HOLDOUT_LOW, HOLDOUT_HIGH = 0.2, 0.4


def holdout_bounds(count: int) -> tuple[int, int]:
    """Allowed number of holdout tasks in a directory of `count` tasks."""
    return max(1, math.floor(HOLDOUT_LOW * count)), max(1, math.ceil(HOLDOUT_HIGH * count))


def group_of(directory: str) -> str | None:
    """The rule directory a task directory belongs to (`read/system`, `skills`…), or None."""
    for key in sorted((*MINIMUMS, *SPECIAL_SETS), key=len, reverse=True):
        if directory == key or directory.startswith(key + "/"):
            return key
    return None
