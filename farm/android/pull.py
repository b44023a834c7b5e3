"""Pull a phone's `eval/<run>/` tree into `runs/<id>/android/<serial>/<split>/raw/`, safely.

Every entry name is checked before anything is written: a name that is absolute, contains a path
separator or `..`, a symlink (never followed), a special file, or a file over the size cap is
refused and listed; nothing is ever written outside the destination directory.
"""

from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from farm.config import PullLimits

if TYPE_CHECKING:
    from adbutils import AdbDevice

_MB = 1024 * 1024


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
    """Copy `remote` (a directory) into `dest` (created; must not exist yet or be empty)."""
    from adbutils import AdbError

    result = PullResult()
    try:
        top = device.sync.stat(remote)
    except (AdbError, OSError) as exc:
        result.found = False
        result.refused.append(f"{remote}: cannot stat ({exc})")
        return result
    if not stat.S_ISDIR(top.mode):
        result.found = False
        return result
    dest.mkdir(parents=True, exist_ok=True)
    max_file = int(limits.max_file_mb * _MB)
    max_total = int(limits.max_total_mb * _MB)
    stack: list[tuple[str, Path]] = [(remote.rstrip("/"), dest)]
    while stack:
        rdir, ldir = stack.pop()
        try:
            entries = list(device.sync.iter_directory(rdir))
        except (AdbError, OSError) as exc:
            result.refused.append(f"{rdir}: cannot list ({exc})")
            continue
        for entry in entries:
            name = entry.path
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
            got = _pull_file(device, rpath, local, max_file)
            if isinstance(got, str):
                result.refused.append(f"{rpath!r}: {got}")
                continue
            result.files += 1
            result.bytes += got
    return result


def _pull_file(device: AdbDevice, rpath: str, local: Path, max_file: int) -> int | str:
    from adbutils import AdbError

    fd, tmp = tempfile.mkstemp(prefix=".pull.", dir=local.parent)
    size = 0
    try:
        with os.fdopen(fd, "wb") as handle:
            for chunk in device.sync.iter_content(rpath):
                size += len(chunk)
                if size > max_file:
                    raise ValueError("file grew past the size cap")
                handle.write(chunk)
        if local.exists():
            raise ValueError("already pulled (never overwritten)")
        os.replace(tmp, local)
        return size
    except (AdbError, OSError, ValueError) as exc:
        Path(tmp).unlink(missing_ok=True)
        return str(exc) or type(exc).__name__
