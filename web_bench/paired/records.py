"""Web runs as farm records (appended to `runs/<id>/records.jsonl`), so the shared aggregation and
reports see the web lane too."""

from __future__ import annotations

from farm.results.record import CheckResult, Record, RunMetrics
from web_bench.paired.results import WebRun


def to_record(run: WebRun, source: str | None = None) -> Record:
    """The farm `Record` of one web run: (backend, task, seed as instance, trial as repeat); pairs go to `extra`."""
    outcome = "succeeded" if run.success else ("error" if run.infrastructure_error else "failed")
    reasons = [r for r in (run.error, None if run.success else run.validation.detail) if r]
    reasons += [f"forbidden tool {name}" for name in run.diagnostics.disallowed_tools]
    return Record(
        run=run.run_id, lane="web", device=run.backend, task_id=run.task, instance=str(run.seed), repeat=run.trial,
        category="web",
        outcome=outcome, passed=run.success,
        checks=[CheckResult(type="web_validator", passed=run.validation.passed, detail=run.validation.detail)],
        answer=run.answer, reasons=reasons,
        failure_kind=None if run.success else ("infrastructure" if run.infrastructure_error else "agent"),
        failure_category="infrastructure" if run.infrastructure_error else None,
        metrics=RunMetrics(
            first_feedback_ms=run.timings.ttft_ms, round_trips=run.diagnostics.model_calls,
            action_ms=run.timings.tool_wall_ms, total_ms=run.timings.completion_ms,
        ),
        steps=run.diagnostics.tool_calls,
        tokens=run.tokens,
        cost_usd=run.cost_usd,
        execution="simulated" if run.simulated_device else ("live" if run.policy == "model" else "controlled"),
        started_at=run.started_at, ended_at=run.ended_at, source=source,
        extra={
            "seed": run.seed, "trial": run.trial, "pairId": run.pair_id, "orderInPair": run.order_in_pair,
            "benchmarkSuiteVersion": run.benchmark_suite_version, "policy": run.policy,
            "stateReachedMs": run.timings.state_reached_ms, "deviceSerial": run.device, "model": run.model,
        },
    )
