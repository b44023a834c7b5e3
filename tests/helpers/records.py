"""Builders for on-device score lines and records (android lane tests)."""

from __future__ import annotations

import json
from typing import Any

from farm.results.record import Record, RunMetrics, Tokens


def score_line(task_id: str = "calc-multiply", **overrides: Any) -> dict[str, Any]:
    """A scores.jsonl object as the agent app writes it (camelCase)."""
    base: dict[str, Any] = {
        "id": task_id,
        "category": "read",
        "partition": "tune",
        "expect": "succeeded",
        "outcome": "succeeded",
        "passed": True,
        "checks": [{"type": "answer_regex", "passed": True, "detail": "matched 56088"}],
        "answer": "The result is 56088",
        "reason": None,
        "failureCategory": None,
        "takeoverKind": None,
        "steps": 4,
        "tokens": {"input": 1000, "cacheRead": 200, "cacheWrite": 0, "output": 50},
        "costUsd": 0.0021,
        "metrics": {
            "firstFeedbackMs": 800.0,
            "roundTrips": 3,
            "modelMs": 2000.0,
            "screenReadMs": 300.0,
            "actionMs": 400.0,
            "otherMs": 100.0,
            "totalMs": 2800.0,
        },
        "markers": [],
        "execution": "simulated",
        "startedAt": "2026-12-01T03:00:00Z",
        "endedAt": "2026-12-01T03:00:03Z",
        "appPackage": "dev.agentfarm.sim.calculator",
    }
    base.update(overrides)
    return base


def scores_text(*lines: dict[str, Any]) -> str:
    """Lines joined as a scores.jsonl file."""
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


def record(
    task_id: str = "t1",
    *,
    run: str = "run-a",
    device: str = "SER1",
    passed: bool = True,
    outcome: str | None = None,
    category: str = "read/system",
    partition: str = "tune",
    expect: str = "succeeded",
    **kw: Any,
) -> Record:
    """A Record with sensible defaults."""
    return Record(
        run=run,
        lane="android",
        device=device,
        task_id=task_id,
        category=category,
        partition=partition,  # type: ignore[arg-type]
        expect=expect,  # type: ignore[arg-type]
        outcome=outcome or ("succeeded" if passed else "failed"),  # type: ignore[arg-type]
        passed=passed,
        execution="simulated",
        metrics=kw.pop("metrics", RunMetrics()),
        tokens=kw.pop("tokens", Tokens()),
        **kw,
    )


def write_run(runs: Any, run_id: str, records: list[Record], phones: list[tuple[str, str]] | None = None) -> Any:
    """A run directory with a manifest (phones: serial, model) and records.jsonl."""
    from farm.manifest import Manifest, PhoneEntry, create_run_dir, utc_now
    from farm.results.store import RECORDS_FILE, append_records

    manifest = Manifest(
        run_id=run_id,
        created_at=utc_now(),
        phones=[PhoneEntry(serial=s, model=m) for s, m in (phones or [])],
    )
    run_dir = create_run_dir(runs, manifest)
    append_records(run_dir / RECORDS_FILE, records)
    return run_dir
