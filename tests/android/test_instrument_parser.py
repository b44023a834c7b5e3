"""The instrumentation parser: real captures (../shared/data/instrument, Apache-2.0, see its README.md)
and the ddmlib behaviours on hand-made streams."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from farm.android.instrument_parser import InstrumentParser, parse_text
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


def _status(code: int | str, cls: str | None = "C", test: str | None = "t", **values: str | int) -> str:
    """One status bundle as `am instrument -r` prints it (keys sorted, then the code)."""
    pairs = {**values, **({"class": cls} if cls is not None else {}), **({"test": test} if test is not None else {})}
    lines = [f"INSTRUMENTATION_STATUS: {key}={pairs[key]}\n" for key in sorted(pairs)]
    return "".join(lines) + f"INSTRUMENTATION_STATUS_CODE: {code}\n"


def _json(text: str) -> list[dict[str, str | int]]:
    return [e.as_json() for e in parse_text(text)]


_STARTED = {"event": "test_started", "class": "C", "test": "t"}
_PASSED = {"event": "test_ended", "class": "C", "test": "t", "status": "passed"}
_INCOMPLETE = {"event": "test_ended", "class": "C", "test": "t", "status": "incomplete"}
_ONE_PASSING = _status(1, numtests=1) + _status(0, numtests=1)


def test_instrumentation_failed_to_start_is_a_run_failure() -> None:
    text = "INSTRUMENTATION_FAILED: dev.x.test/androidx.test.runner.AndroidJUnitRunner\nINSTRUMENTATION_CODE: 0\n"
    assert _json(text) == [
        {"event": "run_started", "testCount": 0},
        {"event": "run_failed", "reason": "Instrumentation failed: dev.x.test/androidx.test.runner.AndroidJUnitRunner"},
        {"event": "run_ended"},
    ]


def test_system_abort_is_a_run_failure_and_ends_the_open_test_incomplete() -> None:
    text = (
        "INSTRUMENTATION_STATUS: class=C\nINSTRUMENTATION_STATUS: numtests=1\n"
        "INSTRUMENTATION_STATUS: test=t\nINSTRUMENTATION_STATUS_CODE: 1\n"
        "INSTRUMENTATION_ABORTED: System has crashed.\n"
    )
    events = [e.as_json() for e in parse_text(text)]
    assert events[-2:] == [
        {"event": "test_ended", "class": "C", "test": "t", "status": "incomplete"},
        {"event": "run_failed", "reason": "System has crashed."},
    ]


def test_crlf_line_endings_are_accepted() -> None:
    raw = _capture("adam_log_3.input")
    assert [e.as_json() for e in parse_text(raw.replace("\n", "\r\n"))] == [
        e.as_json() for e in parse_text(raw)
    ]


def test_status_bundle_without_class_and_test_is_not_a_test() -> None:
    crash = _status(-2, cls=None, test=None, numtests=5, stack="java.lang.RuntimeException: boom\n\tat x.y(Z.java:1)")
    assert _json(crash + _ONE_PASSING + "INSTRUMENTATION_CODE: -1\n") == [
        {"event": "run_started", "testCount": 1},
        _STARTED,
        _PASSED,
        {"event": "run_ended"},
    ]


def test_output_with_only_a_stack_and_no_test_has_no_test_results() -> None:
    crash = _status(-2, cls=None, test=None, stack="java.lang.RuntimeException: boom")
    assert _json(crash) == [
        {"event": "run_started", "testCount": 0},
        {"event": "run_failed", "reason": "No test results"},
        {"event": "run_ended"},
    ]


def test_normal_end_short_of_numtests_fails_the_run() -> None:
    text = _status(1, numtests=3) + _status(0, numtests=3) + "INSTRUMENTATION_CODE: -1\n"
    assert _json(text) == [
        {"event": "run_started", "testCount": 3},
        _STARTED,
        _PASSED,
        {"event": "run_failed", "reason": "Test run failed to complete. Expected 3 tests, received 1"},
        {"event": "run_ended"},
    ]


def test_instrumentation_failed_after_a_finished_run_adds_nothing() -> None:
    text = _ONE_PASSING + "INSTRUMENTATION_CODE: -1\nINSTRUMENTATION_FAILED: dev.x.test/Runner\n"
    parser = InstrumentParser()
    parser.feed(text)
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
        _status(-1, cls=None, test=None, id="ActivityManagerService", Error="Unable to find instrumentation info")
        + "android.util.AndroidException: INSTRUMENTATION_FAILED: dev.x.test/Runner\n"
    )
    assert _json(text) == [
        {"event": "run_started", "testCount": 0},
        {"event": "run_failed", "reason": "Unable to find instrumentation info"},
        {"event": "run_ended"},
    ]


def test_unknown_status_code_ends_the_test_without_a_failure() -> None:
    text = _status(1, numtests=1) + _status(7, numtests=1) + "INSTRUMENTATION_CODE: -1\n"
    assert _json(text) == [{"event": "run_started", "testCount": 1}, _STARTED, _PASSED, {"event": "run_ended"}]


def test_non_integer_status_code_is_a_test_failure() -> None:
    text = _status(1, numtests=1) + _status("abc", numtests=1, stack="boom") + "INSTRUMENTATION_CODE: -1\n"
    events = parse_text(text)
    ended = [e for e in events if e.event == "test_ended"]
    assert [e.as_json() for e in ended] == [{**_PASSED, "status": "failed"}]
    assert events[-1].event == "run_ended" and not any(e.event == "run_failed" for e in events)


def test_empty_stream_fails_the_run_with_no_test_results() -> None:
    assert _json("") == [
        {"event": "run_started", "testCount": 0},
        {"event": "run_failed", "reason": "No test results"},
        {"event": "run_ended"},
    ]


def test_stream_cut_mid_value_ends_the_open_test_incomplete() -> None:
    text = _status(1, numtests=2) + "INSTRUMENTATION_STATUS: class=C\nINSTRUMENTATION_STATUS: stack=java.lang.Assert"
    assert _json(text) == [
        {"event": "run_started", "testCount": 2},
        _STARTED,
        _INCOMPLETE,
        {"event": "run_failed", "reason": "Test run failed to complete. Expected 2 tests, executed 0"},
    ]


def test_stream_cut_inside_the_status_code_line_does_not_invent_a_failure() -> None:
    text = _status(1, numtests=1) + _status(0, numtests=1).removesuffix("0\n") + "-"
    ended = [e.as_json() for e in parse_text(text) if e.event == "test_ended"]
    assert ended == [_INCOMPLETE]


def test_stream_cut_right_after_a_start_fails_the_run() -> None:
    text = _ONE_PASSING.replace("numtests=1", "numtests=2") + _status(1, test="u", numtests=2)
    assert _json(text)[-3:] == [
        {"event": "test_started", "class": "C", "test": "u"},
        {"event": "test_ended", "class": "C", "test": "u", "status": "incomplete"},
        {"event": "run_failed", "reason": "Test run failed to complete. Expected 2 tests, executed 1"},
    ]


def test_duplicate_start_of_the_open_test_is_one_test() -> None:
    text = _status(1, numtests=1) + _status(1, numtests=1) + _status(0, numtests=1) + "INSTRUMENTATION_CODE: -1\n"
    assert _json(text) == [{"event": "run_started", "testCount": 1}, _STARTED, _PASSED, {"event": "run_ended"}]


def test_crlf_split_across_chunks_gives_the_same_events() -> None:
    raw = _capture("adam_log_1.input")
    crlf = raw.replace("\n", "\r\n")
    parser = InstrumentParser()
    for i in range(0, len(crlf), 5):  # odd chunks put many a "\r" and its "\n" in different chunks
        parser.feed(crlf[i : i + 5])
    parser.close()
    assert [e.as_json() for e in parser.events] == [e.as_json() for e in parse_text(raw)]


def test_crlf_wrapped_stack_keeps_no_carriage_returns() -> None:
    text = (_status(1, numtests=1) + _status(-2, numtests=1, stack="java.lang.AssertionError\n\tat a.b(C.java:1)")
            + "INSTRUMENTATION_CODE: -1\n").replace("\n", "\r\n")
    failed = [e for e in parse_text(text) if e.status == "failed"]
    assert failed[0].stack == "java.lang.AssertionError\n\tat a.b(C.java:1)"
