"""Incremental parser of `am instrument -w -r` output (the text status protocol).

Lines are fed as they stream. Status bundles (`INSTRUMENTATION_STATUS: key=value` … ended by
`INSTRUMENTATION_STATUS_CODE: n`) become test events, the result bundle
(`INSTRUMENTATION_RESULT:` … `INSTRUMENTATION_CODE: n`) ends the run. Values may wrap onto
following lines without a prefix.

The events are those a ddmlib `ITestRunListener` receives from `InstrumentationResultParser`,
except where this project chooses otherwise:
- a test left open when the run breaks off ends `incomplete` (retried, not counted as failed);
- output that stops without `INSTRUMENTATION_CODE` (a phone that went away) fails the run with no
  `run_ended`, and a run code other than RESULT_OK without `shortMsg` fails it as
  `Unexpected INSTRUMENTATION_CODE`, both as adam reports them;
- an `INSTRUMENTATION_FAILED` line fails the run it ends (ddmlib waits for an `Error=` status).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from farm.android.executor import TestStatus

STATUS = "INSTRUMENTATION_STATUS: "
STATUS_CODE = "INSTRUMENTATION_STATUS_CODE: "
RESULT = "INSTRUMENTATION_RESULT: "
CODE = "INSTRUMENTATION_CODE: "
FAILED = "INSTRUMENTATION_FAILED: "
ABORTED = "INSTRUMENTATION_ABORTED: "

# Status codes of androidx InstrumentationResultPrinter / ddmlib.
_START, _IN_PROGRESS, _ERROR = 1, 2, -1
_TERMINAL: dict[int, TestStatus] = {
    0: "passed",
    _ERROR: "failed",  # legacy JUnit3 ERROR: ddmlib reports it as a failure
    -2: "failed",
    -3: "ignored",
    -4: "assumption_failure",
}
RESULT_OK = -1  # Activity.RESULT_OK: the run finished, whatever the tests did.
NO_TEST_RESULTS = "No test results"

EventKind = Literal["run_started", "test_started", "test_ended", "run_failed", "run_ended"]


@dataclass(frozen=True)
class InstrumentEvent:
    """One event of the run. `as_json()` is the `farm instrument parse` line."""

    event: EventKind
    test_count: int | None = None
    cls: str | None = None
    test: str | None = None
    status: TestStatus | None = None
    reason: str | None = None
    stack: str | None = None
    """Failure stack or stream text of a failed test (not part of the JSON line)."""

    def as_json(self) -> dict[str, str | int]:
        """The documented JSON shape of this event."""
        if self.event == "run_started":
            return {"event": "run_started", "testCount": self.test_count or 0}
        if self.event == "test_started":
            return {"event": "test_started", "class": self.cls or "", "test": self.test or ""}
        if self.event == "test_ended":
            return {
                "event": "test_ended",
                "class": self.cls or "",
                "test": self.test or "",
                "status": self.status or "incomplete",
            }
        if self.event == "run_failed":
            return {"event": "run_failed", "reason": self.reason or ""}
        return {"event": "run_ended"}


@dataclass
class _Bundle:
    # Each value as its lines, joined when the bundle ends: appending to a growing string re-copies it on every
    # wrapped line, and a crash can wrap a stream value over hundreds of thousands of lines.
    lines: dict[str, list[str]] = field(default_factory=dict)
    last_key: str | None = None

    def add(self, body: str) -> None:
        key, sep, value = body.partition("=")
        if not sep:
            self.append(body)
            return
        self.lines[key.strip()] = [value]
        self.last_key = key.strip()

    def append(self, line: str) -> None:
        if self.last_key is not None:
            self.lines[self.last_key].append(line)

    @property
    def values(self) -> dict[str, str]:
        return {key: "\n".join(parts) for key, parts in self.lines.items()}


class InstrumentParser:
    """Feed text (`feed`) or lines (`feed_line`); call `close()` when the stream ends."""

    def __init__(self) -> None:
        self._partial: list[str] = []
        """The line still arriving, in the pieces it came in (joined once, when its end arrives)."""
        self._status = _Bundle()
        self._result = _Bundle()
        self._current: _Bundle | None = None
        self._reset_run()
        self.events: list[InstrumentEvent] = []
        """Every event emitted so far."""

    def _reset_run(self) -> None:
        self.started = False
        self.ended = False
        self.failed_reason: str | None = None
        self.expected: int = 0
        self.completed = 0
        self.open_test: tuple[str, str] | None = None
        self.statuses: dict[str, TestStatus] = {}
        """Status per `class#test` of the current run."""
        self.stacks: dict[str, str] = {}
        """Failure text per `class#test`."""
        self.result: dict[str, str] = {}
        """The INSTRUMENTATION_RESULT bundle."""
        self.code: int | None = None

    @property
    def crashed(self) -> bool:
        """Whether the run ended with the app process crashing."""
        return "crash" in self.result.get("shortMsg", "").lower()

    def feed(self, text: str) -> list[InstrumentEvent]:
        """Parse a chunk of output (may end mid-line); return the new events."""
        if "\n" not in text:
            # Splitting the whole pending line again on every read would make one long line quadratic.
            if text:
                self._partial.append(text)
            return []
        self._partial.append(text)
        *lines, rest = "".join(self._partial).split("\n")
        self._partial = [rest] if rest else []
        out: list[InstrumentEvent] = []
        for line in lines:
            out.extend(self.feed_line(line))
        return out

    def feed_line(self, line: str) -> list[InstrumentEvent]:
        """Parse one complete line (without its newline); return the new events."""
        line = line.rstrip("\r")
        out: list[InstrumentEvent] = []
        if line.startswith(STATUS_CODE):
            code = _int(line[len(STATUS_CODE) :])
            # ddmlib reads a status code that is not a number as ERROR (a failure).
            self._on_status(_ERROR if code is None else code, out)
            self._status = _Bundle()
            self._current = None
        elif line.startswith(STATUS):
            self._status.add(line[len(STATUS) :])
            self._current = self._status
        elif line.startswith(RESULT):
            self._result.add(line[len(RESULT) :])
            self._current = self._result
        elif line.startswith(CODE):
            self._on_code(line[len(CODE) :].strip(), out)
            self._current = None
        elif line.startswith(FAILED) or line.startswith(ABORTED):
            # Both only close the run they interrupt: after the run ended they add nothing
            # (ddmlib takes INSTRUMENTATION_FAILED as a mere end-of-run marker).
            if not self.ended:
                if line.startswith(FAILED):
                    self._fail(f"Instrumentation failed: {line[len(FAILED) :].strip()}", out, end=True)
                else:
                    self._fail(line[len(ABORTED) :].strip(), out)
            self._current = None
        elif self._current is not None:
            self._current.append(line)
        self.events.extend(out)
        return out

    def close(self) -> list[InstrumentEvent]:
        """The stream ended: flush a last partial line and settle the run."""
        out: list[InstrumentEvent] = []
        if self._partial:
            last, self._partial = "".join(self._partial), []
            # An unterminated code line without a number was cut mid-value ("-" of "-2"): reading it
            # as ERROR would invent a failure, so the test stays open and ends incomplete instead.
            prefix = next((p for p in (STATUS_CODE, CODE) if last.startswith(p)), None)
            if prefix is None or _int(last[len(prefix) :]) is not None:
                out.extend(self.feed_line(last))
        tail: list[InstrumentEvent] = []
        if not self.started:
            # Nothing parseable arrived (empty output, `am` usage text): ddmlib fails the run.
            self._fail(NO_TEST_RESULTS, tail, end=True)
        elif not self.ended and self.failed_reason is not None:
            # Failed but not ended (an abort the output went on after): a test started since is still open.
            self._end_open_test(tail)
        elif not self.ended:
            self._end_open_test(tail)
            if self.completed < self.expected or any(e.status == "incomplete" for e in tail):
                reason = f"Test run failed to complete. Expected {self.expected} tests, executed {self.completed}"
                self.failed_reason = reason
                tail.append(InstrumentEvent("run_failed", reason=reason))
            else:
                tail.append(InstrumentEvent("run_ended"))
            self.ended = True
        self.events.extend(tail)
        return out + tail

    def _ensure_started(self, values: dict[str, str], out: list[InstrumentEvent]) -> None:
        if not self.started:
            self.started = True
            self.expected = _int(values.get("numtests", "")) or 0
            out.append(InstrumentEvent("run_started", test_count=self.expected))

    def _on_status(self, code: int, out: list[InstrumentEvent]) -> None:
        values = self._status.values
        cls, test = values.get("class"), values.get("test")
        error = values.get("Error")
        if error is None and (cls is None or test is None):
            # Not a test: ddmlib drops a bundle without class and test (e.g. a crash stack printed
            # before the first test started) and does not start the run for it either.
            return
        if self.ended:
            self._reset_run()  # a later run in the same stream
        if cls is not None and test is not None:
            self._on_test(cls.strip(), test.strip(), code, values, out)
        if error is not None:
            # `Error=` is how the system reports an instrumentation that could not run; ddmlib
            # fails and ends the run with its text.
            self._fail(error.strip(), out, end=True)

    def _on_test(self, cls: str, test: str, code: int, values: dict[str, str], out: list[InstrumentEvent]) -> None:
        self._ensure_started(values, out)
        if code == _START:
            if self.open_test == (cls, test):
                return  # a repeated START of the open test is the same test, not a second one
            self._end_open_test(out)
            self.open_test = (cls, test)
            out.append(InstrumentEvent("test_started", cls=cls, test=test))
            return
        if code == _IN_PROGRESS:
            return
        if self.open_test != (cls, test):
            # A terminal status without a START (e.g. a class-level ignore): start it here.
            self._end_open_test(out)
            out.append(InstrumentEvent("test_started", cls=cls, test=test))
        # ddmlib ends a test with an unknown code without a failure: a listener records it passed.
        status = _TERMINAL.get(code, "passed")
        stack = values.get("stack") or values.get("stream")
        key = f"{cls}#{test}"
        self.statuses[key] = status
        if status != "passed" and stack:
            self.stacks[key] = stack.strip()
        self.completed += 1
        self.open_test = None
        out.append(InstrumentEvent("test_ended", cls=cls, test=test, status=status, stack=stack))

    def _end_open_test(self, out: list[InstrumentEvent]) -> None:
        if self.open_test is None:
            return
        cls, test = self.open_test
        self.statuses[f"{cls}#{test}"] = "incomplete"
        self.open_test = None
        out.append(InstrumentEvent("test_ended", cls=cls, test=test, status="incomplete"))

    def _on_code(self, text: str, out: list[InstrumentEvent]) -> None:
        result = dict(self._result.values)
        self._result = _Bundle()
        if self.ended:
            if not result:
                return  # a second end marker of the run that already ended
            self._reset_run()  # a later run without tests
        self.result, self.code = result, _int(text)
        self._ensure_started({}, out)
        self._end_open_test(out)
        if self.failed_reason is None and self.code != RESULT_OK:
            short = self.result.get("shortMsg", "").strip()
            self._fail(short or f"Unexpected INSTRUMENTATION_CODE: {text}", out)
        elif self.failed_reason is None and self.completed < self.expected:
            # A run that ends normally short of its `numtests` did not complete (ddmlib).
            self._fail(f"Test run failed to complete. Expected {self.expected} tests, received {self.completed}", out)
        self.ended = True
        out.append(InstrumentEvent("run_ended"))

    def _fail(self, reason: str, out: list[InstrumentEvent], *, end: bool = False) -> None:
        """Fail the run once (later reasons add nothing); `end` also ends it, as ddmlib does."""
        self._ensure_started({}, out)
        self._end_open_test(out)
        if self.failed_reason is None:
            self.failed_reason = reason
            out.append(InstrumentEvent("run_failed", reason=reason))
        if end and not self.ended:
            self.ended = True
            self._result = _Bundle()  # a result printed before the end belongs to this run
            out.append(InstrumentEvent("run_ended"))


def _int(text: str) -> int | None:
    try:
        return int(text.strip())
    except ValueError:
        return None


def parse_text(text: str) -> list[InstrumentEvent]:
    """Parse a whole capture at once."""
    parser = InstrumentParser()
    parser.feed(text)
    parser.close()
    return parser.events
