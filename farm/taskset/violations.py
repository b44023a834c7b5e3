"""One broken task-set rule (`Violation`) and the log the rule checks append them to."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Violation:
    """One broken rule: where, which field, what rule, how to fix it."""

    path: str
    field: str
    code: str
    """Stable rule id (`id-file`, `holdout-share`…)."""
    rule: str
    fix: str

    def line(self) -> str:
        """`path: field: rule — fix`."""
        return f"{self.path}: {self.field}: {self.rule} — {self.fix}"


class ViolationLog:
    """Violations in the order the checks found them: the order `farm tasks check` prints."""

    def __init__(self) -> None:
        self.out: list[Violation] = []

    def add(self, path: Path | str, fld: str, code: str, rule: str, fix: str) -> None:
        """Record one violation at `path`, field `fld`."""
        self.out.append(Violation(str(path), fld, code, rule, fix))
