"""The headline every output shows — planned, skipped, attempted, errors, passed, pass rate (Wilson) — and the
verdict rules behind it, in SQL (reports) and in Python (the summary after `farm run`), kept side by side.

planned = units selected; skipped = units not attempted (reasons listed apart); attempted = planned − skipped,
infrastructure errors included (they stay in the denominator); passed = attempts whose verdict is pass.
"""

from __future__ import annotations

from collections.abc import Iterable

from farm.report.model import RateRow
from farm.results.record import Record
from farm.results.stats import wilson

LOGIN_SQL = "coalesce(outcome = 'takeover' AND takeover_kind = 'login' AND coalesce(expect, '') <> 'takeover', false)"
"""A read task handed over at a login wall (交给用户:login): shown apart, never a success."""
# NULLs count as false, so every attempt is exactly one of passed / not passed in every output.
INITIAL_SQL = f"(coalesce(passed AND outcome NOT IN ('error', 'skipped'), false) AND NOT {LOGIN_SQL})"
"""The verdict before human re-judgement: an error or a skip never passes."""


def login_handover(record: Record) -> bool:
    """`LOGIN_SQL` for one record."""
    return record.outcome == "takeover" and record.takeover_kind == "login" and (record.expect or "") != "takeover"


def initial_passed(record: Record) -> bool:
    """`INITIAL_SQL` for one record."""
    return record.passed and record.outcome not in ("error", "skipped") and not login_handover(record)


def latest_attempts(records: Iterable[Record]) -> list[Record]:
    """One record per unit: its highest attempt; an attempt written twice counts once (the later line wins)."""
    latest: dict[tuple[str, str, str, str, str, int], Record] = {}
    for record in records:
        key = record.unit_key()
        seen = latest.get(key)
        if seen is None or record.attempt >= seen.attempt:
            latest[key] = record
    return list(latest.values())


def rate_row(key: str, planned: int, attempted: int, passed: int, errors: int) -> RateRow:
    """A RateRow with its Wilson 95 % interval (skipped = planned − attempted)."""
    r = wilson(passed, attempted)
    return RateRow(
        key=key, planned=planned, skipped=planned - attempted, attempted=attempted, passed=passed, errors=errors,
        rate=r.rate, low=r.low, high=r.high,
    )


def headline(records: Iterable[Record], key: str = "all") -> RateRow:
    """The headline of a set of records (e.g. one phone's after a run), counted as the reports count it:
    latest attempt per unit, verdicts before re-judgement."""
    units = latest_attempts(records)
    attempted = [r for r in units if r.outcome != "skipped"]
    return rate_row(
        key, len(units), len(attempted), sum(initial_passed(r) for r in attempted),
        sum(r.outcome == "error" for r in attempted),
    )


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


def headline_text(row: RateRow) -> str:
    """`planned N · skipped S · attempted A · errors E · passed P (rate, 95% CI lo–hi)`, every number labelled."""
    counts = f"planned {row.planned} · skipped {row.skipped} · attempted {row.attempted} · errors {row.errors}"
    if row.rate is None:
        return f"{counts} · passed {row.passed} (nothing attempted)"
    return f"{counts} · passed {row.passed} ({_pct(row.rate)}, 95% CI {_pct(row.low)}–{_pct(row.high)})"


def disagreement_text(records: Iterable[Record]) -> str:
    """` · the phone said passed on N the host failed…` for the units whose phone verdict differs; "" when none."""
    units = [r for r in latest_attempts(records) if r.device_verdict is not None]
    differ = [r for r in units if r.device_verdict is not None and r.device_verdict.passed != r.passed]
    if not differ:
        return ""
    claimed = sum(1 for r in differ if r.device_verdict is not None and r.device_verdict.passed)
    return f" · phone and host disagree on {len(differ)} (phone said passed on {claimed})"
