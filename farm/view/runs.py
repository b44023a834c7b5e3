"""The list of runs under a runs directory: label, date, pass rate, phones, code fingerprint, newest first.

Read through the project's loaders (the manifest's `load`, the record store, the headline), so the viewer
counts exactly as the reports do. A run that cannot be read is listed with the reason, never left out and
never allowed to break the list.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from farm import manifest as mf
from farm.errors import FarmError
from farm.report.headline import headline, headline_text, read_headline
from farm.report.model import RateRow
from farm.results.record import Record
from farm.results.store import RECORDS_FILE
from farm.view.files import REPORT_NAME, Refused, exists, run_dir_of
from farm.view.phones import PhoneRef, phone_ref, run_phones
from farm.view.units import cached_units

RunState = Literal["ok", "damaged", "unreadable"]


class RunSummary(BaseModel):
    """One row of the run list."""

    model_config = ConfigDict(extra="forbid")

    run: str
    """The run directory's name (its id)."""
    state: RunState
    """ok; damaged (read, but some lines were skipped); unreadable (no valid manifest or records)."""
    label: str | None = None
    """The run's `--label`."""
    created_at: str | None = None
    """ISO-8601 UTC creation time from the manifest; for an unreadable run, the directory's modification time."""
    status: str | None = None
    """Manifest status (running, finished, failed, interrupted)."""
    lanes: list[str] = Field(default_factory=list)
    """Lanes the run has."""
    phones: list[PhoneRef] = Field(default_factory=list)
    """Phones the run used, by their stable names (`farm.phone_name`) with serial and adb server; for a run whose
    manifest lists none, the devices its records name."""
    fingerprint: str | None = None
    """Short git commit, `+diff` when there were uncommitted changes, else the package version."""
    headline: RateRow | None = None
    """Planned, attempted, passed, errors and rate with its interval (latest attempt per unit, verdicts before
    human re-judgement), when records were read."""
    headline_text: str = ""
    """The headline in words, as the reports write it."""
    has_report: bool = False
    """Whether report.html exists at the run's top level."""
    problems: list[str] = Field(default_factory=list)
    """Why the run is damaged or unreadable, one line each."""


def _iso_mtime(path: Path) -> str | None:
    try:
        return dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except OSError:
        return None


def _phones(manifest: mf.Manifest | None, records: list[Record]) -> list[PhoneRef]:
    """The phones the manifest says the run used, else every device of its records; by name."""
    phones = run_phones(manifest, records)
    used = [p.serial for p in manifest.phones if p.status == "used"] if manifest is not None else []
    devices = used or sorted({r.device for r in records})
    return sorted((phone_ref(d, phones) for d in dict.fromkeys(devices)), key=lambda p: (p.phone, p.device))


def _fingerprint(code: mf.CodeFingerprint) -> str:
    if code.git_commit is None:
        return f"v{code.package_version}"
    return code.git_commit[:12] + ("+diff" if code.diff_sha256 else "")


def summarise(runs_dir: Path, run: str) -> RunSummary:
    """The list row of one run directory; never raises for what is inside it."""
    summary = RunSummary(run=run, state="ok")
    try:
        run_dir = run_dir_of(runs_dir, run)
    except (Refused, OSError) as exc:
        summary.state = "unreadable"
        summary.problems.append(str(exc) if isinstance(exc, Refused) else f"{run}: not a directory")
        return summary
    summary.has_report = exists(run_dir / REPORT_NAME, file=True)
    manifest: mf.Manifest | None = None
    try:
        manifest = mf.load(run_dir)
    except FarmError as exc:
        summary.state = "unreadable"
        summary.problems.append(exc.line())
        summary.created_at = _iso_mtime(run_dir)
    except OSError as exc:
        summary.state = "unreadable"
        summary.problems.append(f"{mf.manifest_path(run_dir)}: cannot be read ({exc.strerror})")
        summary.created_at = _iso_mtime(run_dir)
    else:
        summary.label, summary.created_at, summary.status = manifest.label, manifest.created_at, manifest.status
        summary.lanes = [lane.lane for lane in manifest.lanes]
        summary.fingerprint = _fingerprint(manifest.code)
    records: list[Record] = []
    if exists(run_dir / RECORDS_FILE):
        units = cached_units(run_dir)
        records = [u.record for u in units.units]
        if units.problems:
            summary.problems.extend(units.problems)
            if summary.state == "ok":
                summary.state = "damaged" if records else "unreadable"
        # The headline the run's current report shows; a run with no report yet is counted the same way.
        written = read_headline(run_dir)
        summary.headline = written.overall if written is not None else headline(records)
        summary.headline_text = written.text if written is not None else headline_text(summary.headline)
    else:
        summary.headline_text = "no records yet"
    summary.phones = _phones(manifest, records)
    return summary


def is_run_dir(path: Path) -> bool:
    """A directory holding a manifest or records (as `farm report` and `farm query` see runs)."""
    try:
        return path.is_dir() and (exists(mf.manifest_path(path)) or exists(path / RECORDS_FILE))
    except OSError:
        return False


def list_runs(runs_dir: Path) -> list[RunSummary]:
    """Every run directly under `runs_dir`, newest first (by creation time; unreadable ones by modification)."""
    try:
        names = sorted(p.name for p in runs_dir.iterdir() if is_run_dir(p))
    except OSError:
        return []
    rows = [summarise(runs_dir, name) for name in names]
    return sorted(rows, key=lambda r: (r.created_at or "", r.run), reverse=True)
