"""Damaged lines of a records.jsonl — a torn last append, a corrupt line: found, located, worded.

The JSON reader reads such a line as a row of NULLs (see `duck._json_source`); those rows are counted
here, mapped back to line numbers, and reported instead of being silently dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    import duckdb

DAMAGE_CAP = 100
"""Line numbers of damaged lines kept per file; the count is always complete."""


class Damage(BaseModel):
    """Lines of a records.jsonl that hold no readable record: every reader skips them, and reports them."""

    model_config = ConfigDict(extra="forbid")

    total: int = 0
    """Damaged lines (not a JSON object, or no run)."""
    lines: list[int] = []
    """1-based line numbers of the first DAMAGE_CAP of them (fewer when a line could not be located)."""
    torn_last_line: bool = False
    """The file's last line is damaged and has no newline: an append cut short by a crash."""


# `seq` numbers the rows read, in file order (blank lines yield none); damaged lines read as NULL runs.
_DAMAGE_SQL = "SELECT count(*), list(seq ORDER BY seq)[1:{cap}] FROM {t} WHERE run IS NULL"


def find_damage(con: duckdb.DuckDBPyConnection, relation: str, path: Path) -> Damage:
    """The damaged rows of `relation` (a table or subquery with `run` and `seq`), located in `path`."""
    row = con.execute(_DAMAGE_SQL.format(t=relation, cap=DAMAGE_CAP)).fetchone()
    total = int(row[0]) if row else 0
    return locate(path, row[1] or [], total) if row and total else Damage()


def locate(path: Path, ordinals: Sequence[int], total: int) -> Damage:
    """Line numbers of the damaged rows (`seq` counts non-blank lines, as the JSON reader does)."""
    wanted = set(ordinals)
    lines: list[int] = []
    ordinal = 0
    last_number, last_has_newline = 0, True
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            last_number, last_has_newline = number, raw.endswith(b"\n")
            if not raw.strip():
                continue
            ordinal += 1
            if ordinal in wanted:
                lines.append(number)
    torn = bool(lines) and lines[-1] == last_number and not last_has_newline
    return Damage(total=total, lines=lines, torn_last_line=torn)


def damage_text(path: Path, damage: Damage) -> list[str]:
    """One warning per damaged line (`file:line: …`), and one for those not listed."""
    out = []
    for number in damage.lines:
        torn = damage.torn_last_line and number == damage.lines[-1]
        what = "torn last line (an append cut short, no newline at the end)" if torn else "corrupt record line"
        out.append(f"{path}:{number}: {what} skipped")
    if damage.total > len(damage.lines):
        out.append(f"{path}: {damage.total - len(damage.lines)} more damaged lines skipped")
    return out
