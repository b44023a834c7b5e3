"""Batch files: the plan of every task × repetition slot, and one new version per recorded slot.

Each version names its predecessor by file and SHA-256, so `verify_chain` can walk back to the
plan and notice an edited or swapped file; the ledger index next to the plan holds the hash of every
version, the latest included (see farm.desktop.ledger). `record` refuses to overwrite and extends only
the latest version: it is a guard against mistakes, not tamper-proof evidence.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from farm.desktop.batch_config import DesktopConfig, git_work_tree_of, load_config, permission_warnings
from farm.desktop.jsonfile import (
    RelativeFile,
    Sha256,
    create_private_text,
    make_private_dir,
    parse_model_bytes,
    read_file,
    real_path,
)
from farm.desktop.ledger import (
    LedgerEntry,
    append_entry,
    create_ledger,
    entry_path,
    ledger_path,
    locked_ledger,
    read_ledger,
)
from farm.desktop.result import RunResult, parse_utc
from farm.desktop.tasks import SUITE, TASKS, SlotStatus, task_ids, tasks_digest
from farm.errors import FarmError
from farm.manifest import utc_now

BATCH_FORMAT: Final = "farm.desktop.batch/1"
BATCH_HINT = "pass a batch file written by `farm desktop`"
_WRITE_HINT = "nothing was recorded; free space or fix permissions in the results folder and run the command again"


class Slot(BaseModel):
    """One planned run of one task, pending until its result is recorded."""

    model_config = ConfigDict(extra="forbid")

    id: str
    """`<task id>/<repetition>`, e.g. `calculator-add/1`."""
    task: str
    """Task id."""
    repetition: int = Field(ge=1, strict=True)
    """Repetition number, from 1."""
    status: SlotStatus = "pending"
    """pending, or the recorded result's status."""
    result: RunResult | None = None
    """The recorded result; null while pending."""
    recordedAt: str | None = None
    """ISO UTC time the result was recorded."""
    resultSha256: Sha256 | None = None
    """SHA-256 of the result file as it was recorded."""

    @field_validator("recordedAt")
    @classmethod
    def _iso_utc(cls, value: str | None) -> str | None:
        if value is not None:
            parse_utc(value)
        return value

    @model_validator(mode="after")
    def _status_matches(self) -> Slot:
        if self.status == "pending" and (
            self.result is not None or self.recordedAt is not None or self.resultSha256 is not None
        ):
            raise ValueError(f"slot {self.id}: pending but carries a result")
        if self.status != "pending" and (self.result is None or self.result.status != self.status):
            raise ValueError(f"slot {self.id}: status {self.status} does not match its result")
        return self


class BatchLink(BaseModel):
    """The previous version of a batch."""

    model_config = ConfigDict(extra="forbid")

    file: RelativeFile
    """Path of the previous version, relative to this file's directory."""
    sha256: Sha256
    """SHA-256 of the previous version's bytes."""


class Batch(BaseModel):
    """One version of a batch file: fixed config, the whole slot plan, and what is recorded so far."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["farm.desktop.batch/1"] = BATCH_FORMAT
    """File format id."""
    suite: Literal["desktop-v1"] = SUITE
    """Task suite version."""
    tasksSha256: Sha256
    """SHA-256 of the suite's task definitions when the plan was made."""
    sequence: int = Field(ge=0, strict=True)
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

    @field_validator("createdAt")
    @classmethod
    def _iso_utc(cls, value: str) -> str:
        parse_utc(value)
        return value

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
        if self.recordedSlot is not None:
            # Checked by membership first: a KeyError here would escape validation as a traceback.
            if self.recordedSlot not in expected:
                raise ValueError("recordedSlot: is not a slot of the plan")
            if self.slot(self.recordedSlot).status == "pending":
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


def read_batch(path: Path) -> tuple[Batch, str]:
    """One batch version and the SHA-256 of the very bytes it was read from (one read: no swap in between)."""
    raw = read_file(path, what="desktop batch", hint=BATCH_HINT)
    return parse_batch(raw, path), hashlib.sha256(raw).hexdigest()


def parse_batch(raw: bytes, path: Path) -> Batch:
    """Validate the bytes of one batch version read from `path` (and check the suite's tasks did not change)."""
    batch = parse_model_bytes(raw, Batch, path=path, what="desktop batch", hint=BATCH_HINT)
    if batch.tasksSha256 != tasks_digest():
        raise FarmError(
            f"{path}: field tasksSha256: the {batch.suite} task definitions changed since this batch was planned",
            hint="tasks changed without a suite version bump; restore them or plan a batch of a new suite",
        )
    return batch


def load_batch(path: Path) -> Batch:
    """Read and validate one batch version (and check the suite's tasks did not change under it)."""
    return read_batch(path)[0]


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
    index = ledger_path(out)
    if index.exists() or index.is_symlink():
        raise FarmError(
            f"{index}: ledger index already exists",
            hint="a plan starts a new ledger; choose an output name whose ledger index is free",
        )
    results_dir = real_path(out.parent)
    _refuse_inside_git(results_dir)
    make_private_dir(results_dir)
    warnings = permission_warnings(config_path, results_dir)
    slots = [
        Slot(id=f"{task.id}/{rep}", task=task.id, repetition=rep)
        for task in TASKS
        for rep in range(1, config.repetitions + 1)
    ]
    batch = Batch(tasksSha256=tasks_digest(), sequence=0, createdAt=utc_now(), config=config, slots=slots)
    text = dump_batch(batch)
    plan = LedgerEntry(
        sequence=0, file=out.name, sha256=_sha256_text(text), recordedSlot=None, writtenAt=batch.createdAt
    )
    create_private_text(out, text, what="output batch")
    try:
        create_ledger(index, plan)
    except BaseException as exc:
        # A plan without its index could never be verified: take it back rather than leave half a ledger.
        out.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise FarmError(f"{index}: cannot write the ledger index: {exc.strerror}", hint=_WRITE_HINT) from None
        raise
    return batch, warnings


def _sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def record_result(batch_path: Path, slot_id: str, result_path: Path, out: Path) -> tuple[Batch, list[str]]:
    """Write `out`: `batch_path` plus the result of one pending slot, linked to it by hash, and add it to the index.

    `batch_path` must be the latest version in the ledger index with an intact chain: the index, not a scan of
    folders, says which versions exist, so a slot finished in any later version is refused wherever `out` goes.
    Only the chain, the index and `result_path` are opened: another file next to them, however broken, is not
    the ledger's and is never read (why neither a warning nor a refusal: see farm.desktop.ledger).
    """
    # Imported here: chain.py builds on this module.
    from farm.desktop.chain import check_chain

    batch, batch_sha = read_batch(batch_path)
    _refuse_existing(out)
    _refuse_inside_git(real_path(out.parent))
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
    check = check_chain(batch_path)
    index = Path(check.ledger)
    _refuse_unless_latest(batch_path, batch_sha, slot_id, batch.sequence, check.entries, index)
    result_hint = "fix the result file (see fixtures/desktop/result.example.json)"
    result_raw = read_file(result_path, what="result", hint=result_hint)
    result = parse_model_bytes(result_raw, RunResult, path=result_path, what="result", hint=result_hint)
    recorded = slot.model_copy(
        update={
            "status": result.status,
            "result": result,
            "recordedAt": utc_now(),
            "resultSha256": hashlib.sha256(result_raw).hexdigest(),
        }
    )
    link = BatchLink(file=os.path.relpath(real_path(batch_path), real_path(out.parent)), sha256=batch_sha)
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
    text = dump_batch(new)
    entry = LedgerEntry(
        sequence=new.sequence,
        file=os.path.relpath(real_path(out), real_path(index.parent)),
        sha256=_sha256_text(text),
        recordedSlot=slot_id,
        writtenAt=new.createdAt,
    )
    with locked_ledger(index) as fd:
        # Checked again under the lock: another record may have extended the ledger since the chain was walked.
        _refuse_unless_latest(batch_path, batch_sha, slot_id, batch.sequence, read_ledger(index), index)
        make_private_dir(out.parent)
        create_private_text(out, text, what="output batch")
        try:
            append_entry(fd, entry)
        except BaseException as exc:
            # A version the index does not list could never be verified: take it back.
            out.unlink(missing_ok=True)
            if isinstance(exc, OSError):
                raise FarmError(
                    f"{index}: cannot append to the ledger index: {exc.strerror}", hint=_WRITE_HINT
                ) from None
            raise
    warnings = list(result.budget_warnings())
    if batch.config.mode == "native" and result.plannerHandoffs > 0:
        warnings.append("plannerHandoffs > 0 in native mode; check the count")
    return new, warnings


def _refuse_unless_latest(
    batch_path: Path, batch_sha: str, slot_id: str, sequence: int, entries: list[LedgerEntry], index: Path
) -> None:
    """Refuse to extend a version the index already has a successor of, naming the slot if a later one holds it."""
    if len(entries) <= sequence or entries[sequence].sha256 != batch_sha:
        raise FarmError(
            f"{index}: ledger index no longer lists {batch_path} as version {sequence}",
            hint="the index changed while recording; run `farm desktop verify` on the latest version",
        )
    if entries[-1].sequence == sequence:
        return
    latest = entry_path(index, entries[-1])
    hint = f"record from the latest version {latest}; forking an old version breaks the chain"
    done = next((e for e in entries[sequence + 1 :] if e.recordedSlot == slot_id), None)
    if done is not None:
        raise FarmError(
            f"{batch_path}: slot {slot_id} is already recorded in {entry_path(index, done)} (version {done.sequence})",
            hint="a finished slot is never recorded twice: " + hint,
        )
    raise FarmError(
        f"{batch_path}: is not the latest version, {entry_path(index, entries[sequence + 1])} was already made from it",
        hint=hint,
    )
