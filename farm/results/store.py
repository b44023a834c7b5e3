"""Append-only JSONL record files: `runs/<id>/records.jsonl`."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from pydantic import ValidationError

from farm.errors import FarmError
from farm.results.record import Record

RECORDS_FILE = "records.jsonl"


def append_records(path: Path, records: Iterable[Record]) -> int:
    """Append records (one JSON line each) and fsync; never rewrites what is there. Returns the count."""
    lines = [r.model_dump_json() + "\n" for r in records]
    if not lines:
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(lines))
        handle.flush()
        os.fsync(handle.fileno())
    return len(lines)


def iter_records(path: Path) -> Iterator[Record]:
    """Read records one by one; a corrupt line is a FarmError naming the file and line."""
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise FarmError(f"{path}: cannot read records ({exc.strerror})", hint="is this a run directory?") from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield Record.model_validate_json(line)
            except ValidationError as exc:
                problem = exc.errors()[0]
                where = ".".join(str(p) for p in problem["loc"])
                raise FarmError(
                    f"{path}:{number}: corrupt record ({where}: {problem['msg']})",
                    hint="records are append-only; move the damaged line out of the file",
                ) from None


def read_records(path: Path) -> list[Record]:
    """All records of a file (see `iter_records`)."""
    return list(iter_records(path))
