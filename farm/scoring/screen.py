"""screen_has: the harness's own fresh look at an app after the attempt, not the agent's word.

Only the visible text of the look counts (text and content-desc), never ids, classes or flags.
"""

from __future__ import annotations

from collections.abc import Sequence

from farm.results.record import CheckResult
from farm.scoring.evidence import FreshLook
from farm.scoring.text import contains
from farm.scoring.visible import screen_text


def screen_has(looks: Sequence[FreshLook], needle: str, package: str | None = None) -> CheckResult:
    """Pass when `needle` is in a fresh look at `package` (any look when the package is not given)."""
    if not needle:
        return CheckResult(type="screen_has", passed=False, detail="check names no text or marker")
    relevant = [look for look in looks if package is None or look.package == package]
    if not relevant:
        where = package or "any app"
        return CheckResult(type="screen_has", passed=False, detail=f"the harness did not look at {where}")
    for look in relevant:
        if contains(screen_text(look.text), needle):
            return CheckResult(type="screen_has", passed=True, detail=f"{needle!r} shown by {look.package}")
    errors = "; ".join(f"{look.package}: {look.error}" for look in relevant if look.error)
    detail = f"{needle!r} not shown by {', '.join(sorted({look.package for look in relevant}))}"
    return CheckResult(type="screen_has", passed=False, detail=f"{detail} ({errors})" if errors else detail)
