"""A phone's pulled eval tree as records: harness skips, the host's scores, errors for what never finished,
and the evidence each record names."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from farm import manifest as mf
from farm.android.executor import ExecutorOutcome, ResolvedTask
from farm.android.prepare import Prepared
from farm.android.pull_limits import PullCaps, read_scores
from farm.results.normalise import Context, error_record
from farm.results.record import Execution, Record
from farm.scoring.rescore import rescore_records
from farm.taskset.loader import LoadedTask


def skip_record(ctx: Context, loaded: LoadedTask, reason: str, *, repeat: int = 1) -> Record:
    """The record of a task the harness skipped on a phone (`ctx.device`) before it ran."""
    t = loaded.task
    return Record(
        run=ctx.run, lane="android", device=ctx.device, task_id=t.id, repeat=repeat, category=loaded.directory,
        partition=t.partition, expect=t.expect, outcome="skipped", passed=False, reasons=[reason],
        execution=ctx.execution, executor=ctx.executor, split=ctx.split, source="harness",
    )


SUMMARY_FILE = "summary.md"
"""The agent's own summary at the top of a pulled tree; its 人工改判 section holds re-judgements."""


def with_evidence(records: list[Record], raw: Path, run_dir: Path) -> list[Record]:
    """Each record naming its run record (`<raw>/<id>/run/`, relative to the run directory) as `evidence`,
    when that directory was pulled; the others are returned unchanged."""
    found: dict[str, str | None] = {}
    out: list[Record] = []
    for rec in records:
        if rec.task_id not in found:
            # A task id is one path component; anything else (from a damaged or hostile scores line) names
            # no directory of this tree.
            single = rec.task_id not in ("", ".", "..") and Path(rec.task_id).name == rec.task_id
            run_record = raw / rec.task_id / "run"
            found[rec.task_id] = run_record.relative_to(run_dir).as_posix() if single and run_record.is_dir() else None
        evidence = found[rec.task_id]
        out.append(rec.model_copy(update={"evidence": evidence}) if evidence is not None else rec)
    return out


def summary_source(raw: Path, run_dir: Path, serial: str) -> mf.OverrideSource | None:
    """The pulled tree's summary.md as a source of re-judgements for that phone, when the tree has one."""
    summary = raw / SUMMARY_FILE
    if not summary.is_file():
        return None
    return mf.OverrideSource(path=summary.relative_to(run_dir).as_posix(), device=serial)


def phone_records(
    ctx: Context, prepared: Prepared, outcome: ExecutorOutcome | None, raw: Path, execution: Execution,
    run_dir: Path, caps: PullCaps | None = None,
) -> tuple[list[Record], list[str]]:
    """Records of one phone: harness skips, the pulled scores, and errors for what never finished.

    Every record whose run record was pulled (`<raw>/<id>/run/`) names it as its `evidence`. The scores file is
    read streaming within `caps` (`farm.android.pull_limits`); the problems returned are its corrupt lines, then
    one line per cap that refused lines, with the counts (the sweep puts them in the run's notes).
    """
    records = [skip_record(replace(ctx, execution=execution), lt, why) for lt, why in prepared.skipped]
    scores = read_scores(raw / "scores.jsonl", ctx, "scores.jsonl", caps)
    normalised = scores.normalised
    if any(r.execution == "simulated" for r in normalised.records):
        execution = "simulated"
        records = [r.model_copy(update={"execution": execution}) for r in records]
    by_id: dict[str, ResolvedTask] = {t.id: t for t in prepared.tasks}
    if ctx.executor == "instrument":
        # The phone's verdict is kept as device_verdict; the host scores the transcript itself, with the look the
        # executor took after the run (only for the tasks it says it looked after: a harness-look.json elsewhere
        # in the tree may be the app's).
        looked = outcome.looked if outcome is not None else []
        records += rescore_records(normalised.records, {t.id: t.task for t in prepared.tasks}, raw, looked=looked)
    else:
        records += normalised.records
    have = {r.task_id for r in normalised.records}
    infra = (outcome.infrastructure_error if outcome else None) or "executor did not run"
    for tid, rt in by_id.items():
        if tid in have:
            continue
        status = outcome.statuses.get(tid) if outcome else None
        if outcome is not None and tid in outcome.finished:
            why = (
                "agent process crashed while executing this task"
                if outcome.crashed and status == "failed"
                else f"finished on the phone (status {status}) but no scores.jsonl line was pulled"
            )
            if not outcome.pulled:
                why += f"; pull failed ({infra})"
        else:
            why = f"unfinished: {infra}"
        extra = {"instrumentStatus": status} if status else {}
        records.append(
            error_record(
                ctx, tid, why, source="harness", category=rt.directory, partition=rt.task.partition,
                expect=rt.task.expect, markers=list(rt.markers), extra=extra,
            ).model_copy(update={"execution": execution})
        )
    return with_evidence(records, raw, run_dir), normalised.problems + scores.notes
