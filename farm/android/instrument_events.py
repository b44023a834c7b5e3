"""The vocabulary of the `am instrument -r` parser: its events, the protocol's prefixes and codes, and the bounded
key=value bundle a status or result record is collected in (see `farm.android.instrument_parser`)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Literal

from farm.android.executor import TestStatus

STATUS = "INSTRUMENTATION_STATUS: "
STATUS_CODE = "INSTRUMENTATION_STATUS_CODE: "
RESULT = "INSTRUMENTATION_RESULT: "
CODE = "INSTRUMENTATION_CODE: "
FAILED = "INSTRUMENTATION_FAILED: "
ABORTED = "INSTRUMENTATION_ABORTED: "
ON_ERROR = "onError:"
"""`am`'s own error line (`onError: commandError=… message=…`): a remark on the run, never part of a value."""

# Status codes of androidx InstrumentationResultPrinter / ddmlib.
START, IN_PROGRESS, ERROR, FAILURE = 1, 2, -1, -2
TERMINAL: dict[int, TestStatus] = {
    0: "passed",
    ERROR: "failed",  # legacy JUnit3 ERROR: ddmlib reports it as a failure
    FAILURE: "failed",
    -3: "ignored",
    -4: "assumption_failure",
}
RESULT_OK = -1  # Activity.RESULT_OK: the run finished, whatever the tests did.

NO_TEST_RESULTS = "No test results"
FATAL_EXCEPTION = "Fatal exception when running tests"
"""What AndroidJUnitRunner's final `stream` says when it could not even build the test request."""
_FAILURES = re.compile(r"There (was|were) (\d+) failure(.*)", re.DOTALL)
"""The runner's summary of failed tests in its final `stream`."""
INCOMPLETE_TEST = "Test failed to run to completion. Reason: '{reason}'. Check device logcat for details"

VALUE_LIMIT = 64 * 1024
"""Characters kept of one value (a stack, a stream) and of one line: a crash can print a log of any length, and the
parser holds what it reads until the record ends. A longer value keeps its head and ends with `TRUNCATED`."""
TRUNCATED = "\n… (truncated)"
OTHER_KEYS_LIMIT = 16 * VALUE_LIMIT
"""Characters kept per bundle of keys the parser does not read (custom metrics): a runner can print any number."""
KNOWN_KEYS = frozenset({"class", "test", "current", "numtests", "id", "stack", "stream", "Error", "shortMsg"})

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
    """Failure stack or stream text of an ended test (not part of the JSON line)."""

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
class Bundle:
    """The key=value pairs of one status or result record, each value at most `VALUE_LIMIT` characters."""

    # Each value as its lines, joined when the bundle ends: appending to a growing string re-copies it on every
    # wrapped line, and a crash can wrap a stream value over hundreds of thousands of lines.
    lines: dict[str, list[str]] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    cut: set[str] = field(default_factory=set)
    last_key: str | None = None
    """The key whose value a line without a prefix continues (None: such a line is dropped)."""
    other_chars: int = 0

    def add(self, body: str, *, cut: bool = False) -> None:
        """`key=value`. Without `=` the line starts no value, and lines wrapped after it are dropped (ddmlib)."""
        key, sep, value = body.partition("=")
        key = key.strip()
        self.last_key = None
        if not sep:
            return
        if key not in KNOWN_KEYS:
            self.other_chars -= self.sizes.get(key, 0)
            if key not in self.lines and self.other_chars >= OTHER_KEYS_LIMIT:
                return
        self.lines[key], self.sizes[key] = [], 0
        self.cut.discard(key)
        self.last_key = key
        self._put(key, value, cut)

    def append(self, line: str, *, cut: bool = False) -> None:
        """A line without a prefix: the open value wrapped onto it."""
        if self.last_key is not None:
            self._put(self.last_key, line, cut)

    def _put(self, key: str, piece: str, cut: bool) -> None:
        if key in self.cut:
            return
        parts = self.lines[key]
        sep = 1 if parts else 0
        room = VALUE_LIMIT - self.sizes[key] - sep
        if key not in KNOWN_KEYS:
            room = min(room, OTHER_KEYS_LIMIT - self.other_chars - sep)
        if len(piece) > room or cut:
            self.cut.add(key)
            piece = piece[: max(room, 0)]
            if room < 0:
                return
        parts.append(piece)
        self.sizes[key] += sep + len(piece)
        if key not in KNOWN_KEYS:
            self.other_chars += sep + len(piece)

    @property
    def values(self) -> dict[str, str]:
        """Every value, wrapped lines joined with `\\n`; a value that did not fit ends with `TRUNCATED`."""
        out = {key: "\n".join(parts) for key, parts in self.lines.items()}
        for key in self.cut:
            out[key] = out[key][: VALUE_LIMIT - len(TRUNCATED)] + TRUNCATED
        return out


_JAVA_WHITESPACE = "".join(map(chr, range(0x21)))
_INT32 = 2**31


def java_int(text: str) -> int | None:
    """`Integer.parseInt(text.trim())` as ddmlib reads codes and counts: an optional sign and decimal digits (any
    script's) within 32 bits, else None. Python's `int()` also takes `1_000` and numbers of any size, which ddmlib
    does not, so a status code like `99999999999` stays ddmlib's ERROR rather than becoming an unknown code."""
    s = text.strip(_JAVA_WHITESPACE)
    negative = s[:1] == "-"
    digits = s[1:] if s[:1] in "+-" and s else s
    if not digits:
        return None
    number = 0
    for ch in digits:
        d = unicodedata.decimal(ch, -1)
        if d < 0:
            return None
        number = number * 10 + d
        if number > _INT32:  # stops early: a line of a million digits costs no more than eleven
            return None
    number = -number if negative else number
    return number if -_INT32 <= number < _INT32 else None


def runner_error(stream: str) -> str | None:
    """The runner's final `stream` (stripped) when it reports a fatal exception or failed tests: what ddmlib adds
    to a failing run's reason."""
    return stream if FATAL_EXCEPTION in stream or _FAILURES.fullmatch(stream) else None
