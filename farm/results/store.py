"""The run store: the one way into a run directory for every lane.

A run is `runs/<id>/`: its manifest (`manifest.json`, written first) and its records (`records.jsonl`, one
schema for every lane). `RunStore.create` makes a new run, `RunStore.join` adds a lane to a run that may
already hold other lanes, and `RunStore.append` is the only writer of `records.jsonl`: append-only, each
line whole and fsync'd, under an exclusive lock so two lanes appending at once never interleave. A unit
recorded again gets a superseding line (`supersede`); nothing is ever rewritten. The run-folder layout is
written here once, one function per path.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from farm import manifest as mf
from farm.errors import FarmError
from farm.fsutil import write_all
from farm.results.record import Record

RECORDS_FILE = "records.jsonl"
"""Every lane's records of a run, relative to the run directory."""
_RUNS_LOCK = ".runs.lock"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_UNSAFE_RUN = re.compile(r"[^A-Za-z0-9._-]+")


# The run-folder layout: one function per path.


def records_path(run_dir: Path) -> Path:
    """`runs/<id>/records.jsonl`."""
    return run_dir / RECORDS_FILE


def sanitise_serial(serial: str) -> str:
    """A serial usable as one path component: `127.0.0.1:5555` → `127.0.0.1_5555`."""
    cleaned = _UNSAFE.sub("_", serial).strip(".")
    return cleaned or "device"


def unit_slug(unit_id: str) -> str:
    """A unit id as one path component (`task@serial#2` → `task_serial_2`)."""
    return _UNSAFE_RUN.sub("_", unit_id).strip("_")


def phone_dir(run_dir: Path, serial: str) -> Path:
    """`runs/<id>/android/<serial>/`: everything pulled from one phone."""
    return run_dir / "android" / sanitise_serial(serial)


def try_dir(run_dir: Path, serial: str, unit_id: str, attempt: int) -> Path:
    """`runs/<id>/android/<serial>/units/<unit>.try<n>/`: one try's eval tree (a batch's is named after its
    first unit)."""
    return phone_dir(run_dir, serial) / "units" / f"{unit_slug(unit_id)}.try{attempt}"


def pulled_dir(run_dir: Path, serial: str, split: str) -> Path:
    """`runs/<id>/android/<serial>/<split>/raw/`: a phone's `eval/<run>/` tree fetched by `farm pull`."""
    return phone_dir(run_dir, serial) / split / "raw"


def is_run_dir(path: Path) -> bool:
    """A directory holding a manifest or records."""
    return path.is_dir() and (mf.manifest_path(path).is_file() or records_path(path).is_file())


@contextmanager
def _flock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _first_manifest(run_dir: Path, manifest: mf.Manifest) -> None:
    """Write a new run's manifest; when that fails (a full disk) the directory goes again if it is still empty, so
    it does not stand in the way of the same run id as a directory that is not a run."""
    try:
        mf.save(run_dir, manifest)
    except BaseException:
        with contextlib.suppress(OSError):
            run_dir.rmdir()
        raise


@dataclass(frozen=True)
class RunStore:
    """One run directory: its manifest and its records."""

    run_dir: Path

    @property
    def records(self) -> Path:
        """Its `records.jsonl`."""
        return records_path(self.run_dir)

    # Opening a run.

    @classmethod
    def create(cls, runs_dir: Path, manifest: mf.Manifest) -> RunStore:
        """Make `runs/<id>/` and write its manifest first; an existing run directory is refused."""
        with _flock(runs_dir / _RUNS_LOCK):
            run_dir = runs_dir / manifest.run_id
            try:
                run_dir.mkdir(exist_ok=False)
            except FileExistsError:
                raise FarmError(f"{run_dir}: run directory already exists",
                                hint="pass a new --run; runs are never overwritten") from None
            _first_manifest(run_dir, manifest)
        return cls(run_dir)

    @classmethod
    def join(cls, runs_dir: Path, run_id: str, entry: mf.LaneEntry,
             new: Callable[[], mf.Manifest] | None = None) -> tuple[RunStore, bool]:
        """Add `entry`'s lane to run `run_id` (or extend its entry: see `farm.manifest.add_lane`), creating the run
        (its manifest from `new`, else a plain one) when there is none; returns the store and whether it was
        created. Every record already there stays.

        Creating and joining take one lock, so two lanes starting the same run at once make one manifest
        holding both. A directory that exists but holds no manifest is refused: it is not a run.
        """
        with _flock(runs_dir / _RUNS_LOCK):
            run_dir = runs_dir / run_id
            created = not mf.manifest_path(run_dir).exists()
            if created:
                if run_dir.exists() and any(run_dir.iterdir()):
                    raise FarmError(f"{run_dir}: exists but has no manifest.json",
                                    hint="pass a run directory made by farm, or a new --run")
                manifest = new() if new is not None else mf.Manifest(
                    run_id=run_id, created_at=mf.utc_now(), code=mf.code_fingerprint())
                if manifest.run_id != run_id:
                    raise ValueError(f"manifest of run {manifest.run_id!r} offered for run {run_id!r}")
                run_dir.mkdir(parents=True, exist_ok=True)
                _first_manifest(run_dir, manifest)
            store = cls(run_dir)
            store.add_lane(entry)
        return store, created

    # The manifest.

    def manifest(self) -> mf.Manifest:
        return mf.load(self.run_dir)

    def update(self, change: Callable[[mf.Manifest], None]) -> mf.Manifest:
        """Change the manifest under its lock (see `farm.manifest.update`)."""
        return mf.update(self.run_dir, change)

    def add_lane(self, entry: mf.LaneEntry) -> mf.Manifest:
        """Add (or extend) the lane's entry."""
        return mf.add_lane(self.run_dir, entry)

    # Writing records.

    def append(self, records: Iterable[Record]) -> int:
        """Append records (see `append_records`); returns the count."""
        return append_records(self.records, records)

    def append_new(self, records: Iterable[Record]) -> tuple[int, int]:
        """Append the records whose attempt is not in the run yet; returns (appended, left out)."""
        with _flock(self._lock_path()):
            fresh, dropped = new_records(self.records, records)
            return _append_unlocked(self.records, fresh), dropped

    def supersede(self, records: Iterable[Record]) -> int:
        """Append each record that differs from the latest line of its attempt (or has none): a re-recorded
        unit gets one superseding line, an unchanged one none. Returns how many were appended."""
        with _flock(self._lock_path()):
            latest: dict[tuple[str, str, str, str, str, int, int], str] = {}
            if self.records.is_file():
                for rec in iter_records(self.records, ReadProblems()):
                    latest[rec.attempt_key()] = rec.model_dump_json()
            changed = [r for r in records if latest.get(r.attempt_key()) != r.model_dump_json()]
            return _append_unlocked(self.records, changed)

    def _lock_path(self) -> Path:
        return self.run_dir / ".records.lock"

    # Reading records.

    def iter_records(self, problems: ReadProblems | None = None) -> Iterator[Record]:
        """Its records in file order (see `iter_records`); none when the run has no record file yet."""
        if self.records.is_file():
            yield from iter_records(self.records, problems)


def append_records(path: Path, records: Iterable[Record]) -> int:
    """Append records (one JSON line each) and fsync, under the run's record lock; never rewrites what is
    there. Returns the count.

    A file whose last line was torn by a crash (no newline at the end) gets a newline first, so the
    torn line stays one bad line and the new records stay whole. A write that fails (a full disk) leaves the file
    as it was: whole lines or nothing.
    """
    with _flock(path.parent / ".records.lock"):
        return _append_unlocked(path, records)


def _append_unlocked(path: Path, records: Iterable[Record]) -> int:
    lines = [r.model_dump_json() + "\n" for r in records]
    if not lines:
        return 0
    data = "".join(lines).encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    # The only place `records.jsonl` is opened for writing: unbuffered, so a failed write leaves nothing in a
    # buffer that closing the file would write after the cut below.
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o666)
    try:
        size = os.fstat(fd).st_size
        if size > 0 and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        try:
            write_all(fd, data)
            os.fsync(fd)
        except OSError:
            # A full disk (ENOSPC) may take part of the lines, or fail only at the fsync: cut the file back to
            # where they began, so no line is ever left half-written. The caller sees the error.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
                os.fsync(fd)
            raise
    finally:
        os.close(fd)
    return len(lines)


@dataclass
class ReadProblems:
    """Lines of a record file that were skipped, each named `file:line: what`."""

    torn: list[str] = field(default_factory=list)
    """The last line, cut short by a crash mid-append (reported, skipped)."""
    corrupt: list[str] = field(default_factory=list)
    """Invalid lines elsewhere (a torn append that later appends followed), skipped when the caller collects them."""


def iter_records(path: Path, problems: ReadProblems | None = None) -> Iterator[Record]:
    """Read records one by one.

    A torn last line (a crash mid-append: invalid and without a newline at the end) is skipped and
    listed in `problems`. A corrupt line anywhere else — not JSON, not UTF-8, nested too deeply, a field
    missing or out of the record's range — is a FarmError naming the file and line, unless the caller
    collects `problems`, which then lists it and reads on (the reports do the same).
    """
    try:
        # Bytes, decoded by the validator line by line: a line that is not UTF-8 is one corrupt line, not
        # a UnicodeDecodeError out of the middle of the file.
        handle = path.open("rb")
    except OSError as exc:
        raise FarmError(f"{path}: cannot read records ({exc.strerror})", hint="is this a run directory?") from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                # pydantic's JSON parser stops at a fixed nesting depth with a ValidationError; it never
                # recurses into the stack the way `json.loads` does.
                yield Record.model_validate_json(line)
            except ValidationError as exc:
                if not line.endswith(b"\n"):
                    if problems is not None:
                        problems.torn.append(f"{path}:{number}: torn last line (a crash mid-append), skipped")
                    continue
                if problems is not None:
                    problems.corrupt.append(f"{path}:{number}: corrupt record line skipped")
                    continue
                problem = exc.errors()[0]
                where = ".".join(str(p) for p in problem["loc"])
                raise FarmError(
                    f"{path}:{number}: corrupt record ({where}: {problem['msg']})",
                    hint="records are append-only; move the damaged line out of the file",
                ) from None


def current_records(records: Iterable[Record]) -> list[Record]:
    """Each attempt once: a superseded line gives way to the later line of its attempt, which keeps its own place."""
    by_attempt: dict[tuple[str, str, str, str, str, int, int], Record] = {}
    for rec in records:
        by_attempt.pop(rec.attempt_key(), None)
        by_attempt[rec.attempt_key()] = rec
    return list(by_attempt.values())


def read_records(path: Path, problems: ReadProblems | None = None) -> list[Record]:
    """All records of a file (see `iter_records`)."""
    return list(iter_records(path, problems))


def new_records(path: Path, records: Iterable[Record]) -> tuple[list[Record], int]:
    """The records whose attempt key is not in the file yet (and not repeated among them); the count left out."""
    seen = {r.attempt_key() for r in iter_records(path, ReadProblems())} if path.is_file() else set()
    fresh: list[Record] = []
    dropped = 0
    for r in records:
        key = r.attempt_key()
        if key in seen:
            dropped += 1
            continue
        seen.add(key)
        fresh.append(r)
    return fresh, dropped
