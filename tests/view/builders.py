"""Builders of the viewer tests: a run whose one record names a host-executor run record, and its steps; a wide
synthetic run (hundreds of units on three phones) with its task set, for the run page."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from farm import manifest as mf
from farm.results.record import CheckResult, Record, RunMetrics, Tokens
from farm.scoring.transcript import ActionLine, ObservationLine, ResultLine, StepLine, StepTimings
from tests.helpers.records import record, write_run

RUN = "r-view"
EVIDENCE = "android/SER1/units/calc.SER1.try1/calc/run"
"""Where the built run keeps the run record (a try directory's layout)."""
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 64 + b"\xff\xd9"
"""Bytes that stand for a screenshot (served as image/jpeg by name)."""


def host_step(n: int, text: str, *, tool: str = "tap", args: dict[str, Any] | None = None,
              screenshot: str | None = None, message: str | None = None, ok: bool = True,
              result: str = "tapped") -> dict[str, Any]:
    """One steps.jsonl object as the host executor writes it."""
    line = StepLine(
        step=n, at_ms=100.0 * n,
        observation=ObservationLine(digest=f"d{n}", text=text, package="com.android.calculator2",
                                    screenshot=screenshot),
        action=ActionLine(tool=tool, args=args if args is not None else {"ref": n}, message=message),
        result=ResultLine(ok=ok, text=result, error=None if ok else "no such ref"),
        timings=StepTimings(screen_read_ms=12.0, model_ms=850.0, action_ms=30.0),
    )
    return line.model_dump(mode="json", by_alias=True)


def write_lines(path: Path, lines: list[dict[str, Any] | str], *, end_newline: bool = True) -> None:
    """A JSONL file of `lines` (strings are written as they are)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(line if isinstance(line, str) else json.dumps(line, ensure_ascii=False) for line in lines)
    path.write_text(text + ("\n" if end_newline else ""), encoding="utf-8")


def make_run(runs: Path, *, run: str = RUN, records: list[Record] | None = None, phone_name: str | None = None,
             adb_server: str = "", **fields: Any) -> Path:
    """A run under `runs` with one failed unit on phone SER1 (a Pixel 7; `phone_name` and `adb_server` as discovery
    recorded them, none by default) whose run record is at EVIDENCE (steps are up to the test)."""
    rec = record("calc", run=run, passed=False, evidence=EVIDENCE, reasons=["answer did not match"],
                 checks=[CheckResult(type="answer_regex", passed=False, detail="looked for 56088; answer said 56086")],
                 answer="56086", **fields)
    run_dir = write_run(runs, run, records if records is not None else [rec], phones=[("SER1", "Pixel 7")],
                        names={"SER1": phone_name} if phone_name is not None else None,
                        servers={"SER1": adb_server} if adb_server else None)
    (run_dir / EVIDENCE).mkdir(parents=True)
    return Path(run_dir)


WIDE = "r-wide"
"""The synthetic run of the run page's tests."""
WIDE_PHONES = (("SER1", "Pixel 7"), ("SER2", "Pixel 8"), ("SER3", "Galaxy S23"))
WIDE_CATEGORIES = ("read/system", "write", "web")
GOAL_WORD = "zebracrossing"
"""A word only the goal of task `task-007` holds (records do not carry goals; the task set does)."""
ANSWER_WORD = "platypus"
"""A word only the answer of task `task-012` holds."""
CHECK_WORD = "kumquat"
"""A word only the failing check's detail of task `task-025` holds."""


def wide_verdict(i: int) -> tuple[str, bool]:
    """Unit i's outcome and verdict: every 11th skipped, every 7th an error, every 5th failed, else passed."""
    if i % 11 == 10:
        return "skipped", False
    if i % 7 == 6:
        return "error", False
    if i % 5 == 0:
        return "failed", False
    return "succeeded", True


def wide_records(n: int, *, run: str = WIDE) -> list[Record]:
    """`n` units: task-000… round-robin over three phones and three categories, outcomes by `wide_verdict`, each
    with tokens, time and cost; a failed unit's answer_regex check says what it looked for."""
    out = []
    for i in range(n):
        outcome, passed = wide_verdict(i)
        task = f"task-{i:03d}"
        checks = [] if outcome in ("skipped", "error") else [CheckResult(
            type="answer_regex", passed=passed,
            detail=f"looked for {i}{' ' + CHECK_WORD if i == 25 else ''}; answer said {i + (0 if passed else 1)}")]
        out.append(record(
            task, run=run, device=WIDE_PHONES[i % 3][0], category=WIDE_CATEGORIES[i % 3], outcome=outcome,
            passed=passed, checks=checks, answer=None if outcome in ("skipped", "error") else
            f"the answer is {i}{' ' + ANSWER_WORD if i == 12 else ''}",
            end_reason=None if outcome == "skipped" else "error" if outcome == "error" else "answer",
            reasons=[] if passed else [f"{outcome} on unit {i}"],
            metrics=RunMetrics(total_ms=1000.0 + i), tokens=Tokens(input_new=1000 + i, cache_read=10, output=50),
            cost_usd=0.001, evidence=None))
    return out


def make_wide_run(runs: Path, tasks: Path, n: int = 250, *, run: str = WIDE, records: list[Record] | None = None,
                  label: str | None = "nightly", created_at: str = "2026-12-01T03:00:00Z") -> Path:
    """A run of `n` synthetic units (`wide_records`) on WIDE_PHONES, host executor with a model policy on the tune
    split, and its task set under `tasks` (goals `Ask about item i`, task-007's with GOAL_WORD), each task's hash in
    the manifest as `farm run` records it."""
    recs = records if records is not None else wide_records(n, run=run)
    entries = []
    for i, rec in enumerate({r.task_id: r for r in recs}.values()):
        path = tasks / rec.category / f"{rec.task_id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        goal = f"Ask about item {i}" + (f" at the {GOAL_WORD}" if rec.task_id == "task-007" else "")
        data = json.dumps({"id": rec.task_id, "goal": goal}, ensure_ascii=False).encode()
        path.write_bytes(data)
        entries.append(mf.TaskEntry(id=rec.task_id, sha256=hashlib.sha256(data).hexdigest()))
    run_dir = Path(write_run(runs, run, recs, phones=list(WIDE_PHONES)))
    lane = mf.LaneEntry(lane="android", detail={
        "executor": "host", "split": "tune", "request": {"host": {"policy": "model", "model": "gpt-test"}}})

    def change(m: mf.Manifest) -> None:
        m.tasks, m.lanes, m.label, m.created_at, m.status = entries, [lane], label, created_at, "finished"

    mf.update(run_dir, change)
    return run_dir
