"""The instrumentation parser: real captures (../shared/data/instrument, Apache-2.0, see its README.md)
and the ddmlib behaviours on hand-made streams."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from farm.android.instrument_events import TRUNCATED, VALUE_LIMIT
from farm.android.instrument_parser import LINE_LIMIT, InstrumentParser, parse_text
from tests.helpers.instrument_streams import (
    ABORTED,
    END_OK,
    ON_ERROR,
    crlf,
    ended,
    events_json,
    fatal_exception_ending,
    ran,
    result,
    status,
)
from tests.helpers.shared_data import shared_data

_EVENT = re.compile(
    r"^(TestRunStartedEvent|TestStarted|TestEnded|TestFailed|TestIgnored|TestAssumptionFailed"
    r"|TestRunFailed|TestRunEnded)\((.*)"
)
_ID = re.compile(r"className=([^,]*), testName=([^)]*)\)")


def _capture(name: str) -> str:
    return shared_data("instrument", name).read_text()


def _adam_events(path: Path) -> list[dict[str, str | int]]:
    """adam's expected events in this parser's JSON shape."""
    out: list[dict[str, str | int]] = []
    pending: dict[tuple[str, str], str] = {}
    open_tests: list[tuple[str, str]] = []
    for line in path.read_text().splitlines():
        m = _EVENT.match(line)
        if not m:
            continue
        kind, rest = m.groups()
        ident = _ID.search(rest)
        key = (ident.group(1), ident.group(2)) if ident else ("", "")
        if kind == "TestRunStartedEvent":
            out.append({"event": "run_started", "testCount": int(re.search(r"\d+", rest).group())})  # type: ignore[union-attr]
        elif kind == "TestStarted":
            open_tests.append(key)
            out.append({"event": "test_started", "class": key[0], "test": key[1]})
        elif kind in ("TestFailed", "TestIgnored", "TestAssumptionFailed"):
            pending[key] = {"TestFailed": "failed", "TestIgnored": "ignored"}.get(kind, "assumption_failure")
        elif kind == "TestEnded":
            open_tests.remove(key)
            status = pending.pop(key, "passed")
            out.append({"event": "test_ended", "class": key[0], "test": key[1], "status": status})
        elif kind == "TestRunFailed":
            for cls, test in open_tests:
                out.append({"event": "test_ended", "class": cls, "test": test, "status": "incomplete"})
            open_tests.clear()
            out.append({"event": "run_failed", "reason": rest.removeprefix("error=").removesuffix(")")})
        else:
            out.append({"event": "run_ended"})
    return out


@pytest.mark.parametrize("n", range(1, 7))
def test_adam_capture_matches_expected_events(n: int) -> None:
    raw = _capture(f"adam_log_{n}.input")
    got = [e.as_json() for e in parse_text(raw)]
    assert got == _adam_events(shared_data("instrument", f"adam_log_{n}.expected"))


@pytest.mark.parametrize("n", range(1, 7))
def test_feeding_in_small_chunks_gives_the_same_events(n: int) -> None:
    raw = _capture(f"adam_log_{n}.input")
    parser = InstrumentParser()
    for i in range(0, len(raw), 7):
        parser.feed(raw[i : i + 7])
    parser.close()
    assert [e.as_json() for e in parser.events] == [e.as_json() for e in parse_text(raw)]


def test_output_stopping_mid_test_marks_it_incomplete_and_fails_the_run() -> None:
    events = parse_text(_capture("adam_log_4.input"))
    ended = [e for e in events if e.event == "test_ended"]
    assert ended[-1].test == "testTextFlaky8" and ended[-1].status == "incomplete"
    assert events[-1].event == "run_failed"
    assert events[-1].reason == "Test run failed to complete. Expected 9 tests, executed 8"


def test_flank_long_capture_counts_match_its_own_summary() -> None:
    raw = _capture("flank_example_android_logs_0.txt")
    summary = re.search(r"Tests run: (\d+),\s+Failures: (\d+)", raw)
    assert summary is not None
    events = parse_text(raw)
    ended = [e for e in events if e.event == "test_ended"]
    run = [e for e in ended if e.status != "ignored"]
    assert len(run) == int(summary.group(1))
    assert sum(e.status == "failed" for e in ended) == int(summary.group(2))
    assert events[0].as_json() == {"event": "run_started", "testCount": len(ended)}
    assert events[-1].event == "run_ended"


def test_flank_capture_with_three_runs_gives_three_runs() -> None:
    raw = _capture("flank_example_android_logs_2.txt")
    events = parse_text(raw)
    assert [e.event for e in events].count("run_started") == 3
    assert [e.event for e in events].count("run_ended") == 3
    assert sum(raw.count(f"OK ({n} test") for n in range(1, 3)) == 3
    statuses = sorted(str(e.status) for e in events if e.event == "test_ended")
    assert statuses == ["ignored"] * 3 + ["passed"] * 3


def test_multi_line_stack_is_kept_for_a_failed_test() -> None:
    events = parse_text(_capture("adam_log_3.input"))
    failed = [e for e in events if e.status == "failed"]
    assert failed and failed[0].stack is not None
    assert "java.lang.AssertionError" in failed[0].stack
    assert "\n\tat org.junit.Assert.fail" in failed[0].stack


_CRASH = """INSTRUMENTATION_STATUS: class=dev.Eval
INSTRUMENTATION_STATUS: current=1
INSTRUMENTATION_STATUS: numtests=2
INSTRUMENTATION_STATUS: test=first
INSTRUMENTATION_STATUS_CODE: 1
INSTRUMENTATION_STATUS: class=dev.Eval
INSTRUMENTATION_STATUS: current=1
INSTRUMENTATION_STATUS: numtests=2
INSTRUMENTATION_STATUS: stream=
Process crashed while executing first(dev.Eval):
java.lang.NullPointerException: boom
INSTRUMENTATION_STATUS: test=first
INSTRUMENTATION_STATUS_CODE: -2
INSTRUMENTATION_RESULT: shortMsg=Process crashed.
INSTRUMENTATION_CODE: 0
"""


def test_crash_ending_fails_the_test_and_the_run_with_the_crash_message() -> None:
    parser = InstrumentParser()
    parser.feed(_CRASH)
    parser.close()
    assert [e.as_json() for e in parser.events] == [
        {"event": "run_started", "testCount": 2},
        {"event": "test_started", "class": "dev.Eval", "test": "first"},
        {"event": "test_ended", "class": "dev.Eval", "test": "first", "status": "failed"},
        {"event": "run_failed", "reason": "Process crashed."},
        {"event": "run_ended"},
    ]
    assert parser.crashed
    assert "Process crashed while executing first" in parser.stacks["dev.Eval#first"]


_STARTED = {"event": "test_started", "class": "C", "test": "t"}
_PASSED = {"event": "test_ended", "class": "C", "test": "t", "status": "passed"}
_INCOMPLETE = {"event": "test_ended", "class": "C", "test": "t", "status": "incomplete"}
_ONE_PASSING = status(1, numtests=1) + status(0, numtests=1)


def _started(test: str, cls: str = "C") -> dict[str, str | int]:
    return {"event": "test_started", "class": cls, "test": test}


def _ended(test: str, how: str, cls: str = "C") -> dict[str, str | int]:
    return {"event": "test_ended", "class": cls, "test": test, "status": how}


# --- the four ddmlib behaviours the project got wrong -------------------------------------------------------------


def test_fatal_exception_ending_fails_the_run_with_the_runners_text() -> None:
    # AndroidJUnitRunner could not build its request: no test ran, yet the run code is RESULT_OK.
    events = parse_text(fatal_exception_ending("java.lang.IllegalArgumentException: Ambiguous arguments"))
    assert [e.event for e in events] == ["run_started", "run_failed", "run_ended"]
    assert events[0].test_count == 0
    reason = events[1].reason or ""
    assert reason.startswith("Fatal exception when running tests\njava.lang.IllegalArgumentException: Ambiguous")
    assert "\tat androidx.test.runner.AndroidJUnitRunner.onStart" in reason


def test_on_error_line_is_not_glued_to_the_value_before_it() -> None:
    text = (
        f"INSTRUMENTATION_STATUS: class=com.x.FooTest\n{ON_ERROR}\nINSTRUMENTATION_STATUS: current=1\n"
        "INSTRUMENTATION_STATUS: numtests=3\nINSTRUMENTATION_STATUS: test=testFoo\nINSTRUMENTATION_STATUS_CODE: 1\n"
    )
    events = parse_text(text)
    assert events[0].as_json() == {"event": "run_started", "testCount": 3}
    assert events[1].as_json() == _started("testFoo", "com.x.FooTest")


def test_on_error_line_after_numtests_keeps_the_test_count() -> None:
    text = status(1, numtests=2).replace("numtests=2\n", f"numtests=2\n{ON_ERROR}\n") + status(0, numtests=2)
    assert events_json(text)[0] == {"event": "run_started", "testCount": 2}


def test_on_error_line_is_added_to_the_run_failure_reason() -> None:
    # ddmlib's own case: the line `am` prints when system_server dies, in the middle of a START bundle.
    text = (
        f"INSTRUMENTATION_STATUS: class=C\n{ON_ERROR}\nINSTRUMENTATION_STATUS: current=1\n{ABORTED}\n"
        "INSTRUMENTATION_STATUS: id=AndroidJUnitRunner\nINSTRUMENTATION_STATUS: numtests=1\n"
        "INSTRUMENTATION_STATUS: stream=\nINSTRUMENTATION_STATUS: test=t\nINSTRUMENTATION_STATUS_CODE: 1\n"
    )
    events = parse_text(text)
    assert [e.as_json() for e in events] == [
        {"event": "run_started", "testCount": 1},
        _STARTED,
        _INCOMPLETE,
        {"event": "run_failed", "reason": f"Test run failed to complete. Expected 1 tests, executed 0. {ON_ERROR}"},
    ]
    assert events[2].stack is not None and events[2].stack.startswith("Test failed to run to completion. Reason:")


def test_second_failure_of_a_crashed_test_counts_it_once_and_keeps_the_first_stack() -> None:
    first = "Process crashed while executing t(C):\njava.lang.NullPointerException: boom"
    text = (
        ran("t", -2, n=1, of=2, stack=first)
        + status(-2, current=1, numtests=2, stack="java.lang.IllegalStateException: torn down")
        + result(0, shortMsg="Process crashed.")
    )
    parser = InstrumentParser()
    parser.feed(text)
    parser.close()
    assert [e.as_json() for e in parser.events] == [
        {"event": "run_started", "testCount": 2},
        _STARTED,
        {**_PASSED, "status": "failed"},
        {"event": "run_failed", "reason": "Process crashed."},
        {"event": "run_ended"},
    ]
    assert parser.completed == 1
    assert parser.stacks["C#t"] == first


def test_two_starts_then_their_two_results_are_two_passes() -> None:
    text = (
        status(1, test="a", current=1, numtests=2) + status(1, test="b", current=2, numtests=2)
        + status(0, test="a", current=1, numtests=2) + status(0, test="b", current=2, numtests=2) + END_OK
    )
    assert events_json(text) == [
        {"event": "run_started", "testCount": 2},
        _started("a"),
        _started("b"),
        _ended("a", "passed"),
        _ended("b", "passed"),
        {"event": "run_ended"},
    ]


# --- aborted, failed, crashed -------------------------------------------------------------------------------------


def test_system_abort_fails_the_run_short_of_its_tests_and_ends_the_open_test_incomplete() -> None:
    text = status(1, numtests=1) + ABORTED + "\n"
    assert events_json(text)[-2:] == [
        _INCOMPLETE,
        {"event": "run_failed", "reason": f"Test run failed to complete. Expected 1 tests, executed 0. {ABORTED}"},
    ]


def test_system_abort_fails_the_run_even_when_every_test_reported() -> None:
    # Stricter than ddmlib, which reports a clean run: files the tests wrote may be gone with the system.
    assert events_json(_ONE_PASSING + ABORTED + "\n" + END_OK)[-2:] == [
        {"event": "run_failed", "reason": ABORTED},
        {"event": "run_ended"},
    ]


def test_system_abort_after_the_run_ended_adds_nothing() -> None:
    assert events_json(_ONE_PASSING + END_OK + ABORTED + "\n")[-1] == {"event": "run_ended"}


def test_instrumentation_failed_to_start_is_a_run_failure() -> None:
    text = "INSTRUMENTATION_FAILED: dev.x.test/androidx.test.runner.AndroidJUnitRunner\nINSTRUMENTATION_CODE: 0\n"
    assert events_json(text) == [
        {"event": "run_started", "testCount": 0},
        {"event": "run_failed", "reason": "Instrumentation failed: dev.x.test/androidx.test.runner.AndroidJUnitRunner"},
        {"event": "run_ended"},
    ]


def test_only_an_on_error_line_is_no_test_results_with_ams_message() -> None:
    # What a current `am` prints when the test package is not installed.
    line = "onError: commandError=true message=INSTRUMENTATION_FAILED: dev.x.test/androidx.test.runner.Runner"
    assert events_json(line + "\n") == [
        {"event": "run_started", "testCount": 0},
        {"event": "run_failed", "reason": f"No test results. {line}"},
        {"event": "run_ended"},
    ]


def test_instrumentation_failed_after_a_finished_run_adds_nothing() -> None:
    parser = InstrumentParser()
    parser.feed(_ONE_PASSING + END_OK + "INSTRUMENTATION_FAILED: dev.x.test/Runner\n")
    parser.close()
    assert [e.as_json() for e in parser.events] == [
        {"event": "run_started", "testCount": 1},
        _STARTED,
        _PASSED,
        {"event": "run_ended"},
    ]
    assert parser.failed_reason is None


def test_error_status_fails_and_ends_the_run_with_its_text() -> None:
    text = (
        status(-1, cls=None, test=None, id="ActivityManagerService", Error="Unable to find instrumentation info")
        + "android.util.AndroidException: INSTRUMENTATION_FAILED: dev.x.test/Runner\n"
    )
    assert events_json(text) == [
        {"event": "run_started", "testCount": 0},
        {"event": "run_failed", "reason": "Unable to find instrumentation info"},
        {"event": "run_ended"},
    ]


def test_process_crash_fails_with_the_short_msg_whatever_the_long_msg_says() -> None:
    long_msg = "java.lang.NullPointerException: boom\n\tat dev.Eval.first(Eval.java:3)"
    parser = InstrumentParser()
    parser.feed(status(1, numtests=1) + result(0, longMsg=long_msg, shortMsg="Process crashed."))
    parser.close()
    assert [e.as_json() for e in parser.events][-3:] == [
        _INCOMPLETE,
        {"event": "run_failed", "reason": "Process crashed."},
        {"event": "run_ended"},
    ]
    assert parser.crashed and parser.result["longMsg"] == long_msg


def test_short_msg_fails_the_run_even_with_result_ok() -> None:
    # ddmlib fails on `shortMsg` whatever the code: the system only sets it when something went wrong.
    assert events_json(_ONE_PASSING + result(-1, shortMsg="Process crashed."))[-2:] == [
        {"event": "run_failed", "reason": "Process crashed."},
        {"event": "run_ended"},
    ]


# --- CRLF ---------------------------------------------------------------------------------------------------------


def test_crlf_line_endings_are_accepted() -> None:
    raw = _capture("adam_log_3.input")
    assert [e.as_json() for e in parse_text(crlf(raw))] == [e.as_json() for e in parse_text(raw)]


def test_crlf_split_across_chunks_gives_the_same_events() -> None:
    raw = _capture("adam_log_1.input")
    parser = InstrumentParser()
    text = crlf(raw)
    for i in range(0, len(text), 5):  # odd chunks put many a "\r" and its "\n" in different chunks
        parser.feed(text[i : i + 5])
    parser.close()
    assert [e.as_json() for e in parser.events] == [e.as_json() for e in parse_text(raw)]


def test_crlf_wrapped_stack_keeps_no_carriage_returns() -> None:
    text = crlf(status(1, numtests=1) + status(-2, numtests=1, stack="java.lang.AssertionError\n\tat a.b(C.java:1)")
                + END_OK)
    failed = [e for e in parse_text(text) if e.status == "failed"]
    assert failed[0].stack == "java.lang.AssertionError\n\tat a.b(C.java:1)"


def test_crlf_on_error_and_fatal_ending_read_as_with_lf() -> None:
    on_error = status(1, numtests=1).replace("numtests=1\n", f"numtests=1\n{ON_ERROR}\n")
    for text in (on_error, fatal_exception_ending()):
        assert events_json(crlf(text)) == events_json(text)
    assert str(events_json(crlf(on_error))[-1]["reason"]).endswith(f". {ON_ERROR}")


# --- numtests -----------------------------------------------------------------------------------------------------


def test_normal_end_short_of_numtests_fails_the_run() -> None:
    assert events_json(status(1, numtests=3) + status(0, numtests=3) + END_OK) == [
        {"event": "run_started", "testCount": 3},
        _STARTED,
        _PASSED,
        {"event": "run_failed", "reason": "Instrumentation reported numtests=3 but only ran 1"},
        {"event": "run_ended"},
    ]


def test_short_of_numtests_reason_carries_the_runners_failure_summary() -> None:
    summary = "There was 1 failure:\n1) t(C)"
    text = status(1, numtests=2) + status(-2, numtests=2, stack="boom") + result(-1, stream=summary)
    assert events_json(text)[-2]["reason"] == f"Instrumentation reported numtests=2 but only ran 1. {summary}"


def test_more_tests_than_numtests_is_not_a_failure() -> None:
    text = ran("a", 0, n=1, of=1) + ran("b", 0, n=2, of=1) + END_OK
    assert [e["event"] for e in events_json(text)][-1:] == ["run_ended"]
    assert "run_failed" not in [e["event"] for e in events_json(text)]


def test_numtests_from_a_later_status_is_the_count_checked() -> None:
    # The first test names no count: the run starts with 0, and the first count given is what the end is checked on.
    text = status(1) + status(0) + status(1, test="u", numtests=3) + status(0, test="u", numtests=3) + END_OK
    events = events_json(text)
    assert events[0] == {"event": "run_started", "testCount": 0}
    assert events[-2] == {"event": "run_failed", "reason": "Instrumentation reported numtests=3 but only ran 2"}


def test_numtests_that_is_no_32_bit_number_is_no_count() -> None:
    for bad in ("99999999999", "1_0", "3 tests", "-4"):
        assert events_json(_ONE_PASSING.replace("numtests=1", f"numtests={bad}") + END_OK)[0] == {
            "event": "run_started", "testCount": 0}


# --- status codes and bundles -------------------------------------------------------------------------------------


def test_status_bundle_without_class_and_test_is_not_a_test() -> None:
    crash = status(-2, cls=None, test=None, numtests=5, stack="java.lang.RuntimeException: boom\n\tat x.y(Z.java:1)")
    assert events_json(crash + _ONE_PASSING + END_OK) == [
        {"event": "run_started", "testCount": 1},
        _STARTED,
        _PASSED,
        {"event": "run_ended"},
    ]


def test_output_with_only_a_stack_and_no_test_has_no_test_results() -> None:
    assert events_json(status(-2, cls=None, test=None, stack="java.lang.RuntimeException: boom")) == [
        {"event": "run_started", "testCount": 0},
        {"event": "run_failed", "reason": "No test results"},
        {"event": "run_ended"},
    ]


def test_unknown_status_code_ends_the_test_without_a_failure() -> None:
    text = status(1, numtests=1) + status(7, numtests=1) + END_OK
    assert events_json(text) == [{"event": "run_started", "testCount": 1}, _STARTED, _PASSED, {"event": "run_ended"}]


def test_non_integer_status_code_is_a_test_failure() -> None:
    for code in ("abc", "2147483648", "1_0"):
        events = parse_text(status(1, numtests=1) + status(code, numtests=1, stack="boom") + END_OK)
        assert [e.as_json() for e in events if e.event == "test_ended"] == [{**_PASSED, "status": "failed"}], code
        assert events[-1].event == "run_ended" and not any(e.event == "run_failed" for e in events)


def test_in_progress_status_starts_no_test_and_no_run() -> None:
    assert events_json(status(2, numtests=1) + END_OK) == [
        {"event": "run_started", "testCount": 0}, {"event": "run_ended"}]


def test_what_an_in_progress_status_said_carries_into_the_next_status() -> None:
    # ddmlib keeps collecting across an IN_PROGRESS status: a metrics status names the test, the end may not.
    text = status(2, numtests=1, metric=5) + status(0, cls=None, test=None) + END_OK
    assert events_json(text) == [
        {"event": "run_started", "testCount": 1}, _STARTED, _PASSED, {"event": "run_ended"}]


def test_status_line_without_equals_starts_no_value_and_drops_what_wraps_after_it() -> None:
    text = (status(1, numtests=1) + "INSTRUMENTATION_STATUS: class=C\nINSTRUMENTATION_STATUS: garbage\nmore garbage\n"
            "INSTRUMENTATION_STATUS: test=t\nINSTRUMENTATION_STATUS_CODE: 0\n" + END_OK)
    assert ended(parse_text(text)) == [("C", "t", "passed")]


def test_repeated_start_of_the_open_test_is_one_test() -> None:
    text = status(1, numtests=1) + status(1, numtests=1) + status(0, numtests=1) + END_OK
    assert events_json(text) == [{"event": "run_started", "testCount": 1}, _STARTED, _PASSED, {"event": "run_ended"}]


def test_any_repeated_end_of_an_execution_is_dropped() -> None:
    text = ran("t", 0, n=1, of=1) + status(-3, current=1, numtests=1) + status(1, current=1, numtests=1) + END_OK
    assert ended(parse_text(text)) == [("C", "t", "passed")]


def test_the_same_test_run_again_under_a_new_current_is_a_second_execution() -> None:
    text = ran("t", 0, n=1, of=2) + ran("t", -2, n=2, of=2, stack="boom") + END_OK
    assert ended(parse_text(text)) == [("C", "t", "passed"), ("C", "t", "failed")]


def test_a_test_left_open_by_another_ending_ends_incomplete_at_the_end_of_the_run() -> None:
    text = status(1, test="a", numtests=2) + ran("b", 0, n=2, of=2) + END_OK
    assert events_json(text)[1:] == [
        _started("a"), _started("b"), _ended("b", "passed"), _ended("a", "incomplete"),
        {"event": "run_failed", "reason": "Instrumentation reported numtests=2 but only ran 1"},
        {"event": "run_ended"},
    ]


def test_garbage_lines_between_bundles_are_ignored() -> None:
    noise = "WARNING: linker: unused DT entry\n\nTime: 1.2\n\x00\x1b[0m\n"
    assert events_json(noise + status(1, numtests=1) + noise + status(0, numtests=1) + noise + END_OK) == [
        {"event": "run_started", "testCount": 1}, _STARTED, _PASSED, {"event": "run_ended"}]


# --- output that stops --------------------------------------------------------------------------------------------


def test_empty_stream_fails_the_run_with_no_test_results() -> None:
    assert events_json("") == [
        {"event": "run_started", "testCount": 0},
        {"event": "run_failed", "reason": "No test results"},
        {"event": "run_ended"},
    ]


def test_stream_cut_mid_value_ends_the_open_test_incomplete() -> None:
    text = status(1, numtests=2) + "INSTRUMENTATION_STATUS: class=C\nINSTRUMENTATION_STATUS: stack=java.lang.Assert"
    assert events_json(text) == [
        {"event": "run_started", "testCount": 2},
        _STARTED,
        _INCOMPLETE,
        {"event": "run_failed", "reason": "Test run failed to complete. Expected 2 tests, executed 0"},
    ]


def test_stream_cut_inside_the_status_code_line_does_not_invent_a_failure() -> None:
    text = status(1, numtests=1) + status(0, numtests=1).removesuffix("0\n") + "-"
    assert [e for e in events_json(text) if e["event"] == "test_ended"] == [_INCOMPLETE]


def test_stream_cut_right_after_a_start_fails_the_run() -> None:
    text = _ONE_PASSING.replace("numtests=1", "numtests=2") + status(1, test="u", numtests=2)
    assert events_json(text)[-3:] == [
        _started("u"),
        _ended("u", "incomplete"),
        {"event": "run_failed", "reason": "Test run failed to complete. Expected 2 tests, executed 1"},
    ]


# --- bounded memory -----------------------------------------------------------------------------------------------


def _failed_stack(stack_text: str) -> str:
    events = parse_text(status(1, numtests=1) + status(-2, numtests=1, stack=stack_text) + END_OK)
    got = [e.stack for e in events if e.status == "failed"]
    assert got and got[0] is not None
    return got[0]


def test_a_stack_of_exactly_the_limit_is_kept_whole() -> None:
    stack = "java.lang.AssertionError\n" + "\tat x\n" * ((VALUE_LIMIT - 25) // 6)
    stack += "y" * (VALUE_LIMIT - len(stack))
    assert len(stack) == VALUE_LIMIT
    assert _failed_stack(stack) == stack


def test_a_stack_one_past_the_limit_is_truncated_and_says_so() -> None:
    stack = "java.lang.AssertionError\n" + "\tat x\n" * (VALUE_LIMIT // 6)
    stack += "y" * (VALUE_LIMIT + 1 - len(stack))
    got = _failed_stack(stack)
    assert len(got) == VALUE_LIMIT and got.endswith(TRUNCATED)
    assert got.startswith(stack[: VALUE_LIMIT - len(TRUNCATED)])


def test_one_huge_line_is_cut_at_the_line_limit() -> None:
    assert LINE_LIMIT == VALUE_LIMIT
    got = _failed_stack("x" * (50 * VALUE_LIMIT))  # the line's prefix counts against the limit too
    assert VALUE_LIMIT - 64 < len(got) <= VALUE_LIMIT and got.endswith(TRUNCATED)


def test_a_huge_wrapped_value_keeps_only_the_limit_in_memory() -> None:
    parser = InstrumentParser()
    parser.feed("INSTRUMENTATION_STATUS: class=C\nINSTRUMENTATION_STATUS: stream=\n")
    for _ in range(200):
        parser.feed("z" * 999 + "\n")
    assert sum(map(len, parser._status.lines["stream"])) <= VALUE_LIMIT


def test_metric_keys_beyond_the_bundle_budget_are_dropped_but_the_test_is_not() -> None:
    metrics = {f"metric{i}": "v" * 10_000 for i in range(200)}  # 2 MB of metrics in one status
    text = status(1, numtests=1) + status(0, numtests=1, **metrics) + END_OK
    parser = InstrumentParser()
    parser.feed(text.replace("INSTRUMENTATION_STATUS_CODE: 0", "INSTRUMENTATION_STATUS_CODE: 2"))
    assert sum(parser._status.sizes.values()) < 20 * VALUE_LIMIT
    assert ended(parse_text(text)) == [("C", "t", "passed")]


def test_a_huge_code_number_is_read_in_bounded_time() -> None:
    text = status(1, numtests=1) + status("9" * 1_000_000, numtests=1) + END_OK
    assert ended(parse_text(text)) == [("C", "t", "failed")]
