"""Append-only JSONL record files: `runs/<id>/records.jsonl`."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from farm.errors import FarmError
from farm.results.record import Record

RECORDS_FILE = "records.jsonl"


def append_records(path: Path, records: Iterable[Record]) -> int:
    """Append records (one JSON line each) and fsync; never rewrites what is there. Returns the count.

    A file whose last line was torn by a crash (no newline at the end) gets a newline first, so the
    torn line stays one bad line and the new records stay whole.
    """
    lines = [r.model_dump_json() + "\n" for r in records]
    if not lines:
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+b") as handle:
        if handle.tell() > 0:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":
                lines.insert(0, "\n")
        handle.write("".join(lines).encode("utf-8"))
        handle.flush()
        os.fsync(handle.fileno())
    return len(lines) - (1 if lines[0] == "\n" else 0)


@dataclass
class ReadProblems:
    """Lines of a record file that were skipped, each named `file:line: what`."""

    torn: list[str] = field(default_factory=list)
    """The last line, cut short by a crash mid-append (reported, skipped)."""
    corrupt: list[str] = field(default_factory=list)
    """Invalid lines elsewhere (a torn append that later appends followed), skipped when the caller collects them."""


def iter_records(path: Path, problems: ReadProblems | None = None) -> Iterator[Record]:
    """Read records one by one.

    A torn last line (a crash mid-append: invalid and without a newline at the end) is skipped and
    listed in `problems`. A corrupt line anywhere else — not JSON, not UTF-8, nested too deeply, a field
    missing or out of the record's range — is a FarmError naming the file and line, unless the caller
    collects `problems`, which then lists it and reads on (the reports do the same).
    """
    try:
        # Bytes, decoded by the validator line by line: a line that is not UTF-8 is one corrupt line, not
        # a UnicodeDecodeError out of the middle of the file.
        handle = path.open("rb")
    except OSError as exc:
        raise FarmError(f"{path}: cannot read records ({exc.strerror})", hint="is this a run directory?") from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                # pydantic's JSON parser stops at a fixed nesting depth with a ValidationError; it never
                # recurses into the stack the way `json.loads` does.
                yield Record.model_validate_json(line)
            except ValidationError as exc:
                if not line.endswith(b"\n"):
                    if problems is not None:
                        problems.torn.append(f"{path}:{number}: torn last line (a crash mid-append), skipped")
                    continue
                if problems is not None:
                    problems.corrupt.append(f"{path}:{number}: corrupt record line skipped")
                    continue
                problem = exc.errors()[0]
                where = ".".join(str(p) for p in problem["loc"])
                raise FarmError(
                    f"{path}:{number}: corrupt record ({where}: {problem['msg']})",
                    hint="records are append-only; move the damaged line out of the file",
                ) from None


def read_records(path: Path, problems: ReadProblems | None = None) -> list[Record]:
    """All records of a file (see `iter_records`)."""
    return list(iter_records(path, problems))


def new_records(path: Path, records: Iterable[Record]) -> tuple[list[Record], int]:
    """The records whose attempt key is not in the file yet (and not repeated among them); the count left out."""
    seen = {r.attempt_key() for r in iter_records(path, ReadProblems())} if path.is_file() else set()
    fresh: list[Record] = []
    dropped = 0
    for r in records:
        key = r.attempt_key()
        if key in seen:
            dropped += 1
            continue
        seen.add(key)
        fresh.append(r)
    return fresh, dropped
