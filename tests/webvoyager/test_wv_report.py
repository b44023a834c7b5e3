"""report.md: headline over the whole selection, site table, run health, costs, and a task table that task text
cannot break."""

from __future__ import annotations

from collections.abc import Mapping

from tests.helpers.webvoyager import make_manifest, make_task
from tests.webvoyager.test_metrics import agent, md_cells, three_tasks, verdict, view
from web_bench.webvoyager.model import TaskView, WvTask
from web_bench.webvoyager.report import render_report
from web_bench.webvoyager.summary import Summary, summarize


def summary_of(tasks: list[WvTask], views: Mapping[str, TaskView], *, mixed: bool = False) -> Summary:
    """The summary a reference run would write."""
    return summarize(tasks, views, judge_mode="reference", recovery_quota_retry=[], recovery_quota_rejudge=[],
                     halted=False, mixed_provenance=mixed, pricing_snapshot={}, evaluation_finished_at=None)


def report(tasks: list[WvTask], views: Mapping[str, TaskView], *, mixed: bool = False) -> str:
    """report.md of a reference run over `tasks`."""
    return render_report(make_manifest(tasks), summary_of(tasks, views, mixed=mixed), tasks, views)


def table(text: str, header_start: str) -> list[list[str]]:
    """The cells of the table whose header line starts with `header_start`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append(md_cells(line))
    return rows


def complete_set() -> tuple[list[WvTask], dict[str, TaskView]]:
    """Two Allrecipes tasks (one passed) and one passed Apple task, all judged."""
    tasks = [make_task("Allrecipes--0"), make_task("Allrecipes--1"), make_task("Apple--0")]
    views = {t.task_id: view(t, agent(t.task_id, []), verdict(t.task_id != "Allrecipes--1")) for t in tasks}
    return tasks, views


def test_provisional_headline_names_missing_and_the_whole_denominator() -> None:
    tasks, views = three_tasks()
    text = report(tasks, views)
    assert "**Provisional pass rate 33.3% (1/3)**" in text
    assert "scoring_complete: false" in text and "missing = 1, unjudged = 0" in text
    assert "every selected task (3)" in text


def test_complete_headline_gives_the_rate_with_n_of_n() -> None:
    tasks, views = complete_set()
    text = report(tasks, views)
    assert "**Pass rate 66.7% (2/3)**" in text and "Scoring is complete" in text and "Provisional" not in text


def test_site_table_has_a_row_per_site_and_a_total() -> None:
    tasks, views = three_tasks()
    rows = table(report(tasks, views), "| Site |")
    assert rows[0] == ["Site", "Tasks", "Passed", "Failed", "Unjudged", "Missing", "Pass rate"]
    assert rows[2] == ["Allrecipes", "1", "1", "0", "0", "0", "100.0%"]
    assert rows[3] == ["Apple", "1", "0", "1", "0", "0", "0.0%"]
    assert rows[4] == ["Amazon", "1", "0", "0", "0", "1", "0.0% (provisional)"]
    assert rows[5] == ["Total", "3", "1", "1", "0", "1", "33.3% (provisional)"]


def test_costs_are_split_with_superseded_apart_and_called_an_estimate() -> None:
    tasks, views = three_tasks()
    text = report(tasks, views)
    assert "list-price estimate" in text and "agent unknown, judge $0.000350, total unknown" in text
    assert "Observed cost subtotal $0.001950" in text and "1 request(s) without usage" in text
    assert "Superseded attempts: 1, agent cost $0.000300" in text and "not in the totals above" in text


def test_judge_line_names_mode_prompt_sha_and_models() -> None:
    tasks, views = complete_set()
    text = report(tasks, views)
    assert f"Judge: reference, prompt SHA-256 `{'0' * 64}`, judge model stub-model; agent model stub-model." in text


def test_mixed_provenance_is_warned_only_when_set() -> None:
    tasks, views = complete_set()
    assert "Mixed provenance" in report(tasks, views, mixed=True)
    assert "Mixed provenance" not in report(tasks, views)


def test_health_lines_list_quota_infrastructure_and_unavailable_websites() -> None:
    tasks = [make_task("Amazon--0"), make_task("Amazon--1")]
    views = {"Amazon--0": view(tasks[0], agent("Amazon--0", [], status="error", error_kind="quota"), None),
             "Amazon--1": view(tasks[1], agent("Amazon--1", [], status="error", error_kind="website_unavailable"),
                               verdict(False))}
    text = report(tasks, views)
    assert "re-run on --resume: Amazon--0" in text and "(not counted as failures)" in text
    assert "Infrastructure errors: 1 (Amazon--0)" in text
    assert "Website unavailable: 1 (still in the denominator)" in text
    rows = {r[0]: r for r in table(text, "| Task |")}
    assert rows["Amazon--0"][2:4] == ["quota: re-run pending", "—"]
    assert rows["Amazon--1"][2:4] == ["error (website_unavailable)", "FAIL"]


def test_task_table_rows_show_status_pass_and_numbers() -> None:
    tasks, views = three_tasks()
    rows = table(report(tasks, views), "| Task |")
    assert rows[0] == ["Task", "Site", "Status", "Pass", "Steps", "Rounds", "Agent time (s)", "Cost (USD)", "Answer",
                       "Reason"]
    assert rows[2][:8] == ["Allrecipes--0", "Allrecipes", "completed", "PASS", "5", "2", "12.346", "0.00150000"]
    assert rows[3][:8] == ["Apple--0", "Apple", "timeout", "FAIL", "7", "2", "600.000", "—"]
    assert rows[4][:8] == ["Amazon--0", "Amazon", "missing", "—", "—", "—", "—", "—"]


def test_pipes_newlines_and_html_in_answers_and_reasons_do_not_break_the_table() -> None:
    task = make_task("Apple--0")
    result = agent("Apple--0", [], final_answer="Price | $999\n| injected | row |\n<script>alert(1)</script>")
    judged = verdict(False, reason="wrong | model\nsee [link](http://x)")
    text = report([task], {"Apple--0": view(task, result, judged)})
    rows = table(text, "| Task |")
    assert len(rows) == 3 and {len(r) for r in rows} == {len(rows[0])}
    assert "<script>" not in text and "&lt;script&gt;" in text and "[link]" not in text


def test_a_long_answer_is_clipped_in_the_table() -> None:
    task = make_task("Apple--0")
    text = report([task], {"Apple--0": view(task, agent("Apple--0", [], final_answer="x" * 1000), verdict(True))})
    answer = table(text, "| Task |")[2][8]
    assert len(answer) == 200 and answer.endswith("…")


def test_judge_error_shows_as_unjudged_with_its_reason() -> None:
    task = make_task("Apple--0")
    bad = verdict(None, judge_error="truncated response", reason=None)
    row = table(report([task], {"Apple--0": view(task, agent("Apple--0", []), bad)}), "| Task |")[2]
    assert row[3] == "unjudged" and row[9] == "judge error: truncated response"


def test_reason_keeps_the_agent_error_beside_the_verdict() -> None:
    tasks, views = three_tasks()
    row = table(report(tasks, views), "| Task |")[3]
    assert row[9] == "because; agent: timed out after 600 s"
