"""The list of runs under a runs directory: label, date, lanes and what they measured (executor, policy, model,
split), pass rate, phones, status, code fingerprint, newest first.

Read through the project's loaders (the manifest's `load`, the record store, the headline), so the viewer
counts exactly as the reports do. A run that cannot be read is listed with the reason, never left out and
never allowed to break the list.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from farm import manifest as mf
from farm.errors import FarmError
from farm.phone_name import PhoneId
from farm.report.headline import HEADLINE_FILE, headline, headline_text, read_headline
from farm.report.model import RateRow
from farm.report.run_setup import lane_setup
from farm.results.store import RECORDS_FILE
from farm.view.files import REPORT_NAME, Refused, exists, run_dir_of
from farm.view.phones import PhoneRef, phone_ref, phones_of, run_phones
from farm.view.unit_index import cached_index, files_stamp
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
    executor: str | None = None
    """How android tasks were driven (instrument, host), as the lanes recorded it (`farm.report.run_setup`)."""
    policy: str | None = None
    """The host executor's or the web lane's policy (model, scripted)."""
    model: str | None = None
    """The model named by the run's settings, when one was."""
    split: str | None = None
    """The pool the android lane selected (tune, holdout, all)."""
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


def listed_phones(manifest: mf.Manifest | None, devices: Iterable[str], phones: dict[str, PhoneId]) -> list[PhoneRef]:
    """The phones the manifest says the run used, else every device its records name (`devices`); by name."""
    used = [p.serial for p in manifest.phones if p.status == "used"] if manifest is not None else []
    chosen = used or sorted(set(devices))
    return sorted((phone_ref(d, phones) for d in dict.fromkeys(chosen)), key=lambda p: (p.phone, p.device))


def _settings(manifest: mf.Manifest) -> tuple[str | None, ...]:
    """(executor, policy, model, split) as the lanes recorded them; a setting two lanes differ in lists both."""
    found: dict[str, list[str]] = {}
    for lane in manifest.lanes:
        for setting in lane_setup(lane).settings:
            values = found.setdefault(setting.name, [])
            if setting.value not in values:
                values.append(setting.value)
    return tuple(", ".join(found[name]) if name in found else None for name in ("executor", "policy", "model", "split"))


def _fingerprint(code: mf.CodeFingerprint) -> str:
    if code.git_commit is None:
        return f"v{code.package_version}"
    return code.git_commit[:12] + ("+diff" if code.diff_sha256 else "")


def describe(runs_dir: Path, run: str) -> tuple[RunSummary, Path | None, mf.Manifest | None]:
    """What the manifest says of a run (no record read): its row without phones or headline, its directory (None
    when it is refused or missing) and its manifest (None when unreadable, the row says why)."""
    summary = RunSummary(run=run, state="ok")
    try:
        run_dir = run_dir_of(runs_dir, run)
    except (Refused, OSError) as exc:
        summary.state = "unreadable"
        summary.problems.append(str(exc) if isinstance(exc, Refused) else f"{run}: not a directory")
        return summary, None, None
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
        summary.executor, summary.policy, summary.model, summary.split = _settings(manifest)
        summary.fingerprint = _fingerprint(manifest.code)
    return summary, run_dir, manifest


def _records_part(summary: RunSummary, runs_dir: Path, run_dir: Path, manifest: mf.Manifest | None,
                  tasks_dir: Path | None) -> None:
    """Fill in the headline, phones and damage from the run's records: through its DuckDB index (one SQL read,
    `farm.view.unit_index`), or, when that cannot read them (a damaged manifest), line by line in Python."""
    written = read_headline(run_dir)  # the headline the run's current report shows
    try:
        index = cached_index(runs_dir, run_dir, tasks_dir)
    except FarmError:
        index = None
    if index is not None:
        count, problems, devices = index.attempts, index.problems, index.devices
        counted = written.overall if written is not None else index.headline()
        phones = index.phone_ids
    else:
        units = cached_units(run_dir)
        records = [u.record for u in units.units]
        count, problems, devices = len(records), units.problems, sorted({r.device for r in records})
        counted = written.overall if written is not None else headline(records)
        phones = run_phones(manifest, records)
    if problems:
        summary.problems.extend(problems)
        if summary.state == "ok":
            summary.state = "damaged" if count else "unreadable"
    # A run with no report yet is counted from its records by the same rules.
    summary.headline = counted
    summary.headline_text = written.text if written is not None else headline_text(counted)
    summary.phones = listed_phones(manifest, devices, phones)


def _summarise(runs_dir: Path, run: str, tasks_dir: Path | None) -> RunSummary:
    summary, run_dir, manifest = describe(runs_dir, run)
    if run_dir is None:
        return summary
    if exists(run_dir / RECORDS_FILE):
        _records_part(summary, runs_dir, run_dir, manifest, tasks_dir)
    else:
        summary.headline_text = "no records yet"
        summary.phones = listed_phones(manifest, [], phones_of(manifest, []))
    return summary


_ROWS: dict[Path, tuple[tuple[int, ...], RunSummary]] = {}
_ROWS_LOCK = threading.Lock()


def summarise(runs_dir: Path, run: str, tasks_dir: Path | None = None) -> RunSummary:
    """The list row of one run directory; never raises for what is inside it. Read again only when one of the
    files it comes from changed, so a run list of big runs reads each once. `tasks_dir`: the viewer's task set
    (its run pages share the index read here)."""
    try:
        run_dir = run_dir_of(runs_dir, run)
    except (Refused, OSError):
        return _summarise(runs_dir, run, tasks_dir)
    # What a row is read from: records, manifest, the report's headline and report.html.
    stamp = files_stamp(run_dir / RECORDS_FILE, mf.manifest_path(run_dir), run_dir / HEADLINE_FILE,
                        run_dir / REPORT_NAME)
    with _ROWS_LOCK:
        hit = _ROWS.get(run_dir)
    if hit is not None and hit[0] == stamp:
        return hit[1].model_copy(deep=True)
    summary = _summarise(runs_dir, run, tasks_dir)
    with _ROWS_LOCK:
        _ROWS[run_dir] = (stamp, summary.model_copy(deep=True))
    return summary


def is_run_dir(path: Path) -> bool:
    """A directory holding a manifest or records (as `farm report` and `farm query` see runs)."""
    try:
        return path.is_dir() and (exists(mf.manifest_path(path)) or exists(path / RECORDS_FILE))
    except OSError:
        return False


def list_runs(runs_dir: Path, tasks_dir: Path | None = None) -> list[RunSummary]:
    """Every run directly under `runs_dir`, newest first (by creation time; unreadable ones by modification)."""
    try:
        names = sorted(p.name for p in runs_dir.iterdir() if is_run_dir(p))
    except OSError:
        return []
    rows = [summarise(runs_dir, name, tasks_dir) for name in names]
    return sorted(rows, key=lambda r: (r.created_at or "", r.run), reverse=True)
