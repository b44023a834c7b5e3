"""Walk a batch's version chain back to its plan, check every link and every step, then hold every version
against the ledger index, so the latest version cannot be edited unnoticed either."""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from farm.desktop.batch import BATCH_HINT, Batch, parse_batch, read_batch
from farm.desktop.jsonfile import read_file, real_path
from farm.desktop.ledger import LedgerEntry, entry_path, ledger_path, read_ledger
from farm.desktop.result import parse_utc
from farm.errors import FarmError


class ChainLink(BaseModel):
    """One verified version of a batch."""

    model_config = ConfigDict(extra="forbid")

    path: str
    """File of this version."""
    sequence: int
    """Version number (0 = plan)."""
    sha256: str
    """SHA-256 of the file."""
    recordedSlot: str | None
    """Slot recorded by this version; null for the plan."""


class ChainCheck(BaseModel):
    """A verified chain and the ledger index it was held against."""

    model_config = ConfigDict(extra="forbid")

    links: list[ChainLink]
    """Every version from the plan to the checked one, oldest first."""
    ledger: str
    """The ledger index (next to the plan)."""
    entries: list[LedgerEntry]
    """Every entry of the index; entries past the checked version are versions made from it since."""

    def latest(self) -> Path:
        """The latest version the index lists."""
        return entry_path(Path(self.ledger), self.entries[-1])


def _check_step(older: Batch, older_path: Path, newer: Batch, newer_path: Path) -> None:
    where = f"{newer_path}"
    if newer.sequence != older.sequence + 1:
        raise FarmError(
            f"{where}: sequence {newer.sequence} does not follow {older_path} (sequence {older.sequence})",
            hint="versions must be made one record at a time from the latest file",
        )
    if newer.config != older.config or newer.suite != older.suite or newer.tasksSha256 != older.tasksSha256:
        raise FarmError(
            f"{where}: config or suite differs from {older_path}",
            hint="a batch never changes its config; start a new batch for a new environment",
        )
    # Compared as times: the text of two valid timestamps may carry different numbers of fraction digits.
    if parse_utc(newer.createdAt) < parse_utc(older.createdAt):
        raise FarmError(f"{where}: createdAt is earlier than {older_path}'s", hint="the chain was reordered or edited")
    for before, after in zip(older.slots, newer.slots, strict=True):
        if after.id == newer.recordedSlot:
            if before.status != "pending":
                raise FarmError(
                    f"{where}: slot {after.id} was already recorded in {older_path}",
                    hint="a finished slot is never recorded twice",
                )
        elif before != after:
            raise FarmError(
                f"{where}: slot {after.id} differs from {older_path} although this version recorded "
                f"{newer.recordedSlot}",
                hint="the file was edited by hand; go back to the last consistent version",
            )


def _hold_against_index(links: list[ChainLink], index: Path, entries: list[LedgerEntry]) -> None:
    """Each version must be the file the index lists for its number, with the bytes the index hashed."""
    for link in links:
        if link.sequence >= len(entries):
            raise FarmError(
                f"{link.path}: version {link.sequence} is not in the ledger index {index}",
                hint="only `farm desktop record` adds versions; a file made another way is not part of the batch",
            )
        entry = entries[link.sequence]
        listed = entry_path(index, entry)
        if listed != real_path(Path(link.path)):
            raise FarmError(
                f"{link.path}: is not version {link.sequence} of the ledger index {index}, which is {listed}",
                hint="a fork or a copy of the batch; verify, record and report only the versions the index lists",
            )
        if entry.sha256 != link.sha256:
            raise FarmError(
                f"{link.path}: content changed after it was recorded "
                f"(sha256 {link.sha256[:12]}… ≠ ledger index {entry.sha256[:12]}…)",
                hint="the file was edited by hand; restore the recorded version (versions are never rewritten)",
            )
        if entry.recordedSlot != link.recordedSlot:
            raise FarmError(
                f"{index}: field recordedSlot: version {link.sequence} is listed as recording "
                f"{entry.recordedSlot or '(plan)'} but {link.path} recorded {link.recordedSlot or '(plan)'}",
                hint="the index was edited by hand; restore it from a backup of the results folder",
            )


def check_chain(batch_path: Path) -> ChainCheck:
    """Walk from `batch_path` back to the plan, then check every version against the ledger index.

    FarmError at the first broken link. The walk comes first so that an edit that breaks the chain's own rules is
    named by that rule; the index then catches what the walk cannot see, an edit of the latest version.
    """
    path = batch_path
    batch, sha = read_batch(path)
    links = [ChainLink(path=str(path), sequence=batch.sequence, sha256=sha, recordedSlot=batch.recordedSlot)]
    while batch.previous is not None:
        # Resolved, so that messages name the real file rather than a path full of `..`.
        prev_path = real_path(path.parent / batch.previous.file)
        if not prev_path.is_file():
            raise FarmError(
                f"{path}: field previous.file: {prev_path} is missing",
                hint="keep every version of a batch next to each other; old versions are never deleted",
            )
        raw = read_file(prev_path, what="desktop batch", hint=BATCH_HINT)
        actual = hashlib.sha256(raw).hexdigest()
        # The hash first: an edited version is named as edited even when the edit also broke its format.
        if actual != batch.previous.sha256:
            raise FarmError(
                f"{prev_path}: content changed after {path} was made from it "
                f"(sha256 {actual[:12]}… ≠ recorded {batch.previous.sha256[:12]}…)",
                hint="the file was edited or replaced; restore the original version",
            )
        prev = parse_batch(raw, prev_path)
        _check_step(prev, prev_path, batch, path)
        path, batch = prev_path, prev
        links.append(ChainLink(path=str(path), sequence=batch.sequence, sha256=actual, recordedSlot=batch.recordedSlot))
    links.reverse()
    index = ledger_path(path)
    entries = read_ledger(index)
    _hold_against_index(links, index, entries)
    return ChainCheck(links=links, ledger=str(index), entries=entries)


def verify_chain(batch_path: Path) -> list[ChainLink]:
    """Every version from the plan to `batch_path`, oldest first; FarmError at the first broken link."""
    return check_chain(batch_path).links
