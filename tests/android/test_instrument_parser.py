"""The instrumentation parser against real captures (Apache-2.0, see data/README.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from farm.android.instrument_parser import InstrumentParser, parse_text

DATA = Path(__file__).parent / "data"
_EVENT = re.compile(
    r"^(TestRunStartedEvent|TestStarted|TestEnded|TestFailed|TestIgnored|TestAssumptionFailed"
    r"|TestRunFailed|TestRunEnded)\((.*)"
)
_ID = re.compile(r"className=([^,]*), testName=([^)]*)\)")


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
    raw = (DATA / f"adam_log_{n}.input").read_text()
    got = [e.as_json() for e in parse_text(raw)]
    assert got == _adam_events(DATA / f"adam_log_{n}.expected")


@pytest.mark.parametrize("n", range(1, 7))
def test_feeding_in_small_chunks_gives_the_same_events(n: int) -> None:
    raw = (DATA / f"adam_log_{n}.input").read_text()
    parser = InstrumentParser()
    for i in range(0, len(raw), 7):
        parser.feed(raw[i : i + 7])
    parser.close()
    assert [e.as_json() for e in parser.events] == [e.as_json() for e in parse_text(raw)]


def test_output_stopping_mid_test_marks_it_incomplete_and_fails_the_run() -> None:
    events = parse_text((DATA / "adam_log_4.input").read_text())
    ended = [e for e in events if e.event == "test_ended"]
    assert ended[-1].test == "testTextFlaky8" and ended[-1].status == "incomplete"
    assert events[-1].event == "run_failed"
    assert events[-1].reason == "Test run failed to complete. Expected 9 tests, executed 8"


def test_flank_long_capture_counts_match_its_own_summary() -> None:
    raw = (DATA / "flank_example_android_logs_0.txt").read_text()
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
    raw = (DATA / "flank_example_android_logs_2.txt").read_text()
    events = parse_text(raw)
    assert [e.event for e in events].count("run_started") == 3
    assert [e.event for e in events].count("run_ended") == 3
    assert sum(raw.count(f"OK ({n} test") for n in range(1, 3)) == 3
    statuses = sorted(str(e.status) for e in events if e.event == "test_ended")
    assert statuses == ["ignored"] * 3 + ["passed"] * 3


def test_multi_line_stack_is_kept_for_a_failed_test() -> None:
    events = parse_text((DATA / "adam_log_3.input").read_text())
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


def test_instrumentation_failed_to_start_is_a_run_failure() -> None:
    text = "INSTRUMENTATION_FAILED: dev.x.test/androidx.test.runner.AndroidJUnitRunner\nINSTRUMENTATION_CODE: 0\n"
    events = [e.as_json() for e in parse_text(text)]
    assert events[0] == {"event": "run_started", "testCount": 0}
    assert events[1] == {
        "event": "run_failed",
        "reason": "Instrumentation failed: dev.x.test/androidx.test.runner.AndroidJUnitRunner",
    }
    assert events[-1] == {"event": "run_ended"}


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
    raw = (DATA / "adam_log_3.input").read_text()
    assert [e.as_json() for e in parse_text(raw.replace("\n", "\r\n"))] == [
        e.as_json() for e in parse_text(raw)
    ]
