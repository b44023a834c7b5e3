"""On resume, the units that were running when the controller stopped: what their try left is collected.

A unit leased at the crash may have ended on its phone after all: the agent app writes its result
into `eval/<device run>/` on the phone whether or not anyone is still reading the stream, and the
host executor writes into the try's tree as each task ends. Each try's `units.json` names its
units and its on-device run, so a resume pulls that tree again (instrument executor), scores every
unit that has a result there and records it as that try's end. Units without one are queued again.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from farm.android.executor import ExecutorName, ExecutorOutcome
from farm.android.options import RunOptions
from farm.android.pull import PullLimits, pull_tree
from farm.results.record import Execution, Record
from farm.results.store import ReadProblems, RunStore
from farm.sweep.journal import Journal, Lease
from farm.sweep.runner import Fleet
from farm.sweep.unit_run import BATCH_FILE, read_batch_file, score_units

STOPPED = "the controller stopped during this try"


@dataclass(frozen=True)
class Collected:
    """What a resume found of the tries cut short."""

    records: list[Record]
    """Units whose try had ended with a result (now recorded, their units done)."""
    refused: list[str]
    """Entries the pull refused (`path: why`)."""


def _trees(run_dir: Path) -> Iterator[Path]:
    yield from (p.parent for p in sorted(run_dir.glob(f"android/*/units/*/{BATCH_FILE}")))


def collect_leased(
    journal: Journal, run_dir: Path, fleet: Fleet, *, executor: ExecutorName, opts: RunOptions, run_id: str,
    execution: Execution, limits: PullLimits,
) -> Collected:
    """Record the leased units whose try left a result (pulled again from the phone for the instrument
    executor); the others stay leased, for the caller to queue again."""
    leased = {lease.unit_id: lease for lease in journal.leased()}
    if not leased:
        return Collected([], [])
    found: list[Record] = []
    refused: list[str] = []
    for tree in _trees(run_dir):
        batch = read_batch_file(tree)
        if batch is None:
            continue
        mine: list[Lease] = [leased[u.unit_id] for u in batch.units
                             if u.unit_id in leased and leased[u.unit_id].attempt == u.attempt]
        slot = fleet.slots.get(batch.serial)
        if not mine or slot is None or any(lease.task_id not in slot.resolved for lease in mine):
            continue
        if executor == "instrument":
            refused += pull_tree(slot.device, opts.profile.eval_dir(batch.device_run), tree, limits).refused
        tasks = [slot.resolved[lease.task_id] for lease in mine]
        ended = ExecutorOutcome(unfinished=[t.id for t in tasks], infrastructure_error=STOPPED, pulled=True)
        results, _rejected = score_units(mine, slot, tasks, ended, tree, executor=executor, opts=opts, run_id=run_id,
                                         run_dir=run_dir, execution=execution)
        for lease, result in zip(mine, results, strict=True):
            if result.infra:
                continue
            # The record first: a crash between the two is reconciled from records.jsonl on the next resume.
            RunStore(run_dir).append([result.record])
            journal.finish(lease, outcome=result.record.outcome, passed=result.record.passed,
                           reason="collected on resume")
            found.append(result.record)
    return Collected(found, refused)


PLACEHOLDER = "placeholder"
"""`extra` key of the error record a unit no phone could run gets when a sweep ends (`never ran: …`): it stands for
the unit until a resume runs it, and the record of that try supersedes it (a later line of the same attempt, or a
higher attempt)."""


def is_placeholder(rec: Record) -> bool:
    """Whether a record only stands in for a unit that did not run (see `PLACEHOLDER`)."""
    return rec.extra.get(PLACEHOLDER) is True


def reconcile(journal: Journal, run_dir: Path) -> int:
    """Units whose final record is in records.jsonl but whose journal entry is not final (a crash between the
    two): they end as their record says, so no unit ever gets a second final record. Returns how many.

    Only a record of the unit's latest try counts: a unit a resume queued again keeps the records of its earlier
    nights (a placeholder of the very attempt now in flight, the error of an earlier try), and neither says how the
    try in flight ended. A placeholder never does: it is written when no try runs.
    """
    written: dict[tuple[str, int], Record] = {}
    for rec in RunStore(run_dir).iter_records(ReadProblems()):
        unit = rec.extra.get("unit")
        if isinstance(unit, str) and not is_placeholder(rec):
            written[(unit, rec.attempt)] = rec
    found = 0
    for row in journal.units():
        final = written.get((row.unit_id, row.tries))
        if final is not None and row.state in ("pending", "leased"):
            journal.mark_recorded(row.unit_id, final.device, final.outcome, final.passed)
            found += 1
    return found
