"""Small file-system helpers: atomic writes and refusal to overwrite."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from farm.errors import FarmError


def new_file_mode() -> int:
    """The mode a newly created file gets under the process's umask (0o666 & ~umask)."""
    try:
        # Linux shows the umask without changing it: no other thread ever sees a different one.
        with open("/proc/self/status", encoding="ascii") as status:
            mask = next(int(line.split()[1], 8) for line in status if line.startswith("Umask:"))
    except (OSError, StopIteration, ValueError, IndexError):
        mask = os.umask(0o022)  # elsewhere reading it means setting it: set straight back
        os.umask(mask)
    return 0o666 & ~mask


def write_all(fd: int, data: bytes) -> None:
    """Write all of `data` to `fd` (one os.write may take part of it), unbuffered: when a write fails (a full
    disk), nothing is left in a buffer for a later flush to write after the caller has cleaned up."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _write_temp(path: Path, data: bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        try:
            # mkstemp makes the file 0600; the result gets the mode any new file would (a CI artifact server
            # running as another user must be able to read the reports).
            os.fchmod(fd, new_file_mode())
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        # A full disk ends here too: the half-written temp file goes, the target is untouched.
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def atomic_write_text(path: Path, text: str, *, encoding: str = "utf-8") -> None:
    """Write `text` to `path` through a temp file and rename, so readers never see half a file."""
    atomic_write_bytes(path, text.encode(encoding))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temp file and rename, so readers never see half a file."""
    tmp = _write_temp(path, data)
    try:
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def create_new_text(path: Path, text: str, *, what: str = "file", encoding: str = "utf-8") -> None:
    """Write a whole file that must not exist yet; refuse (FarmError) instead of overwriting.

    The content appears at once (hard link of a complete temp file), and a file created
    concurrently by someone else is never replaced.
    """
    if path.exists():
        raise FarmError(f"{path}: {what} already exists", hint="choose another path; results are never overwritten")
    tmp = _write_temp(path, text.encode(encoding))
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise FarmError(
            f"{path}: {what} already exists", hint="choose another path; results are never overwritten"
        ) from None
    finally:
        Path(tmp).unlink(missing_ok=True)
