"""The ledger index: one line per version of a batch, kept next to its plan, so an edit shows wherever it is.

Each batch version names its predecessor by SHA-256, so an edit of an older version shows when the chain is
walked; but the latest version has no successor to hold its hash. The index does: `init` creates
`<plan stem>.ledger.jsonl` next to the plan with the plan's entry, and every `record` appends the new version's
entry (file, SHA-256, recorded slot) under an exclusive lock. Any version finds the index by walking its chain
back to the plan, so the index keys on the batch's identity, not on folders:

- `record` extends only the index's latest version; a slot finished in any later version is refused by name,
  wherever that later file was written;
- `verify` refuses a version whose bytes differ from the hash the index holds (a hand-edited latest version),
  and a version the index does not list (a fork or a copy).

Files that are not the ledger's own are never opened. Seed 000 keeps `config.json` and `result.json` in the
same private results folder as the batch versions, so that folder holds other JSON by design; the old fork guard
scanned it, and one stray file could break every `record`. Refusing such a file would refuse the seed's own
layout, and warning about it would warn about every config and result; since the index names the ledger's files,
a stray or hostile `.json` next to them is simply never read.

Like the rest of the ledger this guards against mistakes, not against someone who also rewrites the index by
hand (seed 000: "这是防误覆盖，不是防篡改存证").
"""

from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from farm.desktop.jsonfile import (
    RelativeFile,
    Sha256,
    create_private_text,
    parse_model_bytes,
    read_file,
    real_path,
)
from farm.desktop.result import parse_utc
from farm.errors import FarmError

LEDGER_FORMAT: Final = "farm.desktop.ledger/1"
LEDGER_SUFFIX: Final = ".ledger.jsonl"
_HINT = (
    "the index is written by `farm desktop init` and `record` only: restore it from a backup of the results "
    "folder; a batch planned before ledger indexes existed cannot be verified, plan a new batch"
)


class LedgerEntry(BaseModel):
    """One line of the ledger index: a version of the batch as it was written."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["farm.desktop.ledger/1"] = LEDGER_FORMAT
    """Line format id."""
    sequence: int = Field(ge=0, strict=True)
    """Version number: 0 is the plan, line n holds version n-1."""
    file: RelativeFile
    """The version's file, relative to the index's directory."""
    sha256: Sha256
    """SHA-256 of the version's bytes as written."""
    recordedSlot: str | None
    """The slot this version recorded; null for the plan."""
    writtenAt: str
    """ISO UTC time the version was written."""

    @field_validator("writtenAt")
    @classmethod
    def _iso_utc(cls, value: str) -> str:
        parse_utc(value)
        return value


def ledger_path(plan_path: Path) -> Path:
    """The index of the batch whose plan (version 0) is `plan_path`."""
    return plan_path.with_name(plan_path.stem + LEDGER_SUFFIX)


def entry_path(index: Path, entry: LedgerEntry) -> Path:
    """The file of an entry (resolved, so it compares with other paths and reads well in messages)."""
    return real_path(index.parent / entry.file)


def entry_line(entry: LedgerEntry) -> str:
    """The entry as one line of the index."""
    return entry.model_dump_json() + "\n"


def read_ledger(path: Path) -> list[LedgerEntry]:
    """Every entry of the index, checked to number the versions 0, 1, 2, … without a gap."""
    raw = read_file(path, what="ledger index", hint=_HINT)
    if not raw.endswith(b"\n"):
        # An index always ends with a whole line; anything else is empty, cut short or not ours.
        raise FarmError(f"{path}: ledger index is empty or its last line is incomplete", hint=_HINT)
    entries: list[LedgerEntry] = []
    for number, line in enumerate(raw[:-1].split(b"\n"), start=1):
        entry = parse_model_bytes(line, LedgerEntry, path=f"{path} line {number}", what="ledger entry", hint=_HINT)
        if entry.sequence != number - 1 or (entry.sequence == 0) != (entry.recordedSlot is None):
            raise FarmError(
                f"{path} line {number}: field sequence: {entry.sequence} where version {number - 1} belongs",
                hint=_HINT,
            )
        entries.append(entry)
    return entries


def create_ledger(path: Path, plan: LedgerEntry) -> None:
    """Write a new index holding the plan's entry; refuse if one exists."""
    create_private_text(path, entry_line(plan), what="ledger index")


@contextmanager
def locked_ledger(path: Path) -> Iterator[int]:
    """Hold an exclusive lock on the index and yield a descriptor that appends to it."""
    try:
        # O_NONBLOCK: a FIFO planted as the index would otherwise block the open forever.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise FarmError(f"{path}: ledger index not found", hint=_HINT) from None
    except OSError as exc:
        raise FarmError(f"{path}: cannot open ledger index: {exc.strerror}", hint=_HINT) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FarmError(f"{path}: ledger index is not a regular file", hint=_HINT)
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        # Closing the descriptor also drops the lock.
        os.close(fd)


def append_entry(fd: int, entry: LedgerEntry) -> None:
    """Append one entry through a descriptor from `locked_ledger` and flush it to disk."""
    data = entry_line(entry).encode("utf-8")
    while data:
        written = os.write(fd, data)
        data = data[written:]
    os.fsync(fd)
