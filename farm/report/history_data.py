"""Night over night: the pass rate of each run of one label, and what changed from the previous night to the newest.

`build_history` is pure over records and manifests; `load_history` reads them from a runs directory through the
reports' DuckDB reader, so damaged record lines are skipped and named exactly as in the reports.

Counting is the reports' (`farm.report.headline`): latest attempt per unit, skipped units not attempted,
infrastructure errors in the denominator, verdicts before human re-judgement (overrides are not applied here),
holdout-pool units hidden unless asked for.

Pairs. The newest night is compared with the night before it, pair by pair: a pair is (lane, task, instance, group)
where the group is the phone model for android records (serial → model from that night's manifest) and the device
itself (web backend, desktop machine) for the other lanes. Within a pair, every judged unit (several phones of one
model, several repeats) counts; skipped units and infrastructure errors are never judged.

- regression: every judged unit passed on the previous night, and at least one failed on the newest;
- fix: at least one judged unit failed on the previous night, and every one passed on the newest;
- new / gone: judged on one night, with no unit at all (not even a skip) on the other;
- newly flaky: judged units both passed and failed on the newest night, and not on the previous one.

A pair's outcome on a night is thus "all passed" or not, and regressions and fixes are exactly the discordant pairs
of the exact McNemar test over the pairs judged on both nights.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from pydantic import ValidationError

from farm import manifest as manifests
from farm.errors import FarmError
from farm.manifest import Manifest
from farm.phone_name import PhoneId, from_manifests
from farm.report.aggregate import phone_rows
from farm.report.headline import (
    RunHeadline,
    headline,
    holdout_counted,
    initial_passed,
    latest_attempts,
    read_headline,
)
from farm.report.history_model import (
    Before,
    ErrorUnit,
    FlakyTask,
    HealthChange,
    History,
    NightRow,
    PairChange,
)
from farm.results import duck
from farm.results.damage import damage_text
from farm.results.record import Record
from farm.results.stats import mcnemar_exact

__all__ = ["ErrorUnit", "FlakyTask", "HealthChange", "History", "NightRow", "PairChange", "build_history",
           "load_history", "read_night", "select_runs"]

DEFAULT_LAST = 14
"""Nights shown by default."""
@dataclass(frozen=True)
class Night:
    """One run's manifest and records: what `build_history` computes from."""

    manifest: Manifest
    records: list[Record]
    written: RunHeadline | None = None
    """The headline the night's current report wrote (`headline.json`): the night's one number, when there."""


@dataclass
class _Tally:
    passed: int = 0
    failed: int = 0
    judged_by: set[str] = field(default_factory=set)
    reasons: list[str] = field(default_factory=list)


_Key = tuple[str, str, str, str]


def _models(nights: Sequence[Night]) -> dict[str, str]:
    """Serial → model over every night's manifest (the latest known model wins)."""
    return {p.serial: p.model for n in nights for p in n.manifest.phones if p.model}


def phone_ids(nights: Sequence[Night]) -> dict[str, PhoneId]:
    """Serial → PhoneId (`farm.phone_name`) over every night: the name each night's manifest recorded (the newest
    night's wins; computed for nights recorded before names were), and phones only the records name."""
    models = _models(nights)
    serials = sorted({r.device for n in nights for r in n.records if r.lane == "android"})
    return from_manifests([n.manifest.model_dump(mode="json") for n in nights], [(s, models.get(s)) for s in serials])


def _night_row(night: Night) -> NightRow:
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
    )


def _tallies(night: Night, labels: dict[str, str], known: dict[str, str]) -> dict[_Key, _Tally]:
    """Judged units per pair; a pair with only skips and errors is present with nothing judged. The model comes
    from the night's own manifest, else from another night's; a phone of unknown model is a group of its own."""
    models = {**known, **_models([night])}
    out: dict[_Key, _Tally] = {}
    for r in latest_attempts(night.records):
        phone = labels.get(r.device, r.device) if r.lane == "android" else r.device
        group = models.get(r.device, phone) if r.lane == "android" else r.device
        tally = out.setdefault((r.lane, r.task_id, r.instance, group), _Tally())
        if r.outcome in ("skipped", "error"):
            continue
        tally.judged_by.add(phone)
        if initial_passed(r):
            tally.passed += 1
        else:
            tally.failed += 1
            tally.reasons.append(r.reasons[0] if r.reasons else r.outcome)
    return out


def _change(kind: str, key: _Key, before: _Tally | None, after: _Tally | None) -> PairChange:
    b, a = before or _Tally(), after or _Tally()
    return PairChange.model_validate({
        "kind": kind, "lane": key[0], "task_id": key[1], "instance": key[2], "group": key[3],
        "before_passed": b.passed, "before_failed": b.failed, "after_passed": a.passed, "after_failed": a.failed,
        "phones": sorted((a if kind != "gone" else b).judged_by), "reasons": a.reasons,
    })


def _before(tally: _Tally | None) -> Before:
    if tally is None:
        return "absent"
    if not tally.passed + tally.failed:
        return "no verdict"
    return "passed" if not tally.failed else "failed"


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


def _compare(before: dict[_Key, _Tally], after: dict[_Key, _Tally]) -> tuple[int, list[PairChange], list[FlakyTask]]:
    """Pairs judged on both nights, the changed pairs (in key order), and the newly flaky pairs."""
    paired, changes, flaky = 0, list[PairChange](), list[FlakyTask]()
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key), after.get(key)
        b_judged, a_judged = bool(b and b.passed + b.failed), bool(a and a.passed + a.failed)
        if a is not None and a_judged and b is None:
            changes.append(_change("new", key, b, a))
        elif b is not None and b_judged and a is None:
            changes.append(_change("gone", key, b, a))
        elif a is not None and b is not None and a_judged and b_judged:
            paired += 1
            if not b.failed and a.failed:
                changes.append(_change("regression", key, b, a))
            elif b.failed and not a.failed:
                changes.append(_change("fix", key, b, a))
        if a is not None and a.passed and a.failed and not (b is not None and b.passed and b.failed):
            flaky.append(FlakyTask(lane=key[0], task_id=key[1], instance=key[2], group=key[3], passed=a.passed,
                                   failed=a.failed, before=_before(b)))
    return paired, changes, flaky


def build_history(
    nights: Sequence[Night], *, label: str | None = None, runs_dir: str = "", include_holdout: bool = False,
    warnings: Sequence[str] = (),
) -> History:
    """The history of `nights` (oldest first): rates per night, and the newest night against the previous one
    (rules in the module docstring)."""
    # A night's written headline is its number only when it counts holdout as this history does.
    nights = [n if n.written is None or (n.written.holdout == "counted") == include_holdout
              else replace(n, written=None) for n in nights]
    hidden = 0
    if not include_holdout:
        # As the reports do: the holdout pool is for release decisions, not for nightly watching.
        hidden = sum(len(latest_attempts(r for r in n.records if r.partition == "holdout")) for n in nights)
        nights = [Night(n.manifest, [r for r in n.records if r.partition != "holdout"], n.written) for n in nights]
    phones = phone_ids(nights)
    labels, known = {s: p.name for s, p in phones.items()}, _models(nights)
    paired, changes, flaky = 0, list[PairChange](), list[FlakyTask]()
    if len(nights) >= 2:
        paired, changes, flaky = _compare(_tallies(nights[-2], labels, known), _tallies(nights[-1], labels, known))
    kinds = {k: [c for c in changes if c.kind == k] for k in ("regression", "fix", "new", "gone")}
    errors = [
        ErrorUnit(lane=r.lane, task_id=r.task_id, instance=r.instance, repeat=r.repeat,
                  phone=labels.get(r.device, r.device) if r.lane == "android" else r.device,
                  reason=r.reasons[0] if r.reasons else "infrastructure error")
        for r in sorted(latest_attempts(nights[-1].records) if nights else [], key=lambda r: r.unit_key())
        if r.outcome == "error"
    ]
    return History(
        label=label, runs_dir=runs_dir, include_holdout=include_holdout, hidden_holdout=hidden,
        nights=[_night_row(n) for n in nights], newest=nights[-1].manifest.run_id if nights else None,
        previous=nights[-2].manifest.run_id if len(nights) >= 2 else None, paired=paired,
        regressions=kinds["regression"], fixes=kinds["fix"], new=kinds["new"], gone=kinds["gone"],
        mcnemar_p=mcnemar_exact(len(kinds["regression"]), len(kinds["fix"])) if len(nights) >= 2 else None,
        flaky=flaky, errors=errors, health=_health(nights, labels), warnings=list(warnings),
        phones=phone_rows(phones),
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
         "passed", "reason", "takeover_kind", "attempt", "execution")


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
    return (Night(manifest, records, written),
            [w for path, damage in source.damaged for w in damage_text(path, damage)])


def load_history(
    runs_dir: Path, *, label: str | None = None, last: int = DEFAULT_LAST, include_holdout: bool | None = None
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
                         warnings=warnings)
