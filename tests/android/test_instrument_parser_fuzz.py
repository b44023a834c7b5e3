"""Property tests of the `am instrument -w -r` stream parser: whatever the phone prints, however it arrives.

Seeds are the real captures in ../shared/data/instrument (Apache-2.0, see its README.md); the mutations are
what a flaky link or a crashing app does to them. `make fuzz` runs these with many fresh examples.
"""

from __future__ import annotations

import codecs
import re
import time
from collections.abc import Callable

from hypothesis import example, given
from hypothesis import strategies as st

from farm.android.instrument_events import VALUE_LIMIT
from farm.android.instrument_parser import LINE_LIMIT, InstrumentEvent, InstrumentParser, parse_text
from tests.helpers.fuzz import chunkings, line_mutations, split_at
from tests.helpers.shared_data import SHARED_DATA

_DIR = SHARED_DATA / "instrument"
CAPTURES: dict[str, str] = {
    p.name: p.read_text(encoding="utf-8")
    for p in sorted(_DIR.glob("*"))
    if p.suffix in (".input", ".txt")
} if _DIR.is_dir() else {}
_CAPTURE = st.sampled_from(sorted(CAPTURES) or ["(none)"])

_STATUSES = {"passed", "failed", "ignored", "assumption_failure", "incomplete"}
_JAVA_TRIM = "".join(map(chr, range(0x21)))
_PREFIXES = ("INSTRUMENTATION_STATUS: ", "INSTRUMENTATION_STATUS_CODE: ", "INSTRUMENTATION_RESULT: ",
             "INSTRUMENTATION_CODE: ", "INSTRUMENTATION_FAILED: ", "INSTRUMENTATION_ABORTED: ")
_KEYS = ("class", "test", "current", "numtests", "id", "stack", "stream", "Error", "shortMsg", "longMsg", "")
_CODE_TEXT = st.one_of(
    st.sampled_from(("1", "2", "0", "-1", "-2", "-3", "-4", "-", "", " 0 ", "x", "3", "-5", "0x1", "1e3")),
    st.integers().map(str),
    st.text(max_size=6),
)

# A line the protocol could carry (a key, a code, a marker), a wrapped value, or plain noise.
PROTOCOL_LINE = st.one_of(
    st.builds(lambda k, v: f"INSTRUMENTATION_STATUS: {k}={v}", st.sampled_from(_KEYS), st.text(max_size=12)),
    st.builds(lambda k, v: f"INSTRUMENTATION_RESULT: {k}={v}", st.sampled_from(_KEYS), st.text(max_size=12)),
    _CODE_TEXT.map(lambda c: f"INSTRUMENTATION_STATUS_CODE: {c}"),
    _CODE_TEXT.map(lambda c: f"INSTRUMENTATION_CODE: {c}"),
    st.builds(lambda p, v: p + v, st.sampled_from(_PREFIXES), st.text(max_size=12)),
    st.sampled_from(("", "\r", "\tat org.junit.Assert.fail(Assert.java:89)", "INSTRUMENTATION_STATUS:",
                     "INSTRUMENTATION_STATUS_CODE:", "INSTRUMENTATION_STATUS: =", "INSTRUMENTATION_STATUS: test",
                     "onError: commandError=false message=INSTRUMENTATION_ABORTED: System has crashed.",
                     "INSTRUMENTATION_ABORTED: System has crashed.", "Fatal exception when running tests",
                     "There were 2 failures:")),
    st.text(max_size=20),
)


def _stream(lines: list[str], crlf: bool) -> str:
    return ("\r\n" if crlf else "\n").join(lines)


ANY_STREAM = st.builds(_stream, st.lists(PROTOCOL_LINE, max_size=30), st.booleans())


def fed(chunks: list[str]) -> list[InstrumentEvent]:
    """Events of the stream delivered in these chunks, closed at the end."""
    parser = InstrumentParser()
    for chunk in chunks:
        parser.feed(chunk)
    parser.close()
    return parser.events


def assert_well_formed(events: list[InstrumentEvent]) -> None:
    """The event grammar every listener relies on, whatever the input was.

    Runs start before anything else happens in them; a test ends only while it is open and is not started again
    while open (tests may overlap, as ddmlib reports them), so each start has exactly one end and a progress
    counter fed with the ends counts every test once; a run fails at most once; nothing fails or ends a run
    while a test is open; after `close()` no test is left open and every run is settled (ended, or failed
    because the output stopped).
    """
    assert events, "a closed parser always reports something (at least a failed run)"
    in_run, failed = False, False
    open_tests: set[tuple[str | None, str | None]] = set()
    for i, e in enumerate(events):
        where = f"event {i}: {e.as_json()}"
        if e.event == "run_started":
            assert not in_run, where
            assert e.test_count is not None and e.test_count >= 0, where
            in_run, failed = True, False
            continue
        assert in_run, where
        if e.event == "test_started":
            assert (e.cls, e.test) not in open_tests, where
            open_tests.add((e.cls, e.test))
        elif e.event == "test_ended":
            assert (e.cls, e.test) in open_tests and e.status in _STATUSES, where
            open_tests.discard((e.cls, e.test))
        elif e.event == "run_failed":
            assert not open_tests and not failed and e.reason is not None, where
            failed = True
        else:
            assert e.event == "run_ended" and not open_tests, where
            in_run = False
    assert not open_tests, "a test was left open at the end of the stream"
    assert not in_run or failed, "the last run was neither ended nor failed"


def _finished(events: list[InstrumentEvent]) -> list[tuple[str | None, str | None, str | None]]:
    return [(e.cls, e.test, e.status) for e in events if e.event == "test_ended" and e.status != "incomplete"]


# --- any input ---------------------------------------------------------------------------------------


@given(ANY_STREAM, st.data())
@example(
    # A test started after an abort was left open for good (no test_ended at all).
    "INSTRUMENTATION_ABORTED: System has crashed.\nINSTRUMENTATION_STATUS: class=C\nINSTRUMENTATION_STATUS: test=t\n"
    "INSTRUMENTATION_STATUS_CODE: 1\n",
    None,
)
def test_any_text_in_any_chunking_never_raises_gives_the_whole_streams_events_and_is_well_formed(
    text: str, data: st.DataObject | None
) -> None:
    chunks = data.draw(chunkings(text)) if data is not None else [text]
    events = fed(chunks)
    assert events == parse_text(text)
    assert_well_formed(events)


@given(st.binary(max_size=600) | ANY_STREAM.map(lambda s: s.encode("utf-8")), st.data())
def test_any_bytes_decoded_as_the_executor_decodes_them_never_raise(raw: bytes, data: st.DataObject) -> None:
    # The executor's own path: socket reads of any size, one incremental UTF-8 decoder, `replace` on bad bytes.
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    parser = InstrumentParser()
    for chunk in data.draw(chunkings(raw)):
        parser.feed(decoder.decode(chunk))
    parser.feed(decoder.decode(b"", final=True))
    parser.close()
    assert parser.events == parse_text(raw.decode("utf-8", "replace"))
    assert_well_formed(parser.events)


@given(st.sampled_from(["1", "2", "0", "-1", "-2", "-3", "-4"]) | _CODE_TEXT)
@example("9" * 5000)  # more digits than int() reads: not a number, so an ERROR
@example("2147483648")  # one past 32 bits: ddmlib cannot read it, so an ERROR
@example("1_0")  # int() reads it, Java does not
@example("\xa01")  # Java's trim() keeps a no-break space: not a number
@example("\u0661")  # ARABIC-INDIC DIGIT ONE: int() reads it
def test_any_status_code_ends_the_test_as_ddmlib_would_or_leaves_it_open(code: str) -> None:
    stream = (
        "INSTRUMENTATION_STATUS: class=C\nINSTRUMENTATION_STATUS: numtests=1\nINSTRUMENTATION_STATUS: test=t\n"
        f"INSTRUMENTATION_STATUS_CODE: {code}\nINSTRUMENTATION_RESULT: stream=done\nINSTRUMENTATION_CODE: -1\n"
    )
    events = parse_text(stream)
    assert_well_formed(events)
    # ddmlib's Integer.parseInt(code.trim()): a sign and decimal digits within 32 bits, nothing else.
    digits = code.strip(_JAVA_TRIM)
    number: int | None = None
    if re.fullmatch(r"[+-]?\d+", digits) and len(digits.lstrip("+-").lstrip("0")) <= 10:
        number = int(digits)
        number = number if -(2**31) <= number < 2**31 else None
    # START leaves the test open until the run ends it; IN_PROGRESS alone starts nothing; a code that is no number
    # is ddmlib's ERROR; an unknown number ends the test without a failure, as ddmlib's listeners record it.
    known = {1: ["incomplete"], 2: [], -1: ["failed"], -2: ["failed"], -3: ["ignored"], -4: ["assumption_failure"]}
    want = known.get(number, ["passed"]) if number is not None else ["failed"]
    assert [e.status for e in events if e.event == "test_ended"] == want


# --- real captures as seeds ----------------------------------------------------------------------------


@given(_CAPTURE, st.data())
def test_a_capture_in_random_chunks_gives_exactly_the_events_of_the_whole(name: str, data: st.DataObject) -> None:
    text = CAPTURES[name]
    assert fed(data.draw(chunkings(text))) == parse_text(text)


@given(_CAPTURE, st.data())
def test_a_truncated_capture_never_reports_a_test_passed_that_had_not_ended(name: str, data: st.DataObject) -> None:
    text = CAPTURES[name]
    cut = data.draw(st.integers(0, len(text)))
    whole = parse_text(text)
    parser = InstrumentParser()
    live = parser.feed(text[:cut])
    # What was reported while the stream flowed is what the whole stream reports up to there.
    assert live == whole[: len(live)]
    tail = parser.close()
    events = live + tail
    assert_well_formed(events)
    # Every test the cut stream finished (passed or otherwise) finished the same way in the whole stream.
    finished = _finished(events)
    assert finished == _finished(whole)[: len(finished)]
    if not text[:cut].rsplit("\n", 1)[-1].startswith("INSTRUMENTATION_STATUS_CODE: "):
        # Unless the cut left a whole status code as the last (unterminated) line, whatever was still open when
        # the output stopped ends incomplete, never passed.
        assert all(e.status == "incomplete" for e in tail if e.event == "test_ended")


@given(_CAPTURE, st.data())
def test_every_truncation_point_of_a_capture_line_by_line(name: str, data: st.DataObject) -> None:
    # Cuts on each line boundary and inside each kind of line, as many as the example allows.
    text = CAPTURES[name]
    ends = [i for i, c in enumerate(text) if c == "\n"]
    at = data.draw(st.sampled_from(ends or [len(text)]))
    back = data.draw(st.integers(0, 40))
    events = parse_text(text[: max(0, at - back)])
    assert_well_formed(events)


@given(_CAPTURE, st.data())
def test_a_mutated_capture_never_raises_and_stays_well_formed(name: str, data: st.DataObject) -> None:
    text = data.draw(line_mutations(CAPTURES[name], PROTOCOL_LINE))
    events = fed(data.draw(chunkings(text)))
    assert events == parse_text(text)
    assert_well_formed(events)


def _bundles(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of each whole status bundle of a capture: its key lines through its code line."""
    out, start = [], None
    for m in re.finditer(r"^.*(?:\n|$)", text, re.MULTILINE):
        if not m.group():
            continue
        if m.group().startswith("INSTRUMENTATION_STATUS: ") and start is None:
            start = m.start()
        elif m.group().startswith("INSTRUMENTATION_STATUS_CODE: ") and start is not None:
            out.append((start, m.end()))
            start = None
    return out


@given(_CAPTURE, st.data())
def test_a_status_bundle_printed_twice_in_a_row_changes_no_event(name: str, data: st.DataObject) -> None:
    # A crash reported twice, a runner or a link that repeats itself: each test still starts, ends and is counted
    # once (the live progress is fed with these events), and keeps what its first report said.
    text = CAPTURES[name]
    bundles = _bundles(text)
    assert bundles, name
    start, end = data.draw(st.sampled_from(bundles))
    twice = text[:end] + text[start:end] + text[end:]
    assert [(e.as_json(), e.stack) for e in parse_text(twice)] == [(e.as_json(), e.stack) for e in parse_text(text)]


@given(ANY_STREAM, st.data())
def test_the_parser_holds_at_most_a_line_and_a_value_per_key_whatever_arrives(text: str, data: st.DataObject) -> None:
    parser = InstrumentParser()
    for chunk in data.draw(chunkings(text)):
        parser.feed(chunk)
        assert parser._partial_len <= LINE_LIMIT + 1
        for bundle in (parser._status, parser._result):
            assert all(size <= VALUE_LIMIT for size in bundle.sizes.values())


# --- regressions: hangs on long output (quadratic work per line and per read) -----------------------------


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def test_a_huge_wrapped_value_parses_in_linear_time() -> None:
    # 200 000 continuation lines (a crash's stream dumping a log) once took minutes: each line re-copied the value.
    lines = "\n".join("x" * 60 for _ in range(200_000))
    stream = f"INSTRUMENTATION_STATUS: class=C\nINSTRUMENTATION_STATUS: stream=\n{lines}\n"
    assert _timed(lambda: parse_text(stream)) < 10


def test_a_long_line_arriving_in_many_reads_parses_in_linear_time() -> None:
    # One 16 MiB line in 4 KiB reads once took minutes: every read re-split the whole line so far.
    parser = InstrumentParser()
    chunk = "y" * 4096

    def feed() -> None:
        for _ in range(4096):
            parser.feed(chunk)
            assert parser._partial_len <= LINE_LIMIT + 1  # the line is cut, not held whole
        parser.feed("\n")
        parser.close()

    assert _timed(feed) < 10
    assert [e.reason for e in parser.events if e.event == "run_failed"] == ["No test results"]


def test_split_at_covers_the_whole_input() -> None:
    assert split_at("abcdef", [4, 2, 2, 99, -1]) == ["ab", "cd", "ef"]
    assert split_at(b"", []) == [b""]


def test_the_shared_data_is_there() -> None:
    # These property tests read real data from ../shared/data: without it they would prove nothing.
    assert CAPTURES, f"{_DIR} is absent or empty: place ../shared/data beside the repository (CI provides it)"
