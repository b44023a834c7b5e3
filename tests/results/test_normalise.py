"""scores.jsonl → records: extras kept, unknown outcomes and corrupt lines become error records."""

from __future__ import annotations

from pathlib import Path

from farm.results.normalise import Context, normalise_file, normalise_lines
from farm.results.store import append_records, read_records
from tests.helpers.records import score_line, scores_text

CTX = Context(run="r1", device="SER", split="tune", executor="instrument", categories={"calc": "read/system"})


def test_fields_are_mapped_from_camel_case() -> None:
    rec = normalise_lines([scores_text(score_line("calc")).strip()], CTX, "scores.jsonl").records[0]
    assert rec.task_id == "calc" and rec.category == "read/system" and rec.outcome == "succeeded"
    assert rec.tokens.input_new == 1000 and rec.tokens.cache_read == 200 and rec.tokens.output == 50
    assert rec.metrics.first_feedback_ms == 800.0 and rec.metrics.round_trips == 3
    assert rec.cost_usd == 0.0021 and rec.execution == "simulated" and rec.source == "scores.jsonl:1"
    assert rec.extra["deviceCategory"] == "read"


def test_unknown_extra_fields_are_kept_in_extra() -> None:
    line = score_line("calc", appVersion="1.2", metrics={"roundTrips": 2, "gpuMs": 5})
    rec = normalise_lines([scores_text(line)], CTX, "s").records[0]
    assert rec.extra["appPackage"] == "dev.agentfarm.sim.calculator"
    assert rec.extra["appVersion"] == "1.2"
    assert rec.extra["metrics"] == {"gpuMs": 5}


def test_unknown_outcome_becomes_an_error_record() -> None:
    rec = normalise_lines([scores_text(score_line("calc", outcome="exploded", passed=True))], CTX, "s").records[0]
    assert rec.outcome == "error" and rec.passed is False and rec.failure_kind == "infrastructure"
    assert rec.extra["deviceOutcome"] == "exploded"
    assert any("exploded" in r for r in rec.reasons)


def test_corrupt_line_becomes_an_error_record_naming_the_line_and_the_rest_is_kept(tmp_path: Path) -> None:
    text = scores_text(score_line("a")) + '{"id": "b", "outcome": "succ\n' + scores_text(score_line("c"))
    path = tmp_path / "scores.jsonl"
    path.write_text(text)
    result = normalise_file(path, CTX, "scores.jsonl")
    assert [r.task_id for r in result.records] == ["a", "b", "c"]
    bad = result.records[1]
    assert bad.outcome == "error" and "line 2" in bad.reasons[0]
    assert result.problems and result.problems[0].startswith("scores.jsonl:2")


def test_null_tokens_and_cost_stay_null() -> None:
    line = score_line("calc", tokens={"input": None, "output": None}, costUsd=None)
    rec = normalise_lines([scores_text(line)], CTX, "s").records[0]
    assert rec.cost_usd is None and rec.tokens.input_new is None


def test_store_appends_and_never_overwrites(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    first = normalise_lines([scores_text(score_line("a"))], CTX, "s").records
    second = normalise_lines([scores_text(score_line("b"))], CTX, "s").records
    append_records(path, first)
    append_records(path, second)
    assert [r.task_id for r in read_records(path)] == ["a", "b"]
