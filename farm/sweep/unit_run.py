"""One unit on one phone: hand the executor a one-task job, then score and classify what came back.

Each try gets its own directory (`android/<serial>/units/<unit>.try<n>/`, the executor's eval
tree) and, for the instrument executor, its own on-device `eval/<run>.<unit>.<n>/`, so a try
never reads or overwrites another's files and a crash leaves every finished try intact.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from farm import manifest as mf
from farm.android.bundle import bundle_device_path
from farm.android.devices import shell
from farm.android.executor import Executor, ExecutorName, ExecutorOutcome, PhoneJob, ProgressSink, ResolvedTask
from farm.android.options import RunOptions
from farm.android.phone_records import phone_records, summary_source
from farm.android.prepare import Prepared
from farm.errors import FarmError
from farm.fsutil import atomic_write_text
from farm.results.normalise import Context
from farm.results.record import Execution, Record
from farm.results.store import try_dir, unit_slug
from farm.sweep.journal import Lease
from farm.sweep.start_state import read_start_state

if TYPE_CHECKING:
    from adbutils import AdbDevice

@dataclass(frozen=True)
class PhoneSlot:
    """What a phone's worker needs to run units: its device, label and resolved tasks."""

    serial: str
    label: str
    device: AdbDevice
    resolved: dict[str, ResolvedTask]
    """Task id → the task resolved on this phone."""


@dataclass(frozen=True)
class BatchResult:
    """What one executor job of leased units gave: each unit's result, and what the pull refused."""

    units: list[UnitResult]
    """In lease order."""
    pull_refused: list[str]
    """Entries of the phone's tree the pull refused (`path: why`)."""
    rejected: list[str]
    """Lines of the tree's scores.jsonl that were not taken (`scores.jsonl:N: why`, or a task this job did not
    run)."""
    tree: Path
    """The batch's eval tree on the host."""
    stop_dispatch: str | None = None
    """Why dispatch must stop (a model provider refused: quota or auth), in one line; None to go on."""


@dataclass(frozen=True)
class UnitResult:
    """The record of one try and whether the try failed for an infrastructure reason."""

    record: Record
    infra: bool
    """True: the phone, adb or the harness failed (the unit may be tried again); False: the agent's result."""


def run_units(
    leases: list[Lease], slot: PhoneSlot, executor: Executor, opts: RunOptions, *, run_id: str, run_dir: Path,
    execution: Execution, progress: ProgressSink, stop: threading.Event | None = None,
) -> BatchResult:
    """Run leased units of distinct tasks as one executor job (one `am instrument` call for the instrument
    executor) and return each unit's scored record, in lease order (never raises for device trouble)."""
    from adbutils import AdbError

    first = leases[0]
    start = read_start_state(lambda _task: lambda argv: shell(slot.device, argv, timeout=opts.stall_s),
                             [slot.resolved[lease.task_id].task for lease in leases])
    invalid = start.invalid
    started = [lease for lease in leases if lease.task_id not in invalid]
    if not started:
        return BatchResult([_invalid_start(lease, slot.resolved[lease.task_id], invalid[lease.task_id], opts,
                                           run_id=run_id, slot=slot, execution=execution, executor=executor.name)
                            for lease in leases],
                           [], [], try_dir(run_dir, slot.serial, first.unit_id, first.attempt))
    leases_run, leases = leases, started
    first = leases[0]
    tasks = [slot.resolved[lease.task_id] for lease in leases]
    raw = try_dir(run_dir, slot.serial, first.unit_id, first.attempt)
    device_run = f"{run_id}.{unit_slug(first.unit_id)}.{first.attempt}"
    # Written before the executor starts: a resume after a crash finds what this try may have left.
    write_batch_file(raw, BatchFile(device_run=device_run, serial=slot.serial, units=[
        BatchUnit(unit_id=lease.unit_id, task_id=lease.task_id, attempt=lease.attempt) for lease in leases]))
    job = PhoneJob(
        device=slot.device, serial=slot.serial, label=slot.label, run_id=device_run, tasks=tasks, options=opts,
        raw_dir=raw, device_eval_dir=opts.profile.eval_dir(device_run),
        device_bundle_path=bundle_device_path(opts.profile.resolved_files_dir(), device_run), stop=stop,
        state_before=start.before,
    )
    ids = [rt.id for rt in tasks]
    try:
        outcome = executor.run(job, progress)
    except (AdbError, OSError) as exc:
        outcome = ExecutorOutcome(unfinished=ids, infrastructure_error=f"adb error: {exc}")
    except Exception as exc:  # noqa: BLE001 - a unit's failure must not stop the phone's worker
        text = exc.line() if isinstance(exc, FarmError) else f"{type(exc).__name__}: {exc}"
        outcome = ExecutorOutcome(unfinished=ids, infrastructure_error=text)
    results, rejected = score_units(leases, slot, tasks, outcome, raw, executor=executor.name, opts=opts,
                                    run_id=run_id, run_dir=run_dir, execution=execution)
    by_unit = {lease.unit_id: result for lease, result in zip(leases, results, strict=True)}
    every = [by_unit.get(lease.unit_id) or _invalid_start(lease, slot.resolved[lease.task_id], invalid[lease.task_id],
                                                          opts, run_id=run_id, slot=slot, execution=execution,
                                                          executor=executor.name)
             for lease in leases_run]
    every = [_with_setup(r, start.setups.get(r.record.task_id)) for r in every]
    return BatchResult(every, list(outcome.pull_refused), rejected, raw, outcome.stop_dispatch)


def _with_setup(result: UnitResult, setup: str | None) -> UnitResult:
    """The unit's record with what its task's setup actions did before the agent started (`extra.setup`)."""
    if setup is None:
        return result
    record = result.record.model_copy(update={"extra": {**result.record.extra, "setup": setup}})
    return UnitResult(record, result.infra)


def _invalid_start(lease: Lease, rt: ResolvedTask, why: str, opts: RunOptions, *, run_id: str, slot: PhoneSlot,
                   execution: Execution, executor: ExecutorName) -> UnitResult:
    """The record of a unit not run because its goal already held: skipped (counted apart, never a pass, never the
    agent's failure), failure category `invalid_start`, the values seen in its reason."""
    from host_agent.state_probes import INVALID_START

    t = rt.task
    record = Record(
        run=run_id, lane="android", device=slot.serial, task_id=t.id, repeat=lease.repeat, attempt=lease.attempt,
        category=rt.directory, partition=t.partition, expect=t.expect, outcome="skipped", passed=False,
        reasons=[why], failure_category=INVALID_START, execution=execution, executor=executor,
        split=opts.agent.split, source="harness", extra={"unit": lease.unit_id},
    )
    return UnitResult(record, infra=False)


def score_units(
    leases: list[Lease], slot: PhoneSlot, tasks: list[ResolvedTask], outcome: ExecutorOutcome, raw: Path, *,
    executor: ExecutorName, opts: RunOptions, run_id: str, run_dir: Path, execution: Execution,
) -> tuple[list[UnitResult], list[str]]:
    """Each leased unit's record from a try's tree (`raw`) and how its executor job ended, in lease order;
    and the tree's scores lines that were not taken (rejected, or for a task this job did not run)."""
    ctx = Context(
        run=run_id, device=slot.serial, split=opts.agent.split, executor=executor, execution=execution,
        categories={rt.id: rt.directory for rt in tasks},
    )
    # phone_records names each try's run record (`<try>/<id>/run/`) as the record's evidence.
    records, problems = phone_records(ctx, Prepared(tasks=tasks), outcome, raw, execution, run_dir)
    ran = {rt.id for rt in tasks}
    # A rejected line is named once (in `problems`), not again as a line for a task this try did not run.
    named = {p.split(": ", 1)[0] for p in problems}
    problems += [f"{r.source or 'scores.jsonl'}: a line for {r.task_id!r}, which this try did not run"
                 for r in records if r.task_id not in ran and r.source not in named]
    by_task = {r.task_id: r for r in records if r.task_id in ran}
    results = []
    for lease in leases:
        record = by_task[lease.task_id].model_copy(update={
            "repeat": lease.repeat, "attempt": lease.attempt,
            "extra": {**by_task[lease.task_id].extra, "unit": lease.unit_id},
        })
        results.append(UnitResult(record, infra=record.outcome == "error"))
    return results, problems


BATCH_FILE = "units.json"
"""In each try's tree: which units the executor job ran, and its on-device run name."""


class BatchUnit(BaseModel):
    """One unit of an executor job."""

    model_config = ConfigDict(extra="forbid")

    unit_id: str
    """The unit's id in the journal."""
    task_id: str
    """Its task."""
    attempt: int
    """Its try number in this job."""


class BatchFile(BaseModel):
    """`units.json` of a try's tree: written before the job starts, read by a resume after a crash."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    """Version of this file's layout."""
    device_run: str
    """The job's on-device run name (`eval/<device_run>/` on the phone, for the instrument executor)."""
    serial: str
    """The phone that ran the job."""
    units: list[BatchUnit]
    """The units of the job, in lease order."""


def write_batch_file(tree: Path, batch: BatchFile) -> None:
    """Write `units.json` into a try's (new) tree."""
    tree.mkdir(parents=True, exist_ok=True)
    atomic_write_text(tree / BATCH_FILE, batch.model_dump_json(indent=1))


def read_batch_file(tree: Path) -> BatchFile | None:
    """A try's `units.json`, or None when it is missing or unreadable."""
    try:
        return BatchFile.model_validate_json((tree / BATCH_FILE).read_bytes())
    except (OSError, ValueError):
        return None


def summary_sources(run_dir: Path) -> list[mf.OverrideSource]:
    """Every try tree's `summary.md` (the agent's summary, where people write re-judgements), with its phone."""
    sources = []
    for marker in sorted(run_dir.glob(f"android/*/units/*/{BATCH_FILE}")):
        batch = read_batch_file(marker.parent)
        source = summary_source(marker.parent, run_dir, batch.serial) if batch is not None else None
        if source is not None:
            sources.append(source)
    return sources
