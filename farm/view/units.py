"""A run's units as the viewer names them: one per attempt in records.jsonl, each with the run record it kept and
its device's stable name (`farm.view.phones`).

A unit's key is its URL segment (`/runs/<run>/units/<key>`): readable (`task.device[.i<instance>][.r<repeat>]
.a<attempt>`), made of safe characters, and unique in the run (a key that two attempts would share gets a
`-2`, `-3`… in file order; records are append-only, so keys never move).
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from farm import manifest as mf
from farm.errors import FarmError
from farm.report.headline import initial_passed, latest_attempts
from farm.results.record import Record
from farm.results.store import RECORDS_FILE, ReadProblems, current_records, iter_records
from farm.view.files import Refused, exists, inside
from farm.view.phones import PhoneRef, phone_ref, read_manifest, run_phones

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class Unit(BaseModel):
    """One attempt of a run, as the viewer lists and opens it."""

    model_config = ConfigDict(extra="forbid")

    key: str
    """URL segment naming this attempt in its run."""
    record: Record
    """The attempt's record (the later line wins when an attempt was written twice)."""
    phone: PhoneRef
    """Its device as the viewer shows it: a phone's stable name beside its serial and adb server."""
    evidence: str | None = None
    """The record's run record (`…/<id>/run`, relative to the run directory) when it is a directory inside the
    run; null when none was kept or the record names a path the viewer will not open."""
    evidence_note: str | None = None
    """Why a named run record cannot be opened (missing, or outside the run directory)."""
    latest: bool = True
    """False for an earlier try of a unit that was tried again (the headline counts the latest try only)."""

    @property
    def verdict(self) -> str:
        """pass, fail, error or skipped, as the headline counts it (before human re-judgement)."""
        return record_verdict(self.record)


def record_verdict(rec: Record) -> str:
    """A record's verdict: pass, fail, error or skipped, as the headline counts it (before human re-judgement)."""
    if rec.outcome in ("skipped", "error"):
        return rec.outcome
    return "pass" if initial_passed(rec) else "fail"


class UnitRow(BaseModel):
    """One unit as the viewer's JSON lists it (`/api/runs/<run>/units`): its device as records name it and, beside
    it, the phone's stable name and adb server."""

    model_config = ConfigDict(extra="forbid")

    key: str
    """URL segment naming the attempt in its run."""
    url: str
    """The viewer page of its trajectory."""
    lane: str
    task_id: str
    device: str
    """A phone's serial (or a web backend, a desktop machine), as the record names it."""
    phone: str
    """The phone's stable name (`farm.phone_name`); another lane's device keeps its own name."""
    adb_server: str
    """`host:port` of the adb server that reaches the phone; empty when unknown or not a phone."""
    instance: str
    repeat: int
    attempt: int
    outcome: str
    verdict: str
    """pass, fail, error or skipped, as the headline counts it (before human re-judgement)."""
    latest: bool
    """False for an earlier try of a unit that was tried again."""

    @classmethod
    def of(cls, unit: Unit, url: str) -> UnitRow:
        """The row of `unit`, whose page is at `url`."""
        rec = unit.record
        return cls(key=unit.key, url=url, lane=rec.lane, task_id=rec.task_id, device=rec.device,
                   phone=unit.phone.phone, adb_server=unit.phone.adb_server, instance=rec.instance,
                   repeat=rec.repeat, attempt=rec.attempt, outcome=rec.outcome, verdict=unit.verdict,
                   latest=unit.latest)


class RunUnits(BaseModel):
    """Every unit of a run and what could not be read."""

    model_config = ConfigDict(extra="forbid")

    units: list[Unit] = Field(default_factory=list)
    """In records.jsonl order."""
    problems: list[str] = Field(default_factory=list)
    """Record lines skipped (torn, corrupt) or a records file that could not be read, each on one line."""

    def get(self, key: str) -> Unit | None:
        """The unit with this key, if any."""
        return next((u for u in self.units if u.key == key), None)

    def under(self, rel: str) -> list[Unit]:
        """Units whose run record is `rel`, lies under it (a try directory), or holds it (a file of the record)."""
        rel = rel.strip("/")
        out = []
        for unit in self.units:
            ev = unit.evidence
            if ev is None:
                continue
            if rel and (rel == ev or ev.startswith(f"{rel}/") or rel.startswith(f"{ev}/")):
                out.append(unit)
        return out


    def named_by(self, rel: str) -> Unit | None:
        """The one unit a link to directory `rel` means: its run record, or the task or try directory at most
        two levels above it (`<try>/<id>/run`), when no other unit's run record is there too."""
        rel = rel.strip("/")
        units = self.under(rel)
        if len(units) != 1 or units[0].evidence is None:
            return None
        below = units[0].evidence[len(rel):].strip("/").split("/") if rel != units[0].evidence else []
        return units[0] if len(below) <= 2 else None


def unit_key(record: Record) -> str:
    """The readable part of a unit's key (before any `-N` that makes it unique). Written again in SQL for the run
    page (`farm.view.unit_index._KEY`): a change here is a change there, or the run page's links stop opening."""
    parts = [record.task_id, record.device]
    if record.instance:
        parts.append(f"i{record.instance}")
    if record.repeat > 1:
        parts.append(f"r{record.repeat}")
    parts.append(f"a{record.attempt}")
    return _UNSAFE.sub("_", ".".join(parts)).strip("._") or "unit"


def read_records(run_dir: Path) -> tuple[list[Record], list[str]]:
    """The run's records (an attempt written twice once, the later line) and the lines that were skipped."""
    problems = ReadProblems()
    path = run_dir / RECORDS_FILE
    if not exists(path):
        return [], []
    try:
        records = list(iter_records(path, problems))
    except FarmError as exc:
        return [], [exc.line()]
    return current_records(records), [*problems.torn, *problems.corrupt]


def evidence_of(run_dir: Path, record: Record) -> tuple[str | None, str | None]:
    """The record's run record relative to the run directory when the viewer may open it, else why not."""
    if not record.evidence:
        return None, None
    try:
        path = inside(run_dir, record.evidence)
    except Refused:
        return None, f"{record.evidence}: outside the run directory, not opened"
    except OSError:
        return None, f"{record.evidence}: not in the run directory"
    if not path.is_dir():
        return None, f"{record.evidence}: not a directory"
    return record.evidence.strip("/"), None


def keyed_records(records: list[Record]) -> list[tuple[str, Record, bool]]:
    """Each of a run's records (`read_records`, in their order) with its unit's key and whether it is its unit's
    latest try: what a unit is, without the look at its run record on disk that `load_units` adds."""
    latest = {id(r) for r in latest_attempts(records)}
    seen: dict[str, int] = {}
    out = []
    for rec in records:
        base = unit_key(rec)
        seen[base] = seen.get(base, 0) + 1
        out.append((base if seen[base] == 1 else f"{base}-{seen[base]}", rec, id(rec) in latest))
    return out


def load_units(run_dir: Path) -> RunUnits:
    """Every attempt of the run with its key and run record (see the module docstring)."""
    records, problems = read_records(run_dir)
    phones = run_phones(read_manifest(run_dir), records)
    units = []
    for key, rec, latest in keyed_records(records):
        evidence, note = evidence_of(run_dir, rec)
        units.append(Unit(key=key, record=rec, phone=phone_ref(rec.device, phones), evidence=evidence,
                          evidence_note=note, latest=latest))
    return RunUnits(units=units, problems=problems)


_CACHE: dict[Path, tuple[tuple[int, ...], RunUnits]] = {}
_CACHE_LOCK = threading.Lock()


def cached_units(run_dir: Path) -> RunUnits:
    """`load_units`, read again only when records.jsonl or the manifest (the phones' names) changed (size or
    modification time)."""
    try:
        st = (run_dir / RECORDS_FILE).stat()
    except OSError:
        return load_units(run_dir)
    try:
        named = mf.manifest_path(run_dir).stat()
        names = (named.st_mtime_ns, named.st_size)
    except OSError:
        names = (0, -1)
    stamp = (st.st_mtime_ns, st.st_size, *names)
    with _CACHE_LOCK:
        hit = _CACHE.get(run_dir)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    units = load_units(run_dir)
    with _CACHE_LOCK:
        _CACHE[run_dir] = (stamp, units)
    return units
