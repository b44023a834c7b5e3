"""The batch report: JSON (exact key names) and markdown, for one batch of one kind only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from farm.desktop.batch import load_batch, read_batch
from farm.desktop.chain import verify_chain
from farm.desktop.stats import Number, Stats, summarise_batch
from farm.errors import FarmError

INTERIM_LABEL = "阶段性结果 (interim)"
COMPLETE_LABEL = "完整批次 (complete)"
EXECUTION_NOTE = {
    "live": "live — real apps and real model decisions",
    "controlled": "controlled — real apps, scripted or simulated decisions; NOT a live result",
    "simulated": "simulated — no real desktop execution; NOT a live result",
}
"""What each execution kind means for the result, in words."""


class ChainStatus(BaseModel):
    """Outcome of walking the batch's version chain when the report was made."""

    model_config = ConfigDict(extra="forbid")

    verified: bool
    """True when every version back to the plan is present and unchanged."""
    versions: int
    """Versions walked (plan included) when verified; 0 otherwise."""
    problem: str | None = None
    """The first broken link, when not verified."""


class SlotNote(BaseModel):
    """A recorded slot that did not succeed, with its reason."""

    model_config = ConfigDict(extra="forbid")

    slot: str
    """Slot id."""
    status: Literal["failed", "blocked", "cancelled"]
    """Recorded status."""
    reason: str
    """Recorded reason."""


class DesktopReport(BaseModel):
    """`farm desktop report --json`."""

    model_config = ConfigDict(extra="forbid")

    suite: str
    """Task suite version."""
    batch: str
    """Batch file reported on."""
    batchSha256: str
    """SHA-256 of that file."""
    sequence: int
    """Its version number."""
    mode: Literal["native", "jev"]
    """Batch mode."""
    execution: Literal["live", "controlled", "simulated"]
    """Batch execution kind."""
    commit: str
    """Plugin commit under test."""
    mainModel: str
    """Main model."""
    jevModel: str
    """Jev model (`none` in native mode)."""
    repetitions: int
    """Slots per task."""
    status: Literal["interim", "complete"]
    """interim while any slot is pending."""
    label: str
    """How the result may be described: 阶段性结果 (interim) until the batch is complete."""
    chain: ChainStatus
    """Version chain check."""
    overall: Stats
    """Statistics over every slot."""
    tasks: dict[str, Stats]
    """Statistics per task id."""
    notSucceeded: list[SlotNote]
    """Every recorded slot that did not succeed, with its reason."""


def build_report(batch_paths: list[Path]) -> DesktopReport:
    """Report on exactly one batch; more than one batch, or batches of mixed kinds, is refused."""
    if not batch_paths:
        raise FarmError("report: no batch given", hint="pass the latest batch file")
    if len(batch_paths) > 1:
        batches = [load_batch(path) for path in batch_paths]
        kinds = sorted({f"{b.config.mode}/{b.config.execution}" for b in batches})
        if len(kinds) > 1:
            raise FarmError(
                f"{batch_paths[1]}: batches of mixed kinds ({', '.join(kinds)}) cannot be summarised together",
                hint="report one batch at a time; compare kinds side by side, never pooled",
            )
        raise FarmError(
            f"{batch_paths[1]}: a report summarises exactly one batch, got {len(batch_paths)}",
            hint="pass only the latest version of one batch",
        )
    path = batch_paths[0]
    batch, batch_sha = read_batch(path)
    try:
        chain = ChainStatus(verified=True, versions=len(verify_chain(path)))
    except FarmError as exc:
        chain = ChainStatus(verified=False, versions=0, problem=exc.line())
    overall, tasks = summarise_batch(batch)
    notes = [
        SlotNote(slot=slot.id, status=slot.result.status, reason=slot.result.reason)
        for slot in batch.slots
        if slot.result is not None and slot.result.status != "success"
    ]
    return DesktopReport(
        suite=batch.suite,
        batch=str(path),
        batchSha256=batch_sha,
        sequence=batch.sequence,
        mode=batch.config.mode,
        execution=batch.config.execution,
        commit=batch.config.commit,
        mainModel=batch.config.mainModel,
        jevModel=batch.config.jevModel,
        repetitions=batch.config.repetitions,
        status="complete" if overall.complete else "interim",
        label=COMPLETE_LABEL if overall.complete else INTERIM_LABEL,
        chain=chain,
        overall=overall,
        tasks=tasks,
        notSucceeded=notes,
    )


def report_json(report: DesktopReport) -> str:
    """The JSON report text."""
    return json.dumps(report.model_dump(mode="json"), ensure_ascii=False, indent=2) + "\n"


def _num(value: Number | None, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}".rstrip("0").rstrip(".") if value != int(value) else f"{int(value)}"
    return str(value)


def _cell(text: str) -> str:
    """Free text made safe for one markdown table cell."""
    return " ".join(text.split()).replace("|", "/")


RESULT_HEADER = [
    "task", "planned", "recorded", "pending", "success", "failed", "blocked", "cancelled", "finalSuccessRate",
    "autonomousSuccessRate", "successfulFractionOfPlan", "P50 ms", "P95 ms", "success P50 ms", "success P95 ms",
    "humanInterventions", "plannerHandoffs", "actions", "wrongActions", "wrongActionRatio", "runsWithWrongActions",
]
"""Columns of the results table (the statistics' JSON key names where there is one)."""
RESULT_GROUPS: dict[str, list[int]] = {
    "Slots": [0, 1, 2, 3, 4, 5, 6, 7],
    "Rates (0..1)": [0, 8, 9, 10, 19],
    "Durations (ms)": [0, 11, 12, 13, 14],
    "Actions and help": [0, 15, 16, 17, 18, 20],
}
"""The results table as narrower tables: each group's columns of `RESULT_HEADER`, the task first."""
READING_NOTES = [
    "Ratios are in 0..1; — means no sample (never 0). Durations are wall-clock ms, P50/P95 by nearest rank.",
    "autonomousSuccessRate counts successes with no human intervention and no wrong action; read it with "
    "plannerHandoffs.",
    "A small-sample P95 is not a production SLA.",
    "blocked lowers end-to-end availability and is not by itself the model's fault: read the status counts and the "
    "reasons.",
    "Results were executed and recorded by people; this report does not prove they are real — check the evidence "
    "and the version chain.",
]
"""How to read a batch report (every rendering of it shows these)."""


def stats_cells(name: str, s: Stats) -> list[str]:
    """One row of the results table, as text."""
    cells = [
        name, s.planned, s.recorded, s.pending, s.success, s.failed, s.blocked, s.cancelled,
        _num(s.finalSuccessRate), _num(s.autonomousSuccessRate), _num(s.successfulFractionOfPlan),
        _num(s.durationMedianMs), _num(s.durationP95Ms), _num(s.successDurationMedianMs), _num(s.successDurationP95Ms),
        s.humanInterventions, s.plannerHandoffs, s.actions, s.wrongActions, _num(s.wrongActionRatio),
        s.runsWithWrongActions,
    ]  # fmt: skip
    return [str(c) for c in cells]


def result_rows(report: DesktopReport) -> list[list[str]]:
    """The results table: overall first, then each task."""
    return [stats_cells("overall", report.overall), *(stats_cells(t, s) for t, s in report.tasks.items())]


def progress_text(report: DesktopReport) -> str:
    """How far the batch is, after its label: `1 of 12 slots recorded, 11 pending.` or `all 12 slots recorded.`"""
    o = report.overall
    return f"{o.recorded} of {o.planned} slots recorded, {o.pending} pending." if report.status == "interim" \
        else f"all {o.planned} slots recorded."


def batch_facts(report: DesktopReport) -> list[str]:
    """What the batch was: mode and execution, commit and models, repetitions and version, the chain check."""
    chain = (f"verified ({report.chain.versions} versions back to the plan)" if report.chain.verified
             else f"NOT verified — {report.chain.problem}")
    return [
        f"mode: {report.mode}; execution: {EXECUTION_NOTE[report.execution]}",
        f"plugin commit: {report.commit}; main model: {report.mainModel}; Jev model: {report.jevModel}",
        f"repetitions per task: {report.repetitions}; batch version {report.sequence}, sha256 {report.batchSha256}",
        f"version chain: {chain}",
    ]


def report_markdown(report: DesktopReport) -> str:
    """The markdown report text."""
    rows = result_rows(report)
    rows[0][0] = "**overall**"
    lines = [
        f"# Desktop benchmark {report.suite} — {Path(report.batch).name}",
        "",
        f"**{report.label}**: {progress_text(report)}",
        "",
        *(f"- {fact}" for fact in batch_facts(report)),
        "",
        "## Results",
        "",
        "| " + " | ".join(RESULT_HEADER) + " |",
        "|" + "---|" * len(RESULT_HEADER),
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
    ]
    if report.notSucceeded:
        lines += ["## Not succeeded", "", "| slot | status | reason |", "|---|---|---|"]
        lines += [f"| {n.slot} | {n.status} | {_cell(n.reason)} |" for n in report.notSucceeded]
        lines.append("")
    lines += ["## Reading this report", "", *(f"- {note}" for note in READING_NOTES), ""]
    return "\n".join(lines)
