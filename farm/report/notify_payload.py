"""The morning message: what `farm sweep` sends its notifiers (`farm.notify`) after every sweep, as JSON.

Every number is one a surface already shows, never counted again here: the headline is the run's `headline.json`
(the report's), the regressions are `farm history`'s (`load_history`) for the sweep's label, the lost adb servers
and quarantines are the manifest's. A field that is not known says so (null, and `notes` says why).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from farm import manifest as mf
from farm.errors import FarmError
from farm.exits import EXIT_BAD_INPUT, MEANINGS
from farm.report.headline import read_headline
from farm.report.lost_hosts import LostHost, lost_hosts
from farm.report.rate import RateRow

PAYLOAD_FORMAT: Literal[1] = 1
EXIT_MEANINGS = MEANINGS
"""What each exit status of `farm sweep` means (`farm.exits.MEANINGS`; deploy/README.md says what to do)."""


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Headline(_M):
    """The run's headline as its report shows it (`headline.json`)."""

    overall: RateRow
    """planned · unfinished · skipped · attempted · errors · passed, and the pass rate with its Wilson 95 % interval
    (`rate`, `low`, `high`; null when nothing was attempted)."""
    text: str
    """The headline in words, as every report writes it."""
    holdout: Literal["counted", "hidden"]
    """Whether holdout-pool units are in the numbers (the one holdout policy, `holdout_counted`)."""
    hidden_holdout_units: int
    """Holdout units left out of the numbers (0 when counted)."""


class Regressions(_M):
    """Task × phone pairs that passed on the previous night of the label and fail tonight (`farm history`)."""

    compared_with: str | None
    """The previous night (run id); null when the night was not compared (see `count`)."""
    count: int | None
    """How many pairs regressed; null when not compared (no label, a first night, an interrupted sweep, or the
    history could not be read: `Payload.notes` says which)."""
    listed: list[str]
    """The first regressions, `task on phone` (`task [instance i] on phone` for an instanced task)."""


class LeftOut(_M):
    """A phone the sweep did not use to the end."""

    phone: str
    """Its name on every surface (`farm.phone_name`), else its serial."""
    reason: str
    """Why: the health gate's reason, or the quarantine's."""


class Payload(_M):
    """What every notifier receives, as one JSON object."""

    format: Literal[1] = PAYLOAD_FORMAT
    """Version of this payload; a new field keeps it, a changed or removed one bumps it."""
    run: str | None
    """Run id; null when the sweep refused to start before it had one."""
    label: str | None
    """The sweep's `--label` (e.g. nightly); null without one."""
    status: Literal["finished", "interrupted", "running", "failed", "not_started"]
    """The run's state in its manifest; `not_started` when the sweep refused to start, `interrupted` also when it
    stopped with an error (`error` says why)."""
    exit_status: int
    """The exit status `farm sweep` ends with (the notifiers never change it)."""
    exit_meaning: str
    """That status in words."""
    error: str | None = None
    """The one-line message of a sweep that refused to start or stopped with an error; null otherwise."""
    created_at: str | None = None
    """When the run was created (ISO-8601 UTC)."""
    finished_at: str | None = None
    """When it finished; null when it did not."""
    headline: Headline | None = None
    """The run's headline; null when its report was not written."""
    regressions: Regressions
    """Regressions against the label's previous night."""
    lost_hosts: list[LostHost]
    """adb servers that did not answer (every sweep records them in its manifest); empty when all answered."""
    quarantined: list[LeftOut]
    """Phones quarantined during the sweep (the rest of their units moved on, or were left unfinished)."""
    left_out: list[LeftOut]
    """Phones the health gate refused at the start."""
    run_dir: str | None = None
    """The run directory on the controller."""
    reports: list[str]
    """The run's reports (report.md, report.html, junit.xml, scores.csv…) on the controller."""
    history: list[str]
    """`farm history` of the label, up to this night (history.md, history.html) on the controller."""
    notes: list[str]
    """Why a field is null or empty when that is not the plain answer."""


def _regressions(runs_dir: Path, run: str, label: str | None, *, counted: bool, listed: int,
                 notes: list[str]) -> Regressions:
    """The label's history up to this night, as the sweep wrote it (same reader, same nights)."""
    from farm.report.history_data import load_history

    none = Regressions(compared_with=None, count=None, listed=[])
    if label is None:
        notes.append("regressions: the sweep has no --label, so no night to compare with")
        return none
    if not counted:
        notes.append("regressions: the sweep was interrupted; its night is compared once it is resumed")
        return none
    try:
        history = load_history(runs_dir, label=label)
    except FarmError as exc:
        notes.append(f"regressions: history not read: {exc.line()}")
        return none
    except Exception as exc:  # noqa: BLE001 - a history that cannot be read costs the regressions, not the message
        notes.append(f"regressions: history not read: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}")
        return none
    if history.newest != run:
        notes.append(f"regressions: the newest night of {label!r} is {history.newest}, not this run")
        return none
    if history.previous is None:
        notes.append(f"regressions: the first night of {label!r}, nothing to compare with")
        return none
    names = [f"{c.task_id}{f' [instance {c.instance}]' if c.instance else ''} on {c.group}"
             for c in history.regressions[:listed]]
    return Regressions(compared_with=history.previous, count=len(history.regressions), listed=names)


def sweep_payload(
    run_dir: Path, *, exit_status: int, reports: Sequence[Path] = (), history: Sequence[Path] = (),
    quarantined: Mapping[str, Sequence[str]] | None = None, interrupted: bool = False, regressions_listed: int = 10,
) -> Payload:
    """The payload of a sweep that made `run_dir`: its manifest, its `headline.json`, the label's history.

    `quarantined`: serial → reasons, as the sweep ended (also in the manifest's notes, by serial)."""
    notes: list[str] = []
    manifest = mf.load(run_dir)
    written = read_headline(run_dir)
    if written is None:
        notes.append("headline: the run's report (headline.json) was not written")
    names = {p.serial: p.name or p.serial for p in manifest.phones}
    return Payload(
        run=manifest.run_id, label=manifest.label,
        status=manifest.status, exit_status=exit_status, exit_meaning=EXIT_MEANINGS.get(exit_status, "unknown"),
        created_at=manifest.created_at, finished_at=manifest.finished_at,
        headline=None if written is None else Headline(
            overall=written.overall, text=written.text, holdout=written.holdout,
            hidden_holdout_units=written.hidden_holdout_units),
        regressions=_regressions(run_dir.parent, manifest.run_id, manifest.label, counted=not interrupted,
                                 listed=regressions_listed, notes=notes),
        lost_hosts=lost_hosts(manifest),
        quarantined=[LeftOut(phone=names.get(serial, serial), reason="; ".join(why))
                     for serial, why in sorted((quarantined or {}).items())],
        left_out=[LeftOut(phone=p.name or p.serial, reason=p.reason or "") for p in manifest.phones
                  if p.status == "left_out"],
        run_dir=str(run_dir), reports=[str(p) for p in reports], history=[str(p) for p in history], notes=notes,
    )


def refused_payload(error: str, *, exit_status: int, run: str | None, label: str | None) -> Payload:
    """The payload of a sweep that ended in an error (`error`: its one-line message) instead of a summary: refused
    before it started (exit 2: `not_started`), or stopped midway (a full disk, exit 3: `interrupted`, resumable).
    No numbers: the run's report, if any, says them once it is resumed."""
    started = exit_status != EXIT_BAD_INPUT
    return Payload(
        run=run, label=label, status="interrupted" if started else "not_started", exit_status=exit_status,
        exit_meaning=EXIT_MEANINGS.get(exit_status, "unknown"), error=error,
        regressions=Regressions(compared_with=None, count=None, listed=[]), lost_hosts=[], quarantined=[],
        left_out=[], reports=[], history=[],
        notes=["the sweep stopped with an error: no numbers until it is resumed" if started
               else "the sweep did not start: no run, no numbers"],
    )
