"""Reading a results file trusts nothing: a line with a wrong type, an out-of-range number, bad bytes, bad JSON
or a claim its own fields deny is rejected by number and the other lines are kept; a run written twice counts
once; every line that is accepted becomes a farm record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from farm.errors import FarmError
from farm.results.record import MAX_COST_USD, MAX_COUNT, MAX_MS, MAX_TOKENS, Tokens
from tests.helpers.web import web_run
from web_bench.paired.records import to_record
from web_bench.paired.report import build_report, report_file, to_markdown
from web_bench.paired.results import (
    Diagnostics,
    Timings,
    Validation,
    WebRun,
    append_run,
    read_results,
    read_runs,
)

A, B = "playwright", "android-chrome"
NAN, INF = float("nan"), float("inf")


def _line(run: WebRun, **changes: Any) -> str:
    """`run` as a results line, with `changes` (dotted camelCase paths) written over it as raw JSON values."""
    data = run.model_dump(by_alias=True, mode="json")
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        node = data
        for key in parents:
            node = node[key]
        node[last] = value
    return json.dumps(data, allow_nan=True, ensure_ascii=False)


def _file(tmp_path: Path, *lines: str | bytes) -> Path:
    path = tmp_path / "results.jsonl"
    path.write_bytes(b"".join((line if isinstance(line, bytes) else line.encode()) + b"\n" for line in lines))
    return path


def _around(tmp_path: Path, bad: str | bytes) -> Path:
    """A good line, the bad one (line 2), another good line."""
    return _file(tmp_path, _line(web_run(seed=1)), bad, _line(web_run(seed=3)))


BAD_VALUES: list[tuple[str, object]] = [
    ("success", "yes"),
    ("success", 1),
    ("infrastructureError", "false"),
    ("validation.passed", "true"),
    ("seed", "1"),
    ("seed", -1),
    ("trial", 1.0),
    ("trial", 0),
    ("orderInPair", 0),
    ("timeoutMs", 0),
    ("timeoutMs", 1000.5),
    ("timings.completionMs", NAN),
    ("timings.completionMs", INF),
    ("timings.completionMs", -5),
    ("timings.completionMs", "100"),
    ("timings.completionMs", 1.7e12),
    ("timings.ttftMs", -1),
    ("timings.stateReachedMs", NAN),
    ("timings.toolWallMs", -INF),
    ("tokens.output", -3),
    ("tokens.newInput", MAX_TOKENS + 1),
    ("tokens.cacheRead", 2.5),
    ("tokens.newInput", "5"),
    ("tokens.cacheWrite", 5.0),
    ("tokens.output", True),
    ("costUsd", NAN),
    ("costUsd", -0.01),
    ("diagnostics.toolCalls", -1),
    ("diagnostics.modelCalls", MAX_COUNT + 1),
    ("status", "done"),
    ("policy", "human"),
    ("task", 7),
    ("surprise", 1),
]


@pytest.mark.parametrize(("field", "value"), BAD_VALUES, ids=[f"{f}={v!r}" for f, v in BAD_VALUES])
def test_bad_value_rejects_its_line_only(tmp_path: Path, field: str, value: object) -> None:
    path = _around(tmp_path, _line(web_run(seed=2), **{field: value}))
    report = report_file(path)
    assert report.backends[A].runs == 2
    (rejected,) = report.rejected_lines
    assert rejected.startswith(f"{path}:2: {field}"), rejected


def test_raw_infinity_literal_is_rejected(tmp_path: Path) -> None:
    # 1e999 is valid JSON that parses to infinity without the word appearing anywhere.
    bad = _line(web_run(seed=2)).replace('"completionMs": 100.0', '"completionMs": 1e999')
    assert "1e999" in bad
    (rejected,) = report_file(_around(tmp_path, bad)).rejected_lines
    assert "timings.completionMs" in rejected


CONTRADICTIONS: list[tuple[dict[str, object], str]] = [
    ({"validation.passed": False}, "validation did not pass"),
    ({"status": "timeout"}, "status is timeout"),
    ({"infrastructureError": True}, "infrastructureError is set"),
    ({"diagnostics.disallowedTools": ["shell"]}, "forbidden tool"),
    ({"pairId": "order_lookup:9:1"}, "pairId"),
    ({"firstBackend": B}, "orderInPair"),
]


@pytest.mark.parametrize(("changes", "words"), CONTRADICTIONS, ids=[w for _, w in CONTRADICTIONS])
def test_line_that_contradicts_itself_is_rejected(tmp_path: Path, changes: dict[str, object], words: str) -> None:
    path = _around(tmp_path, _line(web_run(seed=2), **changes))
    (rejected,) = report_file(path).rejected_lines
    assert rejected.startswith(f"{path}:2: ") and words in rejected, rejected


def test_failed_run_may_have_a_passed_validation(tmp_path: Path) -> None:
    # Only success is checked against its evidence: a failed run whose validator passed (a timeout) is real.
    path = _around(tmp_path, _line(web_run(seed=2, success=False, status="timeout")))
    report = report_file(path)
    assert (report.backends[A].runs, report.rejected_lines) == (3, [])


def test_every_accepted_line_becomes_a_record() -> None:
    # The web line's bounds are the record's: the largest values a line may carry still make a record.
    run = web_run(
        trial=MAX_COUNT, pair_id=f"order_lookup:1:{MAX_COUNT}", cost_usd=MAX_COST_USD,
        timings=Timings(completion_ms=MAX_MS, state_reached_ms=MAX_MS, ttft_ms=MAX_MS, tool_wall_ms=MAX_MS),
        tokens=Tokens(input_new=MAX_TOKENS, cache_read=MAX_TOKENS, cache_write=MAX_TOKENS, output=MAX_TOKENS),
        diagnostics=Diagnostics(tool_calls=MAX_COUNT, model_calls=MAX_COUNT, tool_errors=MAX_COUNT),
    )
    record = to_record(WebRun.model_validate_json(run.model_dump_json(by_alias=True)))
    assert (record.repeat, record.metrics.total_ms, record.tokens.output) == (MAX_COUNT, MAX_MS, MAX_TOKENS)


def test_a_results_line_keeps_the_seed_token_keys(tmp_path: Path) -> None:
    path = _file(tmp_path)
    append_run(path, web_run(tokens=Tokens(input_new=40, cache_read=8, output=3)))
    line = json.loads(path.read_text(encoding="utf-8"))
    assert line["tokens"] == {"newInput": 40, "cacheRead": 8, "cacheWrite": None, "output": 3}


def test_a_line_written_before_the_one_token_model_still_reads(tmp_path: Path) -> None:
    old = _line(web_run(), **{"tokens": {"newInput": 12, "cacheRead": None, "cacheWrite": None, "output": 2}})
    (run,) = read_runs(_file(tmp_path, old))
    assert (run.tokens.input_new, run.tokens.output) == (12, 2)
    assert to_record(run).tokens == Tokens(input_new=12, output=2)


def test_not_utf8_line_is_rejected_and_named(tmp_path: Path) -> None:
    path = _around(tmp_path, b'{"task": "\xff\xfe"}')
    report = report_file(path)
    assert report.backends[A].runs == 2
    assert report.rejected_lines == [f"{path}:2: not UTF-8 text (byte 0xff at column 11)"]


def test_deeply_nested_line_is_rejected_without_recursing(tmp_path: Path) -> None:
    path = _around(tmp_path, "[" * 100_000)
    report = report_file(path)
    assert report.backends[A].runs == 2
    (rejected,) = report.rejected_lines
    assert rejected.startswith(f"{path}:2: Invalid JSON") and "recursion limit" in rejected


def test_line_that_is_not_an_object_is_rejected(tmp_path: Path) -> None:
    (rejected,) = report_file(_around(tmp_path, "[1, 2]")).rejected_lines
    assert rejected.startswith(f"{tmp_path / 'results.jsonl'}:2: ")


def test_line_separators_inside_an_answer_survive(tmp_path: Path) -> None:
    # JSON strings carry U+2028 and NEL unescaped; splitting the file on them would cut the line in two.
    path = tmp_path / "results.jsonl"
    append_run(path, web_run(answer="a\u2028b\x85c\x0cd"))
    (run,) = read_runs(path)
    assert run.answer == "a\u2028b\x85c\x0cd"


def test_crlf_line_endings_are_read(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_bytes((_line(web_run(seed=1)) + "\r\n" + _line(web_run(seed=2)) + "\r\n").encode())
    assert [r.seed for r in read_runs(path)] == [1, 2]


def test_file_of_only_bad_lines_is_one_error_naming_file_and_line(tmp_path: Path) -> None:
    path = _file(tmp_path, "", "not json", _line(web_run(), success="yes"))
    with pytest.raises(FarmError) as caught:
        report_file(path)
    line = caught.value.line()
    assert "\n" not in line
    assert line.startswith(f"{path}: no valid runs; 2 line(s) rejected, first: {path}:2: ")


def test_blank_lines_alone_are_no_runs(tmp_path: Path) -> None:
    with pytest.raises(FarmError, match="no runs in the file"):
        report_file(_file(tmp_path, "", "   ", "\t"))


def test_strict_reader_refuses_a_rejected_line(tmp_path: Path) -> None:
    with pytest.raises(FarmError, match=r"results.jsonl:2: success: Input should be a valid boolean \(got 'yes'\)"):
        read_runs(_around(tmp_path, _line(web_run(seed=2), success="yes")))


def test_directory_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(FarmError, match="is a directory"):
        read_results(tmp_path)


def test_run_written_twice_counts_once_from_its_last_line(tmp_path: Path) -> None:
    failed = web_run(success=False, validation=Validation(passed=False, state_ok=False, answer_ok=False, detail="no"))
    path = _file(tmp_path, _line(failed), _line(web_run(seed=2)), _line(web_run()))
    report = report_file(path)
    assert (report.backends[A].runs, report.backends[A].successes) == (2, 2)
    assert report.failures == []
    assert report.duplicate_runs == [f"{path}: lines 1, 3 are one run (fixture, playwright, order_lookup:1:1); "
                                     "line 3 counts"]


def test_other_trial_or_backend_is_not_a_duplicate(tmp_path: Path) -> None:
    path = _file(tmp_path, _line(web_run()), _line(web_run(trial=2)),
                 _line(web_run(backend=B, order_in_pair=2)))
    report = report_file(path)
    assert (report.backends[A].runs, report.backends[B].runs, report.duplicate_runs) == (2, 1, [])


def test_same_pair_in_two_runs_is_two_pairs() -> None:
    runs = [web_run(run_id=rid, backend=b, order_in_pair=n, first_backend=A, timings=Timings(completion_ms=ms))
            for rid, ms in (("r1", 100.0), ("r2", 300.0)) for n, b in ((1, A), (2, B))]
    report = build_report(runs, "results.jsonl")
    assert (report.pairs.total, report.latency_ratio.n, report.duplicate_runs) == (2, 2, [])


@pytest.mark.parametrize(("change", "same"), [
    ({}, True), ({"answer": "other", "success": False}, True), ({"run_id": "other"}, False),
    ({"backend": B, "order_in_pair": 2}, False), ({"task": "lazy_load"}, False), ({"seed": 2}, False),
    ({"trial": 2}, False),
])
def test_identity_is_the_records_unit(change: dict[str, Any], same: bool) -> None:
    a, b = web_run(), web_run(**change)
    assert (a.identity() == b.identity()) is same
    assert (to_record(a).unit_key() == to_record(b).unit_key()) is same


def test_markdown_lists_rejected_lines_and_repeated_runs(tmp_path: Path) -> None:
    path = _file(tmp_path, _line(web_run()), "garbage", _line(web_run()))
    text = to_markdown(report_file(path))
    assert "**1 line(s) rejected and 1 run(s) written more than once: " in text
    assert f"## Rejected lines\n\n- {path}:2: " in text
    assert f"## Runs written more than once\n\n- {path}: lines 1, 3 are one run" in text


def test_clean_file_has_no_rejection_notes(tmp_path: Path) -> None:
    text = to_markdown(report_file(_file(tmp_path, _line(web_run()))))
    assert "rejected" not in text and "more than once" not in text
