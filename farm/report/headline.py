"""The headline every output shows — planned, skipped, attempted, errors, passed, pass rate (Wilson) — and the
verdict rules behind it, in SQL (reports) and in Python (the summary after `farm run`), kept side by side.

planned = units selected; skipped = units not attempted (reasons listed apart); attempted = planned − skipped,
infrastructure errors included (they stay in the denominator); passed = attempts whose verdict is pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from farm import manifest as mf
from farm.report.model import RateRow, ReportData
from farm.results.record import Record
from farm.results.stats import wilson

HEADLINE_FILE = "headline.json"
"""A run's headline as its current report shows it, beside `report.md`: what `farm view` and `farm history`
read, so no surface counts a run its own way."""
HOLDOUT_SPLITS = frozenset({"holdout", "all"})
"""Android lane splits that plan holdout units."""

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


def rate_row(key: str, planned: int, attempted: int, passed: int, errors: int, unfinished: int = 0) -> RateRow:
    """A RateRow with its Wilson 95 % interval (skipped = planned − attempted − unfinished)."""
    r = wilson(passed, attempted)
    return RateRow(
        key=key, planned=planned, skipped=planned - attempted - unfinished, attempted=attempted, passed=passed,
        errors=errors, unfinished=unfinished, rate=r.rate, low=r.low, high=r.high,
    )


def holdout_counted(run_dirs: Sequence[Path]) -> bool:
    """The one holdout policy: a run's holdout units count where the run planned them (`--split holdout|all`);
    a tune run has none to count. Surfaces that hide them say so beside the number."""
    for run_dir in run_dirs:
        if not mf.manifest_path(run_dir).is_file():
            continue
        for lane in mf.load(run_dir).lanes:
            if lane.lane == "android" and lane.detail.get("split") in HOLDOUT_SPLITS:
                return True
    return False


def planned_units(run_dir: Path, *, include_holdout: bool) -> int | None:
    """Units the android lane planned (its skips included), holdout ones only when counted; None when the lane
    did not say (a pulled run, another lane's run)."""
    if not mf.manifest_path(run_dir).is_file():
        return None
    for lane in mf.load(run_dir).lanes:
        plan = lane.detail.get("planned_units") if lane.lane == "android" else None
        if isinstance(plan, dict):
            counted = (n for part, n in plan.items() if include_holdout or part != "holdout")
            return sum(n for n in counted if isinstance(n, int))
    return None


class RunHeadline(BaseModel):
    """`headline.json`: one run's headline as its current report shows it."""

    model_config = ConfigDict(extra="forbid")

    format: Literal[1] = 1
    """Version of this file."""
    run: str
    """Run id."""
    generated_at: str
    """When the report was written (ISO-8601 UTC)."""
    holdout: Literal["counted", "hidden"]
    """Whether holdout units are in the numbers; hidden ones are counted apart."""
    hidden_holdout_units: int
    """Holdout units left out of the numbers (0 when counted)."""
    overall: RateRow
    """planned (every planned unit) · unfinished · skipped · attempted · errors · passed · rate (Wilson 95 %)."""
    text: str
    """The headline in words, as every report writes it."""


def run_headline(data: ReportData, run: str) -> RunHeadline:
    """The headline of a run's report, for `headline.json`."""
    return RunHeadline(
        run=run, generated_at=data.generated_at, holdout="counted" if data.include_holdout else "hidden",
        hidden_holdout_units=data.hidden_holdout_attempts, overall=data.overall,
        text=headline_text(data.overall, hidden_holdout=0 if data.include_holdout else data.hidden_holdout_attempts),
    )


def read_headline(run_dir: Path) -> RunHeadline | None:
    """The headline its current report wrote, or None (no report yet, or an unreadable file)."""
    try:
        return RunHeadline.model_validate_json((run_dir / HEADLINE_FILE).read_bytes())
    except (OSError, ValueError):
        return None


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


def headline_text(row: RateRow, *, hidden_holdout: int = 0) -> str:
    """`planned N · unfinished U · skipped S · attempted A · errors E · passed P (rate, 95% CI lo–hi)`, every
    number labelled (unfinished only when some are; `holdout hidden (H units)` when some were left out)."""
    unfinished = f" · unfinished {row.unfinished}" if row.unfinished else ""
    counts = (f"planned {row.planned}{unfinished} · skipped {row.skipped} · attempted {row.attempted}"
              f" · errors {row.errors}")
    hidden = f" · holdout hidden ({hidden_holdout} units)" if hidden_holdout else ""
    if row.rate is None:
        return f"{counts} · passed {row.passed} (nothing attempted){hidden}"
    return f"{counts} · passed {row.passed} ({_pct(row.rate)}, 95% CI {_pct(row.low)}–{_pct(row.high)}){hidden}"


def disagreement_text(records: Iterable[Record]) -> str:
    """` · the phone said passed on N the host failed…` for the units whose phone verdict differs; "" when none."""
    units = [r for r in latest_attempts(records) if r.device_verdict is not None]
    differ = [r for r in units if r.device_verdict is not None and r.device_verdict.passed != r.passed]
    if not differ:
        return ""
    claimed = sum(1 for r in differ if r.device_verdict is not None and r.device_verdict.passed)
    return f" · phone and host disagree on {len(differ)} (phone said passed on {claimed})"
