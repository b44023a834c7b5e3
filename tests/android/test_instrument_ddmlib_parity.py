"""Parity of the instrumentation parser with its reference, ddmlib's `InstrumentationResultParser`.

`Ddmlib` is a model of that parser written for these tests from its behaviour (AOSP tools/base; its test
`InstrumentationResultParserTest` pins the cases the `test_model_*` tests check): it turns a stream into the listener
calls ddmlib makes. `as_project` reads those calls as this project's events under the deviations the parser's
docstring documents that only reword or add strictness to an event (incomplete tests, adam's reason wording, no
run end after output that stopped). Every case then either agrees exactly or shows one documented deviation.
Captures: ../shared/data/instrument (Apache-2.0, see its README.md).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import pytest

from farm.android.instrument_parser import parse_text
from tests.helpers.instrument_streams import (
    ABORTED,
    END_OK,
    ON_ERROR,
    crlf,
    fatal_exception_ending,
    ran,
    result,
    status,
)
from tests.helpers.shared_data import shared_data

Call = tuple[str, ...]
Event = dict[str, str | int]

_TRIM = "".join(map(chr, range(0x21)))  # Java's String.trim()
_KNOWN = {"test", "class", "stack", "numtests", "Error", "shortMsg", "stream", "id", "current"}
_FAILURES = re.compile(r"There (was|were) (\d+) failure(.*)", re.DOTALL)
_FATAL = "Fatal exception when running tests"
_INCOMPLETE = "Test failed to run to completion"
_UNKNOWN_TRACE = "java.lang.Throwable: Unknown failure"


def _parse_int(text: str) -> int | None:
    """Java's Integer.parseInt (no trimming)."""
    sign, digits = (-1, text[1:]) if text[:1] == "-" else (1, text[1:] if text[:1] == "+" else text)
    if not digits or any(unicodedata.decimal(c, -1) < 0 for c in digits) or len(digits) > 64:
        return None
    n = sign * int("".join(str(unicodedata.decimal(c)) for c in digits))
    return n if -(2**31) <= n < 2**31 else None


@dataclass
class _Status:
    code: int | None = None
    cls: str | None = None
    test: str | None = None
    stack: str | None = None
    numtests: int | None = None
    current: str | None = None

    @property
    def complete(self) -> bool:
        return self.code is not None and self.cls is not None and self.test is not None


class Ddmlib:
    """ddmlib's InstrumentationResultParser as a model: `run(text)` returns its listener calls."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.key: str | None = None
        self.value: list[str] | None = None
        self.in_result = False
        self.status = _Status()
        self.last: _Status | None = None
        self.started = self.finished = self.failed = False
        self.failed_at_done = False
        self.expected = self.ran = 0
        self.on_error: str | None = None
        self.stream_error: str | None = None

    def run(self, text: str) -> list[Call]:
        # Its line receiver splits the output into lines and trims each one.
        for line in text.split("\n"):
            self.line(line.strip(_TRIM))
        self.done()
        return self.calls

    def line(self, line: str) -> None:
        if line.startswith("INSTRUMENTATION_STATUS_CODE: "):
            self.submit()
            self.in_result = False
            code = _parse_int(line[29:].strip(_TRIM))
            self.status.code = -1 if code is None else code
            if self.status.code != 2:
                self.report(self.status)
                self.last, self.status = self.status, _Status()
        elif line.startswith(("INSTRUMENTATION_STATUS: ", "INSTRUMENTATION_RESULT: ")):
            self.submit()
            self.in_result = line.startswith("INSTRUMENTATION_RESULT: ")
            body = line[24:]
            if "=" in body:
                key, value = body.split("=", 1)
                self.key, self.value = key.strip(_TRIM), [value]
        elif line.startswith(("INSTRUMENTATION_FAILED: ", "INSTRUMENTATION_CODE: ")):
            self.submit()
            self.in_result = False
            self.finished = True
        elif line.startswith("Time: "):
            pass
        elif line.startswith("onError:"):
            self.on_error = line
        elif line.startswith("INSTRUMENTATION_ABORTED: "):
            self.on_error = self.on_error or line
        elif self.value is not None:
            self.value.append(line)

    def submit(self) -> None:
        if self.key is None or self.value is None:
            return
        key, value = self.key, "\r\n".join(self.value)
        self.key = self.value = None
        if self.in_result:
            if key == "shortMsg":
                self.run_failed(f"Instrumentation run failed due to '{value}'")
            elif key == "stream" and (_FATAL in value or _FAILURES.fullmatch(value.strip(_TRIM))):
                self.stream_error = value.strip(_TRIM)
            return
        s = self.status
        if key == "class":
            s.cls = value.strip(_TRIM)
        elif key == "test":
            s.test = value.strip(_TRIM)
        elif key == "numtests":
            s.numtests = _parse_int(value) if _parse_int(value) is not None else s.numtests
        elif key == "Error":
            self.run_failed(value)
        elif key == "stack":
            s.stack = value
        elif key == "current":
            s.current = value

    def report(self, s: _Status) -> None:
        if not s.complete:
            return
        if not self.started and s.numtests is not None:
            self.calls.append(("testRunStarted", str(s.numtests)))
            self.expected, self.started = s.numtests, True
        ident = (s.cls or "", s.test or "")
        trace = s.stack if s.stack is not None else _UNKNOWN_TRACE
        if s.code == 1:
            self.calls.append(("testStarted", *ident))
            return
        if s.code == -2:
            last = self.last
            if last is not None and last.current is not None and last.current == s.current and last.stack is not None:
                return  # the repeated failure of a test that crashed
        if s.code in (-1, -2):
            self.calls.append(("testFailed", *ident, trace))
        elif s.code == -3:
            self.calls.append(("testIgnored", *ident))
        elif s.code == -4:
            self.calls.append(("testAssumptionFailure", *ident, trace))
        self.calls.append(("testEnded", *ident))
        self.ran += 1

    def run_failed(self, message: str) -> None:
        detail = self.on_error or self.stream_error
        message = f"{message}. {detail}" if detail else message
        last = self.last
        if last is not None and last.complete and last.code == 1:
            ident = (last.cls or "", last.test or "")
            why = f"{_INCOMPLETE}. Reason: '{message}'. Check device logcat for details"
            self.calls += [("testFailed", *ident, why), ("testEnded", *ident)]
        if not self.started:
            self.calls.append(("testRunStarted", "0"))
        self.calls += [("testRunFailed", message), ("testRunEnded",)]
        self.on_error = None
        self.started = self.failed = True

    def done(self) -> None:
        if self.failed:
            return
        if not self.started and not self.finished:
            self.run_failed("No test results")
        elif self.expected > self.ran:
            if self.finished:
                self.run_failed(f"Instrumentation reported numtests={self.expected} but only ran {self.ran}")
            else:
                self.failed_at_done = True
                self.run_failed(f"Test run failed to complete. Expected {self.expected} tests, received {self.ran}")
        else:
            if not self.started:
                self.calls.append(("testRunStarted", "0"))
            if self.stream_error is not None and _FATAL in self.stream_error:
                self.calls.append(("testRunFailed", self.stream_error))
            self.calls.append(("testRunEnded",))


def _text(s: str) -> str:
    """A multi-line text as both sides can be compared: ddmlib trims lines and joins them with CRLF."""
    return "\n".join(line.strip(_TRIM) for line in s.replace("\r\n", "\n").split("\n")).strip(_TRIM)


def _reworded(reason: str, cut: bool) -> str:
    """ddmlib's reason in the project's words (documented): `shortMsg` bare, a stopped stream `executed` (adam)."""
    if m := re.fullmatch(r"Instrumentation run failed due to '(.*?)'(.*)", reason, re.DOTALL):
        reason = m.group(1) + m.group(2)
    if cut:
        reason = reason.replace(" tests, received ", " tests, executed ", 1)
    return _text(reason)


def as_project(model: Ddmlib) -> tuple[list[Event], dict[tuple[str, str], str]]:
    """ddmlib's calls as the project's events, and the real stack of each failed test."""
    out: list[Event] = []
    open_tests: list[tuple[str, str]] = []
    pending: dict[tuple[str, str], str] = {}
    stacks: dict[tuple[str, str], str] = {}

    def end_open() -> None:  # the project ends every test left open, as incomplete
        out.extend({"event": "test_ended", "class": c, "test": t, "status": "incomplete"} for c, t in open_tests)
        open_tests.clear()

    for kind, *args in model.calls:
        ident = (args[0], args[1]) if len(args) >= 2 else ("", "")
        if kind == "testRunStarted":
            out.append({"event": "run_started", "testCount": max(int(args[0]), 0)})
        elif kind == "testStarted" and ident not in open_tests:
            open_tests.append(ident)
            out.append({"event": "test_started", "class": ident[0], "test": ident[1]})
        elif kind in ("testFailed", "testAssumptionFailure"):
            incomplete = args[2].startswith(_INCOMPLETE)
            pending[ident] = "incomplete" if incomplete else "failed" if kind == "testFailed" else "assumption_failure"
            if not incomplete and args[2] != _UNKNOWN_TRACE:
                stacks[ident] = _text(args[2])
        elif kind == "testIgnored":
            pending[ident] = "ignored"
        elif kind == "testEnded":
            if ident in open_tests:
                open_tests.remove(ident)
            else:
                out.append({"event": "test_started", "class": ident[0], "test": ident[1]})
            out.append({"event": "test_ended", "class": ident[0], "test": ident[1],
                        "status": pending.pop(ident, "passed")})
        elif kind == "testRunFailed":
            end_open()
            out.append({"event": "run_failed", "reason": _reworded(args[0], model.failed_at_done)})
        elif kind == "testRunEnded":
            end_open()
            out.append({"event": "run_ended"})
    if model.failed_at_done and out[-1] == {"event": "run_ended"}:
        out.pop()  # output that stopped short of its tests does not end the run (the project's choice)
    return out, stacks


def project(text: str) -> tuple[list[Event], dict[tuple[str, str], str]]:
    events = parse_text(text)
    out = [e.as_json() for e in events]
    for e in out:
        if e["event"] == "run_failed":
            e["reason"] = _text(str(e["reason"]))
    stacks = {(e.cls or "", e.test or ""): _text(e.stack) for e in events if e.event == "test_ended" and e.stack}
    return out, stacks


def assert_parity(text: str) -> None:
    """The project reports what ddmlib reports, read through the documented rewordings."""
    want, want_stacks = as_project(_model(text))
    got, got_stacks = project(text)
    assert got == want
    assert {k: got_stacks.get(k) for k in want_stacks} == want_stacks


def _model(text: str) -> Ddmlib:
    model = Ddmlib()
    model.run(text)
    return model


def _with_failure_before_the_end(events: list[Event], reason: str) -> list[Event]:
    assert events[-1] == {"event": "run_ended"}
    return [*events[:-1], {"event": "run_failed", "reason": reason}, {"event": "run_ended"}]


# --- the model says what ddmlib's own tests pin --------------------------------------------------------------------


def test_model_adds_am_error_line_to_the_failure_and_fails_the_last_started_test() -> None:
    text = (
        f"INSTRUMENTATION_STATUS: class=C\n{ON_ERROR}\nINSTRUMENTATION_STATUS: current=1\n{ABORTED}\n"
        "INSTRUMENTATION_STATUS: numtests=1\nINSTRUMENTATION_STATUS: test=t\nINSTRUMENTATION_STATUS_CODE: 1\n"
    )
    reason = f"Test run failed to complete. Expected 1 tests, received 0. {ON_ERROR}"
    assert _model(text).calls == [
        ("testRunStarted", "1"),
        ("testStarted", "C", "t"),
        ("testFailed", "C", "t", f"Test failed to run to completion. Reason: '{reason}'. Check device logcat for "
                                 "details"),
        ("testEnded", "C", "t"),
        ("testRunFailed", reason),
        ("testRunEnded",),
    ]


def test_model_drops_a_repeated_failure_with_the_same_current() -> None:
    text = ran("t", -2, n=1, of=1, stack="first") + status(-2, current=1, numtests=1, stack="second") + END_OK
    assert _model(text).calls == [
        ("testRunStarted", "1"), ("testStarted", "C", "t"), ("testFailed", "C", "t", "first"), ("testEnded", "C", "t"),
        ("testRunEnded",),
    ]


def test_model_fails_a_fatal_exception_ending() -> None:
    assert [c[0] for c in _model(fatal_exception_ending()).calls] == ["testRunStarted", "testRunFailed", "testRunEnded"]


def test_model_fails_empty_output_with_no_test_results() -> None:
    assert _model("").calls == [("testRunStarted", "0"), ("testRunFailed", "No test results"), ("testRunEnded",)]


def test_model_ignores_the_run_code() -> None:
    assert _model(ran("t", 0, n=1, of=1) + result(0)).calls[-1] == ("testRunEnded",)


def test_model_reads_an_instrumentation_failed_line_as_a_clean_end() -> None:
    assert _model("INSTRUMENTATION_FAILED: x/y\n").calls == [("testRunStarted", "0"), ("testRunEnded",)]


# --- real captures -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [f"adam_log_{n}.input" for n in (1, 2, 3, 4, 5)] + ["flank_example_android_logs_0.txt"],
)
def test_capture_agrees_with_ddmlib(name: str) -> None:
    assert_parity(shared_data("instrument", name).read_text())


def test_capture_ending_with_code_0_fails_where_ddmlib_does_not() -> None:
    # adam_log_6: every test reported, then INSTRUMENTATION_CODE: 0 with no shortMsg. ddmlib ignores the code; the
    # project fails the run as adam does (documented): the runner did not report a normal finish.
    text = shared_data("instrument", "adam_log_6.input").read_text()
    want, _ = as_project(_model(text))
    assert project(text)[0] == _with_failure_before_the_end(want, "Unexpected INSTRUMENTATION_CODE: 0")


def test_capture_with_three_runs_is_three_runs_where_ddmlib_reads_one() -> None:
    text = shared_data("instrument", "flank_example_android_logs_2.txt").read_text()
    want, _ = as_project(_model(text))
    got, _ = project(text)
    tests = [e for e in got if e["event"] in ("test_started", "test_ended")]
    assert tests == [e for e in want if e["event"] in ("test_started", "test_ended")]
    assert [e["event"] for e in want if "test" not in e] == ["run_started", "run_ended"]
    assert [e["event"] for e in got if "test" not in e] == ["run_started", "run_ended"] * 3


# --- constructed cases ----------------------------------------------------------------------------------------------

_CRASH = (
    ran("a", 0, n=1, of=3)
    + status(1, test="b", current=2, numtests=3)
    + status(-2, test="b", current=2, numtests=3, stack="java.lang.NullPointerException: boom\n\tat C.b(C.java:9)",
             stream="\nProcess crashed while executing b(C):\njava.lang.NullPointerException: boom")
    + result(0, longMsg="java.lang.NullPointerException: boom\n\tat C.b(C.java:9)", shortMsg="Process crashed.")
)
AGREEING: dict[str, str] = {
    "(a) fatal exception ending": fatal_exception_ending(),
    "(b) onError line inside a bundle": (
        f"INSTRUMENTATION_STATUS: class=com.x.FooTest\n{ON_ERROR}\nINSTRUMENTATION_STATUS: current=1\n"
        "INSTRUMENTATION_STATUS: numtests=2\nINSTRUMENTATION_STATUS: test=testFoo\nINSTRUMENTATION_STATUS_CODE: 1\n"
    ),
    "(c) second failure after a crash": (
        ran("t", -2, n=1, of=2, stack="Process crashed while executing t(C)")
        + status(-2, current=1, numtests=2, stack="java.lang.IllegalStateException: torn down")
        + result(0, shortMsg="Process crashed.")
    ),
    "(d) START a, START b, OK a, OK b": (
        status(1, test="a", current=1, numtests=2) + status(1, test="b", current=2, numtests=2)
        + status(0, test="a", current=1, numtests=2) + status(0, test="b", current=2, numtests=2) + END_OK
    ),
    "(b) ddmlib's case: onError and ABORTED inside a START bundle": (
        f"INSTRUMENTATION_STATUS: class=C\n{ON_ERROR}\nINSTRUMENTATION_STATUS: current=1\n{ABORTED}\n"
        "INSTRUMENTATION_STATUS: id=AndroidJUnitRunner\nINSTRUMENTATION_STATUS: numtests=1\n"
        "INSTRUMENTATION_STATUS: test=t\nINSTRUMENTATION_STATUS_CODE: 1\n"
    ),
    "ABORTED mid-test": status(1, current=1, numtests=2) + ABORTED + "\n",
    "Error status then INSTRUMENTATION_FAILED": (
        status(-1, cls=None, test=None, Error="Unable to find instrumentation info")
        + "INSTRUMENTATION_FAILED: dev.x.test/Runner\n"
    ),
    "shortMsg/longMsg process crash": _CRASH,
    "CRLF process crash": crlf(_CRASH),
    "numtests mismatch, run finished": ran("a", 0, n=1, of=3) + result(-1, stream="There was 1 failure:\n1) b(C)"),
    "numtests mismatch, output stopped": ran("a", 0, n=1, of=3) + status(1, test="b", current=2, numtests=3),
}


@pytest.mark.parametrize("case", sorted(AGREEING))
def test_constructed_case_agrees_with_ddmlib(case: str) -> None:
    assert_parity(AGREEING[case])


def test_aborted_after_every_test_reported_fails_where_ddmlib_does_not() -> None:
    text = ran("t", 0, n=1, of=1) + ABORTED + "\n" + END_OK
    want, _ = as_project(_model(text))
    assert project(text)[0] == _with_failure_before_the_end(want, ABORTED)


def test_instrumentation_failed_line_fails_where_ddmlib_reports_an_empty_run() -> None:
    text = "INSTRUMENTATION_FAILED: dev.x.test/Runner\n"
    want, _ = as_project(_model(text))
    assert project(text)[0] == _with_failure_before_the_end(want, "Instrumentation failed: dev.x.test/Runner")
