"""One unit of a run, for its unit page, without reading every record in Python.

The run's DuckDB index (`farm.view.unit_index`) says which attempt a key names; records.jsonl is then scanned as
bytes for the lines that hold that task id, and only those are validated, the later line of the attempt winning
(as `farm.results.store.current_records` has it). Reading a 100 000-unit run in Python takes seconds; this takes
one pass over the bytes. Whatever this cannot settle (no index, a key the index does not know, a task id written
with other escapes than the one looked for) is answered the old way, from every record (`cached_units`), so the
answer is always the unit page `farm.view.units` would give.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from farm.errors import FarmError
from farm.results.record import Record
from farm.results.store import RECORDS_FILE
from farm.view.phones import phone_ref
from farm.view.unit_index import cached_index
from farm.view.units import Unit, cached_units, evidence_of


def _scan(path: Path, task_id: str, attempt: tuple[str, str, str, str, int, int]) -> Record | None:
    """The last valid line of `path` whose attempt is `attempt` (run aside), among those holding the task id."""
    needle = json.dumps(task_id, ensure_ascii=False).encode()
    found: Record | None = None
    try:
        with path.open("rb") as handle:
            for line in handle:
                if needle not in line:
                    continue
                try:
                    rec = Record.model_validate_json(line)
                except ValidationError:
                    continue
                if rec.attempt_key()[1:] == attempt:
                    found = rec
    except OSError:
        return None
    return found


def find_unit(runs_dir: Path, run_dir: Path, key: str, tasks_dir: Path | None = None) -> Unit | None:
    """The unit with this key, as `cached_units(run_dir).get(key)` has it; None when the run has no such unit."""
    try:
        index = cached_index(runs_dir, run_dir, tasks_dir)
    except FarmError:
        return cached_units(run_dir).get(key)
    known = index.identity(key)
    record = _scan(run_dir / RECORDS_FILE, known[0][2], known[0]) if known is not None else None
    if known is None or record is None:
        return cached_units(run_dir).get(key)
    evidence, note = evidence_of(run_dir, record)
    return Unit(key=key, record=record, phone=phone_ref(record.device, index.phone_ids), evidence=evidence,
                evidence_note=note, latest=known[1])
