"""In-memory nights for `build_history` tests: no run directory, no DuckDB, six phones of one model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from farm.manifest import Manifest, PhoneEntry
from farm.report.history_data import History, Night, build_history
from tests.helpers.nights import Verdict, night_records

SIX: tuple[tuple[str, str], ...] = tuple((f"S{i}", "Pixel 8") for i in range(1, 7))
"""Six phones of one model (serials S1…S6; their names `Pixel 8 · S1`…)."""


def name(serial: str) -> str:
    """The stable name of one of SIX."""
    return f"Pixel 8 · {serial}"


def on_phones(task: str, verdicts: Sequence[Verdict | Sequence[Verdict]],
              phones: Sequence[tuple[str, str]] = SIX) -> dict[tuple[str, str], Verdict | Sequence[Verdict]]:
    """`task`'s verdicts on the first len(verdicts) phones, in order (a sequence: one verdict per repeat)."""
    return {(task, serial): v for (serial, _model), v in zip(phones, verdicts, strict=False)}


def passes(task: str, n: int, of: int = 6) -> dict[tuple[str, str], Verdict | Sequence[Verdict]]:
    """`task` passed on the first `n` of `of` phones and failed on the rest."""
    return on_phones(task, [i < n for i in range(of)])


def mem_night(
    run_id: str, verdicts: Mapping[tuple[str, str], Verdict | Sequence[Verdict]], *, day: int = 1,
    phones: Sequence[tuple[str, str]] = SIX, run_dir: Path | None = None, has_report: bool = False, **kw: Any,
) -> Night:
    """One night in memory (`night_records` of `verdicts`; kw passes through to the records)."""
    manifest = Manifest(run_id=run_id, created_at=f"2026-12-{day:02d}T03:00:00.000000Z", status="finished",
                        label="nightly", phones=[PhoneEntry(serial=s, model=m) for s, m in phones])
    return Night(manifest, night_records(run_id, verdicts, **kw), run_dir=run_dir, has_report=has_report)


def history(*nights: Mapping[tuple[str, str], Verdict | Sequence[Verdict]], flaky_nights: int = 5) -> History:
    """`build_history` over nights n1, n2… (oldest first) of these verdicts."""
    return build_history([mem_night(f"n{i}", v, day=i) for i, v in enumerate(nights, start=1)],
                         label="nightly", flaky_nights=flaky_nights)
