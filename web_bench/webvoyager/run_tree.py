"""The WebVoyager run tree (`runs/<run>/webvoyager/`): its paths, `manifest.json`, `preflight.ndjson` and
`recovery.json`. Results and their revision chain are in `revisions.py`.

Every whole file is written atomically (temp file + rename); append-only files get whole lines with fsync.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, field_validator, model_validator

from farm.errors import FarmError
from farm.fsutil import atomic_write_text, create_new_text
from farm.manifest import CodeFingerprint, utc_now
from farm.names import SAFE_NAME_HINT, is_safe_name
from farm.redact import redact_argv
from web_bench.webvoyager.model import WV_SCHEMA_VERSION, AgentResult, JudgeMode, JudgeVerdict, ModelCall

RESERVED_NAMES = frozenset({
    "manifest.json", "manifest-before-backfill.json", "preflight.ndjson", "results.ndjson", "summary.json",
    "recovery.json", "report.md", "task-metrics.md", "task-metrics.csv", "task-metrics.json", "result-revisions",
})
"""Entries of the tree's root that a task id must never name (its directory would collide with them)."""


def canonical_json(value: JsonValue) -> bytes:
    """The canonical JSON form behind revision hashes: sorted keys, no spaces, UTF-8, no ASCII escaping, no NaN
    (task content has its own pinned form, `dataset.canonical_json`)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def sha256_json(value: JsonValue) -> str:
    """SHA-256 (hex) of `canonical_json(value)`."""
    return hashlib.sha256(canonical_json(value)).hexdigest()


def is_task_id(task_id: str) -> bool:
    """Whether `task_id` can name a task directory: a safe name (no separator, no `..`, no NUL) that is not an
    entry of the tree's root."""
    return is_safe_name(task_id) and task_id not in RESERVED_NAMES and not task_id.startswith("result-revisions")


def check_task_id(task_id: str) -> str:
    """`task_id` if it can name a task directory; else a FarmError naming it."""
    if not is_task_id(task_id):
        raise FarmError(f"task id {task_id!r}: cannot name a task directory",
                        hint=f"{SAFE_NAME_HINT}, and not a file name of the run tree")
    return task_id


class RunTree:
    """Paths of one WebVoyager run tree (nothing is created by building one)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.manifest = root / "manifest.json"
        self.manifest_before_backfill = root / "manifest-before-backfill.json"
        self.preflight = root / "preflight.ndjson"
        self.results = root / "results.ndjson"
        self.summary = root / "summary.json"
        self.recovery = root / "recovery.json"
        self.report = root / "report.md"
        self.metrics_md = root / "task-metrics.md"
        self.metrics_csv = root / "task-metrics.csv"
        self.metrics_json = root / "task-metrics.json"
        self.revisions_dir = root / "result-revisions"

    def task_dir(self, task_id: str) -> Path:
        """`ROOT/TASK_ID/`, which is also attempt 1's directory."""
        return self.root / check_task_id(task_id)

    def attempt_dir(self, task_id: str, attempt: int) -> Path:
        """Attempt 1 is the task directory; attempt N ≥ 2 is `TASK_ID/attempts/N/`."""
        if attempt < 1:
            raise FarmError(f"{task_id}: attempt {attempt} is not a positive number", hint="attempts count from 1")
        base = self.task_dir(task_id)
        return base if attempt == 1 else base / "attempts" / str(attempt)

    def attempts_on_disk(self, task_id: str) -> list[int]:
        """Attempt numbers with a directory on disk, ascending (1 when the task directory exists)."""
        base = self.task_dir(task_id)
        found = [1] if base.is_dir() else []
        extra = base / "attempts"
        if extra.is_dir():
            numbered = (int(p.name) for p in extra.iterdir() if p.is_dir() and p.name.isdigit())
            found += sorted(n for n in numbered if n >= 2)
        return found


def append_line(path: Path, line: str) -> None:
    """Append one JSON line and fsync. A last line torn by a crash (no final newline) gets a newline first, so it
    stays one bad line and the new line stays whole."""
    data = (line.rstrip("\n") + "\n").encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+b") as handle:
        if handle.tell() > 0:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":
                data = b"\n" + data
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


class RunParams(BaseModel):
    """Run parameters that decide what a result means (all part of the resume key)."""

    model_config = ConfigDict(extra="forbid")

    timeout_ms: int = Field(default=600000, ge=1)
    """Agent time limit per task."""
    max_rounds: int = Field(default=50, ge=1)
    """Model request limit per task."""
    concurrency: int = Field(default=1, ge=1, le=8)
    """Tasks run at once."""
    headed: bool = True
    """Visible browser window."""
    reasoning_effort: str | None = None
    """Agent reasoning effort (`high`…); null when not set."""
    preflight_timeout_ms: int = Field(default=60000, ge=1)
    """Wait for the preflight request."""


class RerunRequest(BaseModel):
    """One owner-approved `--rerun-ids` replacement of a task's current attempt."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    """The task re-run."""
    attempt: int = Field(ge=2)
    """The attempt the re-run creates."""
    requested_at: str
    """UTC ISO time of the request."""
    new_rerun: bool = False
    """Whether `--new-rerun` asked for another independent attempt (else a repeat resumes this request)."""


class WvManifest(BaseModel):
    """`ROOT/manifest.json`: exactly what the run evaluates and how."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = WV_SCHEMA_VERSION
    """Format version."""
    run_id: str
    """Farm run id."""
    created_at: str
    """UTC ISO time the run was created."""
    task_ids: list[str]
    """The selection, in selection (data-file) order; the denominator of every rate."""
    task_sha256: dict[str, str]
    """Per-task content SHA-256 (`dataset.task_sha256`), one per selected id."""
    set_sha256: str
    """SHA-256 of the ordered selection (`dataset.tasks_sha256`: order and content both count)."""
    data_sha256: dict[str, str] = Field(default_factory=dict)
    """SHA-256 of each data file the tasks came from, by file name."""
    judge_mode: JudgeMode
    """Judge used."""
    judge_prompt_sha256: str | None = None
    """SHA-256 of the judge prompt; null with `--judge none`."""
    agent: dict[str, JsonValue]
    """Agent model setup (provider, model, protocol, base URL, reasoning, sampling, timeouts), credentials removed."""
    judge: dict[str, JsonValue] | None = None
    """Judge model setup, credentials removed; null with `--judge none`."""
    pricing: dict[str, JsonValue] = Field(default_factory=dict)
    """Price snapshot (agent and judge USD per million tokens, source, date)."""
    params: RunParams = Field(default_factory=RunParams)
    """Run parameters."""
    code: CodeFingerprint
    """Code that produced the run."""
    har_mode: Literal["live", "record", "replay"] = "live"
    """Live sites, live with HAR recording, or pages replayed from HAR recordings."""
    har_dir: str | None = None
    """HAR directory when recording or replaying."""
    provenance: Literal["single", "mixed"] = "single"
    """`mixed` when results come from more than one run or time (backfill, --retry-from)."""
    protected_task_ids: list[str] = Field(default_factory=list)
    """Tasks kept from the run before a backfill: never re-run or re-judged by the backfill."""
    retry_from: str | None = None
    """Run directory this one recovers (`--retry-from`), read-only."""
    rerun_requests: list[RerunRequest] = Field(default_factory=list)
    """Owner-approved replacements, in request order."""
    command: list[str] = Field(default_factory=list)
    """The command line that wrote the manifest, credentials replaced."""

    @field_validator("command")
    @classmethod
    def _no_credentials(cls, argv: list[str]) -> list[str]:
        return redact_argv(argv)

    @model_validator(mode="after")
    def _consistent(self) -> WvManifest:
        for task_id in self.task_ids:
            if not is_task_id(task_id):
                raise ValueError(f"task id {task_id!r} cannot name a task directory")
        if len(set(self.task_ids)) != len(self.task_ids):
            raise ValueError("task_ids repeats an id")
        if set(self.task_sha256) != set(self.task_ids):
            raise ValueError("task_sha256 must have exactly one entry per selected task")
        if not set(self.protected_task_ids) <= set(self.task_ids):
            raise ValueError("protected_task_ids names a task outside the selection")
        return self


RESUME_FIELDS: tuple[str, ...] = ("task_ids", "task_sha256", "set_sha256", "agent", "judge", "judge_mode",
                                  "judge_prompt_sha256", "pricing", "params", "code", "har_mode")
"""What must be equal for `--resume`: selection, models, prices, parameters, judge, code, HAR mode."""


def resume_key(manifest: WvManifest) -> dict[str, JsonValue]:
    """The fields that must match for `--resume`, as JSON."""
    dumped = manifest.model_dump(mode="json")
    return {name: dumped[name] for name in RESUME_FIELDS}


def resume_mismatch(old: WvManifest, new: WvManifest, *, ignore: tuple[str, ...] = ()) -> list[str]:
    """Names of the resume-key fields that differ (`params.timeout_ms`, `agent.model`…); empty when resumable.
    `ignore` drops top-level fields (e.g. the judge fields for `--judge-only`)."""
    a, b = resume_key(old), resume_key(new)
    out: list[str] = []
    for name in RESUME_FIELDS:
        if name in ignore or a[name] == b[name]:
            continue
        left, right = a[name], b[name]
        if isinstance(left, dict) and isinstance(right, dict):
            out += [f"{name}.{key}" for key in sorted(set(left) | set(right)) if left.get(key) != right.get(key)]
        else:
            out.append(name)
    return out


def read_manifest_file(path: Path) -> WvManifest:
    """A manifest file, or a FarmError naming the file and the field."""
    try:
        return WvManifest.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        raise FarmError(f"{path}: no WebVoyager manifest", hint="is this a WebVoyager run directory?") from None
    except OSError as exc:
        raise FarmError(f"{path}: cannot read the manifest ({exc.strerror})") from None
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(p) for p in problem["loc"]) or "file"
        raise FarmError(f"{path}: invalid manifest ({where}: {problem['msg']})",
                        hint="the run is damaged; start a new output directory") from None


def read_manifest(tree: RunTree) -> WvManifest:
    """`ROOT/manifest.json` (see `read_manifest_file`)."""
    return read_manifest_file(tree.manifest)


def manifest_text(manifest: WvManifest) -> str:
    """The manifest as written to disk."""
    return manifest.model_dump_json(indent=2) + "\n"


def create_manifest(tree: RunTree, manifest: WvManifest) -> None:
    """Write the first `ROOT/manifest.json`; refuse when one exists (a new run never replaces one)."""
    create_new_text(tree.manifest, manifest_text(manifest), what="WebVoyager manifest")


def write_manifest(tree: RunTree, manifest: WvManifest, *, create: bool = False) -> None:
    """Replace `ROOT/manifest.json` atomically (`create`: see `create_manifest`)."""
    if create:
        create_manifest(tree, manifest)
    else:
        atomic_write_text(tree.manifest, manifest_text(manifest))


def append_preflight(tree: RunTree, call: ModelCall) -> None:
    """Append one preflight request to `ROOT/preflight.ndjson` (kept apart from every task's score)."""
    append_line(tree.preflight, call.model_dump_json())


RecoveryKind = Literal["quota_retry", "quota_rejudge", "service_retry"]


class RecoveryEntry(BaseModel):
    """One task owed work on the next `--resume`."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    """Task id."""
    attempt: int = Field(ge=1)
    """The attempt that was interrupted (re-runs create the next one; re-judging judges this one)."""
    reason: str
    """Why (the provider's error, scrubbed)."""
    recorded_at: str
    """UTC ISO time it was recorded."""


class Recovery(BaseModel):
    """`ROOT/recovery.json`: tasks to re-run or re-judge first on the next `--resume`."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = WV_SCHEMA_VERSION
    """Format version."""
    quota_retry: list[RecoveryEntry] = Field(default_factory=list)
    """Agent attempts stopped by the provider's quota: re-run from scratch (not failures)."""
    quota_rejudge: list[RecoveryEntry] = Field(default_factory=list)
    """Finished attempts whose judge hit the quota: judged again, not re-run."""
    service_retry: list[RecoveryEntry] = Field(default_factory=list)
    """Tasks interrupted by a service outage: re-run on `--resume`."""

    def reasons(self, kind: RecoveryKind) -> dict[str, str]:
        """Task id → reason of one list (the shape `plan_work` takes)."""
        return {entry.task_id: entry.reason for entry in getattr(self, kind)}

    def with_entry(self, kind: RecoveryKind, entry: RecoveryEntry) -> Recovery:
        """A copy with `entry` replacing any entry of the same task in that list."""
        kept = [e for e in getattr(self, kind) if e.task_id != entry.task_id]
        return self.model_copy(update={kind: [*kept, entry]})

    def without(self, kind: RecoveryKind, task_id: str) -> Recovery:
        """A copy with the task removed from that list."""
        return self.model_copy(update={kind: [e for e in getattr(self, kind) if e.task_id != task_id]})


_RERUN_KINDS = {"quota": "quota_retry", "service_unavailable": "service_retry", "interrupted": "service_retry"}


def note_agent_result(recovery: Recovery, result: AgentResult) -> None:
    """Update `recovery` in place for a new agent attempt: a quota stop goes to `quota_retry`, a service outage or
    an interruption to `service_retry`; any other end (a normal pass or failure) clears the task from every list
    (the attempt it replaces no longer needs a re-run or a verdict)."""
    for kind in ("quota_retry", "service_retry", "quota_rejudge"):
        setattr(recovery, kind, [e for e in getattr(recovery, kind) if e.task_id != result.task_id])
    rerun = _RERUN_KINDS.get(result.error_kind or "")
    if rerun is not None:
        entry = RecoveryEntry(task_id=result.task_id, attempt=result.attempt, recorded_at=utc_now(),
                              reason=result.error or result.error_kind or "")
        getattr(recovery, rerun).append(entry)


def note_verdict(recovery: Recovery, task_id: str, verdict: JudgeVerdict) -> None:
    """Update `recovery` in place for a verdict: a judge stopped by the quota goes to `quota_rejudge`, anything
    else clears the task from it."""
    recovery.quota_rejudge = [e for e in recovery.quota_rejudge if e.task_id != task_id]
    if verdict.error_kind == "quota":
        recovery.quota_rejudge.append(RecoveryEntry(task_id=task_id, attempt=verdict.attempt, recorded_at=utc_now(),
                                                    reason=verdict.judge_error or "quota"))


def load_recovery(tree: RunTree) -> Recovery:
    """`ROOT/recovery.json`, or an empty one when the file is absent."""
    try:
        return Recovery.model_validate_json(tree.recovery.read_bytes())
    except FileNotFoundError:
        return Recovery()
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(p) for p in problem["loc"]) or "file"
        raise FarmError(f"{tree.recovery}: invalid recovery file ({where}: {problem['msg']})",
                        hint="the run is damaged; fix or remove the entry by hand") from None


def save_recovery(tree: RunTree, recovery: Recovery) -> None:
    """Write `ROOT/recovery.json` atomically."""
    atomic_write_text(tree.recovery, recovery.model_dump_json(indent=2) + "\n")
