"""Incremental parser of `am instrument -w -r` output (the text status protocol).

Lines are fed as they stream. Status bundles (`INSTRUMENTATION_STATUS: key=value` … ended by
`INSTRUMENTATION_STATUS_CODE: n`) become test events, the result bundle (`INSTRUMENTATION_RESULT:` …
`INSTRUMENTATION_CODE: n`) ends the run. Values may wrap onto following lines without a prefix.

Reference: ddmlib's `InstrumentationResultParser` (AOSP tools/base, the version that knows `onError:` and
`INSTRUMENTATION_ABORTED:` lines and skips a repeated failure). Its listener calls are this parser's events, and it
is followed for every one of them:
- a status starts or ends a test only when it names a class and a test; IN_PROGRESS (2) adds to the next status
  rather than ending one, and starts nothing; a test ends once per start, and tests may overlap (START a, START b,
  OK a, OK b is two passes); a code that is not a 32-bit number is ERROR, an unknown number ends the test passed;
- a failure repeated for a test that already ended with the same `current` (a crash reported twice) is dropped;
- the run's test count is the first `numtests`; a run that ends short of it fails;
- `Error=` in a status, `shortMsg=` in the result and a final `stream` saying `Fatal exception when running tests`
  fail the run; an `onError:` or `INSTRUMENTATION_ABORTED:` line is never part of a value: it is added to the run's
  failure reason;
- empty output, or output with no status and no end, fails with `No test results`.

Deliberate deviations, each stricter or needed by the project, and why:
- a test left open when its run ends or breaks off ends `incomplete` (retried, not counted as failed; its stack is
  ddmlib's `Test failed to run to completion…` text), every open test and not only the last one: ddmlib fails only
  the last started and leaves others open forever;
- output that stops without `INSTRUMENTATION_CODE` (a phone that went away) short of its tests or with a test open
  fails the run with no `run_ended`, so the executor knows the phone's results may be lost; the reason reads
  `… Expected N tests, executed M` as adam reports it (the shared captures pin it; ddmlib says `received`);
- a run code other than RESULT_OK without `shortMsg` fails the run (`Unexpected INSTRUMENTATION_CODE: n`, adam);
  ddmlib ignores the code, yet the runner did not report a normal finish;
- an `INSTRUMENTATION_FAILED:` line fails and ends the run: ddmlib only takes it as the end and, without an
  `Error=` status, reports a clean run of 0 tests, but an instrumentation that could not start did not run clean;
- `INSTRUMENTATION_ABORTED:` fails the run even if every test had reported (ddmlib then reports it clean): the
  system crashed under the run, so files the tests wrote may be gone;
- the `shortMsg` reason is the message itself (`Process crashed.`), as adam reports it and the lane matches on;
- a status of a test execution (class, test, `current`) that already ended in this run is dropped whatever its
  code, not only a repeated failure with a stack: a test is counted, and reported finished, once;
- a repeated START of an open test is the same test (ddmlib starts it twice);
- a failed test without a `stack` keeps its `stream` as its stack: a process crash is only described there;
- values are kept as printed (ddmlib trims every line) and each is capped at `VALUE_LIMIT` characters, as is a
  line, so memory stays bounded whatever the phone prints;
- every `INSTRUMENTATION_CODE` ends its run and a later status starts a new run (ddmlib reads one run per stream);
- `run_started` precedes the first test even when its status has no `numtests` (count 0), while the count checked
  at the end is the first `numtests` seen, as ddmlib's.
"""

from __future__ import annotations

from farm.android.executor import TestStatus
from farm.android.instrument_events import (
    ABORTED,
    CODE,
    FAILED,
    FATAL_EXCEPTION,
    IN_PROGRESS,
    INCOMPLETE_TEST,
    NO_TEST_RESULTS,
    ON_ERROR,
    RESULT,
    RESULT_OK,
    START,
    STATUS,
    STATUS_CODE,
    TERMINAL,
    VALUE_LIMIT,
    Bundle,
    EventKind,
    InstrumentEvent,
    java_int,
    runner_error,
)
from farm.android.instrument_events import ERROR as _ERROR

__all__ = [
    "ABORTED", "CODE", "FAILED", "NO_TEST_RESULTS", "RESULT", "RESULT_OK", "STATUS", "STATUS_CODE", "VALUE_LIMIT",
    "EventKind", "InstrumentEvent", "InstrumentParser", "parse_text",
]

LINE_LIMIT = VALUE_LIMIT
"""Characters kept of one line; the rest of it is dropped and the value it carries is marked truncated."""


class InstrumentParser:
    """Feed text (`feed`) or lines (`feed_line`); call `close()` when the stream ends."""

    def __init__(self) -> None:
        self._partial: list[str] = []
        """The line still arriving, in the pieces it came in (joined once, when its end arrives)."""
        self._partial_len = 0
        self._partial_cut = False
        self._status = Bundle()
        self._result = Bundle()
        self._current: Bundle | None = None
        self._note: str | None = None
        """`am`'s `onError:` line, else its first `INSTRUMENTATION_ABORTED:` line: added to the run's failure."""
        self._aborted = False
        self._reset_run()
        self.events: list[InstrumentEvent] = []
        """Every event emitted so far."""

    def _reset_run(self) -> None:
        self.started = False
        self.ended = False
        self.failed_reason: str | None = None
        self.expected: int = 0
        self._count_known = False
        self.completed = 0
        self._open: dict[tuple[str, str], str | None] = {}
        """Tests started and not ended, in start order, with their `current`."""
        self._done: set[tuple[str, str, str | None]] = set()
        """Executions (class, test, current) that ended in this run: a later status of one is a repeat."""
        self.statuses: dict[str, TestStatus] = {}
        """Status per `class#test` of the current run."""
        self.stacks: dict[str, str] = {}
        """Failure text per `class#test`."""
        self.result: dict[str, str] = {}
        """The INSTRUMENTATION_RESULT bundle."""
        self.code: int | None = None

    @property
    def open_test(self) -> tuple[str, str] | None:
        """The test started last and not ended yet, if any."""
        return next(reversed(self._open), None)

    @property
    def crashed(self) -> bool:
        """Whether the run ended with the app process crashing."""
        return "crash" in self.result.get("shortMsg", "").lower()

    def feed(self, text: str) -> list[InstrumentEvent]:
        """Parse a chunk of output (may end mid-line); return the new events."""
        out: list[InstrumentEvent] = []
        start = 0
        while (end := text.find("\n", start)) >= 0:
            # Only the pending pieces are joined, once per line: re-splitting everything kept on every read would
            # make one long line quadratic.
            self._keep(text, start, end)
            line, cut = "".join(self._partial), self._partial_cut
            self._partial, self._partial_len, self._partial_cut = [], 0, False
            out.extend(self._line(line, cut))
            start = end + 1
        self._keep(text, start, len(text))
        return out

    def _keep(self, text: str, start: int, end: int) -> None:
        # One character past LINE_LIMIT is kept so that `_line` can still tell a trailing "\r" from a cut line.
        room = LINE_LIMIT + 1 - self._partial_len
        if end - start > room:
            self._partial_cut = True
            end = start + max(room, 0)
        if end > start:
            self._partial.append(text[start:end])
            self._partial_len += end - start

    def feed_line(self, line: str) -> list[InstrumentEvent]:
        """Parse one complete line (without its newline); return the new events."""
        return self._line(line[: LINE_LIMIT + 1], len(line) > LINE_LIMIT + 1)

    def _line(self, line: str, cut: bool) -> list[InstrumentEvent]:
        if not cut:
            line = line.rstrip("\r")
        if len(line) > LINE_LIMIT:
            line, cut = line[:LINE_LIMIT], True
        out: list[InstrumentEvent] = []
        if line.startswith(STATUS_CODE):
            self._current = None
            code = java_int(line[len(STATUS_CODE) :])
            # ddmlib reads a status code that is not a number as ERROR (a failure).
            self._on_status(_ERROR if code is None else code, out)
        elif line.startswith(STATUS):
            self._status.add(line[len(STATUS) :], cut=cut)
            self._current = self._status
        elif line.startswith(RESULT):
            self._result.add(line[len(RESULT) :], cut=cut)
            self._current = self._result
        elif line.startswith(CODE):
            self._current = None
            self._on_code(line[len(CODE) :].strip(), out)
        elif line.startswith(FAILED):
            self._current = None
            # After the run ended it adds nothing (ddmlib takes it as a mere end-of-run marker).
            if not self.ended:
                self._fail(self._reason(f"Instrumentation failed: {line[len(FAILED) :].strip()}"), out, end=True)
        elif line.startswith(ON_ERROR) or line.startswith(ABORTED):
            # `am` prints these between the runner's lines, even inside a status bundle: the value being read stays
            # open and the line is kept aside for the run's failure reason (ddmlib). After the run they add nothing.
            if not self.ended:
                aborted = line.startswith(ABORTED)
                if not aborted or self._note is None:
                    self._note = line.strip()
                self._aborted = self._aborted or aborted
        elif self._current is not None:
            self._current.append(line, cut=cut)
        self.events.extend(out)
        return out

    def close(self) -> list[InstrumentEvent]:
        """The stream ended: flush a last partial line and settle the run."""
        out: list[InstrumentEvent] = []
        if self._partial:
            last, cut = "".join(self._partial), self._partial_cut
            self._partial, self._partial_len, self._partial_cut = [], 0, False
            # An unterminated code line without a number was cut mid-value ("-" of "-2"): reading it
            # as ERROR would invent a failure, so the test stays open and ends incomplete instead.
            prefix = next((p for p in (STATUS_CODE, CODE) if last.startswith(p)), None)
            if prefix is None or java_int(last[len(prefix) :]) is not None:
                out.extend(self._line(last, cut))
        tail: list[InstrumentEvent] = []
        if not self.started:
            # Nothing parseable arrived (empty output, `am` usage text, only an onError line): ddmlib fails the run.
            self._fail(self._reason(NO_TEST_RESULTS), tail, end=True)
        elif not self.ended:
            reason: str | None = None
            if self._open or self.completed < self.expected:
                reason = self._reason(
                    f"Test run failed to complete. Expected {self.expected} tests, executed {self.completed}",
                    self._pending_runner_error(),
                )
            elif self._aborted:
                reason = self._reason(None)
            self._end_open_tests(tail, reason)
            if reason is not None:
                self.failed_reason = reason
                tail.append(InstrumentEvent("run_failed", reason=reason))
            else:
                tail.append(InstrumentEvent("run_ended"))
            self.ended = True
        self.events.extend(tail)
        return out + tail

    def _ensure_started(self, values: dict[str, str], out: list[InstrumentEvent]) -> None:
        numtests = java_int(values["numtests"]) if "numtests" in values else None
        if not self.started:
            self.started = True
            self.expected = max(numtests or 0, 0)
            self._count_known = numtests is not None
            out.append(InstrumentEvent("run_started", test_count=self.expected))
        elif not self._count_known and numtests is not None:
            # The count checked at the end is the first `numtests` seen, as ddmlib's (the event already went out).
            self.expected, self._count_known = max(numtests, 0), True

    def _on_status(self, code: int, out: list[InstrumentEvent]) -> None:
        if code == IN_PROGRESS:
            return  # ddmlib keeps collecting: what an IN_PROGRESS status said belongs to the next one
        values = self._status.values
        self._status = Bundle()
        cls, test = values.get("class"), values.get("test")
        error = values.get("Error")
        if error is None and (cls is None or test is None):
            # Not a test: ddmlib drops a bundle without class and test (e.g. a crash stack printed
            # before the first test started) and does not start the run for it either.
            return
        if self.ended:
            self._reset_run()  # a later run in the same stream
        if cls is not None and test is not None:
            current = values["current"].strip() if "current" in values else None
            self._on_test(cls.strip(), test.strip(), current, code, values, out)
        if error is not None:
            # `Error=` is how the system reports an instrumentation that could not run; ddmlib
            # fails and ends the run with its text.
            self._fail(self._reason(error.strip()), out, end=True)

    def _on_test(
        self, cls: str, test: str, current: str | None, code: int, values: dict[str, str], out: list[InstrumentEvent]
    ) -> None:
        key = (cls, test)
        if (cls, test, current) in self._done and key not in self._open:
            # A status of an execution that already ended: a crash reported a second time, a runner that repeats
            # itself. ddmlib drops a repeated failure; any repeat is dropped here so the test counts once and keeps
            # the first stack, which is the one that says what happened.
            return
        self._ensure_started(values, out)
        if code == START:
            if key not in self._open:  # a repeated START of an open test is the same test, not a second one
                self._open[key] = current
                out.append(InstrumentEvent("test_started", cls=cls, test=test))
            return
        if key in self._open:
            started_as = self._open.pop(key)
            self._done.add((cls, test, started_as))
        else:
            # A terminal status without a START (e.g. a class-level ignore): start it here so every end has one.
            out.append(InstrumentEvent("test_started", cls=cls, test=test))
        self._done.add((cls, test, current))
        # ddmlib ends a test with an unknown code without a failure: a listener records it passed.
        status = TERMINAL.get(code, "passed")
        stack = values.get("stack") or values.get("stream")
        name = f"{cls}#{test}"
        self.statuses[name] = status
        if status != "passed" and stack:
            self.stacks[name] = stack.strip()
        self.completed += 1
        out.append(InstrumentEvent("test_ended", cls=cls, test=test, status=status, stack=stack))

    def _end_open_tests(self, out: list[InstrumentEvent], reason: str | None) -> None:
        stack = INCOMPLETE_TEST.format(reason=reason) if reason is not None else None
        for cls, test in self._open:
            self.statuses[f"{cls}#{test}"] = "incomplete"
            out.append(InstrumentEvent("test_ended", cls=cls, test=test, status="incomplete", stack=stack))
        self._open.clear()

    def _on_code(self, text: str, out: list[InstrumentEvent]) -> None:
        result = self._result.values
        self._result = Bundle()
        if self.ended:
            if not result:
                return  # a second end marker of the run that already ended
            self._reset_run()  # a later run without tests
        self.result, self.code = result, java_int(text)
        self._ensure_started({}, out)
        reason: str | None = None
        short = result.get("shortMsg", "").strip()
        stream = result.get("stream", "").strip()
        if short:
            reason = self._reason(short)  # ddmlib fails on `shortMsg` whatever the code
        elif self.code != RESULT_OK:
            reason = self._reason(f"Unexpected INSTRUMENTATION_CODE: {text}")
        elif self.completed < self.expected:
            # A run that ends normally short of its `numtests` did not complete (ddmlib).
            reason = self._reason(
                f"Instrumentation reported numtests={self.expected} but only ran {self.completed}",
                runner_error(stream),
            )
        elif FATAL_EXCEPTION in stream:
            # The runner could not even build its request (bad arguments, no such class): no test ran, yet the
            # run "finished" with RESULT_OK. ddmlib fails it with the runner's text.
            reason = stream
        elif self._aborted:
            reason = self._reason(None)
        self._end_open_tests(out, reason)
        if reason is not None:
            self._fail(reason, out)
        self.ended = True
        self._note, self._aborted = None, False
        out.append(InstrumentEvent("run_ended"))

    def _reason(self, base: str | None, stream_error: str | None = None) -> str:
        """ddmlib's failure reason: the cause, then `am`'s own error line (or else the runner's final summary)."""
        detail = self._note or stream_error
        if base is None:
            return detail or "Instrumentation aborted"
        return f"{base}. {detail}" if detail else base

    def _pending_runner_error(self) -> str | None:
        return runner_error(self._result.values.get("stream", "").strip()) if "stream" in self._result.lines else None

    def _fail(self, reason: str, out: list[InstrumentEvent], *, end: bool = False) -> None:
        """Fail the run once (later reasons add nothing); `end` also ends it, as ddmlib does."""
        self._ensure_started({}, out)
        self._end_open_tests(out, reason)
        if self.failed_reason is None:
            self.failed_reason = reason
            self._note = None  # ddmlib reports `am`'s error line with one failure only
            out.append(InstrumentEvent("run_failed", reason=reason))
        if end and not self.ended:
            self.ended = True
            self._aborted = False
            self._result = Bundle()  # a result printed before the end belongs to this run
            out.append(InstrumentEvent("run_ended"))


def parse_text(text: str) -> list[InstrumentEvent]:
    """Parse a whole capture at once."""
    parser = InstrumentParser()
    parser.feed(text)
    parser.close()
    return parser.events
