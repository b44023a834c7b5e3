"""The queue a run plans: order, what is skipped, what is only judged."""

from __future__ import annotations

from tests.helpers.webvoyager import make_agent_result, make_tasks, make_verdict, make_view
from web_bench.webvoyager.plan import needs_verdict, plan_work

IDS = ["Allrecipes--0", "Allrecipes--1", "Apple--0", "Apple--1", "Amazon--0", "Amazon--1"]


def test_a_fresh_run_queues_every_task_in_selection_order() -> None:
    plan = plan_work(make_tasks(IDS), {}, judge_mode="reference")
    assert [(i.task_id, i.kind, i.attempt) for i in plan.items] == [(t, "new", 1) for t in IDS]
    assert plan.done == []


def test_quota_tasks_run_first_then_service_retries_then_verdicts_then_new() -> None:
    views = {
        "Allrecipes--0": make_view("Allrecipes--0", status="error", judged=False),
        "Allrecipes--1": make_view("Allrecipes--1"),
        "Apple--0": make_view("Apple--0", judged=False),
        "Apple--1": make_view("Apple--1", status="error", judged=False),
    }
    plan = plan_work(make_tasks(IDS), views, judge_mode="reference",
                     quota_retry={"Apple--1": "quota (2056)"}, service_retry={"Allrecipes--0": "HTTP 503"})
    assert [(i.task_id, i.kind, i.attempt) for i in plan.items] == [
        ("Apple--1", "quota_retry", 2), ("Allrecipes--0", "service_retry", 2), ("Apple--0", "judge", 1),
        ("Amazon--0", "new", 1), ("Amazon--1", "new", 1),
    ]
    assert plan.done == ["Allrecipes--1"]


def test_a_normal_failure_is_not_run_again() -> None:
    views = {"Apple--0": make_view("Apple--0", status="timeout", passed=False)}
    plan = plan_work(make_tasks(["Apple--0"]), views, judge_mode="reference")
    assert plan.items == [] and plan.done == ["Apple--0"]


def test_an_unjudged_verdict_is_owed_again() -> None:
    view = make_view("Apple--0").model_copy(update={"judge": make_verdict(passed=None, judge_error="truncated")})
    plan = plan_work(make_tasks(["Apple--0"]), {"Apple--0": view}, judge_mode="reference")
    assert [(i.kind, i.reason) for i in plan.items] == [("judge", "truncated")]


def test_judge_none_owes_no_verdict() -> None:
    view = make_view("Apple--0", judged=False)
    assert not needs_verdict(view, "none")
    assert plan_work(make_tasks(["Apple--0"]), {"Apple--0": view}, judge_mode="none").items == []


def test_a_verdict_of_another_judge_is_owed_again_under_this_one() -> None:
    view = make_view("Apple--0").model_copy(update={"judge": make_verdict(mode="evidence")})
    assert needs_verdict(view, "reference")
    assert not needs_verdict(view, "evidence")


def test_judge_only_plans_no_agent_attempt() -> None:
    views = {"Apple--0": make_view("Apple--0", judged=False)}
    plan = plan_work(make_tasks(["Apple--0", "Apple--1"]), views, judge_mode="reference", judge_only=True,
                     quota_retry={"Apple--0": "quota"})
    assert [(i.task_id, i.kind) for i in plan.items] == [("Apple--0", "judge")]
    assert plan.agent_items() == []


def test_a_rerun_makes_the_next_attempt_of_a_finished_task() -> None:
    agent = make_agent_result("Amazon--0", attempt=2)
    views = {"Amazon--0": make_view("Amazon--0", agent=agent)}
    plan = plan_work(make_tasks(["Amazon--0"]), views, judge_mode="reference", rerun_ids=["Amazon--0"])
    assert [(i.kind, i.attempt) for i in plan.items] == [("rerun", 3)]
