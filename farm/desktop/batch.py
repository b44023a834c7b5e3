"""Batch files: the plan of every task × repetition slot, and one new version per recorded slot.

Each version names its predecessor by file and SHA-256, so `verify_chain` can walk back to the
plan and notice an edited or swapped file. `record` refuses to overwrite: it is a guard against
mistakes, not tamper-proof evidence.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from farm.desktop.config import DesktopConfig, git_work_tree_of, load_config, parse_model_file, permission_warnings
from farm.desktop.result import RunResult
from farm.desktop.tasks import SUITE, TASKS, SlotStatus, task_ids, tasks_digest
from farm.errors import FarmError
from farm.fsutil import create_new_text
from farm.manifest import utc_now

BATCH_FORMAT: Final = "farm.desktop.batch/1"


class Slot(BaseModel):
    """One planned run of one task, pending until its result is recorded."""

    model_config = ConfigDict(extra="forbid")

    id: str
    """`<task id>/<repetition>`, e.g. `calculator-add/1`."""
    task: str
    """Task id."""
    repetition: int = Field(ge=1)
    """Repetition number, from 1."""
    status: SlotStatus = "pending"
    """pending, or the recorded result's status."""
    result: RunResult | None = None
    """The recorded result; null while pending."""
    recordedAt: str | None = None
    """ISO UTC time the result was recorded."""
    resultSha256: str | None = None
    """SHA-256 of the result file as it was recorded."""

    @model_validator(mode="after")
    def _status_matches(self) -> Slot:
        if self.status == "pending" and (self.result is not None or self.recordedAt is not None):
            raise ValueError(f"slot {self.id}: pending but carries a result")
        if self.status != "pending" and (self.result is None or self.result.status != self.status):
            raise ValueError(f"slot {self.id}: status {self.status} does not match its result")
        return self


class BatchLink(BaseModel):
    """The previous version of a batch."""

    model_config = ConfigDict(extra="forbid")

    file: str
    """Path of the previous version, relative to this file's directory."""
    sha256: str
    """SHA-256 of the previous version's bytes."""


class Batch(BaseModel):
    """One version of a batch file: fixed config, the whole slot plan, and what is recorded so far."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["farm.desktop.batch/1"] = BATCH_FORMAT
    """File format id."""
    suite: Literal["desktop-v1"] = SUITE
    """Task suite version."""
    tasksSha256: str
    """SHA-256 of the suite's task definitions when the plan was made."""
    sequence: int = Field(ge=0)
    """Version number: 0 is the plan, each record adds one."""
    createdAt: str
    """ISO UTC time this version was written."""
    config: DesktopConfig
    """The environment of every slot; never changes within a batch."""
    previous: BatchLink | None = None
    """The version this one was made from; null for the plan."""
    recordedSlot: str | None = None
    """The slot this version recorded; null for the plan."""
    slots: list[Slot]
    """Every task × repetition slot, in plan order."""

    @model_validator(mode="after")
    def _well_formed(self) -> Batch:
        expected = plan_slot_ids(self.config.repetitions)
        if [slot.id for slot in self.slots] != expected:
            raise ValueError(f"slots: do not match the {SUITE} plan of {self.config.repetitions} repetition(s)")
        for slot in self.slots:
            if slot.id != f"{slot.task}/{slot.repetition}":
                raise ValueError(f"slots: slot {slot.id} names task {slot.task}/{slot.repetition}")
        if (self.sequence == 0) != (self.previous is None) or (self.previous is None) != (self.recordedSlot is None):
            raise ValueError("previous: only the plan (sequence 0) has no previous version and no recorded slot")
        recorded = sum(1 for slot in self.slots if slot.status != "pending")
        if recorded != self.sequence:
            raise ValueError(f"sequence: {self.sequence} but {recorded} slot(s) recorded; one record per version")
        if self.recordedSlot is not None and self.slot(self.recordedSlot).status == "pending":
            raise ValueError(f"recordedSlot: {self.recordedSlot} is still pending")
        return self

    def slot(self, slot_id: str) -> Slot:
        """The slot with this id; KeyError if unknown."""
        for slot in self.slots:
            if slot.id == slot_id:
                return slot
        raise KeyError(slot_id)

    def kind(self) -> tuple[str, str]:
        """(mode, execution): batches of different kinds are never summarised together."""
        return (self.config.mode, self.config.execution)


def plan_slot_ids(repetitions: int) -> list[str]:
    """Slot ids of the plan, task by task, repetition 1..n."""
    return [f"{task_id}/{rep}" for task_id in task_ids() for rep in range(1, repetitions + 1)]


def sha256_file(path: Path) -> str:
    """SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def dump_batch(batch: Batch) -> str:
    """The batch as written to disk (stable, UTF-8, indented)."""
    return json.dumps(batch.model_dump(mode="json"), ensure_ascii=False, indent=2) + "\n"


def load_batch(path: Path) -> Batch:
    """Read and validate one batch version (and check the suite's tasks did not change under it)."""
    batch = parse_model_file(path, Batch, what="desktop batch", hint="pass a batch file written by `farm desktop`")
    if batch.tasksSha256 != tasks_digest():
        raise FarmError(
            f"{path}: field tasksSha256: the {batch.suite} task definitions changed since this batch was planned",
            hint="tasks changed without a suite version bump; restore them or plan a batch of a new suite",
        )
    return batch


def _refuse_inside_git(results_dir: Path) -> None:
    tree = git_work_tree_of(results_dir)
    if tree is not None:
        raise FarmError(
            f"{results_dir}: results directory is inside the git work tree {tree}",
            hint="keep results private and out of git, e.g. mkdir -m 700 ~/deskhand-benchmark-results",
        )


def _refuse_existing(out: Path) -> None:
    if out.exists() or out.is_symlink():
        raise FarmError(
            f"{out}: output batch already exists", hint="choose a new file name; batches are never overwritten"
        )


def init_batch(config_path: Path, out: Path) -> tuple[Batch, list[str]]:
    """Validate the config and write the plan (every slot pending) to `out`; returns it and warnings."""
    config = load_config(config_path)
    _refuse_existing(out)
    results_dir = out.parent.resolve()
    _refuse_inside_git(results_dir)
    if not results_dir.exists():
        results_dir.mkdir(mode=0o700, parents=True)
    warnings = permission_warnings(config_path, results_dir)
    slots = [
        Slot(id=f"{task.id}/{rep}", task=task.id, repetition=rep)
        for task in TASKS
        for rep in range(1, config.repetitions + 1)
    ]
    batch = Batch(tasksSha256=tasks_digest(), sequence=0, createdAt=utc_now(), config=config, slots=slots)
    create_new_text(out, dump_batch(batch), what="output batch")
    return batch, warnings


def _successors(batch_path: Path, batch_sha: str, dirs: list[Path]) -> list[Path]:
    """Batch files in `dirs` that were made from the version with hash `batch_sha`."""
    found: list[Path] = []
    for directory in dict.fromkeys(d.resolve() for d in dirs if d.is_dir()):
        for candidate in sorted(directory.glob("*.json")):
            if candidate.resolve() == batch_path.resolve():
                continue
            try:
                data = json.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError):
                continue
            link = data.get("previous") if isinstance(data, dict) and data.get("format") == BATCH_FORMAT else None
            if isinstance(link, dict) and link.get("sha256") == batch_sha:
                found.append(candidate)
    return found


def record_result(batch_path: Path, slot_id: str, result_path: Path, out: Path) -> tuple[Batch, list[str]]:
    """Write `out`: `batch_path` plus the result of one pending slot, linked to it by hash."""
    batch = load_batch(batch_path)
    _refuse_existing(out)
    _refuse_inside_git(out.parent.resolve())
    try:
        slot = batch.slot(slot_id)
    except KeyError:
        raise FarmError(
            f"{batch_path}: unknown slot {slot_id!r}",
            hint=f"use <task>/<repetition> with a task of {SUITE} and repetition 1..{batch.config.repetitions}, "
            f"e.g. {batch.slots[0].id}",
        ) from None
    if slot.status != "pending":
        raise FarmError(
            f"{batch_path}: slot {slot_id} is already recorded ({slot.status})",
            hint="a restart never overwrites a slot: use the next pending repetition, or a new batch for extra tries",
        )
    batch_sha = sha256_file(batch_path)
    forks = _successors(batch_path, batch_sha, [batch_path.parent, out.parent])
    if forks:
        raise FarmError(
            f"{batch_path}: is not the latest version, {forks[0]} was already made from it",
            hint="record from the latest batch file; forking an old version breaks the chain",
        )
    result = parse_model_file(
        result_path, RunResult, what="result", hint="fix the result file (see fixtures/desktop/result.example.json)"
    )
    recorded = slot.model_copy(
        update={
            "status": result.status,
            "result": result,
            "recordedAt": utc_now(),
            "resultSha256": sha256_file(result_path),
        }
    )
    link = BatchLink(file=os.path.relpath(batch_path.resolve(), out.parent.resolve()), sha256=batch_sha)
    new = batch.model_copy(
        update={
            "sequence": batch.sequence + 1,
            "createdAt": utc_now(),
            "previous": link,
            "recordedSlot": slot_id,
            "slots": [recorded if s.id == slot_id else s for s in batch.slots],
        }
    )
    # Re-validate the assembled version so a broken invariant never reaches the disk.
    new = Batch.model_validate(new.model_dump())
    create_new_text(out, dump_batch(new), what="output batch")
    warnings = list(result.budget_warnings())
    if batch.config.mode == "native" and result.plannerHandoffs > 0:
        warnings.append("plannerHandoffs > 0 in native mode; check the count")
    return new, warnings
