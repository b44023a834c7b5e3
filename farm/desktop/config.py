"""The desktop batch configuration: one fixed environment per batch, filled in by the operator."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from farm.errors import FarmError

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
M = TypeVar("M", bound=BaseModel)


def placeholder_in(text: str) -> str | None:
    """The placeholder marker found in `text`, if any (case-insensitive)."""
    upper = text.upper()
    return next((marker for marker in PLACEHOLDER_MARKERS if marker.upper() in upper), None)


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
    repetitions: int = Field(ge=1)
    """Slots per task (3 at first, 10 once stable)."""

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


def _first_error(exc: ValidationError) -> tuple[str, str]:
    err = exc.errors()[0]
    field = ".".join(str(part) for part in err["loc"]) or "config"
    message = str(err["msg"]).removeprefix("Value error, ")
    if ":" in message and not err["loc"]:
        field, message = (part.strip() for part in message.split(":", 1))
    return field, message


def parse_model_file(path: Path, model: type[M], *, what: str, hint: str) -> M:
    """Read a JSON file into `model`; any problem is a one-line FarmError naming file and field."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise FarmError(f"{path}: {what} not found", hint=hint) from None
    except OSError as exc:
        raise FarmError(f"{path}: cannot read {what}: {exc.strerror}", hint=hint) from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FarmError(f"{path}: {what} is not valid UTF-8 JSON ({exc})", hint=hint) from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        field, message = _first_error(exc)
        raise FarmError(f"{path}: field {field}: {message}", hint=hint) from None


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
    for candidate in (path.resolve(), *path.resolve().parents):
        if (candidate / ".git").exists():
            return candidate
    return None
