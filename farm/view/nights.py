"""Nights of one label as the viewer shows them: the task × night matrix of verdicts, each cell coloured and linked
to a unit of that task on that night, flaky and regressed tasks on top; and each phone's and each host's health
night by night.

The matrix is `farm history`'s own (`farm.report.history_data.load_history`: the same nights, the same counting,
flaky and regression rules), so the page and history.html never disagree. Each cell links to the task's unit on
that night that a reader wants first: its first failure, else its first error, pass, skip (`farm.view.units`
keys). A phone's cell is its latest tries' passed/judged on that night, or the health gate's reason when the
phone was left out; a host (an adb server's machine) sums its phones.

Reading the nights is cached on every run's records and manifest (size and modification time): a new night, or a
night still running, is read again on the next request.
"""

from __future__ import annotations

import threading
from pathlib import Path
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field

from farm import manifest as mf
from farm.errors import FarmError
from farm.report.history import HISTORY_FILES, default_out_dir
from farm.report.history_data import History, load_history
from farm.report.history_model import TaskCell
from farm.results.record import Record
from farm.results.store import RECORDS_FILE
from farm.view.files import HISTORY_DIR, exists, list_dir
from farm.view.phones import phone_ref, read_manifest, run_phones
from farm.view.unit_index import files_stamp
from farm.view.units import keyed_records, read_records, record_verdict

_RANK = {"fail": 0, "error": 1, "pass": 2, "skipped": 3}


class Cell(BaseModel):
    """One task on one night."""

    model_config = ConfigDict(extra="forbid")

    run: str
    text: str
    """`passed/judged` (`–` when none judged), `eN` for infrastructure errors."""
    colour: str
    """pass (all judged passed), fail (none), mixed, error (only errors), skipped, none (no unit)."""
    key: str | None = None
    """The unit a click opens; null when the night has no unit of the task or its run is not served."""


class TaskLine(BaseModel):
    model_config = ConfigDict(extra="forbid")

    lane: str
    task_id: str
    instance: str
    category: str
    flaky: bool
    regressed: bool
    cells: list[Cell]


class HealthCell(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str
    colour: str
    """pass (every judged unit passed), mixed, fail, left_out, none (not in that night)."""
    title: str = ""


class HealthLine(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    where: str = ""
    cells: list[HealthCell]


class NightsView(BaseModel):
    """The nights page."""

    model_config = ConfigDict(extra="forbid")

    label: str
    history: History
    columns: list[str] = Field(default_factory=list)
    """Run ids of the matrix's nights, oldest first."""
    served: dict[str, bool] = Field(default_factory=dict)
    """Run id → whether the viewer serves it (a run directly under the runs directory)."""
    tasks: list[TaskLine] = Field(default_factory=list)
    phones: list[HealthLine] = Field(default_factory=list)
    hosts: list[HealthLine] = Field(default_factory=list)
    history_file: str | None = None
    """The viewer URL of the label's history.html for the same newest night (`farm history`), when written."""


def colour(passed: int, judged: int, errors: int, skipped: int) -> str:
    """A cell's colour from its counts (see `Cell.colour`)."""
    if judged:
        return "pass" if passed == judged else "fail" if passed == 0 else "mixed"
    return "error" if errors else "skipped" if skipped else "none"


def _count(c: TaskCell) -> str:
    text = f"{c.passed}/{c.judged}" if c.judged else "–"
    return f"{text} e{c.errors}" if c.errors else text


def _first_units(units: list[tuple[str, Record, bool]]) -> dict[tuple[str, str, str], str]:
    best: dict[tuple[str, str, str], tuple[int, str]] = {}
    for key, rec, latest in units:
        if not latest:
            continue
        k, rank = (rec.lane, rec.task_id, rec.instance), _RANK[record_verdict(rec)]
        if k not in best or rank < best[k][0]:
            best[k] = (rank, key)
    return {k: v[1] for k, v in best.items()}


def _health(name: str, where: str, counts: list[tuple[int, int, int] | str | None]) -> HealthLine:
    cells = []
    for c in counts:
        if c is None:
            cells.append(HealthCell(text="", colour="none"))
        elif isinstance(c, str):
            cells.append(HealthCell(text="left out", colour="left_out", title=c))
        else:
            passed, judged, errors = c
            text = (f"{passed}/{judged}" if judged else "–") + (f" e{errors}" if errors else "")
            cells.append(HealthCell(text=text, colour=colour(passed, judged, errors, 0)))
    return HealthLine(name=name, where=where, cells=cells)


def history_href(runs_dir: Path, label: str, newest: str | None) -> str | None:
    """The viewer URL of `farm history`'s history.html of `label` up to night `newest`, when it is written."""
    if not newest:
        return None
    written = default_out_dir(runs_dir, label, newest) / HISTORY_FILES[1]
    if written.parent.parent != runs_dir / HISTORY_DIR or not exists(written, file=True):
        return None
    return f"/runs/{HISTORY_DIR}/{quote(written.parent.name, safe='')}/{HISTORY_FILES[1]}"


def build_nights(runs_dir: Path, label: str) -> NightsView:
    """The nights page of `label` (FarmError when no run has it)."""
    h = load_history(runs_dir, label=label)
    view = NightsView(label=label, history=h, columns=list(h.task_nights))
    names = {p.serial: p.name for p in h.phones}
    servers = {p.serial: p.adb_server for p in h.phones}
    run_dirs = {n.run_id: n.run_dir for n in h.nights}
    firsts: dict[str, dict[tuple[str, str, str], str]] = {}
    phone_counts: dict[str, dict[str, tuple[int, int, int] | str]] = {}
    for run_id in [n.run_id for n in h.nights]:
        rel = run_dirs.get(run_id)
        view.served[run_id] = rel is not None and "/" not in rel and rel not in ("", ".", "..")
        if not view.served[run_id] or rel is None:
            continue
        run_dir = runs_dir / rel
        # The night's units as its unit pages key them, without looking for each one's run record on disk.
        records, _ = read_records(run_dir)
        manifest = read_manifest(run_dir)
        ids = run_phones(manifest, records)
        units = keyed_records(records)
        firsts[run_id] = _first_units(units)
        tally: dict[str, tuple[int, int, int]] = {}
        for _, rec, latest in units:
            if latest and rec.lane == "android":
                verdict, p, j, e = record_verdict(rec), *tally.get(rec.device, (0, 0, 0))
                tally[rec.device] = (p + (verdict == "pass"), j + (verdict in ("pass", "fail")),
                                     e + (verdict == "error"))
                ref = phone_ref(rec.device, ids)
                servers.setdefault(rec.device, ref.adb_server)
                names.setdefault(rec.device, ref.phone)
        per: dict[str, tuple[int, int, int] | str] = dict(tally)
        for phone in manifest.phones if manifest is not None else []:
            if phone.status == "left_out":
                per[phone.serial] = phone.reason or "left out by the health gate"
            servers.setdefault(phone.serial, phone.adb_server)
            names.setdefault(phone.serial, phone.name or phone.serial)
        phone_counts[run_id] = per
    for t in h.tasks:
        cells = []
        for c in t.cells:
            key = firsts.get(c.run_id, {}).get((t.lane, t.task_id, t.instance))
            cells.append(Cell(run=c.run_id, text=_count(c) if c.judged or c.errors or c.skipped else "",
                              colour=colour(c.passed, c.judged, c.errors, c.skipped), key=key))
        view.tasks.append(TaskLine(lane=t.lane, task_id=t.task_id, instance=t.instance, category=t.category,
                                   flaky=t.flaky, regressed=t.regressed, cells=cells))
    nights = [n.run_id for n in h.nights]
    serials = sorted({s for per in phone_counts.values() for s in per}, key=lambda s: (names.get(s, s), s))
    for serial in serials:
        view.phones.append(_health(names.get(serial, serial), f"{serial} on {servers.get(serial) or '?'}",
                                   [phone_counts.get(r, {}).get(serial) for r in nights]))
    hosts = sorted({(servers.get(s) or "").rpartition(":")[0] or servers.get(s) or "unknown" for s in serials})
    for host in hosts:
        on = [s for s in serials if ((servers.get(s) or "").rpartition(":")[0] or servers.get(s) or "unknown") == host]
        counts: list[tuple[int, int, int] | str | None] = []
        for r in nights:
            mine = [phone_counts.get(r, {}).get(s) for s in on]
            numbers = [c for c in mine if isinstance(c, tuple)]
            if not numbers:
                out = [c for c in mine if isinstance(c, str)]
                counts.append(f"{len(out)} of {len(on)} phones left out" if out else None)
            else:
                counts.append((sum(c[0] for c in numbers), sum(c[1] for c in numbers), sum(c[2] for c in numbers)))
        view.hosts.append(_health(host, f"{len(on)} phone{'' if len(on) == 1 else 's'}", counts))
    return view


_CACHE: dict[tuple[Path, str], tuple[tuple[object, ...], NightsView]] = {}
_CACHE_LOCK = threading.Lock()


def _stamp(runs_dir: Path) -> tuple[object, ...]:
    out: list[object] = []
    for name, is_dir in list_dir(runs_dir):
        if is_dir:
            run_dir = runs_dir / name
            out += [name, *files_stamp(run_dir / RECORDS_FILE, mf.manifest_path(run_dir))]
    return tuple(out)


def cached_nights(runs_dir: Path, label: str) -> NightsView:
    """`build_nights`, read again when any run's records or manifest changed (or a run came or went)."""
    stamp, key = _stamp(runs_dir), (runs_dir, label)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
    if hit is not None and hit[0] == stamp:
        view = hit[1]
    else:
        view = build_nights(runs_dir, label)
        with _CACHE_LOCK:
            _CACHE[key] = (stamp, view)
    # Looked for on every request: history.html is written apart from any night's records.
    return view.model_copy(update={"history_file": history_href(runs_dir, label, view.history.newest)})


def labels_of(runs_dir: Path) -> dict[str, int]:
    """Label → runs with it, over the runs directly under `runs_dir` (for the nights page's index)."""
    out: dict[str, int] = {}
    for name, is_dir in list_dir(runs_dir):
        if not is_dir:
            continue
        try:
            label = mf.load(runs_dir / name).label
        except (FarmError, OSError):
            continue
        if label:
            out[label] = out.get(label, 0) + 1
    return dict(sorted(out.items()))

