"""A comparison report's headline is per side: each run's own headline, counted exactly as its single-run report
counts it; the regressed and fixed tables read verdicts; the section says what each run measured."""

from __future__ import annotations

from pathlib import Path

from pydantic import JsonValue

from farm.report.build import build
from farm.report.headline import headline_text
from farm.report.markdown import render_markdown
from farm.report.writers import render_html
from tests.helpers.compare_runs import impossible_pair, mixed_run
from tests.helpers.records import record, write_run

PLANNED: dict[str, JsonValue] = {"tune": 7, "holdout": 2}
"""More than the runs have records for: each side has unfinished units of its own."""


def _runs(tmp_path: Path, **detail: JsonValue) -> tuple[Path, Path]:
    settings: dict[str, JsonValue] = {"split": "all", "executor": "instrument", **detail}
    a = mixed_run(tmp_path, "ra", settings, planned=PLANNED)
    b = mixed_run(tmp_path, "rb", settings, flip=True, planned={"tune": 6, "holdout": 1})
    return a, b


def test_each_side_is_its_runs_own_headline(tmp_path: Path) -> None:
    a, b = _runs(tmp_path)
    c = build([a, b]).data.comparison
    assert c is not None
    for side, run_dir in ((c.side_a, a), (c.side_b, b)):
        alone = build([run_dir]).data.overall
        assert side == alone.model_copy(update={"key": run_dir.name})


def test_each_side_is_its_runs_own_headline_with_holdout_hidden(tmp_path: Path) -> None:
    a, b = _runs(tmp_path)
    c = build([a, b], include_holdout=False).data.comparison
    assert c is not None
    assert c.side_a == build([a], include_holdout=False).data.overall.model_copy(update={"key": "ra"})
    assert (c.setup_a.holdout, c.setup_a.hidden_holdout) == ("hidden", 1)


def test_the_sides_are_not_the_pooled_number(tmp_path: Path) -> None:
    a, b = _runs(tmp_path)
    d = build([a, b]).data
    assert d.comparison is not None
    assert d.comparison.side_a.planned + d.comparison.side_b.planned == d.overall.planned
    assert d.comparison.side_a.planned != d.overall.planned


def test_the_headline_section_shows_each_side_and_no_pooled_number(tmp_path: Path) -> None:
    a, b = _runs(tmp_path)
    d = build([a, b]).data
    assert d.comparison is not None
    md = render_markdown(d)
    head = md.split("## Headline", 1)[1].split("\n## ", 1)[0]
    assert f"- A — ra: {headline_text(d.comparison.side_a)}" in head
    assert f"- B — rb: {headline_text(d.comparison.side_b)}" in head
    assert headline_text(d.overall) not in md
    html = render_html(d)
    assert f'<p class="headline">A — ra: {headline_text(d.comparison.side_a)}</p>' in html
    assert headline_text(d.overall) not in html


def test_the_overall_table_of_a_comparison_has_a_row_per_run(tmp_path: Path) -> None:
    a, b = _runs(tmp_path)
    d = build([a, b]).data
    overall = render_markdown(d).split("## Overall", 1)[1].split("\n## ", 1)[0]
    assert "| run | attempted |" in overall and "\n| ra | " in overall and "\n| rb | " in overall


def test_a_regressed_impossible_task_reads_passed_then_failed(tmp_path: Path) -> None:
    a, b = impossible_pair(tmp_path)
    c = build([a, b]).data.comparison
    assert c is not None
    (row,) = c.regressed
    assert (row.verdict_a, row.verdict_b, row.outcome_a, row.outcome_b) == ("passed", "failed", "failed", "failed")


def test_the_regressed_table_shows_verdicts_and_then_outcomes(tmp_path: Path) -> None:
    a, b = impossible_pair(tmp_path)
    md = render_markdown(build([a, b]).data)
    regressed = md.split("### Regressed", 1)[1]
    assert "| A | B | outcome A → B |" in regressed
    assert "| impossible | imp | Pixel 8 · SER1 | passed | failed | failed → failed |" in regressed


def test_fixed_units_read_failed_then_passed(tmp_path: Path) -> None:
    a, b = _runs(tmp_path)
    c = build([a, b]).data.comparison
    assert c is not None
    assert [(r.task_id, r.verdict_a, r.verdict_b) for r in c.fixed] == [("h1", "failed", "passed"),
                                                                       ("p2", "failed", "passed")]


def test_a_unit_that_passed_and_then_erred_reads_error(tmp_path: Path) -> None:
    a = write_run(tmp_path, "ra", [record("x", run="ra")])
    b = write_run(tmp_path, "rb", [record("x", run="rb", passed=False, outcome="error", reasons=["adb lost"])])
    c = build([a, b]).data.comparison
    assert c is not None
    assert [(r.verdict_a, r.verdict_b, r.outcome_b) for r in c.regressed] == [("passed", "error", "error")]


def test_a_comparison_says_what_each_run_measured(tmp_path: Path) -> None:
    a, b = _runs(tmp_path, set="read")
    md = render_markdown(build([a, b]).data)
    section = md.split("## Paired comparison", 1)[1].split("\n## ", 1)[0]
    assert "- A — ra: no label; lane android: executor instrument, split all, set read; holdout counted" in section
    assert "A and B measured alike: the same label, lanes, settings and holdout policy." in section
    assert "differ in" not in section


def test_a_comparison_of_two_executors_says_it_is_an_a_b_of_that_setting(tmp_path: Path) -> None:
    a, b = impossible_pair(tmp_path, {"executor": "instrument"}, {"executor": "host"})
    d = build([a, b]).data
    assert d.comparison is not None
    assert [(x.lane, x.name, x.a, x.b) for x in d.comparison.differences] == [
        ("android", "executor", "instrument", "host")]
    line = "A and B differ in executor (instrument vs host): this is an A/B of that setting."
    assert f"**{line}**" in render_markdown(d)
    assert f"<strong>{line}</strong>" in render_html(d)


def test_hostile_settings_are_escaped_in_the_comparison(tmp_path: Path) -> None:
    hostile = "<script>alert(1)</script>|x"
    a, b = impossible_pair(tmp_path, {"set": hostile}, {"set": "read"})
    d = build([a, b]).data
    html = render_html(d)
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;|x" in html
    section = render_markdown(d).split("## Paired comparison", 1)[1].split("\n## ", 1)[0]
    assert "<script>" not in section and "&lt;script&gt;alert(1)&lt;/script&gt;\\|x" in section


def test_a_single_run_report_has_one_headline(tmp_path: Path) -> None:
    a, _ = _runs(tmp_path)
    d = build([a]).data
    md = render_markdown(d)
    assert d.comparison is None and f"## Headline\n\n{headline_text(d.overall)}\n" in md
    assert "pool both runs" not in md and "Each run on its own" not in md
