"""summary.json: the whole selection is the denominator, quota is not failure, unknown stays null."""

from __future__ import annotations

from collections.abc import Collection, Mapping

import pytest
from pydantic import JsonValue

from farm.results.record import Tokens
from tests.helpers.webvoyager import make_task
from tests.webvoyager.test_metrics import agent, call, three_tasks, verdict, view
from web_bench.webvoyager.model import JudgeMode, TaskView, WvTask
from web_bench.webvoyager.summary import Summary, render_summary, summarize

PRICING: dict[str, JsonValue] = {"agent": {"input": 0.3, "output": 1.2, "cache_read": 0.06, "source": "list",
                                           "date": "2026-09-13"}}


def run(tasks: list[WvTask], views: Mapping[str, TaskView], *, judge_mode: JudgeMode = "reference",
        retry: Collection[str] = (), rejudge: Collection[str] = (), halted: bool = False) -> Summary:
    """`summarize` with the usual run-level arguments."""
    return summarize(tasks, views, judge_mode=judge_mode, recovery_quota_retry=retry,
                     recovery_quota_rejudge=rejudge, halted=halted, mixed_provenance=False, pricing_snapshot=PRICING,
                     evaluation_finished_at="2026-09-16T09:00:00Z")


def finished(task: WvTask, passed: bool | None = True, **agent_fields: object) -> TaskView:
    """A judged attempt with one priced request."""
    calls = [call(usage=Tokens(input_new=10, cache_read=0, cache_write=0, output=1), cost=0.01)]
    return view(task, agent(task.task_id, calls, **agent_fields), verdict(passed, cost=0.001))


def test_counts_and_rates_of_the_three_task_set() -> None:
    tasks, views = three_tasks()
    s = run(tasks, views)
    assert (s.selected, s.passed, s.failed, s.unjudged, s.missing) == (3, 1, 1, 0, 1)
    assert s.provisional_rate == pytest.approx(1 / 3) and s.rate is None and s.scoring_complete is False
    assert s.avg_steps == pytest.approx(6.0) and s.avg_model_rounds == pytest.approx(2.0)
    assert s.avg_duration_s == pytest.approx((12.3456 + 600) / 2) and s.timeout == 1 and s.step_limit == 0
    assert s.complete_without_infrastructure_errors is False


def test_per_site_stats_give_a_rate_only_when_the_site_is_complete() -> None:
    tasks, views = three_tasks()
    sites = run(tasks, views).sites
    assert list(sites) == ["Allrecipes", "Apple", "Amazon"]
    assert sites["Allrecipes"].rate == 1.0 and sites["Allrecipes"].scoring_complete
    assert sites["Apple"].rate == 0.0 and sites["Apple"].failed == 1
    assert sites["Amazon"].rate is None and sites["Amazon"].provisional_rate == 0.0 and sites["Amazon"].missing == 1


def test_costs_of_the_three_task_set_are_null_where_unknown() -> None:
    tasks, views = three_tasks()
    s = run(tasks, views)
    assert s.agent_cost_usd is None and s.total_task_cost_usd is None
    assert s.judge_cost_usd == pytest.approx(0.00035)
    assert s.cost_observed_usd == pytest.approx(0.0015 + 0.0001 + 0.0002 + 0.00015)
    assert s.usage_missing_calls == 1 and s.unpriced_calls == 0
    assert s.superseded_attempts == 1 and s.superseded_agent_cost_usd == pytest.approx(0.0003)


def test_complete_run_has_a_rate_and_summed_costs() -> None:
    tasks = [make_task("Apple--0"), make_task("Apple--1")]
    s = run(tasks, {"Apple--0": finished(tasks[0], True), "Apple--1": finished(tasks[1], False)})
    assert s.scoring_complete and s.rate == 0.5 and s.provisional_rate == 0.5
    assert s.agent_cost_usd == pytest.approx(0.02) and s.judge_cost_usd == pytest.approx(0.002)
    assert s.total_task_cost_usd == pytest.approx(0.022) and s.complete_without_infrastructure_errors


def test_website_unavailable_stays_in_the_denominator_and_is_counted_apart() -> None:
    tasks = [make_task("Amazon--0"), make_task("Amazon--1")]
    views = {"Amazon--0": finished(tasks[0], True),
             "Amazon--1": finished(tasks[1], False, status="error", error_kind="website_unavailable")}
    s = run(tasks, views)
    assert s.selected == 2 and s.failed == 1 and s.website_unavailable == 1 and s.rate == 0.5
    assert s.infrastructure_errors == 0


def test_agent_quota_is_missing_not_a_failure() -> None:
    tasks = [make_task("Apple--0"), make_task("Apple--1")]
    views = {"Apple--0": finished(tasks[0], True),
             "Apple--1": finished(tasks[1], False, status="error", error_kind="quota")}
    s = run(tasks, views)
    assert s.failed == 0 and s.missing == 1 and s.quota_retry_task_ids == ["Apple--1"]
    assert s.rate is None and s.provisional_rate == 0.5 and s.avg_steps == 1.0
    assert s.infrastructure_error_task_ids == ["Apple--1"]


def test_judge_quota_is_unjudged_not_a_failure() -> None:
    tasks = [make_task("Apple--0")]
    quota = verdict(None, judge_error="quota exhausted (2056)", error_kind="quota")
    s = run(tasks, {"Apple--0": view(tasks[0], agent("Apple--0", []), quota)})
    assert (s.failed, s.unjudged, s.missing) == (0, 1, 0) and s.quota_rejudge_task_ids == ["Apple--0"]
    assert s.quota_retry_task_ids == [] and not s.scoring_complete


def test_recovery_lists_count_even_when_the_view_does_not_show_quota() -> None:
    tasks = [make_task("Apple--0"), make_task("Apple--1"), make_task("Apple--2")]
    views = {t.task_id: finished(t, False) for t in tasks}
    s = run(tasks, views, retry=["Apple--2", "Amazon--9"], rejudge=["Apple--0"])
    assert s.quota_retry_task_ids == ["Apple--2"] and s.quota_rejudge_task_ids == ["Apple--0"]
    assert (s.failed, s.unjudged, s.missing) == (1, 1, 1)


def test_a_judge_error_is_unjudged_not_a_failure() -> None:
    tasks = [make_task("Allrecipes--0")]
    bad = verdict(None, judge_error="response was not a JSON array")
    s = run(tasks, {"Allrecipes--0": view(tasks[0], agent("Allrecipes--0", []), bad)})
    assert s.failed == 0 and s.unjudged == 1 and s.rate is None and s.provisional_rate == 0.0


def test_pending_verdict_makes_judge_cost_null_and_judge_none_makes_it_zero() -> None:
    tasks = [make_task("Allrecipes--0")]
    views = {"Allrecipes--0": view(tasks[0], agent("Allrecipes--0", []), None)}
    assert run(tasks, views).judge_cost_usd is None
    none = run(tasks, views, judge_mode="none")
    assert none.judge_cost_usd == 0.0 and none.unjudged == 1 and none.rate is None


def test_unknown_duration_makes_the_average_null() -> None:
    tasks = [make_task("Apple--0"), make_task("Apple--1")]
    views = {"Apple--0": finished(tasks[0], duration_ms=None), "Apple--1": finished(tasks[1], duration_ms=3000.0)}
    assert run(tasks, views).avg_duration_s is None


def test_lower_bound_durations_are_counted_and_flag_the_average() -> None:
    tasks = [make_task("Apple--0")]
    s = run(tasks, {"Apple--0": finished(tasks[0], duration_ms=5000.0, duration_basis="lower_bound")})
    assert s.duration_lower_bound_tasks == 1 and s.avg_duration_is_lower_bound and s.avg_duration_s == 5.0


def test_infrastructure_errors_and_halt_clear_complete_without_infrastructure_errors() -> None:
    tasks = [make_task("Apple--0"), make_task("Apple--1")]
    views = {"Apple--0": finished(tasks[0], True),
             "Apple--1": finished(tasks[1], False, status="error", error_kind="browser_error")}
    s = run(tasks, views)
    assert s.scoring_complete and s.infrastructure_errors == 1 and not s.complete_without_infrastructure_errors
    clean = {"Apple--0": views["Apple--0"], "Apple--1": finished(tasks[1], False)}
    assert run(tasks, clean).complete_without_infrastructure_errors
    assert run(tasks, clean, halted=True).complete_without_infrastructure_errors is False


def test_step_limit_is_counted_and_stays_a_scored_attempt() -> None:
    tasks = [make_task("Amazon--3")]
    s = run(tasks, {"Amazon--3": finished(tasks[0], False, status="step_limit")})
    assert s.step_limit == 1 and s.failed == 1 and s.scoring_complete


def test_unknown_superseded_cost_is_null() -> None:
    tasks = [make_task("Apple--0")]
    stale = view(tasks[0], agent("Apple--0", [], attempt=3), None, superseded_attempts=[1, 2],
                 superseded_agent_cost_usd=None)
    s = run(tasks, {"Apple--0": stale})
    assert s.superseded_attempts == 2 and s.superseded_agent_cost_usd is None


def test_summary_keeps_run_fields_and_round_trips() -> None:
    tasks, views = three_tasks()
    s = summarize(tasks, views, judge_mode="reference", recovery_quota_retry=[], recovery_quota_rejudge=[],
                  halted=True, mixed_provenance=True, pricing_snapshot=PRICING, evaluation_finished_at="t")
    assert s.mixed_provenance and s.halted and s.pricing == PRICING and s.evaluation_finished_at == "t"
    assert Summary.model_validate_json(render_summary(s)) == s
