"""Property tests of the scores.jsonl normaliser: whatever file a phone leaves, every line is a record or a named
rejection at its own line number, and every line the agent app writes correctly is accepted as written."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from farm.results.normalise import Context, Normalised, normalise_file, normalise_lines
from farm.results.record import MAX_COST_USD, MAX_COUNT, MAX_MS, MAX_TOKENS, Record
from tests.helpers.fuzz import byte_mutations, chunkings
from tests.helpers.records import score_line, scores_text

CTX = Context(run="r1", device="SER", split="tune", executor="instrument")
SOURCE = "scores.jsonl"
_OUTCOMES = ("succeeded", "failed", "confirmation", "takeover", "skipped", "error")

_JSON_SCALAR = (st.none() | st.booleans() | st.integers(-(10**30), 10**30)
                | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12))
JSON_VALUE = st.recursive(
    _JSON_SCALAR,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
_MILLIS = st.none() | st.floats(0, MAX_MS, allow_nan=False)
_TOKENS = st.none() | st.integers(0, MAX_TOKENS)


@st.composite
def valid_score(draw: st.DrawFn) -> dict[str, Any]:
    """A scores.jsonl object the agent app may write: the builder's line with any in-range values and extras."""
    extras = draw(st.dictionaries(st.text(max_size=8).map(lambda k: f"app{k}"), JSON_VALUE, max_size=2))
    return score_line(
        draw(st.text(min_size=1, max_size=30)),
        outcome=draw(st.sampled_from(_OUTCOMES)),
        passed=draw(st.booleans()),
        category=draw(st.text(max_size=10)),
        answer=draw(st.none() | st.text(max_size=40)),
        reason=draw(st.none() | st.text(max_size=20)),
        steps=draw(st.none() | st.integers(0, MAX_COUNT)),
        costUsd=draw(st.none() | st.floats(0, MAX_COST_USD, allow_nan=False)),
        tokens={"input": draw(_TOKENS), "cacheRead": draw(_TOKENS), "cacheWrite": draw(_TOKENS),
                "output": draw(_TOKENS)},
        metrics={"firstFeedbackMs": draw(_MILLIS), "roundTrips": draw(st.none() | st.integers(0, MAX_COUNT)),
                 "modelMs": draw(_MILLIS), "totalMs": draw(_MILLIS)},
        checks=draw(st.lists(st.fixed_dictionaries({"type": st.text(max_size=8), "passed": st.booleans(),
                                                     "detail": st.text(max_size=12)}), max_size=2)),
        markers=draw(st.lists(st.text(max_size=8), max_size=2)),
        startedAt=draw(st.none() | st.text(max_size=25)),
        **extras,
    )


def dumps(line: dict[str, Any], ascii_only: bool) -> str:
    return json.dumps(line, ensure_ascii=ascii_only)


def assert_every_line_accounted_for(lines: list[str], result: Normalised) -> None:
    """One record per non-blank line, in order, each naming its line; every corrupt line also a problem."""
    numbers = [n for n, line in enumerate(lines, start=1) if line.strip()]
    assert [r.source for r in result.records] == [f"{SOURCE}:{n}" for n in numbers]
    problems = {p.split(": ", 1)[0] for p in result.problems}
    assert len(problems) == len(result.problems), "one problem per line at most"
    for n, rec in zip(numbers, result.records, strict=True):
        corrupt = bool(rec.reasons) and rec.reasons[0].startswith("corrupt scores.jsonl line")
        if corrupt:
            assert rec.reasons[0].startswith(f"corrupt scores.jsonl line {n}: ")
            assert rec.outcome == "error" and rec.failure_kind == "infrastructure" and not rec.passed
        assert (f"{SOURCE}:{n}" in problems) == corrupt


def assert_records_read_back(records: list[Record]) -> None:
    # A record the lane appends must read back whole: the normaliser is the gate in front of records.jsonl. The
    # store writes `model_dump_json()` lines and reads each with `model_validate_json` (no file: no fsync per example).
    for rec in records:
        line = rec.model_dump_json().encode("utf-8")
        assert b"\n" not in line
        assert Record.model_validate_json(line) == rec


_LINE = st.one_of(
    st.text(max_size=60),
    valid_score().map(lambda d: json.dumps(d)),
    st.builds(lambda k, v: json.dumps({k: v}), st.sampled_from(["id", "outcome", "steps", "tokens", "metrics"]),
              JSON_VALUE),
    st.sampled_from(["{", "[]", "null", '{"id": "x"}', '{"outcome": "failed"}', '{"id": 7, "outcome": "failed"}',
                     '{"id": "x", "outcome": "failed", "steps": 1e400}', '"\\ud800"', "  ", "\t", "\r"]),
)


@given(st.lists(_LINE, max_size=8))
@example(['{"id": "a\\"b", "outcome": 1}'])
def test_any_lines_give_a_record_or_a_named_rejection_per_line_and_never_raise(lines: list[str]) -> None:
    result = normalise_lines(lines, CTX, SOURCE)
    assert_every_line_accounted_for(lines, result)
    assert_records_read_back(result.records)


@given(valid_score(), st.booleans())
def test_a_line_the_app_writes_correctly_is_always_accepted_as_written(line: dict[str, Any], ascii_only: bool) -> None:
    result = normalise_lines([dumps(line, ascii_only)], CTX, SOURCE)
    assert result.problems == []
    (rec,) = result.records
    assert (rec.task_id, rec.outcome, rec.answer, rec.steps, rec.cost_usd) == (
        line["id"], line["outcome"], line["answer"], line["steps"], line["costUsd"])
    assert rec.tokens.input_new == line["tokens"]["input"] and rec.metrics.total_ms == line["metrics"]["totalMs"]
    assert {k: rec.extra[k] for k in line if k.startswith("app")} == {k: v for k, v in line.items()
                                                                      if k.startswith("app")}
    assert_records_read_back(result.records)


def _file_lines(raw: bytes) -> list[str]:
    """The file's lines as a person (and the records reader) counts them: by `\\n`."""
    return raw.decode("utf-8", "replace").split("\n")


def _normalise_bytes(raw: bytes) -> Normalised:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / SOURCE
        path.write_bytes(raw)
        return normalise_file(path, CTX, SOURCE)


@given(st.lists(valid_score(), min_size=1, max_size=3), st.booleans(), st.booleans())
@example([score_line("t", answer="one\u2028two")], False, False)  # U+2028 is no line break in JSON text
@example([score_line("t", answer="a\x85b")], False, True)  # nor is NEL
def test_a_file_of_valid_lines_is_accepted_line_by_line(
    lines: list[dict[str, Any]], ascii_only: bool, crlf: bool
) -> None:
    raw = "".join(dumps(line, ascii_only) + ("\r\n" if crlf else "\n") for line in lines).encode()
    result = _normalise_bytes(raw)
    assert result.problems == []
    assert [(r.task_id, r.answer, r.source) for r in result.records] == [
        (line["id"], line["answer"], f"{SOURCE}:{n}") for n, line in enumerate(lines, start=1)]


@given(st.binary(max_size=300) | st.lists(valid_score(), max_size=3).map(lambda ls: scores_text(*ls).encode()),
       st.data())
@example(b'{"id": "a", "outcome": "failed"}\x0c\n', None)
def test_any_file_bytes_give_a_record_or_a_named_rejection_per_line(raw: bytes, data: st.DataObject | None) -> None:
    if data is not None:
        raw = data.draw(byte_mutations(raw)) if data.draw(st.booleans()) else raw
    result = _normalise_bytes(raw)
    assert_every_line_accounted_for(_file_lines(raw), result)
    assert_records_read_back(result.records)


@given(st.lists(valid_score(), min_size=1, max_size=3), st.data())
def test_a_torn_or_damaged_file_keeps_every_intact_line(lines: list[dict[str, Any]], data: st.DataObject) -> None:
    # A phone that died mid-write leaves a prefix; damage to one line never costs another line its record.
    raw = scores_text(*lines).encode()
    pieces = data.draw(chunkings(raw))
    cut = b"".join(pieces[: data.draw(st.integers(0, len(pieces)))])
    result = _normalise_bytes(cut)
    file_lines = _file_lines(cut)
    assert_every_line_accounted_for(file_lines, result)
    whole = [json.dumps(line, ensure_ascii=False) for line in lines]
    for n, text in enumerate(file_lines, start=1):
        if text in whole:
            rec = next(r for r in result.records if r.source == f"{SOURCE}:{n}")
            assert rec.task_id == json.loads(text)["id"]
            assert not any(p.startswith(f"{SOURCE}:{n}: ") for p in result.problems)
