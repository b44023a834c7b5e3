"""Directories named on the command line (or in farm.yaml), checked before anything is written.

A command that writes results finds out that its output directory is a file, sits under /proc or
cannot be created only when it first writes — after phones were reserved or a lock was taken. These
checks run first and say which flag is wrong, on one line.

Where those directories are is decided here too, once for every command (`dir_setting`): `--runs-dir` /
`--tasks-dir`, else farm.yaml's `runs_dir` / `tasks_dir`, else `runs` / `tasks`. `farm config show` prints it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

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


DIR_FLAGS = {"runs_dir": "--runs-dir", "tasks_dir": "--tasks-dir"}
"""The directory settings of farm.yaml and the flag that overrides each."""
DirKey = Literal["runs_dir", "tasks_dir"]


@dataclass(frozen=True)
class DirSetting:
    """One directory setting as a command uses it: its value and where the value came from."""

    key: DirKey
    """`runs_dir` or `tasks_dir`."""
    value: Path
    """The directory (relative paths are relative to the working directory)."""
    source: Literal["flag", "farm.yaml", "default"]
    """The flag won, else farm.yaml set it, else the default."""
    config: Path | None
    """The farm.yaml read (`--config`, else ./farm.yaml when present), or None."""

    @property
    def flag(self) -> str:
        """The flag that overrides it (`--runs-dir`)."""
        return DIR_FLAGS[self.key]

    @property
    def origin(self) -> str:
        """Where the value came from, for a person: `--runs-dir`, the farm.yaml path, or `default`."""
        if self.source == "flag":
            return self.flag
        return str(self.config) if self.source == "farm.yaml" else "default"

    def what(self) -> str:
        """How a message names it: `--runs-dir`, `farm.yaml: runs_dir`, or `--runs-dir (default)`."""
        if self.source == "farm.yaml":
            return f"{self.config}: {self.key}"
        return self.flag if self.source == "flag" else f"{self.flag} (default)"


def dir_setting(key: DirKey, flag_value: Path | None, config: Path | None) -> DirSetting:
    """The one resolution of `runs_dir` / `tasks_dir` for every command: the flag (`--runs-dir`, `--tasks-dir`)
    when given, else the value farm.yaml sets (`--config FILE`, else ./farm.yaml when it exists), else the
    default (`runs`, `tasks`). A farm.yaml that does not parse is a one-line FarmError naming it."""
    # Imported here: `farm --help` builds every command's options without pydantic (farm.config needs it).
    from farm.config import FarmConfig, config_file, load_config

    found = config_file(config)
    if flag_value is not None:
        return DirSetting(key, flag_value, "flag", found)
    cfg = load_config(found) if found is not None else FarmConfig()
    source: Literal["farm.yaml", "default"] = "farm.yaml" if key in cfg.model_fields_set else "default"
    return DirSetting(key, Path(getattr(cfg, key)), source, found)


def runs_dir_setting(runs_dir: Path | None, config: Path | None) -> DirSetting:
    """`runs_dir`: `--runs-dir`, else farm.yaml's `runs_dir`, else `runs` (see `dir_setting`)."""
    return dir_setting("runs_dir", runs_dir, config)


def tasks_dir_setting(tasks_dir: Path | None, config: Path | None) -> DirSetting:
    """`tasks_dir`: `--tasks-dir`, else farm.yaml's `tasks_dir`, else `tasks` (see `dir_setting`)."""
    return dir_setting("tasks_dir", tasks_dir, config)
