"""Small file-system helpers: atomic writes and refusal to overwrite."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from farm.errors import FarmError


def atomic_write_text(path: Path, text: str, *, encoding: str = "utf-8") -> None:
    """Write `text` to `path` through a temp file and rename, so readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding=encoding, newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def create_new_text(path: Path, text: str, *, what: str = "file") -> None:
    """Write a file that must not exist yet; refuse (FarmError) instead of overwriting."""
    if path.exists():
        raise FarmError(f"{path}: {what} already exists", hint="choose another path; results are never overwritten")
    atomic_write_text(path, text)
