"""Builders for labelled runs ("nights") for `farm history` tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from farm import manifest
from farm.results.record import Record
from tests.helpers.records import record, write_run

PHONES: tuple[tuple[str, str], ...] = (("P1", "Pixel 8"), ("P2", "Pixel 8"), ("G1", "Galaxy S24"))
"""Two phones of one model and one of another."""

Verdict = bool | str
"""True (passed), False (failed), or an outcome such as "skipped" or "error"."""


def night_records(run: str, verdicts: Mapping[tuple[str, str], Verdict | Sequence[Verdict]], **kw: Any) -> list[Record]:
    """Records of one night: (task, serial) → a verdict, or one verdict per repeat (repeat 1, 2…)."""
    out: list[Record] = []
    for (task, serial), given in verdicts.items():
        repeats = list(given) if isinstance(given, list | tuple) else [cast(Verdict, given)]
        for i, verdict in enumerate(repeats, start=1):
            if isinstance(verdict, bool):
                out.append(record(task, run=run, device=serial, passed=verdict, repeat=i, **kw))
            else:
                out.append(record(task, run=run, device=serial, passed=False, outcome=verdict, repeat=i,
                                  reasons=[f"{verdict} on {serial}"], **kw))
    return out


def write_night(
    runs: Path,
    run_id: str,
    records: list[Record],
    *,
    day: int,
    label: str | None = "nightly",
    status: str = "finished",
    phones: Sequence[tuple[str, str]] = PHONES,
    left_out: Mapping[str, str] | None = None,
) -> Path:
    """A run directory (`write_run`) whose manifest has a label, a status, a creation time on day `day` of
    December 2026, and the phones `left_out` (serial → reason) marked as left out by the health gate."""
    run_dir: Path = write_run(runs, run_id, records, list(phones))

    def change(m: manifest.Manifest) -> None:
        m.label = label
        m.status = status  # type: ignore[assignment]
        m.created_at = f"2026-12-{day:02d}T03:00:00.000000Z"
        for phone in m.phones:
            if left_out and phone.serial in left_out:
                phone.status, phone.reason = "left_out", left_out[phone.serial]

    manifest.update(run_dir, change)
    return run_dir
