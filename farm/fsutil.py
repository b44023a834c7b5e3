"""Small file-system helpers: atomic writes and refusal to overwrite."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from farm.errors import FarmError


def _write_temp(path: Path, text: str, encoding: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding=encoding, newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def atomic_write_text(path: Path, text: str, *, encoding: str = "utf-8") -> None:
    """Write `text` to `path` through a temp file and rename, so readers never see half a file."""
    tmp = _write_temp(path, text, encoding)
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
    tmp = _write_temp(path, text, encoding)
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise FarmError(
            f"{path}: {what} already exists", hint="choose another path; results are never overwritten"
        ) from None
    finally:
        Path(tmp).unlink(missing_ok=True)
