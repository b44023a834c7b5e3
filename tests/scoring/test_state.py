"""state checks: the phone's state before and after, compared as whole tokens, never judged on a bad reading."""

from __future__ import annotations

import json

import pytest

from farm.scoring.evidence import ProbeReading
from farm.scoring.state import has_token, state_holds
from farm.taskset.model import StateCheck

MARKER = "afm-r42"


def _v(value: str) -> ProbeReading:
    return ProbeReading(value=value)


def _rows(*rows: dict[str, str]) -> ProbeReading:
    return ProbeReading(value=json.dumps(list(rows), ensure_ascii=False, sort_keys=True, separators=(",", ":")))


def _check(**kw: object) -> StateCheck:
    return StateCheck.model_validate({"probe": kw.pop("probe", "p"), **kw})


def test_equals_passes_on_the_value_and_quotes_it() -> None:
    got = state_holds(_check(op="equals", value="1"), None, None, _v("1\n"))
    assert got.passed is True and "'1'" in got.detail


def test_equals_fails_quoting_both_values() -> None:
    got = state_holds(_check(op="equals", value="1"), None, None, _v("0"))
    assert got.passed is False and "'0'" in got.detail and "'1'" in got.detail


def test_contains_does_not_find_a_number_inside_a_bigger_one() -> None:
    assert state_holds(_check(op="contains", value="7"), None, None, _v("volume 17")).passed is False
    assert state_holds(_check(op="contains", value="7"), None, None, _v("volume 7, max 15")).passed is True


def test_a_marker_of_another_run_is_not_this_runs_marker() -> None:
    rows = _rows({"title": "standup afm-r421"}, {"title": "xafm-r42 lunch"})
    got = state_holds(_check(op="row", where={"title": "{marker}"}), MARKER, None, rows)
    assert got.passed is False and "no row of p with title ∋ 'afm-r42'" in got.detail
    assert state_holds(_check(op="row", where={"title": "{marker}"}), MARKER, None,
                       _rows({"title": "standup afm-r42"})).passed is True


def test_a_marker_check_without_a_marker_fails() -> None:
    assert state_holds(_check(op="contains", marker=True), None, None, _v("afm-")).passed is False


def test_matches_is_a_full_match() -> None:
    assert state_holds(_check(op="matches", value=r"\d{2}"), None, None, _v("123")).passed is False
    assert state_holds(_check(op="matches", value=r"\d{2}"), None, None, _v("12")).passed is True


def test_a_refused_probe_gives_no_verdict_never_a_failure() -> None:
    refused = ProbeReading(refused="java.lang.SecurityException: Permission Denial: reading sms")
    got = state_holds(_check(op="row", where={"body": "hi"}), None, None, refused)
    assert got.passed is None and "the phone refused p after the attempt: java.lang.SecurityException" in got.detail


def test_a_probe_not_read_gives_no_verdict() -> None:
    assert state_holds(_check(op="equals", value="1"), None, None, None).passed is None
    assert state_holds(_check(op="equals", value="1"), None, None, ProbeReading(error="timeout")).passed is None


def test_truncated_rows_give_no_verdict() -> None:
    got = state_holds(_check(op="row", where={"title": "x"}), None, None, _v('[{"title":"x"'))
    assert got.passed is None and "gives no rows" in got.detail


def test_count_changed_counts_matching_rows_before_and_after() -> None:
    before = _rows({"title": f"note {MARKER}"}, {"title": "other"})
    after = _rows({"title": "other"})
    check = _check(op="count_changed", where={"title": "{marker}"}, by=-1)
    got = state_holds(check, MARKER, before, after)
    assert got.passed is True and "1 before, 0 after" in got.detail
    assert state_holds(check, MARKER, after, after).passed is False


def test_changed_needs_a_change_and_honours_from_and_to() -> None:
    check = _check(op="changed", before="0", value="1")
    assert state_holds(check, None, _v("0"), _v("1")).passed is True
    unchanged = state_holds(check, None, _v("1"), _v("1"))
    assert unchanged.passed is False and "unchanged" in unchanged.detail
    assert state_holds(check, None, _v("2"), _v("1")).passed is False  # did not start from the opposite
    assert state_holds(_check(op="changed"), None, _v("a"), _v("b")).passed is True


def test_increased_reads_one_field_of_the_selected_row() -> None:
    check = _check(op="increased", where={"stream": "STREAM_MUSIC"}, field="index")
    before = _rows({"stream": "STREAM_MUSIC", "index": "5"}, {"stream": "STREAM_RING", "index": "9"})
    after = _rows({"stream": "STREAM_MUSIC", "index": "7"}, {"stream": "STREAM_RING", "index": "2"})
    got = state_holds(check, None, before, after)
    assert got.passed is True and "'5' before, '7' after" in got.detail
    assert state_holds(check, None, after, before).passed is False
    assert state_holds(_check(op="decreased"), None, _v("3"), _v("2")).passed is True


def test_a_number_in_an_unexpected_locale_gives_no_verdict() -> None:
    got = state_holds(_check(op="increased"), None, _v("1,5"), _v("٢"))
    assert got.passed is None and "not a number" in got.detail


def test_a_field_from_several_matching_rows_is_a_failure_naming_the_count() -> None:
    check = _check(op="equals", value="7", where={"stream": "STREAM"}, field="index")
    got = state_holds(check, None, None, _rows({"stream": "STREAM", "index": "7"}, {"stream": "STREAM", "index": "7"}))
    assert got.passed is False and "2 rows of p" in got.detail


@pytest.mark.parametrize("shape", [
    {"op": "equals"}, {"op": "row"}, {"op": "count_changed", "where": {"a": "b"}},
    {"op": "increased", "value": "1"}, {"op": "equals", "value": "1", "before": "0"},
    {"op": "matches", "value": "("}, {"op": "equals", "value": "1", "field": "x"},
    {"op": "row", "where": {"a": "b"}, "field": "a"}, {"op": "equals", "value": "1", "marker": True},
])
def test_a_state_check_of_the_wrong_shape_is_refused(shape: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        _check(**shape)


def test_has_token_treats_punctuation_as_a_boundary() -> None:
    assert has_token("(afm-r42)", "afm-r42") and has_token("a,7,b", "7")
    assert not has_token("afm-r42b", "afm-r42") and not has_token("a7", "7") and not has_token("x", "")


def test_a_file_missing_after_the_attempt_is_a_failure_not_a_refusal() -> None:
    missing = ProbeReading(refused="head: /sdcard/Download/AF-r1-memo.txt: No such file or directory")
    got = state_holds(_check(probe="file_head:Download/AF-r1-memo.txt", op="contains", value="hi"), None, None, missing)
    assert got.passed is False
    assert got.detail == "file_head:Download/AF-r1-memo.txt: no such file or directory after the attempt"
    # Before the attempt it is no verdict on the agent (the comparison has nothing to start from).
    before = state_holds(_check(op="changed"), None, missing, _v("x"))
    assert before.passed is None
