"""The desktop batch configuration: one fixed environment per batch, filled in by the operator."""

from __future__ import annotations

import re
import stat
import unicodedata
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from farm.desktop.jsonfile import parse_model_file, real_path

# Text the example config ships with; a value that still contains one was never filled in.
PLACEHOLDER_MARKERS: tuple[str, ...] = (
    "填写",
    "实际版本",
    "实际模型",
    "替换为",
    "FILL IN",
    "FILL-IN",
    "PLACEHOLDER",
    "TODO",
)
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
MAX_REPETITIONS = 100
"""Most slots per task. The seed plans 3, then 10; a larger number is a typo, and a huge one would make a plan
of billions of slots."""


def placeholder_in(text: str) -> str | None:
    """The placeholder marker found in `text`, if any (case-insensitive)."""
    upper = text.upper()
    return next((marker for marker in PLACEHOLDER_MARKERS if marker.upper() in upper), None)


def control_character_in(text: str, *, allow: str = "") -> str | None:
    """The first control or format character of `text` (as U+XXXX) not in `allow`, if any.

    Such characters (escape sequences, bidi overrides, NUL) reach terminals and reports verbatim and can make a
    value read differently from what is stored.
    """
    for char in text:
        if char not in allow and unicodedata.category(char) in ("Cc", "Cf"):
            return f"U+{ord(char):04X}"
    return None


class DesktopConfig(BaseModel):
    """`config.json` of a batch: the exact environment every slot of the batch runs in."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    mode: Literal["native", "jev"]
    """Who decides: the main model alone (native) or Jev with handoffs to the main model (jev)."""
    execution: Literal["live", "controlled", "simulated"]
    """live: real apps and real decisions; controlled: real apps, scripted decisions; simulated: no desktop."""
    commit: str
    """Full 40-hex git commit of the plugin actually loaded (not the HEAD of some checkout)."""
    mainModel: str = Field(min_length=1)
    """Main model id and its thinking setting."""
    jevModel: str = Field(min_length=1)
    """Jev model version or service alias in jev mode; exactly `none` in native mode."""
    macOS: str = Field(min_length=1)
    """System version and language."""
    appVersions: str = Field(min_length=1)
    """Versions of Calculator, TextEdit and Chrome."""
    runtime: str = Field(min_length=1)
    """Agent runtime version or build id."""
    display: str = Field(min_length=1)
    """Number of displays, resolution, scaling, browser zoom."""
    repetitions: int = Field(ge=1, le=MAX_REPETITIONS, strict=True)
    """Slots per task (3 at first, 10 once stable); a JSON integer (true is not 1)."""

    @field_validator("commit")
    @classmethod
    def _full_commit(cls, value: str) -> str:
        if not _COMMIT.fullmatch(value.lower()):
            raise ValueError("must be the full 40-hex git commit SHA of the loaded plugin")
        if len(set(value)) == 1:
            raise ValueError("a commit of one repeated digit is a placeholder, not a real SHA")
        return value.lower()

    @field_validator("mainModel", "jevModel", "macOS", "appVersions", "runtime", "display")
    @classmethod
    def _filled_in(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("is blank")
        control = control_character_in(value)
        if control is not None:
            raise ValueError(f"holds the control character {control}; write the value on one plain line")
        marker = placeholder_in(value)
        if marker is not None:
            raise ValueError(f"still holds example placeholder text ({marker!r}); write the real value")
        return value

    @model_validator(mode="after")
    def _jev_matches_mode(self) -> DesktopConfig:
        if self.mode == "native" and self.jevModel != "none":
            raise ValueError("jevModel: must be 'none' in native mode")
        if self.mode == "jev" and self.jevModel.strip().lower() == "none":
            raise ValueError("jevModel: jev mode needs the real Jev model version or alias, not 'none'")
        return self


def load_config(path: Path) -> DesktopConfig:
    """Read and validate a batch config."""
    return parse_model_file(
        path,
        DesktopConfig,
        what="desktop config",
        hint="fill in the real environment (see fixtures/desktop/config.example.json)",
    )


def permission_warnings(config_path: Path, results_dir: Path) -> list[str]:
    """Warnings for a results directory other than 0700 or a config file other than 0600."""
    warnings: list[str] = []
    dir_mode = stat.S_IMODE(results_dir.stat().st_mode)
    if dir_mode != 0o700:
        warnings.append(
            f"{results_dir}: results directory has mode {dir_mode:o}, expected 700 (chmod 700 {results_dir})"
        )
    file_mode = stat.S_IMODE(config_path.stat().st_mode)
    if file_mode != 0o600:
        warnings.append(f"{config_path}: config has mode {file_mode:o}, expected 600 (chmod 600 {config_path})")
    return warnings


def git_work_tree_of(path: Path) -> Path | None:
    """The git work tree that contains `path`, if any (found by its `.git` entry)."""
    for candidate in (real_path(path), *real_path(path).parents):
        if (candidate / ".git").exists():
            return candidate
    return None
