"""The sweep lock: at most one `farm sweep` per farm, and a refused sweep says who holds the lock.

The lock is an exclusive `flock` on `<runs_dir>/.sweep.lock`; while it is held the file holds a `LockHolder` as JSON.

- **No stale locks.** The kernel drops an flock when the last descriptor of its open file closes, which includes a
  crash or SIGKILL of the holder. A leftover file therefore never blocks anyone, and nothing has to guess whether a
  recorded pid is still alive (pids get reused, and may belong to another host).
- **The file is never deleted**, not even on release. A lock belongs to the inode, not the name. If a releasing sweep
  unlinked the file while a second sweep had already opened it, the second would lock the orphaned inode while a
  third created a new file under the same name and locked that: two sweeps, each holding "the" lock. An empty file
  left behind costs nothing.
- **The text is information, the flock is the truth.** The text is only read by a sweep that was refused, so it names
  the current holder (every holder rewrites it right after locking). It is emptied on release, so a record found in
  a lock file nobody holds was left by a sweep that died. A refused sweep may race a holder that has locked but not
  yet written; it reads again a little later, and in the end reports a holder without details, never a wrong one.
- **Scope.** The descriptor is close-on-exec, so adb and other programs the sweep starts never inherit the lock. A
  child made by a bare `fork` does inherit it and keeps the farm locked while it lives, which is what one wants of a
  child still working for the sweep. On a network file system the lock holds across hosts only where the server
  supports locks; keep `runs_dir` on the controller's own disk.
"""

from __future__ import annotations

import fcntl
import getpass
import os
import socket
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from farm.errors import FarmError
from farm.manifest import utc_now
from farm.redact import redact_argv

LOCK_NAME = ".sweep.lock"
# A holder record is a few hundred bytes; anything far larger is not one of ours.
_MAX_HOLDER_BYTES = 64 * 1024
# A refused sweep may have raced a holder that has locked but not yet written its record: look a few times.
_READ_ATTEMPTS = 5
_READ_PAUSE_S = 0.02


class LockHolder(BaseModel):
    """The sweep holding the farm's lock, as written into the lock file while it holds it."""

    # Extra keys are ignored rather than refused: a refused sweep of an older version should still name a newer holder.
    model_config = ConfigDict(extra="ignore")

    pid: int = Field(ge=1)
    """Process id of the holding sweep, on `hostname`."""
    hostname: str
    """Host the holding sweep runs on."""
    user: str
    """User the holding sweep runs as (the numeric uid when it has no name)."""
    run_id: str
    """Run id of the holding sweep."""
    label: str | None = None
    """The holding sweep's `--label` (e.g. `nightly`), if any."""
    started_at: str
    """ISO-8601 UTC time the lock was taken."""
    command: list[str] = Field(default_factory=list)
    """Command line of the holding sweep."""


def lock_path(runs_dir: Path) -> Path:
    """The farm's sweep lock file: `<runs_dir>/.sweep.lock`."""
    return runs_dir / LOCK_NAME


def _user() -> str:
    # getpass falls back to the password database, which a container may lack for the current uid.
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def current_holder(*, run_id: str, label: str | None, command: Sequence[str] | None = None) -> LockHolder:
    """A `LockHolder` describing this process (command line: `command`, else `sys.argv`)."""
    return LockHolder(
        pid=os.getpid(),
        hostname=socket.gethostname(),
        user=_user(),
        run_id=run_id,
        label=label,
        started_at=utc_now(),
        command=redact_argv(list(sys.argv if command is None else command)),
    )


def _parse_holder(data: bytes) -> LockHolder | None:
    if not data.strip() or len(data) > _MAX_HOLDER_BYTES:
        return None
    try:
        return LockHolder.model_validate_json(data)
    except ValidationError:  # also raised for invalid JSON and for bytes that are not UTF-8
        return None


def read_holder(path: Path) -> LockHolder | None:
    """The holder recorded in a lock file; None when the file is missing, empty, unreadable or garbled.

    This says nothing about whether the lock is held: only a failed `flock` tells that (see `farm_lock`).
    """
    try:
        with path.open("rb") as handle:
            data = handle.read(_MAX_HOLDER_BYTES + 1)
    except OSError:
        return None
    return _parse_holder(data)


def _read_fd_holder(fd: int) -> LockHolder | None:
    for attempt in range(_READ_ATTEMPTS):
        if attempt:
            time.sleep(_READ_PAUSE_S)
        try:
            holder = _parse_holder(os.pread(fd, _MAX_HOLDER_BYTES + 1, 0))
        except OSError:
            return None
        if holder is not None:
            return holder
    return None


def _since(started_at: str) -> str:
    # Seconds are precise enough for a person deciding whether to wait.
    head, dot, _ = started_at.partition(".")
    return f"{head}Z" if dot and started_at.endswith("Z") else started_at


def _refusal(path: Path, holder: LockHolder | None) -> FarmError:
    if holder is None:
        return FarmError(
            f"{path}: a sweep is already running (its holder record is missing or unreadable)",
            hint=f"wait for it, or find it with `fuser -v {path}` and stop it",
        )
    where = "" if holder.hostname == socket.gethostname() else f" on {holder.hostname}"
    return FarmError(
        f"{path}: a sweep is already running "
        f"(run {holder.run_id}, pid {holder.pid} on {holder.hostname}, since {_since(holder.started_at)})",
        hint=f"wait for it, or stop it (kill {holder.pid}{where})",
    )


def _open_lock_file(path: Path) -> int:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # No O_TRUNC: a sweep that is about to be refused must not wipe the holder's record.
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise FarmError(
            f"{path}: cannot open the sweep lock ({exc.strerror})", hint="check the runs directory and its permissions"
        ) from None


@contextmanager
def farm_lock(
    path: Path, *, run_id: str, label: str | None, command: Sequence[str] | None = None
) -> Iterator[LockHolder]:
    """Hold the farm's sweep lock for the `with` block; yield the `LockHolder` written into the lock file.

    `path` is normally `lock_path(runs_dir)`; it and its directory are created when missing. The lock is taken
    without waiting: when another sweep (another process, or another `farm_lock` in this one) holds it, FarmError
    (exit status 2) names that holder's run, pid, host and start time. The lock is released, and the file emptied
    but kept, when the block ends, normally or by an exception.
    """
    fd = _open_lock_file(path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _refusal(path, _read_fd_holder(fd)) from None
        except OSError as exc:  # e.g. ENOLCK on a network file system without lock support
            raise FarmError(
                f"{path}: cannot lock the sweep lock ({exc.strerror})", hint="keep runs_dir on a local file system"
            ) from None
        holder = current_holder(run_id=run_id, label=label, command=command)
        try:
            # Rewrite in place, never by rename: the lock is on this inode, and a renamed-in file would be unlocked.
            os.ftruncate(fd, 0)
            os.pwrite(fd, (holder.model_dump_json() + "\n").encode(), 0)
        except OSError as exc:
            raise FarmError(f"{path}: cannot write the sweep lock ({exc.strerror})", hint="check free space") from None
        try:
            yield holder
        finally:
            # Empty before unlocking, so the text never names a sweep that finished; best effort, the unlock matters.
            try:
                os.ftruncate(fd, 0)
            except OSError:
                pass
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
