"""Running out of disk: which filesystem a path is on, what it has free, and the one line a full disk gives.

A full disk is an infrastructure stop, not a bug: whoever writes (records, the sweep's journal, pulled trees,
reports) lets the error travel up, `is_disk_full` recognises it whatever wrapped it (an `OSError` with ENOSPC,
SQLite's "database or disk is full", DuckDB's I/O error), and the command says `DiskFull`'s one line: the
filesystem, what it has free now, what is needed and how to go on. A sweep also refuses to start below a free-space
floor (`check_free_space`) and keeps a little space in hand while its units run (`SpaceReserve`), so that at a stop
its manifest and journal can still be written.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import sqlite3
from pathlib import Path

from farm.errors import FarmError
from farm.exits import EXIT_UNFINISHED
from farm.fsutil import write_all

MB = 1 << 20
"""A megabyte as `df -h` and the pull caps count it."""
FREE_SPACE_FLOOR_MB = 200.0
"""Default of farm.yaml `min_free_mb`: a sweep or run does not start with less free on its runs directory's
filesystem (a night's trees and reports need room; starting into a nearly full disk only stops later)."""
RESERVE_FILE = ".space-reserve"
"""Held in a run directory while its units run (see `SpaceReserve`)."""
RESERVE_BYTES = 2 * MB
"""Enough for the writes of a stop on a full disk: the manifest, the journal's last commits and its checkpoint."""
NEARLY_FULL_BYTES = 1 * MB
"""Below this much free, a try that failed or whose pull refused files is taken for a full disk (an executor
that caught the ENOSPC itself says so only in words)."""

_MARKERS = (os.strerror(errno.ENOSPC).lower(), "database or disk is full", "[errno 28]")
"""How a disk-full error reads once an executor, SQLite or DuckDB has turned it into text."""
_OCTAL = re.compile(r"\\([0-7]{3})")


class DiskFull(FarmError):
    """A write failed for want of space: one line naming the filesystem, its free space now, what is needed and how
    to go on (`then`). A sweep exits `EXIT_UNFINISHED` (its units are kept; resume it), `farm report` 2."""

    def __init__(self, path: Path, *, needed: int | None, then: str, what: str = "",
                 exit_code: int = EXIT_UNFINISHED) -> None:
        self.path = path
        self.filesystem = filesystem_of(path)
        self.free = free_bytes(path)
        self.needed = needed
        self.exit_code = exit_code
        need = f"; {what or 'it'} needs at least {size_text(needed)}" if needed else ""
        super().__init__(f"disk full on {self.filesystem}: {size_text(self.free)} free for {path}{need}", hint=then)


def says_disk_full(text: str) -> bool:
    """Whether a message (an executor's infrastructure reason, a pull's refusal) tells of a full disk."""
    low = text.lower()
    return any(marker in low for marker in _MARKERS)


def is_disk_full(exc: BaseException) -> bool:
    """Whether `exc`, or the error it was raised from or while handling, is a full disk (ENOSPC, SQLITE_FULL,
    DuckDB's or anyone's error quoting one)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, DiskFull):
            return True
        if isinstance(current, OSError):
            if current.errno == errno.ENOSPC:
                return True
        elif isinstance(current, sqlite3.Error) and getattr(current, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
            return True
        elif says_disk_full(str(current)):
            # DuckDB's IOException and errors that quote one carry the ENOSPC only in their text.
            return True
        current = current.__cause__ if current.__cause__ is not None else current.__context__
    return False


def existing(path: Path) -> Path:
    """`path`, or its nearest ancestor that exists (a runs directory not made yet is on its parent's filesystem)."""
    current = Path(os.path.realpath(path))
    while not current.exists() and current != current.parent:
        current = current.parent
    return current


def mount_point(path: Path) -> Path:
    """The mount point of the filesystem holding `path` (walking up while the device stays the same)."""
    current = existing(path)
    dev = current.stat().st_dev
    while current != current.parent and not os.path.ismount(current):
        parent = current.parent
        if parent.stat().st_dev != dev:
            break
        current = parent
    return current


def _mount_type(point: Path) -> str | None:
    """The filesystem type /proc/self/mounts gives for a mount point (the last mount there wins); None elsewhere."""
    found = None
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as mounts:
            for line in mounts:
                fields = line.split()
                # Spaces and the like in a mount point are octal escapes (`\040`).
                if len(fields) >= 3 and _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), fields[1]) == str(point):
                    found = fields[2]
    except OSError:
        return None
    return found


def filesystem_of(path: Path) -> str:
    """The filesystem as one names it to a person: its mount point, and its type when known (`/mnt/runs (ext4)`)."""
    try:
        point = mount_point(path)
    except OSError:
        return str(path)
    kind = _mount_type(point)
    return f"{point} ({kind})" if kind else str(point)


def free_bytes(path: Path) -> int:
    """Bytes free to this user on the filesystem holding `path` (0 when it cannot be asked)."""
    try:
        return shutil.disk_usage(existing(path)).free
    except OSError:
        return 0


def size_text(n: int) -> str:
    """`0 B`, `812 KB`, `199.5 MB`, `3.2 GB` (powers of 1024, as `df -h` counts)."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KB", "MB", "GB", "TB"):
        value /= 1024
        if value < 1024 or unit == "TB":
            return f"{value:.0f} {unit}" if value >= 100 or unit == "KB" else f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


def floor_bytes(floor_mb: float) -> int:
    """A free-space floor in MB as bytes."""
    return int(floor_mb * MB)


def check_free_space(runs_dir: Path, floor_mb: float, *, what: str) -> None:
    """The pre-flight: a FarmError (exit 2, nothing written) when the runs directory's filesystem has less than
    `floor_mb` free."""
    need = floor_bytes(floor_mb)
    free = free_bytes(runs_dir)
    if free < need:
        raise FarmError(
            f"not enough free space on {filesystem_of(runs_dir)}: {size_text(free)} free for {runs_dir}; {what} needs "
            f"at least {size_text(need)}",
            hint="free space there, or lower min_free_mb in farm.yaml")


class SpaceReserve:
    """A file of `RESERVE_BYTES` held in a run directory while its units run. A full disk then stops the run with
    room in hand: the reserve is given back first, so the writes of the stop itself (the manifest's `interrupted`,
    the journal's last commit) find space even when the disk filled to the last block."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def hold(cls, run_dir: Path, size: int = RESERVE_BYTES) -> SpaceReserve:
        """Allocate the reserve (OSError ENOSPC when even that does not fit)."""
        path = run_dir / RESERVE_FILE
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            try:
                # Blocks really allocated, not a sparse file: giving them back is what frees space.
                os.posix_fallocate(fd, 0, size)
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                    raise
                write_all(fd, bytes(size))
        except BaseException:
            os.close(fd)
            path.unlink(missing_ok=True)
            raise
        os.close(fd)
        return cls(path)

    def release(self) -> None:
        """Give the space back (idempotent)."""
        try:
            self.path.unlink(missing_ok=True)
        except OSError:
            pass
