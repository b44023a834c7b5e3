"""Directories named on the command line (or in farm.yaml), checked before anything is written.

A command that writes results finds out that its output directory is a file, sits under /proc or
cannot be created only when it first writes — after phones were reserved or a lock was taken. These
checks run first and say which flag is wrong, on one line.
"""

from __future__ import annotations

import os
from pathlib import Path

from farm.errors import FarmError

KERNEL_ROOTS = (Path("/proc"), Path("/sys"), Path("/dev"))
"""Kernel file systems: writing results there is never meant (and /proc, /sys accept odd writes)."""


def _kernel_root(real: Path) -> Path | None:
    return next((root for root in KERNEL_ROOTS if real == root or real.is_relative_to(root)), None)


def check_output_dir(path: Path, what: str) -> Path:
    """`path` when it is a writable directory or one that can be created; else a one-line FarmError naming
    `what` (a flag such as `--runs-dir`, or `farm.yaml runs_dir`). Nothing is created."""
    real = Path(os.path.realpath(path))
    root = _kernel_root(real)
    if root is not None:
        raise FarmError(f"{what} {path}: under {root}, a kernel file system", hint="pass a directory on a disk")
    existing = real
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        where = "is a file" if existing == real else f"is under {existing}, which is a file"
        raise FarmError(f"{what} {path}: {where}, not a directory", hint=f"pass a directory to {what}")
    if not os.access(existing, os.W_OK | os.X_OK):
        where = "is not writable" if existing == real else f"cannot be created: {existing} is not writable"
        raise FarmError(f"{what} {path}: {where}", hint=f"pass a directory you can write to {what}")
    return path


def check_input_dir(path: Path, what: str, *, hint: str | None = None) -> Path:
    """`path` when it is a readable directory; else a one-line FarmError naming `what`."""
    if not path.exists():
        raise FarmError(f"{what} {path}: no such directory", hint=hint or f"pass an existing directory to {what}")
    if not path.is_dir():
        raise FarmError(f"{what} {path}: not a directory", hint=hint or f"pass a directory to {what}")
    if not os.access(path, os.R_OK | os.X_OK):
        raise FarmError(f"{what} {path}: not readable", hint=hint or f"pass a directory you can read to {what}")
    return path
