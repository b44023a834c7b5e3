"""The run manifest: one `runs/<id>/manifest.json` per run, shared by every lane."""

from __future__ import annotations

import datetime as dt
import fcntl
import hashlib
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

from farm import __version__
from farm.errors import FarmError
from farm.fsutil import atomic_write_text
from farm.names import SafeName

# REDACTED, redact and redact_argv are re-exported: callers redact configs through this module.
from farm.redact import REDACTED as REDACTED
from farm.redact import redact as redact
from farm.redact import redact_argv as redact_argv
from farm.redact import redact_values, secret_values

MANIFEST_VERSION: Literal[1] = 1


class CodeFingerprint(BaseModel):
    """Which code produced the run."""

    model_config = ConfigDict(extra="forbid")

    git_commit: str | None = None
    """HEAD commit of the checkout, when it is a git checkout."""
    diff_sha256: str | None = None
    """SHA-256 of `git diff HEAD` (uncommitted changes); null when clean or not a checkout."""
    package_version: str = __version__
    """agent-farm version."""


class AppVersion(BaseModel):
    """The version of one app installed on a phone, as `dumpsys package <pkg>` gave it when the run started."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    package: str = Field(min_length=1)
    """Package name (the agent app's, or one a selected task names in `apps` or `requires: installed:<pkg>`)."""
    version_name: str | None = None
    """`versionName=`; null when the phone's package block has none."""
    version_code: int | None = None
    """`versionCode=`; null when the phone's package block has none."""


class PhoneEntry(BaseModel):
    """A phone seen by the run, used or left out."""

    model_config = ConfigDict(extra="forbid")

    serial: str
    """adb serial."""
    adb_server: str = ""
    """host:port of the adb server that reaches it."""
    name: str | None = None
    """Its name on every surface (`farm.phone_name`: the farm.yaml label, else `<model> · <short serial>`), as
    given at discovery; null in runs recorded before names were (the reports compute it then)."""
    model: str | None = None
    """ro.product.model."""
    android: str | None = None
    """ro.build.version.release."""
    agent_version: str | None = None
    """versionName of the agent app under test."""
    status: Literal["used", "left_out"] = "used"
    """Whether the run used the phone."""
    reason: str | None = None
    """Why a phone was left out (health gate)."""
    apps: list[AppVersion] = Field(default_factory=list)
    """Versions of the agent app and of every app the phone's selected tasks touch, read before its first unit (a
    package not installed is absent); empty for a phone left out, and in runs recorded before versions were."""


class TaskEntry(BaseModel):
    """A task selected for the run and the hash of its file content."""

    model_config = ConfigDict(extra="forbid")

    id: str
    """Task id."""
    sha256: str
    """SHA-256 of the task file bytes."""


class OverrideSource(BaseModel):
    """A file a lane pulled that may hold a 人工改判 section (an agent's `summary.md`), and whose it is."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(min_length=1)
    """The file, relative to the run directory (never absolute, never leaving it)."""
    device: str
    """Serial of the device the file came from: its re-judgements apply to that device's attempts only."""

    @field_validator("path")
    @classmethod
    def _inside_run(cls, value: str) -> str:
        # Reports read the file: a manifest must not point them outside the run directory.
        parts = PurePosixPath(value.replace("\\", "/")).parts
        if value.startswith(("/", "\\")) or PureWindowsPath(value).drive or ".." in parts:
            raise ValueError(f"{value!r} is not a path inside the run directory")
        return value


class LaneEntry(BaseModel):
    """One lane of the run and where its outputs are."""

    model_config = ConfigDict(extra="forbid")

    lane: Literal["android", "web", "webvoyager", "desktop"]
    """Lane name."""
    outputs: list[str] = Field(default_factory=list)
    """Output paths, relative to the run directory."""
    detail: dict[str, JsonValue] = Field(default_factory=dict)
    """Lane-specific settings (split, executor, suite version…)."""
    override_sources: list[OverrideSource] = Field(default_factory=list)
    """Pulled files whose 人工改判 sections reports apply (besides `overrides.yaml`); the lane names them,
    reports never search the run directory for them."""


class Manifest(BaseModel):
    """Everything needed to know what a run was and to trace its numbers."""

    model_config = ConfigDict(extra="forbid")

    manifest_version: Literal[1] = MANIFEST_VERSION
    """Version of this format."""
    run_id: SafeName
    """Run id, also the directory name under `runs/`."""
    created_at: str
    """ISO-8601 UTC creation time."""
    finished_at: str | None = None
    """ISO-8601 UTC time the run finished; null while running or after a crash."""
    status: Literal["running", "finished", "failed", "interrupted"] = "running"
    """Run state; `interrupted`: resumable (`--resume`): stopped by Ctrl-C/SIGTERM or a crash, or a sweep that ended
    with units left unfinished (phones lost or quarantined, a deadline: `farm.sweep.journal.run_status`);
    `finished`: every unit ended."""
    label: str | None = None
    """Free tag for runs of one kind (`--label nightly`); `farm history` groups by it."""
    provenance: Literal["single", "mixed"] = "single"
    """`mixed` when finished units were reused from another run (`--retry-from`)."""
    reused_from: str | None = None
    """The run whose finished units this one reused (`--retry-from`)."""
    command: list[str] = Field(default_factory=list)
    """The command line that started the run."""
    code: CodeFingerprint = Field(default_factory=CodeFingerprint)
    """Code fingerprint."""
    config: dict[str, JsonValue] = Field(default_factory=dict)
    """farm.yaml as used, credentials removed."""
    phones: list[PhoneEntry] = Field(default_factory=list)
    """Phones used or left out."""
    tasks: list[TaskEntry] = Field(default_factory=list)
    """Task selection with content hashes."""
    lanes: list[LaneEntry] = Field(default_factory=list)
    """Lanes and their outputs."""
    notes: list[str] = Field(default_factory=list)
    """Anything a reader should know (e.g. infrastructure problems)."""


def utc_now() -> str:
    """Current UTC time, ISO-8601 with a Z suffix."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def code_fingerprint(repo: Path | None = None) -> CodeFingerprint:
    """Git commit and a hash of the uncommitted diff of the checkout holding this package."""
    where = repo or Path(__file__).resolve().parent.parent

    def git(*args: str) -> str | None:
        try:
            proc = subprocess.run(
                ["git", "-C", str(where), *args], capture_output=True, timeout=10, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return proc.stdout.decode("utf-8", "replace") if proc.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    diff = git("diff", "HEAD") if commit else None
    return CodeFingerprint(
        git_commit=commit.strip() if commit else None,
        diff_sha256=hashlib.sha256(diff.encode()).hexdigest() if diff else None,
    )


def manifest_path(run_dir: Path) -> Path:
    """Where a run directory keeps its manifest."""
    return run_dir / "manifest.json"


def save(run_dir: Path, manifest: Manifest) -> None:
    """Write the manifest atomically (it is updated as lanes finish), credentials removed (`redacted`);
    see `update` for concurrent writers."""
    atomic_write_text(manifest_path(run_dir), redacted(manifest).model_dump_json(indent=2) + "\n")


def redacted(manifest: Manifest) -> Manifest:
    """A copy with no credential in it: the one gate every manifest passes on its way to disk.

    The config and the lanes' details lose credential keys, the command line credential options; every
    string anywhere loses URL user-info and query values, header-like credentials, and the values of the
    credential variables the config, the command line or the environment name (see `farm.redact`).
    """
    data = manifest.model_dump(mode="json")
    secrets = secret_values(data["config"], data["command"])
    data["command"] = redact_argv(data["command"], secrets=secrets)
    data["config"] = redact(data["config"], secrets=secrets)
    for lane in data["lanes"]:
        lane["detail"] = redact(lane["detail"], secrets=secrets)
    return Manifest.model_validate(redact_values(data, secrets))


@contextmanager
def locked(run_dir: Path) -> Iterator[None]:
    """Hold the run's manifest lock (an flock on `manifest.lock`), so read-modify-write cycles do not interleave."""
    with (run_dir / "manifest.lock").open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def update(run_dir: Path, change: Callable[[Manifest], None]) -> Manifest:
    """Load, change and save the manifest under its lock: two writers never lose each other's updates."""
    with locked(run_dir):
        manifest = load(run_dir)
        change(manifest)
        save(run_dir, manifest)
    return manifest


def load(run_dir: Path) -> Manifest:
    """Read a run's manifest; a missing or invalid one is a FarmError."""
    path = manifest_path(run_dir)
    try:
        return Manifest.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        raise FarmError(f"{path}: no manifest", hint="is this a run directory under runs/?") from None
    except ValueError as exc:
        first = str(exc).splitlines()[1:2] or [str(exc)]
        raise FarmError(f"{path}: invalid manifest: {first[0].strip()}") from None


def add_lane(run_dir: Path, entry: LaneEntry) -> Manifest:
    """Add (or extend) a lane entry of an existing run and save it."""

    def change(manifest: Manifest) -> None:
        for existing in manifest.lanes:
            if existing.lane == entry.lane:
                existing.outputs.extend(o for o in entry.outputs if o not in existing.outputs)
                existing.detail.update(entry.detail)
                existing.override_sources.extend(
                    s for s in entry.override_sources if s not in existing.override_sources
                )
                break
        else:
            manifest.lanes.append(entry)

    return update(run_dir, change)
