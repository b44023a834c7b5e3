"""Builders of `am instrument -w -r` output for parser tests: status bundles as `am` prints them (keys sorted, then
the code), result bundles, `am`'s own error lines, and the runner's fatal-exception ending."""

from __future__ import annotations

from farm.android.instrument_parser import InstrumentEvent, parse_text

ON_ERROR = "onError: commandError=false message=INSTRUMENTATION_ABORTED: System has crashed."
"""What `am` prints when system_server dies under a run, before the ABORTED line."""
ABORTED = "INSTRUMENTATION_ABORTED: System has crashed."
END_OK = "INSTRUMENTATION_CODE: -1\n"
"""The run finished (Activity.RESULT_OK)."""


def status(code: int | str, cls: str | None = "C", test: str | None = "t", **values: str | int) -> str:
    """One status bundle: `class`, `test` and `values` in sorted key order, then the status code."""
    pairs: dict[str, str | int] = dict(values)
    if cls is not None:
        pairs["class"] = cls
    if test is not None:
        pairs["test"] = test
    lines = [f"INSTRUMENTATION_STATUS: {key}={pairs[key]}\n" for key in sorted(pairs)]
    return "".join(lines) + f"INSTRUMENTATION_STATUS_CODE: {code}\n"


def ran(test: str, code: int, *, n: int, of: int, cls: str = "C", **values: str | int) -> str:
    """A START of test number `n` of `of` (its `current` and `numtests`), then its end with `code`."""
    common: dict[str, str | int] = {"current": n, "numtests": of, "id": "AndroidJUnitRunner"}
    return status(1, cls, test, **common) + status(code, cls, test, **common, **values)


def result(code: int, **values: str) -> str:
    """The result bundle and the run code that end a run."""
    lines = [f"INSTRUMENTATION_RESULT: {key}={values[key]}\n" for key in sorted(values)]
    return "".join(lines) + f"INSTRUMENTATION_CODE: {code}\n"


def fatal_exception_ending(exception: str = "java.lang.IllegalArgumentException: Ambiguous arguments") -> str:
    """How AndroidJUnitRunner ends a run whose test request it could not build: no test status at all, a final
    `stream` naming the exception, and RESULT_OK."""
    stream = (
        "\nFatal exception when running tests\n"
        f"{exception}\n"
        "\tat androidx.test.internal.runner.TestRequestBuilder.validate(TestRequestBuilder.java:1010)\n"
        "\tat androidx.test.runner.AndroidJUnitRunner.onStart(AndroidJUnitRunner.java:452)"
    )
    return result(-1, stream=stream)


def crlf(text: str) -> str:
    """The same output as a terminal (a pty) delivers it."""
    return text.replace("\n", "\r\n")


def events_json(text: str) -> list[dict[str, str | int]]:
    """The JSON lines `farm instrument parse` prints for this output."""
    return [e.as_json() for e in parse_text(text)]


def ended(events: list[InstrumentEvent]) -> list[tuple[str | None, str | None, str | None]]:
    """(class, test, status) of every test_ended event."""
    return [(e.cls, e.test, e.status) for e in events if e.event == "test_ended"]
