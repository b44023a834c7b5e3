"""Report numbers against a hand-computed fixture, and the statistics underneath."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.errors import FarmError
from farm.results.record import Tokens
from tests.helpers.web import web_run
from web_bench.paired.records import to_record
from web_bench.paired.report import (
    BACKEND_DESCRIPTIONS,
    CAVEAT,
    WebReport,
    backend_notes,
    build_report,
    reading_notes,
    report_file,
    to_markdown,
)
from web_bench.paired.results import Timings, WebRun, append_run

A, B = "playwright", "android-chrome"


def _run(seed: int, backend: str, ms: float, ok: bool, first: str, **extra: object) -> WebRun:
    return web_run(seed=seed, backend=backend, success=ok, timings=Timings(completion_ms=ms),
                   order_in_pair=1 if backend == first else 2, first_backend=first, timeout_ms=1000, **extra)


def _fixture() -> list[WebRun]:
    # seed: A ms/ok, B ms/ok, who went first.   (timeout 1000 ms → a failure counts 2000 ms)
    return [
        _run(1, A, 100, True, A, tokens=Tokens(input_new=10, cache_read=5, cache_write=1, output=3)),
        _run(1, B, 200, True, A),
        _run(2, B, 900, True, B),
        _run(2, A, 300, True, B, tokens=Tokens(input_new=20, output=4)),
        _run(3, A, 400, True, A),
        _run(3, B, 50, False, A),
        _run(4, B, 80, False, B),
        _run(4, A, 900, False, B),
        _run(5, A, 500, True, A),  # no B run: not a complete pair
    ]


def _table(markdown: str, heading: str) -> list[list[str]]:
    """The body rows of the Markdown table under `heading`, as cells."""
    block = markdown.split(heading, 1)[1].split("\n\n")[1]
    return [[c.strip() for c in line.strip("|").split("|")] for line in block.splitlines()[2:]]


def _write(tmp_path: Path, runs: list[WebRun]) -> Path:
    path = tmp_path / "results.jsonl"
    for run in runs:
        append_run(path, run)
    return path


@pytest.fixture
def report(tmp_path: Path) -> WebReport:
    return report_file(_write(tmp_path, _fixture()))


def test_success_rates(report: WebReport) -> None:
    a, b = report.backends[A], report.backends[B]
    assert (a.runs, a.successes, a.success_rate) == (5, 4, 0.8)
    assert (b.runs, b.successes, b.success_rate) == (4, 2, 0.5)


def test_latency_only_over_successes(report: WebReport) -> None:
    assert report.backends[A].p50_completion_ms == 300  # nearest rank of 100, 300, 400, 500
    assert report.backends[B].p50_completion_ms == 200  # of 200, 900 (failures at 50 and 80 ignored)


def test_no_p90_below_ten_successes(report: WebReport) -> None:
    assert report.backends[A].p90_completion_ms is None


def test_failure_penalty_means(report: WebReport) -> None:
    assert report.backends[A].failure_penalty_mean_ms == pytest.approx((100 + 300 + 400 + 2000 + 500) / 5)
    assert report.backends[B].failure_penalty_mean_ms == pytest.approx((200 + 900 + 2000 + 2000) / 4)


def test_pair_table(report: WebReport) -> None:
    p = report.pairs
    assert (p.total, p.both_success, p.only_a, p.only_b, p.neither) == (4, 2, 1, 0, 1)


def test_latency_ratio_is_geometric_mean_of_pair_ratios(report: WebReport) -> None:
    ratio = report.latency_ratio
    assert ratio.n == 2
    assert ratio.value == pytest.approx((2.0 * 3.0) ** 0.5)
    assert ratio.ci95 is not None and ratio.value is not None
    assert ratio.ci95[0] <= ratio.value <= ratio.ci95[1]
    assert 2.0 - 1e-9 <= ratio.ci95[0] and ratio.ci95[1] <= 3.0 + 1e-9


def test_failure_penalty_ratio(report: WebReport) -> None:
    # complete pairs only: A 100, 300, 400, 2000 (mean 700); B 200, 900, 2000, 2000 (mean 1275)
    assert report.failure_penalty_ratio.n == 4
    assert report.failure_penalty_ratio.value == pytest.approx(1275 / 700)


def test_order_sensitivity(report: WebReport) -> None:
    assert (report.order_sensitivity.a_first.n, report.order_sensitivity.a_first.value) == (1, pytest.approx(2.0))
    assert (report.order_sensitivity.b_first.n, report.order_sensitivity.b_first.value) == (1, pytest.approx(3.0))


def test_token_columns_sum_only_the_runs_with_usage_and_say_how_many(report: WebReport) -> None:
    t = report.backends[A].tokens
    assert (t.runs_with_usage, t.runs) == (2, 5)
    assert (t.usage.input_new, t.usage.output, t.prompt) == (30, 7, 10 + 5 + 1 + 20)


def test_a_token_count_one_run_did_not_report_is_unknown_not_a_smaller_sum(report: WebReport) -> None:
    # Seed 1 reported cache counts, seed 2 did not: their sum is unknown, not seed 1's alone.
    usage = report.backends[A].tokens.usage
    assert (usage.cache_read, usage.cache_write) == (None, None)


def test_a_backend_without_usage_shows_unknown_tokens_never_zero(report: WebReport) -> None:
    t = report.backends[B].tokens
    assert (t.runs_with_usage, t.prompt, t.usage) == (0, None, Tokens())
    (row,) = [r for r in _table(to_markdown(report), "## Tokens") if r[0] == B]
    assert row[1:] == ["0 of 4", "—", "—", "—", "—", "—"]


def test_token_json_keeps_the_seed_key_names(report: WebReport) -> None:
    data = report.model_dump(by_alias=True, mode="json")["backends"][A]["tokens"]
    assert data == {"usage": {"newInput": 30, "cacheRead": None, "cacheWrite": None, "output": 7}, "prompt": 36,
                    "runsWithUsage": 2, "runs": 5}


def test_json_keys(report: WebReport) -> None:
    data = report.model_dump(by_alias=True)
    backend = data["backends"][A]
    for key in ("runs", "successes", "successRate", "p50CompletionMs", "p90CompletionMs", "failurePenaltyMeanMs"):
        assert key in backend
    assert set(data["pairs"]) >= {"bothSuccess", "onlyA", "onlyB", "neither"}
    assert set(data["latencyRatio"]) == {"n", "value", "ci95"}


def test_markdown_puts_success_first(report: WebReport) -> None:
    text = to_markdown(report)
    assert text.index("## Success") < text.index("## Latency") < text.index("## Pairs")
    assert "— (fewer than 10 successes)" in text


def test_p90_from_ten_successes() -> None:
    runs = [_run(seed, A, 100.0 * seed, True, A) for seed in range(1, 11)]
    backend = build_report(runs, "results.jsonl").backends[A]
    assert backend.p90_completion_ms == 900  # nearest rank: the 9th of ten
    assert build_report(runs[:9], "results.jsonl").backends[A].p90_completion_ms is None


def test_success_interval_is_wilson(report: WebReport) -> None:
    # 4 of 5: the Wilson 95 % interval [0.3755, 0.9638]
    assert report.backends[A].success_rate_ci95 == (pytest.approx(0.3755, abs=1e-4), pytest.approx(0.9638, abs=1e-4))


def test_ratio_intervals_keep_the_web_lane_seed(report: WebReport) -> None:
    # Values the report has always published for this fixture (seed 20260601, 10 000 resamples): moving the
    # bootstrap into the shared statistics module must not move them.
    assert report.failure_penalty_ratio.ci95 == pytest.approx((1.0476190476190477, 4.6), rel=1e-12)
    assert report.latency_ratio.ci95 == pytest.approx((1.9999999999999984, 3.000000000000001), rel=1e-12)


def test_mixed_suite_versions_are_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, [web_run(seed=1), web_run(seed=2, benchmark_suite_version=1)])
    with pytest.raises(FarmError, match="mixes benchmarkSuiteVersion 1, 2"):
        report_file(path)


def test_empty_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    with pytest.raises(FarmError, match="no runs"):
        report_file(path)


def test_bad_line_is_rejected_with_its_number(tmp_path: Path) -> None:
    path = _write(tmp_path, [web_run()])
    with path.open("a") as handle:
        handle.write('{"task": "x"}\n')
    report = report_file(path)
    assert report.backends[A].runs == 1
    (rejected,) = report.rejected_lines
    assert rejected.startswith(f"{path}:2: ")


def test_web_run_becomes_a_farm_record() -> None:
    failed = web_run(success=False, error=None, tokens=Tokens(input_new=5, output=2))
    record = to_record(failed, source="results.jsonl:1")
    assert (record.lane, record.device, record.task_id, record.outcome, record.passed) == (
        "web", "playwright", "order_lookup", "failed", False
    )
    assert record.failure_kind == "agent"
    assert (record.tokens.input_new, record.tokens.output) == (5, 2)
    assert record.extra["pairId"] == "order_lookup:1:1"


def test_failed_runs_are_listed(report: WebReport) -> None:
    assert len(report.failures) == 3
    assert "## Failed runs" in to_markdown(report)


def test_unversioned_results_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    line = web_run().model_dump(by_alias=True, mode="json")
    del line["benchmarkSuiteVersion"]
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(FarmError, match="old.jsonl:1: no benchmarkSuiteVersion"):
        report_file(path)


def _walled(seed: int, wall_ms: float, ok: bool = True) -> WebRun:
    return web_run(seed=seed, success=ok, timings=Timings(completion_ms=wall_ms + 50, tool_wall_ms=wall_ms))


def test_tool_wall_median_is_over_successes_only() -> None:
    runs = [_walled(1, 10), _walled(2, 30), _walled(3, 20), _walled(4, 5, ok=False), _walled(5, 1, ok=False)]
    backend = build_report(runs, "results.jsonl").backends[A]
    assert backend.p50_tool_wall_ms == 20  # nearest rank of 10, 20, 30; the failures' 5 and 1 ignored
    assert backend.p90_tool_wall_ms is None


def test_tool_wall_p90_needs_ten_successes() -> None:
    runs = [_walled(seed, 10.0 * seed) for seed in range(1, 11)]
    assert build_report(runs, "results.jsonl").backends[A].p90_tool_wall_ms == 90
    assert build_report(runs[:9], "results.jsonl").backends[A].p90_tool_wall_ms is None


def test_tool_wall_sits_beside_completion_and_state_reached_in_the_latency_table() -> None:
    runs = [web_run(seed=s, timings=Timings(completion_ms=1000.0 * s, state_reached_ms=400.0 * s,
                                            tool_wall_ms=250.0 * s)) for s in range(1, 4)]
    header = to_markdown(build_report(runs, "results.jsonl")).split("## Latency", 1)[1].split("\n")[2]
    (row,) = _table(to_markdown(build_report(runs, "results.jsonl")), "## Latency")
    cells = dict(zip([c.strip() for c in header.strip("|").split("|")], row, strict=True))
    assert (cells["P50 completion"], cells["P50 state reached"]) == ("2,000", "800")
    assert (cells["P50 tool wall"], cells["P90 tool wall"]) == ("500", "— (fewer than 10 successes)")


def test_tool_wall_json_key() -> None:
    data = build_report([_walled(1, 12.5)], "results.jsonl").model_dump(by_alias=True)["backends"][A]
    assert (data["p50ToolWallMs"], data["p90ToolWallMs"]) == (12.5, None)


def test_the_caveat_says_the_backends_differ_beyond_transport() -> None:
    report = build_report([web_run(seed=1), web_run(seed=1, backend="extension", order_in_pair=2)], "r.jsonl")
    notes = " ".join(reading_notes(report))
    assert CAVEAT in reading_notes(report)
    for words in ("snapshot", "element refs", "actions are executed", "not the transport"):
        assert words in CAVEAT
    assert "extension" in CAVEAT and "never one P50 alone" in notes


def test_the_extension_backend_is_described_by_name() -> None:
    report = build_report([web_run(seed=1), web_run(seed=1, backend="extension", order_in_pair=2)], "r.jsonl")
    (note,) = backend_notes(report)
    assert note.startswith("Backends: A = playwright (Playwright") and "B = extension (a Manifest V3 extension" in note


def test_a_single_backend_is_described_alone() -> None:
    report = build_report([web_run(seed=1, backend="android-chrome", first_backend="android-chrome")], "r.jsonl")
    assert backend_notes(report) == [f"Backend: android-chrome ({BACKEND_DESCRIPTIONS['android-chrome']})."]
