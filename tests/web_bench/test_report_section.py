"""The web lane's section of the run report: built from a real paired run, backends by name, the seed-001
tables from the same computation as `farm web report`, a latency chart per backend, the caveat; page-written
text stays text, unknown token usage stays unknown, and a run without a web lane has no web section."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from farm.desktop.attach import attach_batch
from farm.llm.loop import Feedback, LoopHooks, Step
from farm.llm.types import ToolCall
from farm.manifest import LaneEntry, Manifest, add_lane, utc_now
from farm.report.build import build
from farm.report.lanes import LaneSection, lane_sections
from farm.results.record import Tokens
from farm.results.store import RunStore
from tests.helpers.desktop import recorded_batch
from tests.helpers.lane_plugins import lane_plugins
from tests.helpers.web import smoke_run, web_run
from web_bench.paired.lane import ModelChoice, run_lane
from web_bench.paired.matrix import plan
from web_bench.paired.report import CAVEAT, build_report, report_file, report_tables
from web_bench.paired.report_section import FAILURES_SHOWN, section_of
from web_bench.paired.results import Timings, WebRun
from web_bench.paired.turn import WebBrief

__all__ = ["lane_plugins"]

HOSTILE = '<img src=x onerror="alert(1)"><script>alert(2)</script>'


@pytest.fixture(scope="module")
def paired(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real scripted smoke run of two tasks on playwright and android-chrome (virtual phone)."""
    return smoke_run(tmp_path_factory.mktemp("paired") / "runs", "w1")


def _web(run_dir: Path) -> list[LaneSection]:
    return [s for s in lane_sections([run_dir]) if s.lane == "web"]


def _table(section: LaneSection, title: str) -> list[list[str]]:
    return next(t for t in section.tables if t.title.startswith(title)).rows


class _EchoPolicy:
    """Opens the task's start page and answers with HTML followed by the page's own first line."""

    name = "scripted"

    def begin(self, brief: WebBrief, hooks: LoopHooks) -> None:
        self.url = brief.start_url

    def step(self, step: int, feedback: Sequence[Feedback]) -> Step:
        if not feedback:
            navigate = json.dumps({"url": self.url})
            return Step(calls=[ToolCall(id="nav", name="browser_navigate", arguments_json=navigate)])
        return Step(text=f"{HOSTILE} {feedback[0].output.text.splitlines()[0]}")


@pytest.fixture(scope="module")
def echoed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run whose answer carries HTML next to page-written text (it fails validation)."""
    runs = tmp_path_factory.mktemp("echoed") / "runs"
    run_lane(plan(["order_lookup"], [1], 1, ["playwright"]), run_id="e1", runs_dir=runs, output=None,
             policy_kind="scripted", choice=ModelChoice(), timeout_ms=60_000, policy=_EchoPolicy())
    return runs / "e1"


def test_the_section_names_both_backends(paired: Path) -> None:
    (section,) = _web(paired)
    assert "playwright vs android-chrome" in section.title
    assert section.notes[0].startswith("Backends: A = playwright (Playwright driving this machine's Chromium); "
                                       "B = android-chrome (Chrome on an Android phone")
    assert [row[0] for row in _table(section, "Success")] == ["playwright", "android-chrome"]
    assert "#" not in " ".join(row[0] for row in _table(section, "Latency"))


def test_the_section_shows_what_farm_web_report_computes(paired: Path) -> None:
    (section,) = _web(paired)
    standalone = report_file(paired / "web" / "results.jsonl")
    assert section.tables == report_tables(standalone, failures_limit=FAILURES_SHOWN)
    assert section.links == ["web/results.jsonl", "web/results.report.md"]


def test_the_seed_pair_table_counts_every_pair(paired: Path) -> None:
    (section,) = _web(paired)
    assert _table(section, "Pairs (A = playwright, B = android-chrome)") == [["2", "2", "0", "0", "0"]]
    measures = [row[0] for row in _table(section, "Ratios B/A")]
    assert measures == ["latency (geometric mean of per-pair ratios, both succeeded)",
                        "failure-penalty mean (all complete pairs)", "latency, A ran first", "latency, B ran first"]


def test_p90_is_withheld_below_ten_successes(paired: Path) -> None:
    (section,) = _web(paired)
    assert [row[3] for row in _table(section, "Latency")] == ["— (fewer than 10 successes)"] * 2


def test_each_backend_gets_a_latency_chart_of_its_successes(paired: Path) -> None:
    (section,) = _web(paired)
    playwright, android = section.svg
    assert ">playwright</text>" in playwright and ">android-chrome</text>" in android
    assert playwright.count("<circle") == android.count("<circle") == 2
    assert "P90 — fewer than 10 successes" in playwright


def test_virtual_phone_runs_are_said_to_be_simulated(paired: Path) -> None:
    (section,) = _web(paired)
    assert "android-chrome: 2 of 2 runs on a virtual phone (a local Chromium behind a simulated phone) — not a " \
           "real-device result." in section.notes


def test_the_seed_caveat_is_shown(paired: Path) -> None:
    (section,) = _web(paired)
    assert CAVEAT in section.notes


def test_runs_without_a_model_show_unknown_tokens_never_zero(paired: Path) -> None:
    (section,) = _web(paired)
    assert _table(section, "Tokens") == [[name, "0 of 2", "—", "—", "—", "—", "—"]
                                         for name in ("playwright", "android-chrome")]


def test_token_sums_say_how_many_runs_had_usage() -> None:
    runs = [web_run(seed=1, tokens=Tokens(input_new=100, cache_read=20, cache_write=0, output=7)),
            web_run(seed=2, tokens=Tokens(input_new=50, output=3)), web_run(seed=3)]
    rows = _table(section_of(build_report(runs, "r.jsonl"), run="r", links=[]), "Tokens")
    # Seed 2 reported no cache counts: their sums are unknown, not seed 1's alone; seed 3 reported nothing.
    assert rows == [["playwright", "2 of 3", "170", "150", "—", "—", "10"]]


def test_a_page_written_answer_stays_text_in_the_section(echoed: Path) -> None:
    (section,) = _web(echoed)
    ((pair, backend, status, why, answer),) = _table(section, "Failed runs")
    assert (pair, backend, status) == ("order_lookup:1:1", "playwright", "completed")
    assert answer.startswith(HOSTILE) and "lacks" in why
    assert all("onerror" not in svg and "alert" not in svg for svg in section.svg)


def test_a_page_written_answer_is_escaped_in_the_written_reports(echoed: Path, tmp_path: Path) -> None:
    build([echoed], out_dir=tmp_path / "out")
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "&lt;img src=x onerror=" in html and "<img" not in html and "<script" not in html
    for markdown in (tmp_path / "out" / "report.md", echoed / "web" / "results.report.md"):
        text = markdown.read_text(encoding="utf-8")
        assert "&lt;img src=x" in text and "<img" not in text and "<script" not in text


def test_a_web_only_run_gets_its_current_report_with_the_section_beside_the_lanes_own(echoed: Path) -> None:
    (section,) = _web(echoed)
    report = (echoed / "report.md").read_text(encoding="utf-8")
    assert section.title in report and "planned 1 · skipped 0 · attempted 1" in report
    assert (echoed / "headline.json").is_file() and (echoed / "web" / "results.report.md").is_file()


def test_a_backend_name_from_a_results_file_is_escaped_in_its_chart() -> None:
    name = '<script>alert("x")</script>'
    runs = [web_run(backend=name, first_backend=name, timings=Timings(completion_ms=120.0))]
    (svg,) = section_of(build_report(runs, "r.jsonl"), run="r", links=[]).svg
    assert "<script" not in svg and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in svg


def test_more_failures_than_the_section_shows_are_counted(tmp_path: Path) -> None:
    runs: list[WebRun] = [web_run(seed=s, success=False, status="timeout") for s in range(1, FAILURES_SHOWN + 6)]
    section = section_of(build_report(runs, "r.jsonl"), run="r", links=[])
    table = next(t for t in section.tables if t.title.startswith("Failed runs"))
    assert table.title == f"Failed runs ({FAILURES_SHOWN + 5}, first {FAILURES_SHOWN} shown)"
    assert len(table.rows) == FAILURES_SHOWN


def test_a_run_without_a_web_lane_has_no_web_section(tmp_path: Path) -> None:
    run_dir, _ = attach_batch(tmp_path / "runs", "d1", recorded_batch(tmp_path))
    plain = RunStore.create(tmp_path / "runs", Manifest(run_id="plain", created_at=utc_now())).run_dir
    assert _web(run_dir) == [] and _web(plain) == []
    assert [s.lane for s in lane_sections([run_dir])] == ["desktop"]


def test_unreadable_web_results_are_named_and_the_run_report_still_written(tmp_path: Path) -> None:
    run_dir = RunStore.create(tmp_path / "runs", Manifest(run_id="bad", created_at=utc_now())).run_dir
    (run_dir / "web").mkdir()
    (run_dir / "web" / "results.jsonl").write_text("garbage\n", encoding="utf-8")
    add_lane(run_dir, LaneEntry(lane="web", outputs=["web/results.jsonl", "records.jsonl"]))
    (section,) = _web(run_dir)
    assert section.tables == [] and section.notes[0].startswith("The web results could not be reported: ")
    build([run_dir], out_dir=tmp_path / "out")
    assert "could not be reported" in (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
