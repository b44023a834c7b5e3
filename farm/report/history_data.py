"""Night over night: the pass rate of each run of one label, and what changed from the previous night to the newest.

`build_history` is pure over records and manifests; `load_history` reads them from a runs directory through the
reports' DuckDB reader, so damaged record lines are skipped and named exactly as in the reports.

Counting is the reports' (`farm.report.headline`): latest attempt per unit, skipped units not attempted,
infrastructure errors in the denominator, verdicts before human re-judgement (overrides are not applied here),
holdout-pool units hidden unless asked for.

The newest night is compared with the night before it pair by pair, task × phone; flaky tasks and the task ×
night grid look at more nights. The rules are `farm.report.history_grid`'s.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pydantic import ValidationError

from farm import manifest as manifests
from farm.errors import FarmError
from farm.manifest import Manifest, PhoneEntry
from farm.phone_name import PhoneId, from_manifests
from farm.report.aggregate import phone_rows
from farm.report.headline import (
    RunHeadline,
    headline,
    holdout_counted,
    latest_attempts,
    read_headline,
)
from farm.report.history_grid import DEFAULT_FLAKY_NIGHTS, NightUnits, compare_pairs, grid, pair_tallies
from farm.report.history_model import (
    AppChange,
    ErrorUnit,
    FlakyTask,
    HealthChange,
    History,
    NightRow,
    PairChange,
)
from farm.report.run_setup import app_version_changes
from farm.results import duck
from farm.results.damage import damage_text
from farm.results.record import Record
from farm.results.stats import mcnemar_exact

__all__ = ["DEFAULT_FLAKY_NIGHTS", "AppChange", "ErrorUnit", "FlakyTask", "HealthChange", "History", "NightRow",
           "PairChange", "build_history", "load_history", "read_night", "select_runs"]

DEFAULT_LAST = 14
"""Nights shown by default."""
REPORT_HTML = "report.html"
"""A run's current report (`farm.report.writers.REPORT_FILES`), linked from each night."""


@dataclass(frozen=True)
class Night:
    """One run's manifest and records: what `build_history` computes from."""

    manifest: Manifest
    records: list[Record]
    written: RunHeadline | None = None
    """The headline the night's current report wrote (`headline.json`): the night's one number, when there."""
    run_dir: Path | None = None
    """Where the run lives; None for a night built in memory (nothing is linked then)."""
    has_report: bool = False
    """Whether the run directory holds its current report (REPORT_HTML)."""


def _models(nights: Sequence[Night]) -> dict[str, str]:
    """Serial → model over every night's manifest (the latest known model wins)."""
    return {p.serial: p.model for n in nights for p in n.manifest.phones if p.model}


def phone_ids(nights: Sequence[Night]) -> dict[str, PhoneId]:
    """Serial → PhoneId (`farm.phone_name`) over every night: the name each night's manifest recorded (the newest
    night's wins; computed for nights recorded before names were), and phones only the records name."""
    models = _models(nights)
    serials = sorted({r.device for n in nights for r in n.records if r.lane == "android"})
    return from_manifests([n.manifest.model_dump(mode="json") for n in nights], [(s, models.get(s)) for s in serials])


def _run_path(night: Night, runs_dir: str) -> str | None:
    """The night's run directory relative to `runs_dir`, as a link target (`/` separators)."""
    if night.run_dir is None:
        return None
    return Path(os.path.relpath(night.run_dir, runs_dir or ".")).as_posix()


def _night_row(night: Night, run_path: str | None) -> NightRow:
    units = latest_attempts(night.records)
    categories = sorted({r.category for r in units})
    return NightRow(
        run_id=night.manifest.run_id, created_at=night.manifest.created_at, status=night.manifest.status,
        # The night's report is its one number; a night without one is counted the same way here.
        overall=night.written.overall.model_copy(update={"key": night.manifest.run_id}) if night.written is not None
        else headline(units, key=night.manifest.run_id),
        by_category=[headline([r for r in units if r.category == c], key=c or "(none)") for c in categories],
        phones_used=sum(p.status == "used" for p in night.manifest.phones),
        phones_left_out=sum(p.status == "left_out" for p in night.manifest.phones),
        run_dir=run_path, report=f"{run_path}/{REPORT_HTML}" if run_path is not None and night.has_report else None,
    )


def _phone(labels: dict[str, str]) -> Callable[[Record], str]:
    """A record's phone by its stable name on the android lane, its device off it."""
    return lambda r: labels.get(r.device, r.device) if r.lane == "android" else r.device


def _health(nights: Sequence[Night], labels: dict[str, str]) -> list[HealthChange]:
    out: list[HealthChange] = []
    for prev, cur in zip(nights, nights[1:], strict=False):
        was = {p.serial: p for p in prev.manifest.phones}
        now = {p.serial: p for p in cur.manifest.phones}
        for serial in sorted(set(was) | set(now), key=lambda s: labels.get(s, s)):
            b, a = was.get(serial), now.get(serial)
            if b is not None and a is not None and b.status == a.status:
                continue
            kind = ("appeared" if b is None else "disappeared" if a is None
                    else "left_out" if a.status == "left_out" else "back")
            reason = (b.reason if kind == "back" and b is not None else a.reason if a is not None else None)
            out.append(HealthChange(
                before_run=prev.manifest.run_id, after_run=cur.manifest.run_id, phone=labels.get(serial, serial),
                kind=kind, before=b.status if b else None, after=a.status if a else None, reason=reason,
            ))
    return out


def _app_changes(nights: Sequence[Night], labels: dict[str, str]) -> list[AppChange]:
    """Each phone's app versions against its own previous night with versions recorded (a night it missed, or was
    left out of, is skipped over): `app_version_changes`, night by night."""
    out: list[AppChange] = []
    last: dict[str, tuple[str, PhoneEntry]] = {}
    for night in nights:
        run, changed = night.manifest.run_id, list[AppChange]()
        for phone in night.manifest.phones:
            if not phone.apps:
                continue
            if phone.serial in last:
                before_run, before = last[phone.serial]
                changed += [AppChange(**dict(c), before_run=before_run, after_run=run)
                            for c in app_version_changes([before], [phone], labels)]
            last[phone.serial] = (run, phone)
        out += sorted(changed, key=lambda c: (c.phone, c.package))
    return out


def build_history(
    nights: Sequence[Night], *, label: str | None = None, runs_dir: str = "", include_holdout: bool = False,
    warnings: Sequence[str] = (), flaky_nights: int = DEFAULT_FLAKY_NIGHTS,
) -> History:
    """The history of `nights` (oldest first): rates per night, the newest night against the previous one (rules
    in the module docstring), flaky tasks over the last `flaky_nights` nights (at least 2; at most the nights
    given) and the task × night grid (`farm.report.history_grid`)."""
    if flaky_nights < 2:
        raise ValueError(f"flaky_nights must be at least 2, not {flaky_nights}")
    # A night's written headline is its number only when it counts holdout as this history does.
    nights = [n if n.written is None or (n.written.holdout == "counted") == include_holdout
              else replace(n, written=None) for n in nights]
    hidden = 0
    if not include_holdout:
        # As the reports do: the holdout pool is for release decisions, not for nightly watching.
        hidden = sum(len(latest_attempts(r for r in n.records if r.partition == "holdout")) for n in nights)
        nights = [replace(n, records=[r for r in n.records if r.partition != "holdout"]) for n in nights]
    phones = phone_ids(nights)
    labels = {s: p.name for s, p in phones.items()}
    phone = _phone(labels)
    paired, changes = 0, list[PairChange]()
    if len(nights) >= 2:
        paired, changes = compare_pairs(*(pair_tallies(n.records, phone) for n in nights[-2:]))
    kinds = {k: [c for c in changes if c.kind == k] for k in ("regression", "fix", "new", "gone")}
    errors = [
        ErrorUnit(lane=r.lane, task_id=r.task_id, instance=r.instance, repeat=r.repeat, phone=phone(r),
                  reason=r.reasons[0] if r.reasons else "infrastructure error")
        for r in sorted(latest_attempts(nights[-1].records) if nights else [], key=lambda r: r.unit_key())
        if r.outcome == "error"
    ]
    paths = [_run_path(n, runs_dir) for n in nights]
    return History(
        label=label, runs_dir=runs_dir, include_holdout=include_holdout, hidden_holdout=hidden,
        nights=[_night_row(n, path) for n, path in zip(nights, paths, strict=True)],
        newest=nights[-1].manifest.run_id if nights else None,
        previous=nights[-2].manifest.run_id if len(nights) >= 2 else None, paired=paired,
        regressions=kinds["regression"], fixes=kinds["fix"], new=kinds["new"], gone=kinds["gone"],
        mcnemar_p=mcnemar_exact(len(kinds["regression"]), len(kinds["fix"])) if len(nights) >= 2 else None,
        errors=errors, health=_health(nights, labels), warnings=list(warnings),
        phones=phone_rows(phones), app_changes=_app_changes(nights, labels),
        **grid([NightUnits(n.manifest.run_id, path, n.records) for n, path in zip(nights, paths, strict=True)],
               phone, k=min(flaky_nights, len(nights)), regressions=kinds["regression"]),
    )


def created_time(m: Manifest) -> dt.datetime | None:
    """The run's creation time (UTC when it names no zone); None when it is not ISO-8601."""
    try:
        when = dt.datetime.fromisoformat(m.created_at)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


def select_runs(runs_dir: Path, *, label: str | None, last: int) -> tuple[list[tuple[Path, Manifest]], list[str]]:
    """The last `last` run directories under `runs_dir` whose manifest has `label` (any, when None), oldest first
    by `created_at`, and a warning per directory left out; FarmError when none matches."""
    wanted = f"runs labelled {label!r}" if label is not None else "runs with a manifest"
    if not runs_dir.is_dir():
        raise FarmError(f"{runs_dir}: no such runs directory (looked for {wanted})", hint="pass --runs-dir DIR")
    found: list[tuple[dt.datetime, str, Path, Manifest]] = []
    warnings: list[str] = []
    for run_dir in duck.run_dirs_under(runs_dir):
        if not manifests.manifest_path(run_dir).is_file():
            continue  # records without a manifest have neither a label nor a creation time
        try:
            m = manifests.load(run_dir)
        except FarmError as exc:
            warnings.append(f"{exc.line()}; run left out")
            continue
        when = created_time(m)
        if label is not None and m.label != label:
            continue
        if when is None:
            warnings.append(f"{manifests.manifest_path(run_dir)}: created_at {m.created_at!r} is not ISO-8601; "
                            "run left out")
            continue
        found.append((when, m.run_id, run_dir, m))
    if not found:
        raise FarmError(f"{runs_dir}: no {wanted}", hint="a run gets its label from `--label`; check --label and "
                                                          "--runs-dir")
    found.sort(key=lambda f: (f[0], f[1]))
    return [(d, m) for _, _, d, m in found[-last:]], warnings


# The columns a headline reads, from the reports' reader (`duck.report_records`).
_READ = ("run", "lane", "device", "task_id", "instance", "repeat", "category", "partition", "expect", "outcome",
         "passed", "reason", "takeover_kind", "attempt", "execution", "evidence")


def read_night(run_dir: Path, manifest: Manifest) -> tuple[Night, list[str]]:
    """A run's records read as the reports read them (line order kept, damaged lines skipped), and a warning per
    damaged line."""
    import duckdb

    con = duckdb.connect(":memory:")
    try:
        source = duck.report_records(con, [run_dir])
        # One source, so `pos` is file order within a unit: an attempt written twice keeps its later line.
        rows = con.execute(f"SELECT {', '.join(_READ)} FROM rec ORDER BY pos").fetchall()
    finally:
        con.close()
    records: list[Record] = []
    for row in rows:
        data = {k: v for k, v in zip(_READ, row, strict=True) if v is not None}
        # The reports' NULL rule: a missing verdict is not a pass. They keep only the first reason, so do we.
        data["passed"] = bool(data.get("passed"))
        data["reasons"] = [data.pop("reason")] if "reason" in data else []
        try:
            records.append(Record.model_validate(data))
        except ValidationError as exc:
            err = exc.errors()[0]
            raise FarmError(
                f"{run_dir / duck.RECORDS_FILE}: task {data.get('task_id')}: "
                f"{'.'.join(map(str, err['loc']))}: {err['msg']}", hint="records must follow farm/results/record.py",
            ) from None
    written = read_headline(run_dir)
    return (Night(manifest, records, written, run_dir=run_dir, has_report=(run_dir / REPORT_HTML).is_file()),
            [w for path, damage in source.damaged for w in damage_text(path, damage)])


def load_history(
    runs_dir: Path, *, label: str | None = None, last: int = DEFAULT_LAST, include_holdout: bool | None = None,
    flaky_nights: int = DEFAULT_FLAKY_NIGHTS,
) -> History:
    """`build_history` over the last `last` runs labelled `label` under `runs_dir` (see `select_runs`); holdout
    counted as the runs planned it (`holdout_counted`) unless `include_holdout` says otherwise."""
    selected, warnings = select_runs(runs_dir, label=label, last=last)
    if include_holdout is None:
        include_holdout = holdout_counted([run_dir for run_dir, _ in selected])
    nights: list[Night] = []
    for run_dir, manifest in selected:
        night, damaged = read_night(run_dir, manifest)
        nights.append(night)
        warnings.extend(damaged)
    return build_history(nights, label=label, runs_dir=str(runs_dir), include_holdout=include_holdout,
                         warnings=warnings, flaky_nights=flaky_nights)
