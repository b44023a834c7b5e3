"""A phone's scores.jsonl and a run's records.jsonl are not trusted: out-of-range numbers, NaN, deep nesting
and broken text reject their own line, named with its number, and every other line is kept."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from farm.errors import FarmError
from farm.report.aggregate import aggregate
from farm.results.normalise import Context, normalise_lines
from farm.results.record import MAX_COST_USD, MAX_COUNT, MAX_EXTRA_DEPTH, MAX_MS, MAX_TOKENS, RunMetrics, Tokens
from farm.results.store import RECORDS_FILE, ReadProblems, append_records, read_records
from tests.helpers.records import record, score_line, write_run

CTX = Context(run="r1", device="SER", split="tune", executor="instrument")


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def _between(bad: str) -> list[str]:
    """A good line, the hostile one, a good line: the scores.jsonl every rejection test reads."""
    return [json.dumps(score_line("before")), bad, json.dumps(score_line("after"))]


# (what the phone wrote, as JSON text in place of a field; the field the rejection must name)
HOSTILE_FIELDS = [
    ('"costUsd": -0.01', "cost_usd"),
    ('"costUsd": NaN', "cost_usd"),
    ('"costUsd": Infinity', "cost_usd"),
    ('"costUsd": 1e400', "cost_usd"),
    (f'"costUsd": {MAX_COST_USD * 10}', "cost_usd"),
    ('"tokens": {"input": -1}', "tokens"),
    ('"tokens": {"output": 1000000000000000000000000000000}', "tokens"),
    (f'"tokens": {{"cacheRead": {MAX_TOKENS + 1}}}', "tokens"),
    ('"steps": -1', "steps"),
    ('"steps": 1e30', "steps"),
    ('"metrics": {"totalMs": -5}', "metrics.totalMs"),
    ('"metrics": {"modelMs": NaN}', "metrics.modelMs"),
    ('"metrics": {"firstFeedbackMs": 1733022000000}', "metrics.firstFeedbackMs"),  # an epoch time, not a duration
    ('"metrics": {"roundTrips": -2}', "metrics.roundTrips"),
    ('"gpuTemperature": NaN', "extra"),
]


@pytest.mark.parametrize(("field", "named"), HOSTILE_FIELDS)
def test_an_out_of_range_number_rejects_its_line_by_number_and_keeps_the_rest(field: str, named: str) -> None:
    bad = '{"id": "hostile", "outcome": "succeeded", "passed": true, ' + field + "}"
    result = normalise_lines(_between(bad), CTX, "scores.jsonl")
    assert [(r.task_id, r.outcome) for r in result.records] == [
        ("before", "succeeded"), ("hostile", "error"), ("after", "succeeded")]
    rejected = result.records[1]
    assert rejected.passed is False and rejected.failure_kind == "infrastructure"
    assert rejected.reasons[0].startswith(f"corrupt scores.jsonl line 2: {named}")
    assert rejected.source == "scores.jsonl:2"
    assert len(result.problems) == 1 and result.problems[0].startswith(f"scores.jsonl:2: {named}")


def test_a_rejected_line_stores_none_of_its_numbers() -> None:
    bad = json.dumps(score_line("hostile", costUsd=-3.5, tokens={"input": -7}, steps=-1))
    rejected = normalise_lines([bad], CTX, "s").records[0]
    assert rejected.cost_usd is None and rejected.steps is None and rejected.tokens == Tokens()
    assert rejected.metrics == RunMetrics()


def test_the_rejection_says_what_value_was_refused() -> None:
    bad = json.dumps(score_line("hostile", costUsd=-3.5))
    assert normalise_lines([bad], CTX, "s").problems == [
        "s:1: cost_usd: Input should be greater than or equal to 0 (got -3.5)"]


def test_values_at_the_bounds_are_kept() -> None:
    line = score_line(
        "edge", costUsd=0, steps=0, tokens={"input": MAX_TOKENS, "cacheRead": 0, "cacheWrite": 0, "output": 0},
        metrics={"firstFeedbackMs": 0, "roundTrips": MAX_COUNT, "totalMs": MAX_MS},
    )
    result = normalise_lines([json.dumps(line)], CTX, "s")
    assert result.problems == []
    rec = result.records[0]
    assert (rec.outcome, rec.cost_usd, rec.steps, rec.tokens.input_new) == ("succeeded", 0, 0, MAX_TOKENS)
    assert (rec.metrics.round_trips, rec.metrics.total_ms) == (MAX_COUNT, MAX_MS)


@pytest.mark.parametrize("bad", ["[" * 100_000, '{"id": "deep", "x": ' * 100_000, "[" * 100_000 + "]" * 100_000])
def test_a_deeply_nested_scores_line_is_rejected_by_number_not_a_recursion_error(bad: str) -> None:
    result = normalise_lines(_between(bad), CTX, "scores.jsonl")
    assert [r.outcome for r in result.records] == ["succeeded", "error", "succeeded"]
    assert len(result.problems) == 1
    assert result.problems[0].startswith("scores.jsonl:2: invalid JSON (recursion limit exceeded")


def test_an_unknown_field_nested_deeper_than_a_record_may_hold_rejects_the_line() -> None:
    bad = json.dumps(score_line("deep", appState=_nested(MAX_EXTRA_DEPTH + 1)))
    result = normalise_lines(_between(bad), CTX, "s")
    assert [(r.task_id, r.outcome) for r in result.records] == [
        ("before", "succeeded"), ("deep", "error"), ("after", "succeeded")]
    assert result.problems == [f"s:2: extra: appState: nested deeper than {MAX_EXTRA_DEPTH}"]


def test_an_unknown_field_as_deep_as_allowed_is_kept_and_reads_back(tmp_path: Path) -> None:
    line = json.dumps(score_line("deep", appState=_nested(MAX_EXTRA_DEPTH)))
    records = normalise_lines([line], CTX, "s").records
    path = tmp_path / RECORDS_FILE
    append_records(path, records)
    back = read_records(path)
    assert back[0].outcome == "succeeded" and back[0].extra["appState"] == _nested(MAX_EXTRA_DEPTH)


def test_a_lone_surrogate_rejects_its_line_and_the_other_records_are_written(tmp_path: Path) -> None:
    # `json` would accept it, and the record's own write would then fail for the whole phone.
    bad = '{"id": "broken", "outcome": "failed", "answer": "x\\ud800y"}'
    result = normalise_lines(_between(bad), CTX, "s")
    assert [(r.task_id, r.outcome) for r in result.records] == [
        ("before", "succeeded"), ("broken", "error"), ("after", "succeeded")]
    path = tmp_path / RECORDS_FILE
    assert append_records(path, result.records) == 3
    assert [r.task_id for r in read_records(path)] == ["before", "broken", "after"]


@pytest.mark.parametrize("fields", [
    {"cost_usd": -1.0}, {"cost_usd": math.nan}, {"cost_usd": math.inf}, {"steps": -1}, {"attempt": 0},
    {"repeat": 0}, {"tokens": Tokens(output=-1)}, {"tokens": Tokens(input_new=MAX_TOKENS + 1)},
    {"metrics": {"total_ms": -0.5}}, {"extra": {"x": math.nan}}, {"extra": {"x": _nested(MAX_EXTRA_DEPTH + 1)}},
])
def test_the_record_model_refuses_out_of_range_numbers_made_in_code(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        record("t", **fields)


def _records_file(tmp_path: Path, middle: bytes) -> Path:
    path = tmp_path / RECORDS_FILE
    append_records(path, [record("t1")])
    with path.open("ab") as fh:
        fh.write(middle + b"\n")
    append_records(path, [record("t3")])
    return path


def _hostile_record_line(**fields: Any) -> bytes:
    data = json.loads(record("t2").model_dump_json())
    data.update(fields)
    return json.dumps(data).encode()


HOSTILE_RECORD_LINES = [
    pytest.param(_hostile_record_line(cost_usd=-1), id="negative cost"),
    pytest.param(_hostile_record_line(tokens={"input_new": 10**30, "cache_read": None, "cache_write": None,
                                              "output": None}), id="10^30 tokens"),
    pytest.param(_hostile_record_line(steps=-4), id="negative steps"),
    pytest.param(_hostile_record_line(metrics={"total_ms": 1.7e12}), id="epoch time as a duration"),
    pytest.param(_hostile_record_line(attempt=0), id="attempt 0"),
    pytest.param(_hostile_record_line(extra={"x": _nested(MAX_EXTRA_DEPTH + 1)}), id="extra too deep"),
    pytest.param(b"[" * 100_000, id="100000 brackets"),
    pytest.param(_hostile_record_line(answer="DEEP").replace(b'"DEEP"', b"[" * 100_000 + b"]" * 100_000),
                 id="deep inside a whole record"),
    pytest.param(_hostile_record_line(answer="BYTES").replace(b'"BYTES"', b'"\xff\xfe"'), id="not UTF-8"),
    pytest.param(_hostile_record_line(answer="LONE").replace(b'"LONE"', b'"x\\ud800y"'), id="lone surrogate"),
]


@pytest.mark.parametrize("middle", HOSTILE_RECORD_LINES)
def test_a_collecting_reader_skips_and_names_a_hostile_record_line(tmp_path: Path, middle: bytes) -> None:
    path = _records_file(tmp_path, middle)
    problems = ReadProblems()
    assert [r.task_id for r in read_records(path, problems)] == ["t1", "t3"]
    assert problems.corrupt == [f"{path}:2: corrupt record line skipped"] and not problems.torn


@pytest.mark.parametrize("middle", HOSTILE_RECORD_LINES)
def test_a_strict_reader_names_the_hostile_record_line(tmp_path: Path, middle: bytes) -> None:
    path = _records_file(tmp_path, middle)
    with pytest.raises(FarmError, match=rf"{RECORDS_FILE}:2: corrupt record"):
        read_records(path)


def test_a_deeply_nested_record_line_is_a_named_damaged_line_in_the_report(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, "r", [record("t1", run="r")])
    with (run_dir / RECORDS_FILE).open("ab") as fh:
        fh.write(b"[" * 100_000 + b"\n")
    append_records(run_dir / RECORDS_FILE, [record("t3", run="r")])
    data = aggregate([run_dir]).data
    assert data.overall.planned == 2
    assert data.warnings == ["r/records.jsonl:2: corrupt record line skipped"]
