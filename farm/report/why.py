"""Why a unit did not pass, in words: computed here once, from a record or from a report row's columns, and
rendered by every output — report.md/html rows, the JUnit failure message and body, scores.csv's
`failing_checks` column and `farm view`'s unit pages.

The why of a unit is every check that did not pass (a failed check as `type: detail`, an unjudged one — no
verdict — as `type (unjudged): detail`), then the record's reasons that no check already says (`expected
succeeded, got failed`, `ran out of steps: …`). Every item is one line (whitespace collapsed) and bounded; each
renderer escapes it for its format.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

    from farm.results.record import Record

ITEM_CHARS = 300
"""Longest text of one item (a check or a reason); longer ones are cut and end in `…`."""
MESSAGE_CHARS = 160
"""Longest one-line message (the JUnit failure `message=`, a table cell's first item)."""
BODY_ITEMS = 50
"""Most items in a full account (the JUnit failure body); more are counted, not listed."""
UNJUDGED = "unjudged"
"""How a check without a verdict (`passed: null`) is named."""


def one_line(text: object) -> str:
    """`text` on one line: every run of whitespace (newlines, tabs) one space; None is empty."""
    return " ".join(str(text).split()) if text is not None else ""


def clip(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, ending in `…` when cut."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"


def _member(check: object, name: str) -> object:
    return check.get(name) if isinstance(check, Mapping) else getattr(check, name, None)


def check_text(check: object) -> str:
    """One check that did not pass, as words: `type: detail`, or `type (unjudged): detail` without a verdict."""
    kind = one_line(_member(check, "type")) or "check"
    if _member(check, "passed") is None:
        kind += f" ({UNJUDGED})"
    detail = one_line(_member(check, "detail"))
    return clip(f"{kind}: {detail}" if detail else kind, ITEM_CHARS)


def _said(check: object) -> set[str]:
    """The ways a scorer words this check as a reason (so the reason is not said twice)."""
    kind, detail = one_line(_member(check, "type")), one_line(_member(check, "detail"))
    return {f"{kind}: {detail}", f"{kind} reached no verdict: {detail}", check_text(check)}


@dataclass(frozen=True)
class Why:
    """Why one unit did not pass."""

    checks: tuple[str, ...] = ()
    """Every check that did not pass (failed or unjudged), in the task's order."""
    reasons: tuple[str, ...] = ()
    """The record's reasons no check already says, in order."""

    @property
    def items(self) -> tuple[str, ...]:
        """The checks, then the reasons."""
        return self.checks + self.reasons

    @property
    def message(self) -> str:
        """Short: the first failing check, else the first reason (empty when there is neither)."""
        return clip(self.items[0], MESSAGE_CHARS) if self.items else ""

    @property
    def body(self) -> str:
        """In full: every failing check, then the reasons, one a line (at most BODY_ITEMS, then how many more)."""
        items = list(self.items[:BODY_ITEMS])
        if len(self.items) > BODY_ITEMS:
            items.append(f"… {len(self.items) - BODY_ITEMS} more")
        return "\n".join(items)

    @property
    def cell(self) -> str:
        """The failing checks on one line, `; ` between them (scores.csv's `failing_checks`)."""
        return "; ".join(self.checks)

    def text(self, limit: int = ITEM_CHARS) -> str:
        """Everything on one line, `; ` between the items, at most `limit` characters."""
        return clip("; ".join(self.items), limit)


def why(checks: Iterable[object] | str | None, reasons: Iterable[object] | None) -> Why:
    """The why of a unit from its checks (every check, or only those that did not pass: `CheckResult`s, dicts, or
    the report's `failing_checks` column, JSON text) and its reasons. A check that passed is left out; one whose
    verdict is null is unjudged, never a failure nor a pass."""
    if isinstance(checks, str):
        checks = _json_list(checks)
    failing = [c for c in checks or () if _member(c, "passed") is not True]
    said = set().union(*(_said(c) for c in failing)) if failing else set()
    kept: list[str] = []
    for reason in reasons or ():
        text = one_line(reason)
        if text and text not in said and clip(text, ITEM_CHARS) not in kept:
            kept.append(clip(text, ITEM_CHARS))
    return Why(checks=tuple(check_text(c) for c in failing), reasons=tuple(kept))


def _json_list(text: str) -> list[object]:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return [{"type": "checks", "passed": None, "detail": "not readable"}]
    return value if isinstance(value, list) else []


def record_why(record: Record) -> Why:
    """`why` of a record."""
    return why(record.checks, record.reasons)


WHY_SQL_TYPE = "STRUCT(message VARCHAR, body VARCHAR, checks VARCHAR)"
"""What the `why_cells(failing_checks, reasons)` SQL function returns."""


def _cells(checks: str | None, reasons: Sequence[object] | None) -> dict[str, str]:
    w = why(checks, reasons)
    return {"message": w.message, "body": w.body, "checks": w.cell}


# Characters Python's `str.split()` never splits on (no whitespace, no control): a reason made of these and single
# spaces is already one line, as `one_line` leaves it. Conservative: whole blocks holding a space are left out.
_SOLID = r"!-~\x{a1}-\x{167f}\x{1681}-\x{1fff}\x{2030}-\x{205e}\x{2070}-\x{2fff}\x{3001}-\x{d7ff}\x{e000}-\x{10ffff}"
_PLAIN = f"^[{_SOLID}]+( [{_SOLID}]+)*$"


def why_sql(checks: str, reasons: str) -> str:
    """SQL for `why_cells(checks, reasons)` (register it first with `register_sql`) that asks Python only when it
    must: a unit with no failing check and one short reason already on one line is that reason, as `why` has it
    (tests/report/test_why.py checks the two agree), so a million such units cost no Python call."""
    first = f"{reasons}[1]"
    return (f"CASE WHEN coalesce(json_array_length({checks}), 0) = 0 AND len(coalesce({reasons}, [])) <= 1"
            f" AND (len(coalesce({reasons}, [])) = 0 OR (length({first}) <= {MESSAGE_CHARS}"
            f" AND regexp_matches({first}, '{_PLAIN}')))"
            f" THEN {{'message': coalesce({first}, ''), 'body': coalesce({first}, ''), 'checks': ''}}"
            f"::{WHY_SQL_TYPE} ELSE why_cells({checks}, {reasons}) END")


def register_sql(con: duckdb.DuckDBPyConnection) -> None:
    """Define `why_cells(failing_checks, reasons)` on `con`: `why` as a SQL function (message, body, checks), so
    the files DuckDB writes itself (junit.xml, scores.csv) say the same as the rest. Call it only on rows that
    did not pass: each call is a Python call."""
    import duckdb
    from duckdb.func import SPECIAL

    from farm.results.columns import report_type

    try:
        # SPECIAL: NULL arguments (no checks, no reasons) reach the function as None instead of making it NULL.
        con.create_function("why_cells", _cells, [report_type("failing_checks"), report_type("reasons")],
                            WHY_SQL_TYPE, null_handling=SPECIAL, side_effects=False)
    except duckdb.NotImplementedException:
        pass  # already defined on this connection (DuckDB cannot define one name twice)
