"""Batch summaries against hand-computed values: null without samples, rates, nearest-rank durations and totals.
The percentile and rate primitives themselves are tested with the shared module (tests/results/test_stats.py)."""

from __future__ import annotations

from farm.desktop.stats import summarise, summarise_batch
from tests.helpers.desktop import batch_with, run


def test_empty_batch_has_null_rates_and_zero_counts() -> None:
    stats = summarise(batch_with({}, repetitions=2).slots)
    assert (stats.planned, stats.recorded, stats.pending, stats.complete) == (12, 0, 12, False)
    assert stats.finalSuccessRate is None
    assert stats.autonomousSuccessRate is None
    assert stats.successfulFractionOfPlan == 0.0
    assert stats.durationMedianMs is None and stats.durationP95Ms is None
    assert stats.successDurationMedianMs is None and stats.successDurationP95Ms is None
    assert stats.wrongActionRatio is None
    assert (stats.humanInterventions, stats.actions, stats.wrongActions, stats.runsWithWrongActions) == (0, 0, 0, 0)


def test_all_blocked_rates_are_zero_and_success_durations_null() -> None:
    results = {
        f"calculator-add/{i}": run("blocked", duration_ms=ms, actions=0, reason="no accessibility permission")
        for i, ms in ((1, 3000), (2, 1000), (3, 2000))
    }
    stats = summarise(batch_with(results, repetitions=3).slots[:3])
    assert (stats.recorded, stats.blocked, stats.success, stats.complete) == (3, 3, 0, True)
    assert stats.finalSuccessRate == 0.0
    assert stats.autonomousSuccessRate == 0.0
    assert stats.successfulFractionOfPlan == 0.0
    assert (stats.durationMedianMs, stats.durationP95Ms) == (2000, 3000)
    assert stats.successDurationMedianMs is None and stats.successDurationP95Ms is None
    assert stats.wrongActionRatio is None  # no action dispatched: no sample


def test_one_success_sample() -> None:
    stats = summarise(batch_with({"textedit-type/1": run(duration_ms=12_345, actions=9)}, 1).slots[2:3])
    assert (stats.planned, stats.recorded, stats.success) == (1, 1, 1)
    assert stats.finalSuccessRate == 1.0 and stats.autonomousSuccessRate == 1.0
    assert stats.durationMedianMs == stats.durationP95Ms == 12_345
    assert stats.successDurationMedianMs == stats.successDurationP95Ms == 12_345
    assert stats.wrongActionRatio == 0.0


def test_autonomous_success_excludes_human_help_and_wrong_actions_but_not_handoffs() -> None:
    results = {
        "calculator-add/1": run(humanInterventions=0, wrongActions=0, plannerHandoffs=2),
        "calculator-add/2": run(humanInterventions=1),
        "calculator-add/3": run(wrongActions=1),
        "calculator-add/4": run("failed", reason="wrong result on display"),
    }
    stats = summarise(batch_with(results, repetitions=4).slots[:4])
    assert stats.finalSuccessRate == 0.75
    assert stats.autonomousSuccessRate == 0.25
    assert stats.plannerHandoffs == 2


def test_mixed_batch_overall_and_per_task() -> None:
    results = {
        "calculator-add/1": run(duration_ms=20_000, actions=10),
        "calculator-add/2": run(duration_ms=30_000, actions=12, wrongActions=2, humanInterventions=1),
        "browser-form/1": run("failed", duration_ms=180_000, actions=30, wrongActions=3, reason="timeout"),
        "browser-delayed/1": run("blocked", duration_ms=5_000, actions=0, reason="Chrome missing"),
    }
    overall, tasks = summarise_batch(batch_with(results, repetitions=2))
    assert (overall.planned, overall.recorded, overall.pending) == (12, 4, 8)
    assert (overall.success, overall.failed, overall.blocked, overall.cancelled) == (2, 1, 1, 0)
    assert overall.finalSuccessRate == 0.5
    assert overall.autonomousSuccessRate == 0.25
    assert overall.successfulFractionOfPlan == 2 / 12
    # sorted [5000, 20000, 30000, 180000]: P50 rank 2, P95 rank ⌈3.8⌉ = 4
    assert (overall.durationMedianMs, overall.durationP95Ms) == (20_000, 180_000)
    assert (overall.successDurationMedianMs, overall.successDurationP95Ms) == (20_000, 30_000)
    assert (overall.humanInterventions, overall.plannerHandoffs) == (1, 0)
    assert (overall.actions, overall.wrongActions, overall.runsWithWrongActions) == (52, 5, 2)
    assert overall.wrongActionRatio == 5 / 52
    assert list(tasks) == [
        "calculator-add", "calculator-chain", "textedit-type", "textedit-replace", "browser-form", "browser-delayed"
    ]  # fmt: skip
    assert (tasks["calculator-add"].complete, tasks["calculator-add"].finalSuccessRate) == (True, 1.0)
    assert tasks["calculator-chain"].finalSuccessRate is None
    assert tasks["browser-form"].finalSuccessRate == 0.0
    assert tasks["browser-form"].successfulFractionOfPlan == 0.0


def test_sub_millisecond_timestamps_give_fractional_ms() -> None:
    result = run(startedAt="2026-02-03T09:00:00.000100Z", endedAt="2026-02-03T09:00:01.000600Z")
    assert result.duration_ms() == 1000.5
