"""The host's verdict on an attempt another executor ran: re-score its pulled transcript, keep the phone's word apart.

The phone's own `passed` is never the verdict: a line saying `outcome: failed`, a failed check and
`passed: true` is a phone that scored itself wrongly. The host scores the transcript with the same
registry as live scoring and keeps what the phone said as `device_verdict`, so the report can list
where they disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from farm.errors import FarmError
from farm.results.record import DeviceVerdict, Record
from farm.scoring.score import score
from farm.scoring.transcript import load_evidence
from farm.taskset.model import Task

NO_TRANSCRIPT = "no transcript to score (<id>/run/final.json missing or unreadable)"


def host_rescore(record: Record, task: Task, run_dir: Path) -> Record:
    """`record` (normalised from the phone's line) with the host's verdict from `run_dir` (`<id>/run/`).

    Skips and infrastructure errors are kept as they are. An attempt without a readable transcript
    cannot be scored from evidence: it becomes an infrastructure error that names why.
    """
    if record.outcome in ("skipped", "error"):
        return record
    phone = DeviceVerdict(outcome=record.outcome, passed=record.passed, failure_category=record.failure_category)
    try:
        evidence = load_evidence(run_dir)
    except FarmError as exc:
        return record.model_copy(update={
            "outcome": "error", "passed": False, "checks": [], "failure_category": "infrastructure",
            "failure_kind": "infrastructure", "takeover_kind": None, "end_reason": None, "device_verdict": phone,
            "reasons": [f"{NO_TRANSCRIPT}: {exc.message}"],
        })
    result = score(task, evidence)
    kind = None if result.passed else ("infrastructure" if result.outcome == "error" else "agent")
    return record.model_copy(update={
        "outcome": result.outcome, "passed": result.passed, "checks": result.checks, "reasons": result.reasons,
        "failure_category": result.failure_category, "failure_kind": kind, "takeover_kind": result.takeover_kind,
        "end_reason": result.end_reason, "device_verdict": phone,
        "answer": evidence.answer if evidence.answer is not None else record.answer,
    })


def unplanned(record: Record, why: str = "was not planned") -> Record:
    """A line for a task the harness has no definition of: kept, but never counted as the phone says."""
    if record.outcome in ("skipped", "error"):
        return record
    phone = DeviceVerdict(outcome=record.outcome, passed=record.passed, failure_category=record.failure_category)
    return record.model_copy(update={
        "outcome": "error", "passed": False, "failure_category": "infrastructure", "failure_kind": "infrastructure",
        "device_verdict": phone,
        "reasons": [f"the phone reported task {record.task_id!r}, which {why}: the host cannot score it"],
    })


def rescore_records(
    records: Iterable[Record], tasks: Mapping[str, Task], raw: Path, *, why_unknown: str = "was not planned"
) -> list[Record]:
    """Host verdicts for the records of one pulled tree (`raw/<id>/run/` per task)."""
    return [
        host_rescore(r, tasks[r.task_id], raw / r.task_id / "run") if r.task_id in tasks
        else unplanned(r, why_unknown)
        for r in records
    ]
