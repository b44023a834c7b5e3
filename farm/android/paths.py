"""Where a run keeps each phone's pulled tree."""

from __future__ import annotations

import re
from pathlib import Path

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def sanitise_serial(serial: str) -> str:
    """A serial usable as one path component: `127.0.0.1:5555` → `127.0.0.1_5555`."""
    cleaned = _UNSAFE.sub("_", serial).strip(".")
    return cleaned or "device"


def phone_dir(run_dir: Path, serial: str) -> Path:
    """`runs/<id>/android/<serial>/`."""
    return run_dir / "android" / sanitise_serial(serial)


def raw_dir(run_dir: Path, serial: str, split: str) -> Path:
    """`runs/<id>/android/<serial>/<split>/raw/`: the phone's `eval/<run>/` tree."""
    return phone_dir(run_dir, serial) / split / "raw"
