"""Pull a phone's `eval/<run>/` tree into `runs/<id>/android/<serial>/<split>/raw/`, safely.

Every entry name is checked before anything is written: a name that is absolute, contains a path
separator or `..`, a symlink (never followed), a special file, or a file over the size cap is
refused and listed; nothing is ever written outside the destination directory.
"""

from __future__ import annotations

import os
import stat
import struct
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from farm.config import PullLimits

if TYPE_CHECKING:
    from adbutils import AdbDevice

_MB = 1024 * 1024


@dataclass(frozen=True)
class Entry:
    """A directory entry as the sync protocol reports it."""

    name: str
    mode: int
    size: int


class SyncFail(OSError):
    """The phone answered a request with FAIL (the stream stays usable)."""


class SyncSession:
    """One `sync:` stream for a whole tree (STAT, LIST, RECV, QUIT), instead of a connection per file."""

    def __init__(self, device: AdbDevice, timeout: float = 60) -> None:
        self._c = device.open_transport(timeout=timeout)
        self._c.send_command("sync:")
        self._c.check_okay()

    def _request(self, ident: bytes, path: str) -> None:
        raw = path.encode("utf-8")
        self._c.conn.sendall(ident + struct.pack("<I", len(raw)) + raw)

    def _read(self, n: int) -> bytes:
        return self._c.read_exact(n) if n else b""

    def stat(self, path: str) -> tuple[int, int]:
        """(mode, size); mode 0 when the path does not exist."""
        self._request(b"STAT", path)
        ident, mode, size, _mtime = struct.unpack("<4sIII", self._read(16))
        if ident != b"STAT":
            raise OSError(f"sync: unexpected {ident!r} answering STAT")
        return mode, size

    def list(self, path: str) -> list[Entry]:
        """Entries of a directory (including `.` and `..` as adbd sends them)."""
        self._request(b"LIST", path)
        out: list[Entry] = []
        while True:
            ident, mode, size, _mtime, namelen = struct.unpack("<4sIIII", self._read(20))
            if ident == b"DONE":
                return out
            if ident != b"DENT":
                raise OSError(f"sync: unexpected {ident!r} answering LIST")
            name = self._read(namelen).decode("utf-8", "surrogateescape")
            out.append(Entry(name, mode, size))

    def recv(self, path: str) -> Iterator[bytes]:
        """The file's bytes in chunks; the whole answer must be consumed to keep the stream in step."""
        self._request(b"RECV", path)
        while True:
            ident, length = struct.unpack("<4sI", self._read(8))
            if ident == b"DATA":
                yield self._read(length)
            elif ident == b"DONE":
                return
            elif ident == b"FAIL":
                raise SyncFail(self._read(length).decode("utf-8", "replace"))
            else:
                raise OSError(f"sync: unexpected {ident!r} answering RECV")

    def close(self) -> None:
        """QUIT and close."""
        try:
            self._c.conn.sendall(b"QUIT" + struct.pack("<I", 0))
        except OSError:
            pass
        self._c.close()


@dataclass
class PullResult:
    """What a pull fetched and what it refused."""

    files: int = 0
    bytes: int = 0
    refused: list[str] = field(default_factory=list)
    """`<device path>: why` for every refused entry."""
    found: bool = True
    """False when the remote directory does not exist."""


def refuse_reason(name: str) -> str | None:
    """Why an entry name may not be written locally, or None when it is a plain file name."""
    if not name or name in (".", ".."):
        return "empty or dot name"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "control character in name"
    if name.startswith("/") or "/" in name or "\\" in name:
        return "name contains a path separator"
    if ".." in PurePosixPath(name).parts or name.startswith(".."):
        return "name escapes the directory"
    return None


def _inside(base: Path, target: Path) -> bool:
    try:
        target.resolve().relative_to(base.resolve())
    except ValueError:
        return False
    return True


def pull_tree(device: AdbDevice, remote: str, dest: Path, limits: PullLimits) -> PullResult:
    """Copy `remote` (a directory) into `dest` (created if needed; existing files are never overwritten)."""
    from adbutils import AdbError

    result = PullResult()
    try:
        sync = SyncSession(device)
    except (AdbError, OSError) as exc:
        result.found = False
        result.refused.append(f"{remote}: cannot open a sync stream ({exc})")
        return result
    try:
        _walk(sync, remote.rstrip("/"), dest, limits, result)
    except (AdbError, OSError, struct.error) as exc:
        result.refused.append(f"{remote}: pull stopped ({exc})")
    finally:
        sync.close()
    return result


def _walk(sync: SyncSession, remote: str, dest: Path, limits: PullLimits, result: PullResult) -> None:
    mode, _size = sync.stat(remote)
    if not stat.S_ISDIR(mode):
        result.found = False
        return
    dest.mkdir(parents=True, exist_ok=True)
    max_file = int(limits.max_file_mb * _MB)
    max_total = int(limits.max_total_mb * _MB)
    stack: list[tuple[str, Path]] = [(remote, dest)]
    while stack:
        rdir, ldir = stack.pop()
        for entry in sync.list(rdir):
            name = entry.name
            if name in (".", ".."):
                continue
            rpath = f"{rdir}/{name}"
            why = refuse_reason(name)
            if why is None and stat.S_ISLNK(entry.mode):
                why = "symlink (not followed)"
            if why is None and not (stat.S_ISDIR(entry.mode) or stat.S_ISREG(entry.mode)):
                why = "not a regular file or directory"
            if why is None and stat.S_ISREG(entry.mode) and entry.size > max_file:
                why = f"file larger than {limits.max_file_mb:g} MB"
            local = ldir / name
            if why is None and not _inside(dest, local):
                why = "name escapes the directory"
            if why is not None:
                result.refused.append(f"{rpath!r}: {why}")
                continue
            if stat.S_ISDIR(entry.mode):
                local.mkdir(exist_ok=True)
                stack.append((rpath, local))
                continue
            if result.bytes + entry.size > max_total:
                result.refused.append(f"{rpath!r}: tree larger than {limits.max_total_mb:g} MB")
                continue
            got = _pull_file(sync, rpath, local, max_file)
            if isinstance(got, str):
                result.refused.append(f"{rpath!r}: {got}")
                continue
            result.files += 1
            result.bytes += got


def _pull_file(sync: SyncSession, rpath: str, local: Path, max_file: int) -> int | str:
    fd, tmp = tempfile.mkstemp(prefix=".pull.", dir=local.parent)
    size = 0
    too_big = False
    try:
        with os.fdopen(fd, "wb") as handle:
            for chunk in sync.recv(rpath):
                size += len(chunk)
                if size > max_file:
                    too_big = True  # keep reading: the stream must stay in step
                    continue
                handle.write(chunk)
        if too_big:
            raise ValueError("file grew past the size cap")
        if local.exists():
            raise ValueError("already pulled (never overwritten)")
        os.replace(tmp, local)
        return size
    except (ValueError, SyncFail) as exc:
        return str(exc) or type(exc).__name__
    finally:
        Path(tmp).unlink(missing_ok=True)
