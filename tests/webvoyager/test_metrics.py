"""task-metrics.md / .csv / .json: exact numbers on a hand-built selection, unknown-is-null, the total row."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from farm.results.record import Tokens
from tests.helpers.webvoyager import make_task
from web_bench.webvoyager.metrics import (
    COLUMNS,
    build_metrics,
    render_csv,
    render_json,
    render_markdown,
    write_task_metrics,
)
from web_bench.webvoyager.model import AgentResult, JudgeVerdict, ModelCall, TaskView, UsageTotals, WvTask

AT = "2026-09-16T08:00:00Z"


def call(role: str = "agent", *, usage: Tokens | None, cost: float | None, outcome: str = "ok",
         retry: bool = False) -> ModelCall:
    """One model request; `usage=None` with `outcome="timeout"` is a request that may have been billed."""
    return ModelCall.model_validate({"role": role, "step": 1, "retry": retry, "started_at": AT, "duration_ms": 10.0,
                                     "outcome": outcome, "usage": usage, "usage_expected": True, "cost_usd": cost})


def usage_of(calls: list[ModelCall]) -> UsageTotals:
    """Totals the way the accounting rules define them (unknown usage or cost makes the total null)."""
    seen = [c.usage for c in calls if c.usage is not None]
    missing = sum(1 for c in calls if c.usage is None and c.usage_expected)
    observed = Tokens(**{k: sum(getattr(t, k) or 0 for t in seen) for k in ("input_new", "cache_read",
                                                                              "cache_write", "output")})
    costs = [c.cost_usd for c in calls]
    return UsageTotals(tokens=None if missing else observed, tokens_observed=observed, usage_missing_calls=missing,
                       cost_usd=None if missing or None in costs else sum(c or 0.0 for c in costs),
                       cost_observed_usd=sum(c or 0.0 for c in costs), request_count=len(calls),
                       retry_count=sum(c.retry for c in calls))


def agent(task_id: str, calls: list[ModelCall], **fields: object) -> AgentResult:
    """A completed attempt whose rounds and usage come from `calls`; `fields` override any AgentResult field."""
    return AgentResult.model_validate({
        "task_id": task_id, "attempt": 1, "status": "completed", "final_answer": "done", "steps": 1,
        "model_rounds": len(calls), "model_steps": len(calls), "retry_count": sum(c.retry for c in calls),
        "started_at": AT, "finished_at": "2026-09-16T08:10:00Z", "duration_ms": 1000.0, "model_calls": calls,
        "usage": usage_of(calls), **fields})


def verdict(passed: bool | None, *, cost: float | None = 0.0001, attempt: int = 1, mode: str = "reference",
            **extra: object) -> JudgeVerdict:
    """A verdict with one judge request of `cost`."""
    calls = [call("judge", usage=Tokens(input_new=500, cache_read=0, cache_write=0, output=10), cost=cost)]
    return JudgeVerdict.model_validate({"mode": mode, "pass": passed, "reason": "because", "attempt": attempt,
                                        "model_calls": calls, "usage": usage_of(calls), "judged_at": AT, **extra})


def view(task: WvTask, result: AgentResult, judge: JudgeVerdict | None, **extra: object) -> TaskView:
    """The current view of `task`."""
    return TaskView.model_validate({"task_id": task.task_id, "site": task.site, "agent": result, "judge": judge,
                                    **extra})


def three_tasks() -> tuple[list[WvTask], dict[str, TaskView]]:
    """Allrecipes--0 passed with cache usage (attempt 2, attempt 1 superseded); Apple--0 timed out with one request
    that reported no usage, judged fail; Amazon--0 missing."""
    tasks = [make_task("Allrecipes--0"), make_task("Apple--0"), make_task("Amazon--0")]
    cached = [call(usage=Tokens(input_new=1000, cache_read=0, cache_write=2000, output=100), cost=0.001),
              call(usage=Tokens(input_new=200, cache_read=2000, cache_write=0, output=150), cost=0.0005)]
    timed_out = [call(usage=Tokens(input_new=300, cache_read=0, cache_write=0, output=30), cost=0.0001),
                 call(usage=None, cost=None, outcome="timeout")]
    views = {
        "Allrecipes--0": view(tasks[0], agent("Allrecipes--0", cached, attempt=2, duration_ms=12345.6, steps=5),
                              verdict(True, cost=0.0002, attempt=2), superseded_attempts=[1],
                              superseded_agent_cost_usd=0.0003),
        "Apple--0": view(tasks[1], agent("Apple--0", timed_out, status="timeout", duration_ms=600000.0, steps=7,
                                         error="timed out after 600 s"), verdict(False, cost=0.00015)),
    }
    return tasks, views


def md_cells(line: str) -> list[str]:
    """Cells of one Markdown table line (an escaped `\\|` is not a separator)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def test_json_entry_of_a_passed_task_with_cache_usage() -> None:
    tasks, views = three_tasks()
    entry = json.loads(render_json(build_metrics(tasks, views, judge_mode="reference")))["tasks"][0]
    assert entry["status"] == "completed" and entry["attempt"] == 2 and entry["pass"] is True
    assert (entry["steps"], entry["model_rounds"], entry["model_steps"]) == (5, 2, 2)
    assert entry["duration_s"] == pytest.approx(12.3456) and entry["duration_basis"] == "worker"
    assert entry["input_tokens"] == 1200 + 2000 + 2000
    assert (entry["cache_hit_tokens"], entry["cache_miss_tokens"], entry["cache_write_tokens"]) == (2000, 3200, 2000)
    assert entry["output_tokens"] == 250 and entry["output_cache_tokens"] is None
    assert entry["hit_rate"] == pytest.approx(2000 / 5200)
    assert entry["agent_cost_usd"] == pytest.approx(0.0015) and entry["judge_cost_usd"] == pytest.approx(0.0002)
    assert entry["total_cost_usd"] == pytest.approx(0.0017)
    assert entry["superseded_attempts"] == [1] and entry["superseded_agent_cost_usd"] == pytest.approx(0.0003)
    assert entry["evaluation_finished_at"] == AT and len(entry["model_calls"]) == 2


def test_json_entry_with_unknown_usage_is_null_not_zero_and_keeps_the_observed_part() -> None:
    tasks, views = three_tasks()
    entry = json.loads(render_json(build_metrics(tasks, views, judge_mode="reference")))["tasks"][1]
    assert entry["status"] == "timeout" and entry["pass"] is False
    for key in ("tokens", "input_tokens", "cache_hit_tokens", "cache_miss_tokens", "output_tokens", "hit_rate",
                "agent_cost_usd", "total_cost_usd"):
        assert entry[key] is None, key
    assert entry["tokens_observed"] == {"input_new": 300, "cache_read": 0, "cache_write": 0, "output": 30}
    assert entry["usage_missing_calls"] == 1 and entry["agent_cost_observed_usd"] == pytest.approx(0.0001)
    assert entry["judge_cost_usd"] == pytest.approx(0.00015)


def test_json_lists_a_missing_task_with_nulls() -> None:
    tasks, views = three_tasks()
    data = json.loads(render_json(build_metrics(tasks, views, judge_mode="reference")))
    assert [t["task_id"] for t in data["tasks"]] == ["Allrecipes--0", "Apple--0", "Amazon--0"]
    missing = data["tasks"][2]
    assert missing["status"] == "missing" and missing["site"] == "Amazon"
    for key in ("steps", "model_rounds", "duration_s", "agent_cost_usd", "judge_cost_usd", "total_cost_usd", "pass"):
        assert missing[key] is None, key


def test_json_total_is_unknown_with_an_unknown_member_but_keeps_observed_sums() -> None:
    tasks, views = three_tasks()
    total = json.loads(render_json(build_metrics(tasks, views, judge_mode="reference")))["total"]
    assert total["tasks"] == 2 and total["steps"] == 12 and total["model_rounds"] == 4
    assert total["duration_s"] == pytest.approx(612.3456)
    assert total["uncached_input_tokens"] is None and total["hit_rate"] is None
    assert total["agent_cost_usd"] is None and total["total_cost_usd"] is None
    assert total["agent_cost_observed_usd"] == pytest.approx(0.0016)
    assert total["judge_cost_usd"] == pytest.approx(0.00035)
    assert total["tokens_observed"] == {"input_new": 1500, "cache_read": 2000, "cache_write": 2000, "output": 280}
    assert total["superseded_agent_cost_usd"] == pytest.approx(0.0003)


def test_markdown_table_has_rows_for_finished_tasks_a_total_and_footnotes() -> None:
    tasks, views = three_tasks()
    text = render_markdown(build_metrics(tasks, views, judge_mode="reference"))
    table = [line for line in text.splitlines() if line.startswith("|")]
    header = md_cells(table[0])
    assert header[1] == "Agent time (s)¹" and header[-1] == "Cost (USD)²" and len(header) == 10
    rows = [md_cells(line) for line in table[2:]]
    assert rows[0] == ["Allrecipes--0", "12.346", "5", "2", "1200", "2000", "2000", "250", "38.46%", "0.00150000"]
    assert rows[1] == ["Apple--0", "600.000", "7", "2", "—", "—", "—", "—", "—", "—"]
    assert rows[2] == ["Total", "612.346", "12", "4", "—", "—", "—", "—", "—", "—"]
    assert "Amazon--0" not in text
    assert "¹ Agent time" in text and "not the run's wall-clock time" in text
    assert "² Cost: the current agent attempt only" in text and "not a bill" in text


def test_csv_has_a_bom_parses_and_leaves_unknown_cells_empty() -> None:
    tasks, views = three_tasks()
    text = render_csv(build_metrics(tasks, views, judge_mode="reference"))
    assert text.startswith("\ufeff")
    rows = list(csv.reader(io.StringIO(text.removeprefix("\ufeff"))))
    assert tuple(rows[0]) == COLUMNS
    assert rows[1] == ["Allrecipes--0", "12.346", "5", "2", "1200", "2000", "2000", "250", "0.384615", "0.00150000"]
    assert rows[2] == ["Apple--0", "600.000", "7", "2", "", "", "", "", "", ""]
    assert rows[3] == ["Total", "612.346", "12", "4", "", "", "", "", "", ""]
    assert len(rows) == 4


def test_total_hit_rate_is_token_weighted_not_a_mean_of_percentages() -> None:
    tasks = [make_task("Allrecipes--0"), make_task("Allrecipes--1")]
    mostly_cached = [call(usage=Tokens(input_new=100, cache_read=900, cache_write=0, output=1), cost=0.1)]
    mostly_new = [call(usage=Tokens(input_new=9000, cache_read=1000, cache_write=0, output=1), cost=0.1)]
    views = {"Allrecipes--0": view(tasks[0], agent("Allrecipes--0", mostly_cached), verdict(True)),
             "Allrecipes--1": view(tasks[1], agent("Allrecipes--1", mostly_new), verdict(True))}
    metrics = build_metrics(tasks, views, judge_mode="reference")
    rates = [t.hit_rate for t in metrics.tasks]
    assert rates == [pytest.approx(0.9), pytest.approx(0.1)]
    assert metrics.total.hit_rate == pytest.approx(1900 / 11000)
    assert metrics.total.hit_rate != pytest.approx(sum(r or 0 for r in rates) / 2)
    total = [line for line in render_markdown(metrics).splitlines() if line.startswith("| Total")][0]
    assert md_cells(total)[8] == "17.27%"


def test_total_row_sums_known_costs_and_tokens() -> None:
    tasks = [make_task("Apple--0"), make_task("Apple--1")]
    views = {t.task_id: view(t, agent(t.task_id, [call(usage=Tokens(input_new=10, cache_read=5, cache_write=5,
                                                                          output=3), cost=0.125)],
                                      duration_ms=1500.0, steps=2), verdict(False, cost=0.5)) for t in tasks}
    metrics = build_metrics(tasks, views, judge_mode="reference")
    last = md_cells([line for line in render_markdown(metrics).splitlines() if line.startswith("| Total")][0])
    assert last == ["Total", "3.000", "4", "2", "20", "10", "10", "6", "25.00%", "0.25000000"]
    assert metrics.total.total_cost_usd == pytest.approx(1.25)


def test_judge_cost_is_zero_with_judge_none_and_null_while_pending() -> None:
    task = make_task("Amazon--0")
    views = {"Amazon--0": view(task, agent("Amazon--0", [call(usage=Tokens(input_new=1, cache_read=0, cache_write=0,
                                                                             output=1), cost=0.5)]), None)}
    none = build_metrics([task], views, judge_mode="none").tasks[0]
    assert none.judge_cost_usd == 0.0 and none.total_cost_usd == pytest.approx(0.5)
    pending = build_metrics([task], views, judge_mode="reference")
    assert pending.tasks[0].judge_cost_usd is None and pending.tasks[0].total_cost_usd is None
    assert pending.total.judge_cost_usd is None and pending.total.agent_cost_usd == pytest.approx(0.5)


def test_verdict_of_another_mode_is_not_current() -> None:
    task = make_task("Amazon--0")
    views = {"Amazon--0": view(task, agent("Amazon--0", []), verdict(True, mode="evidence"))}
    entry = build_metrics([task], views, judge_mode="reference").tasks[0]
    assert entry.passed is None and entry.judge_cost_usd is None


def test_verdict_on_an_earlier_attempt_is_not_current() -> None:
    task = make_task("Amazon--0")
    views = {"Amazon--0": view(task, agent("Amazon--0", [], attempt=2), verdict(False, attempt=1))}
    entry = build_metrics([task], views, judge_mode="reference").tasks[0]
    assert entry.passed is None and entry.judge_cost_usd is None and entry.attempt == 2


def test_unknown_price_makes_cost_null_in_all_three_files() -> None:
    task = make_task("Apple--3")
    unpriced = [call(usage=Tokens(input_new=10, cache_read=0, cache_write=0, output=1), cost=None)]
    metrics = build_metrics([task], {"Apple--3": view(task, agent("Apple--3", unpriced), verdict(True))},
                            judge_mode="reference")
    assert json.loads(render_json(metrics))["tasks"][0]["agent_cost_usd"] is None
    assert md_cells(render_markdown(metrics).splitlines()[4])[-1] == "—"
    assert list(csv.reader(io.StringIO(render_csv(metrics))))[1][-1] == ""


def test_lower_bound_time_is_marked_in_markdown_and_not_a_csv_number() -> None:
    task = make_task("Apple--1")
    views = {"Apple--1": view(task, agent("Apple--1", [], duration_ms=2000.0, duration_basis="lower_bound"), None)}
    metrics = build_metrics([task], views, judge_mode="none")
    rows = [md_cells(line) for line in render_markdown(metrics).splitlines()[4:6]]
    assert rows[0][1] == "≥2.000" and rows[1][1] == "≥2.000"
    assert [r[1] for r in csv.reader(io.StringIO(render_csv(metrics)))][1:] == ["", ""]
    assert metrics.total.duration_lower_bound is True


def test_unknown_time_makes_the_total_time_unknown() -> None:
    tasks = [make_task("Apple--1"), make_task("Apple--2")]
    views = {"Apple--1": view(tasks[0], agent("Apple--1", [], duration_ms=None), None),
             "Apple--2": view(tasks[1], agent("Apple--2", [], duration_ms=4000.0), None)}
    metrics = build_metrics(tasks, views, judge_mode="none")
    assert metrics.total.duration_s is None and metrics.total.duration_observed_s == pytest.approx(4.0)
    assert md_cells(render_markdown(metrics).splitlines()[6])[:2] == ["Total", "—"]


def test_csv_neutralises_a_cell_a_spreadsheet_would_run() -> None:
    task = WvTask(task_id="=HYPERLINK(1)", confirmed_task="x", website="https://www.apple.com/", site="Apple")
    text = render_csv(build_metrics([task], {task.task_id: view(task, agent(task.task_id, []), None)}))
    assert list(csv.reader(io.StringIO(text)))[1][0] == "'=HYPERLINK(1)"


def test_markdown_rows_have_as_many_cells_as_the_header() -> None:
    task = WvTask(task_id="Apple--9|x\ny", confirmed_task="x", website="https://www.apple.com/", site="Apple")
    text = render_markdown(build_metrics([task], {task.task_id: view(task, agent(task.task_id, []), None)}))
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert len(table) == 4 and {len(md_cells(line)) for line in table} == {10}


def test_rows_follow_the_selection_order_not_the_views_order() -> None:
    tasks = [make_task("Apple--2"), make_task("Allrecipes--5")]
    views = {t.task_id: view(t, agent(t.task_id, []), None) for t in reversed(tasks)}
    text = render_markdown(build_metrics(tasks, views))
    assert text.index("Apple--2") < text.index("Allrecipes--5")


def test_write_task_metrics_writes_the_three_files(tmp_path: Path) -> None:
    tasks, views = three_tasks()
    metrics = write_task_metrics(tmp_path, tasks, views, judge_mode="reference")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["task-metrics.csv", "task-metrics.json", "task-metrics.md"]
    assert (tmp_path / "task-metrics.csv").read_bytes().startswith(b"\xef\xbb\xbf")
    assert (tmp_path / "task-metrics.md").read_text(encoding="utf-8") == render_markdown(metrics)
    assert json.loads((tmp_path / "task-metrics.json").read_text(encoding="utf-8"))["total"]["tasks"] == 2
