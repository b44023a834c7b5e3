"""Walk a batch's version chain back to its plan and check every link and every step."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from farm.desktop.batch import Batch, load_batch, sha256_file
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
    if newer.createdAt < older.createdAt:
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


def verify_chain(batch_path: Path) -> list[ChainLink]:
    """Every version from the plan to `batch_path`, oldest first; FarmError at the first broken link."""
    path = batch_path
    batch = load_batch(path)
    links = [
        ChainLink(path=str(path), sequence=batch.sequence, sha256=sha256_file(path), recordedSlot=batch.recordedSlot)
    ]
    while batch.previous is not None:
        prev_path = path.parent / batch.previous.file
        if not prev_path.is_file():
            raise FarmError(
                f"{path}: field previous.file: {prev_path} is missing",
                hint="keep every version of a batch next to each other; old versions are never deleted",
            )
        actual = sha256_file(prev_path)
        if actual != batch.previous.sha256:
            raise FarmError(
                f"{prev_path}: content changed after {path} was made from it "
                f"(sha256 {actual[:12]}… ≠ recorded {batch.previous.sha256[:12]}…)",
                hint="the file was edited or replaced; restore the original version",
            )
        prev = load_batch(prev_path)
        _check_step(prev, prev_path, batch, path)
        path, batch = prev_path, prev
        links.append(ChainLink(path=str(path), sequence=batch.sequence, sha256=actual, recordedSlot=batch.recordedSlot))
    links.reverse()
    return links
