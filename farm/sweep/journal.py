"""The sweep's durable queue: units, their tries and the phones, in SQLite (WAL) in the run directory.

The controller is the only scheduler and the only writer: one connection, one lock, one
transaction per state change (`pending → leased → done | unfinished`, or back to `pending` after
an infrastructure failure). A crash loses nothing but the units in flight, and `--resume` finds
them `leased`. Records are appended to `records.jsonl` before a unit is marked done, so after a
crash between the two the record is there and `reconcile` marks the unit done (never twice). A full disk
(SQLITE_FULL) undoes the change in hand whole: the journal stays as it was before it, and the sweep stops.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Collection, Iterable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, cast

JOURNAL_FILE = "journal.sqlite"
SCHEMA_VERSION = 1

UnitState = Literal["pending", "leased", "done", "unfinished"]
RunState = Literal["finished", "interrupted"]
TryKind = Literal["ran", "infra", "interrupted"]
PhoneState = Literal["active", "quarantined", "gone"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS units (
    unit_id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    pin TEXT NOT NULL DEFAULT '',
    repeat INTEGER NOT NULL,
    priority REAL NOT NULL,
    est_ms REAL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'leased', 'done', 'unfinished')),
    tries INTEGER NOT NULL DEFAULT 0,
    lease_phone TEXT,
    lease_at REAL,
    avoid_phone TEXT,
    final_phone TEXT,
    outcome TEXT,
    passed INTEGER,
    reason TEXT
);
CREATE INDEX IF NOT EXISTS units_queue ON units (state, pin, priority);
CREATE TABLE IF NOT EXISTS tries (
    unit_id TEXT NOT NULL,
    try INTEGER NOT NULL,
    phone TEXT NOT NULL,
    started REAL NOT NULL,
    ended REAL,
    kind TEXT CHECK (kind IN ('ran', 'infra', 'interrupted')),
    reason TEXT,
    PRIMARY KEY (unit_id, try)
);
CREATE TABLE IF NOT EXISTS phones (
    serial TEXT PRIMARY KEY,
    server TEXT NOT NULL DEFAULT '',
    model TEXT,
    state TEXT NOT NULL CHECK (state IN ('active', 'quarantined', 'gone')),
    infra_streak INTEGER NOT NULL DEFAULT 0,
    reasons TEXT NOT NULL DEFAULT '[]'
);
"""


@dataclass(frozen=True)
class PlannedUnit:
    """One unit to put on the queue."""

    unit_id: str
    task_id: str
    pin: str
    """Serial the unit must run on; empty: any eligible phone (shard spread)."""
    repeat: int
    priority: float
    """Lower leases first (longest estimated duration first, unknown tasks before all)."""
    est_ms: float | None = None


@dataclass(frozen=True)
class Lease:
    """A unit leased to a phone: run it, then `finish` or `fail_try`."""

    unit_id: str
    task_id: str
    repeat: int
    attempt: int
    """This try's number (1 for the first)."""
    phone: str


@dataclass(frozen=True)
class UnitRow:
    """A unit as the journal holds it."""

    unit_id: str
    task_id: str
    pin: str
    repeat: int
    state: UnitState
    tries: int
    lease_phone: str | None
    final_phone: str | None
    outcome: str | None
    passed: bool | None
    reason: str | None


def is_complete(run_dir: Path) -> bool:
    """Whether the run has a journal whose creation committed (its identity is written with its units)."""
    path = run_dir / JOURNAL_FILE
    if not path.is_file():
        return False
    try:
        with sqlite3.connect(path, timeout=30) as db:
            return db.execute("SELECT count(*) FROM meta WHERE key = 'schema'").fetchone()[0] == 1
    except sqlite3.Error:
        return False


def read_meta(run_dir: Path) -> dict[str, str]:
    """The identity and settings of a run's journal, read without opening it as the sweep does (no schema, no
    journal mode set: a sweep may hold it); empty when there is no complete journal."""
    if not is_complete(run_dir):
        return {}
    with closing(sqlite3.connect(run_dir / JOURNAL_FILE, timeout=30)) as db:
        return dict(db.execute("SELECT key, value FROM meta").fetchall())


def run_status(journal: Journal, max_tries: int) -> tuple[RunState, int]:
    """The run's manifest status as its journal has it, and how many units are left short: `finished` only when
    every unit ended (done, or unfinished after using every try: an infrastructure error, exit 5); any unit still
    pending or leased, or left unfinished with a try to spare (its phone lost or quarantined, a deadline), leaves
    it `interrupted`, resumable (exit 3). The one place both the manifest's status and the exit status come from,
    so the two never disagree."""
    counts = journal.counts()
    short = counts["pending"] + counts["leased"] + counts["unfinished"] - journal.exhausted(max_tries)
    return ("interrupted" if short else "finished"), short


def unit_id(task_id: str, pin: str, repeat: int) -> str:
    """`task@serial#repeat` (`*` for any phone): unique in a sweep, readable in a report."""
    return f"{task_id}@{pin or '*'}#{repeat}"


class Journal:
    """The queue of one sweep (thread-safe: every method takes the journal's lock)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.RLock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode: a power loss may drop the last commits but never corrupts; a process crash loses nothing.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    @classmethod
    def create(cls, run_dir: Path, meta: dict[str, str], units: Iterable[PlannedUnit]) -> Journal:
        """A new journal with its identity (`meta`) and its units, in one transaction."""
        path = run_dir / JOURNAL_FILE
        if is_complete(run_dir):
            from farm.errors import FarmError

            raise FarmError(f"{path}: a journal already exists", hint="resume it with --resume, or pick a new run id")
        for leftover in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            # A creation cut short by a crash committed nothing: its file holds no units to keep.
            leftover.unlink(missing_ok=True)
        journal = cls(path)
        with journal._tx() as db:
            db.executemany("INSERT INTO meta VALUES (?, ?)", [("schema", str(SCHEMA_VERSION)), *meta.items()])
            db.executemany(
                "INSERT INTO units (unit_id, task_id, pin, repeat, priority, est_ms, state) "
                "VALUES (?, ?, ?, ?, ?, ?, 'pending')",
                [(u.unit_id, u.task_id, u.pin, u.repeat, u.priority, u.est_ms) for u in units],
            )
        return journal

    @classmethod
    def open(cls, run_dir: Path) -> Journal:
        """The journal of an existing sweep; FarmError when there is none."""
        path = run_dir / JOURNAL_FILE
        if not path.is_file():
            from farm.errors import FarmError

            raise FarmError(f"{path}: no journal", hint="only a run started by `farm sweep` can be resumed")
        return cls(path)

    def close(self) -> None:
        """Close the connection (the journal stays on disk)."""
        with self._lock:
            self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                # SQLite may have rolled back already (SQLITE_FULL can end the whole transaction): a ROLLBACK
                # then fails and would hide the error that matters (a full disk) behind "no transaction".
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # -- identity ----------------------------------------------------------------------------
    def meta(self) -> dict[str, str]:
        """The sweep's identity and settings as written at creation."""
        with self._lock:
            return dict(self._db.execute("SELECT key, value FROM meta").fetchall())

    # -- phones ------------------------------------------------------------------------------
    def add_units(self, units: Iterable[PlannedUnit]) -> int:
        """Queue units planned after the start (a phone that joined when its lease was free); a unit already in
        the journal is kept as it is. Returns how many were new."""
        with self._tx() as db:
            before = db.total_changes
            db.executemany(
                "INSERT OR IGNORE INTO units (unit_id, task_id, pin, repeat, priority, est_ms, state) "
                "VALUES (?, ?, ?, ?, ?, ?, 'pending')",
                [(u.unit_id, u.task_id, u.pin, u.repeat, u.priority, u.est_ms) for u in units],
            )
            return db.total_changes - before

    def add_phone(self, serial: str, server: str, model: str | None) -> None:
        """Register (or re-admit) a phone as active; its failure streak starts again."""
        with self._tx() as db:
            db.execute(
                "INSERT INTO phones (serial, server, model, state) VALUES (?, ?, ?, 'active') "
                "ON CONFLICT (serial) DO UPDATE SET state = 'active', infra_streak = 0, server = excluded.server",
                (serial, server, model),
            )

    def phone_states(self) -> dict[str, PhoneState]:
        """Serial → active / quarantined / gone."""
        with self._lock:
            return {s: cast(PhoneState, st) for s, st in self._db.execute("SELECT serial, state FROM phones")}

    def quarantined(self) -> dict[str, list[str]]:
        """Quarantined phones and the reasons of the failures that put them there."""
        with self._lock:
            rows = self._db.execute("SELECT serial, reasons FROM phones WHERE state = 'quarantined' ORDER BY 1")
            return {serial: json.loads(reasons) for serial, reasons in rows}

    # -- the queue -----------------------------------------------------------------------------
    def lease(
        self, phone: str, eligible: Collection[str], *, others_active: bool = True, exclude: Collection[str] = ()
    ) -> Lease | None:
        """The next unit for `phone`: its own pinned units and the unpinned units of tasks it can run,
        in priority order; tasks in `exclude` are passed over (they are in the batch being built). A unit that
        just failed on this phone for an infrastructure reason waits for another phone while any other is
        active. None: nothing left for this phone."""
        with self._tx() as db:
            rows = db.execute(
                "SELECT unit_id, task_id, repeat, tries, pin, avoid_phone FROM units "
                "WHERE state = 'pending' AND (pin = ? OR pin = '') ORDER BY priority, unit_id",
                (phone,),
            )
            for uid, task_id, repeat, tries, pin, avoid in rows:
                if (not pin and task_id not in eligible) or task_id in exclude:
                    continue
                if avoid == phone and others_active and not pin:
                    continue
                now = time.time()
                db.execute(
                    "UPDATE units SET state = 'leased', lease_phone = ?, lease_at = ?, tries = tries + 1 "
                    "WHERE unit_id = ?",
                    (phone, now, uid),
                )
                db.execute("INSERT INTO tries (unit_id, try, phone, started) VALUES (?, ?, ?, ?)",
                           (uid, tries + 1, phone, now))
                return Lease(uid, task_id, repeat, tries + 1, phone)
        return None

    def finish(self, lease: Lease, *, outcome: str, passed: bool, reason: str = "") -> None:
        """The unit ended with a verdict (its record is already in records.jsonl); the phone's streak resets."""
        with self._tx() as db:
            self._end_try(db, lease, "ran", reason)
            db.execute(
                "UPDATE units SET state = 'done', final_phone = ?, outcome = ?, passed = ?, reason = ?, "
                "lease_phone = NULL WHERE unit_id = ?",
                (lease.phone, outcome, int(passed), reason, lease.unit_id),
            )
            db.execute("UPDATE phones SET infra_streak = 0 WHERE serial = ?", (lease.phone,))

    def fail_try(self, lease: Lease, reason: str, *, max_tries: int, quarantine_after: int) -> tuple[bool, bool]:
        """An infrastructure failure of this try: back on the queue (for another phone) unless the unit has had
        `max_tries`; the phone is quarantined after `quarantine_after` such failures in a row.

        Returns (unit_requeued, phone_quarantined).
        """
        with self._tx() as db:
            self._end_try(db, lease, "infra", reason)
            requeue = lease.attempt < max_tries
            if requeue:
                db.execute(
                    "UPDATE units SET state = 'pending', lease_phone = NULL, avoid_phone = ? WHERE unit_id = ?",
                    (lease.phone, lease.unit_id),
                )
            else:
                db.execute(
                    "UPDATE units SET state = 'unfinished', final_phone = ?, outcome = 'error', passed = 0, "
                    "reason = ?, lease_phone = NULL WHERE unit_id = ?",
                    (lease.phone, reason, lease.unit_id),
                )
            streak, reasons = db.execute(
                "UPDATE phones SET infra_streak = infra_streak + 1 WHERE serial = ? RETURNING infra_streak, reasons",
                (lease.phone,),
            ).fetchone() or (0, "[]")
            quarantine = streak >= quarantine_after
            if quarantine:
                db.execute(
                    "UPDATE phones SET state = 'quarantined', reasons = ? WHERE serial = ?",
                    (json.dumps([*json.loads(reasons), reason][-10:], ensure_ascii=False), lease.phone),
                )
            return requeue, quarantine

    def release(self, lease: Lease, reason: str) -> None:
        """Give a leased unit back untouched (the sweep was stopped before it ran): the try does not count."""
        with self._tx() as db:
            db.execute("DELETE FROM tries WHERE unit_id = ? AND try = ?", (lease.unit_id, lease.attempt))
            db.execute(
                "UPDATE units SET state = 'pending', lease_phone = NULL, tries = tries - 1 WHERE unit_id = ?",
                (lease.unit_id,),
            )

    def reused(self, unit: str, phone: str, outcome: str, passed: bool, source: str) -> None:
        """A unit finished in another run whose record this run reuses (`--retry-from`)."""
        with self._tx() as db:
            db.execute(
                "UPDATE units SET state = 'done', final_phone = ?, outcome = ?, passed = ?, reason = ? "
                "WHERE unit_id = ? AND state = 'pending'",
                (phone, outcome, int(passed), f"reused from {source}", unit),
            )

    def mark_recorded(self, unit: str, phone: str, outcome: str, passed: bool) -> None:
        """A unit whose final record is already in records.jsonl (a crash came between the record and the
        journal): it ends as the record says, and is never run again."""
        state = "unfinished" if outcome == "error" else "done"
        with self._tx() as db:
            db.execute(
                "UPDATE tries SET ended = ?, kind = 'ran', reason = 'record found on resume' "
                "WHERE unit_id = ? AND ended IS NULL",
                (time.time(), unit),
            )
            db.execute(
                "UPDATE units SET state = ?, final_phone = ?, outcome = ?, passed = ?, lease_phone = NULL "
                "WHERE unit_id = ?",
                (state, phone, outcome, int(passed), unit),
            )

    def give_up(self, unit: str, reason: str) -> None:
        """A pending unit no phone can run any more (its phone quarantined or gone): unfinished."""
        with self._tx() as db:
            db.execute(
                "UPDATE units SET state = 'unfinished', outcome = 'error', passed = 0, reason = ? "
                "WHERE unit_id = ? AND state = 'pending'",
                (reason, unit),
            )

    def _end_try(self, db: sqlite3.Connection, lease: Lease, kind: TryKind, reason: str) -> None:
        db.execute(
            "UPDATE tries SET ended = ?, kind = ?, reason = ? WHERE unit_id = ? AND try = ?",
            (time.time(), kind, reason, lease.unit_id, lease.attempt),
        )

    # -- resume ----------------------------------------------------------------------------------
    def leased(self) -> list[Lease]:
        """Units leased when the controller stopped (their try's fate is unknown)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT unit_id, task_id, repeat, tries, lease_phone FROM units WHERE state = 'leased' ORDER BY 1"
            ).fetchall()
        return [Lease(uid, task, rep, tries, phone or "") for uid, task, rep, tries, phone in rows]

    def interrupted(self, lease: Lease, reason: str) -> None:
        """A try cut short by the controller stopping: kept as an `interrupted` try, the unit queued again."""
        with self._tx() as db:
            self._end_try(db, lease, "interrupted", reason)
            db.execute("UPDATE units SET state = 'pending', lease_phone = NULL WHERE unit_id = ?", (lease.unit_id,))

    def requeue_unfinished(self) -> int:
        """Units left unfinished (their phones lost or quarantined) go back on the queue; their tries are kept,
        so the next try's record supersedes the unit's error record: by its higher attempt number, or, for a unit
        that never ran (its placeholder holds attempt 1, as its first try does), as the later line of that attempt."""
        with self._tx() as db:
            return db.execute(
                "UPDATE units SET state = 'pending', outcome = NULL, passed = NULL, reason = NULL "
                "WHERE state = 'unfinished'"
            ).rowcount

    # -- reading -----------------------------------------------------------------------------------
    def units(self, state: UnitState | None = None) -> list[UnitRow]:
        """Units (of one state, or all), in priority order."""
        sql = ("SELECT unit_id, task_id, pin, repeat, state, tries, lease_phone, final_phone, outcome, passed, reason "
               "FROM units")
        args: tuple[str, ...] = ()
        if state is not None:
            sql += " WHERE state = ?"
            args = (state,)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY priority, unit_id", args).fetchall()
        return [
            UnitRow(r[0], r[1], r[2], r[3], cast(UnitState, r[4]), r[5], r[6], r[7], r[8],
                    None if r[9] is None else bool(r[9]), r[10])
            for r in rows
        ]

    def counts(self) -> dict[str, int]:
        """Units per state."""
        with self._lock:
            found = dict(self._db.execute("SELECT state, count(*) FROM units GROUP BY 1").fetchall())
        return {s: int(found.get(s, 0)) for s in ("pending", "leased", "done", "unfinished")}

    def exhausted(self, max_tries: int) -> int:
        """Unfinished units that used every try (each ended in an infrastructure error): resuming them is
        trying a failing farm again, unlike units a stop, a deadline or a lost phone left short."""
        with self._lock:
            row = self._db.execute(
                "SELECT count(*) FROM units WHERE state = 'unfinished' AND tries >= ?", (max_tries,)
            ).fetchone()
        return int(row[0])

    def tries_of(self, unit: str) -> list[tuple[int, str, str | None, str | None]]:
        """(try, phone, kind, reason) of one unit, in order."""
        with self._lock:
            return list(self._db.execute(
                "SELECT try, phone, kind, reason FROM tries WHERE unit_id = ? ORDER BY try", (unit,)
            ).fetchall())
