"""The host's verdict on an attempt another executor ran: re-score its pulled transcript, keep the phone's word apart.

The phone's own `passed` is never the verdict: a line saying `outcome: failed`, a failed check and
`passed: true` is a phone that scored itself wrongly. The host scores the transcript with the same
registry as live scoring and keeps what the phone said as `device_verdict`, so the report can list
where they disagree.

Nor is the phone's evidence taken whole: fresh looks, probes, app choices and judge verdicts are the harness's.
After an instrument run the harness looks at the phone itself (`farm.android.harness_look`) and leaves its look
in `<id>/run/harness-look.json`; that file, for the tasks the executor says it looked after, is the only source
of an attempt's screen_has and probe_has evidence. A pulled run (`farm pull`) has no such look, so those checks
fail saying so.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Literal

from farm.errors import FarmError
from farm.results.record import DeviceVerdict, Record
from farm.scoring.score import score
from farm.scoring.transcript import HARNESS_LOOK_FILE, needs_look, read_harness_look, read_phone_evidence, with_look
from farm.taskset.model import Task

NO_TRANSCRIPT = "no transcript to score (<id>/run/final.json missing or unreadable)"
PULLED_NO_LOOK = ("the harness did not look after the attempt (the run was pulled, not run by farm); "
                  "the app's own looks are never evidence")
"""Why a pulled run's screen_has and probe_has checks fail."""
NO_LOOK = ("the harness did not look after the attempt (the run was stopped, the try was collected on resume, or "
           "the look could not be written): not scored")
"""Why an attempt of farm's own instrument run that needed a look and got none is an infrastructure error."""
APP_LOOK_FILE = f"the app wrote {HARNESS_LOOK_FILE}; removed — only the harness looks"

LookSource = Literal["harness", "none", "pulled"]
"""Where an attempt's look after the run comes from: `harness` — the executor looked and wrote
`harness-look.json`; `none` — farm ran it but did not look (stopped, resumed); `pulled` — the run ran elsewhere."""


def _phone_verdict(record: Record) -> DeviceVerdict:
    return DeviceVerdict(outcome=record.outcome, passed=record.passed, failure_category=record.failure_category)


def _infrastructure(record: Record, reason: str) -> Record:
    return record.model_copy(update={
        "outcome": "error", "passed": False, "checks": [], "failure_category": "infrastructure",
        "failure_kind": "infrastructure", "takeover_kind": None, "end_reason": None,
        "device_verdict": _phone_verdict(record), "reasons": [reason],
    })


def host_rescore(record: Record, task: Task, run_dir: Path, *, look: LookSource = "pulled") -> Record:
    """`record` (normalised from the phone's line) with the host's verdict from `run_dir` (`<id>/run/`).

    Skips and infrastructure errors are kept as they are. An attempt without a readable transcript
    cannot be scored from evidence: it becomes an infrastructure error that names why (a final.json past its size cap
    too). `look` says where the attempt's look after the run comes from (`LookSource`); the phone's own looks are
    dropped and, when it wrote any, named at the end of the reasons, as are the steps.jsonl lines the caps kept out
    (notes: they do not fail the attempt by themselves).
    """
    if record.outcome in ("skipped", "error"):
        return record
    try:
        phone = read_phone_evidence(run_dir)
    except FarmError as exc:
        return _infrastructure(record, f"{NO_TRANSCRIPT}: {exc.message}")
    evidence = phone.evidence
    notes = phone.notes()
    no_look: str | None = None
    if evidence.end != "error" and needs_look(task):
        if look == "pulled":
            no_look = PULLED_NO_LOOK
        elif look == "none":
            evidence = evidence.model_copy(update={"end": "error", "end_reason": NO_LOOK})
        else:
            try:
                taken = read_harness_look(run_dir)
            except FarmError as exc:
                evidence = evidence.model_copy(update={
                    "end": "error", "end_reason": f"the harness's look after the attempt is unreadable: {exc.message}"})
            else:
                evidence = with_look(evidence, taken)
                if taken.app_file_replaced:
                    notes.append(APP_LOOK_FILE)
    result = score(task, evidence, no_look=no_look)
    kind = None if result.passed else ("infrastructure" if result.outcome == "error" else "agent")
    return record.model_copy(update={
        "outcome": result.outcome, "passed": result.passed, "checks": result.checks,
        "reasons": [*result.reasons, *notes],
        "failure_category": result.failure_category, "failure_kind": kind, "takeover_kind": result.takeover_kind,
        "end_reason": result.end_reason, "device_verdict": _phone_verdict(record),
        "answer": evidence.answer if evidence.answer is not None else record.answer,
    })


def unplanned(record: Record, why: str = "was not planned") -> Record:
    """A line for a task the harness has no definition of: kept, but never counted as the phone says."""
    if record.outcome in ("skipped", "error"):
        return record
    return record.model_copy(update={
        "outcome": "error", "passed": False, "failure_category": "infrastructure", "failure_kind": "infrastructure",
        "device_verdict": _phone_verdict(record),
        "reasons": [f"the phone reported task {record.task_id!r}, which {why}: the host cannot score it"],
    })


def rescore_records(
    records: Iterable[Record], tasks: Mapping[str, Task], raw: Path, *, why_unknown: str = "was not planned",
    looked: Collection[str] | None = None,
) -> list[Record]:
    """Host verdicts for the records of one pulled tree (`raw/<id>/run/` per task).

    `looked`: the tasks after which the harness looked at the phone itself (their `harness-look.json` is the
    harness's), when farm ran the tree; None for a tree pulled from a run made elsewhere, where no look exists.
    """
    def source(task_id: str) -> LookSource:
        if looked is None:
            return "pulled"
        return "harness" if task_id in looked else "none"

    return [
        host_rescore(r, tasks[r.task_id], raw / r.task_id / "run", look=source(r.task_id)) if r.task_id in tasks
        else unplanned(r, why_unknown)
        for r in records
    ]
