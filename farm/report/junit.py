"""junit.xml: one `<testsuite>` per run × phone, one `<testcase>` per unit.

The layout follows the Ant JUnit schema CI servers read (fixtures/junit/junit.xsd): totals on
`<testsuites>`; per suite a start time, a host name and properties (run, phone, its serial and adb server,
lane, model, code fingerprint, execution kind); per unit a class name unique per lane and phone (from the
phone's stable name, so the same whatever other phones a run has), and a failure typed by
its failure category, an infrastructure error, or a skip, each with why (`farm.report.why`): the first failing
check (else the first reason) as its message; a failure's or error's text holds every failing check and reason.

Units that needed more than one try, and repeats that disagree, carry Maven Surefire's rerun elements
(fixtures/junit/surefire-testcase-3.0.xsd), which CI servers read to tell flaky from broken:

- a unit that finally passed gets a `<flakyFailure>` for each earlier attempt the agent failed and a
  `<flakyError>` for each earlier attempt that ended in an infrastructure error;
- a unit that finally failed (or ended in an error) gets a `<rerunFailure>` / `<rerunError>` for each earlier
  attempt, beside its `<failure>` (or `<error>`);
- repeats (`--repeats K`) are distinct units, each its own testcase and counted in the totals (they are
  measurements, never merged: Marathon's `count` sharding). A task × phone whose judged repeats disagree (some
  passed, some failed) is flaky: each passing repeat gets a `<flakyFailure>` per failing repeat, whose message
  names it; the failing repeats keep their `<failure>`. Skips and infrastructure errors never make repeats
  disagree (`farm.report.history_grid`'s rule).

Earlier attempts are the unit's records with a lower `attempt` (a resumed run keeps its error records), and the
tries a sweep journaled on the final record (`extra.tries`: the infrastructure failures a sweep retried on
another phone; a try stopped with the controller is no attempt of the unit). A skipped unit gets none. Each
element's `type` is typed as the testcase's own failure or error, its `message` says which attempt or repeat
and why, its `<stackTrace>` (required by Surefire) holds the whole why; at most `RERUNS_LISTED` of each kind per
testcase, the last saying how many more. None of this changes a total: the totals count units, as the headline.
"""

from __future__ import annotations

import io
import json
import re
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import XMLGenerator, escape

from farm.fsutil import create_new_text
from farm.report.aggregate import Aggregation
from farm.report.headline import INITIAL_SQL, headline_text
from farm.report.why import why
from farm.report.writers import _SETUP, _copy_new, _rows
from farm.results.duck import sql_str
from farm.results.store import RECORDS_FILE

SCAN_SUITES = 32
"""Up to this many suites, each suite's units are read by a filtered scan in storage order (no sort)."""
RERUNS_LISTED = 10
"""Surefire rerun elements written per testcase and kind (earlier attempts, disagreeing repeats); the last one
written says how many more there were."""

# Characters XML 1.0 cannot hold at all (not even as references): C0 controls but tab, LF and CR, lone
# surrogates, U+FFFE and U+FFFF. Phone-written text may hold any of them; they are dropped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# `xattr`: a double-quoted attribute value as `xml.sax.saxutils.quoteattr` escapes one (& < > " and tab, LF, CR
# as references), after dropping what XML cannot hold. The units' `<testcase>` elements are assembled in SQL with
# it: at a million units the per-element SAX calls cost 6 µs each, five times the whole report's other writing.
# tests/report/test_junit.py checks it against the library's escaping and the parser, for any text.
_XML_CHARS = r"""
CREATE OR REPLACE TEMP MACRO xml_chars(s) AS
    CASE WHEN regexp_matches(s, '[\x00-\x08\x0b\x0c\x0e-\x1f\x{fffe}\x{ffff}]')
    THEN regexp_replace(s, '[\x00-\x08\x0b\x0c\x0e-\x1f\x{fffe}\x{ffff}]', '', 'g') ELSE s END;
CREATE OR REPLACE TEMP MACRO xattr(s) AS
    CASE WHEN regexp_matches(coalesce(s, ''), '[&<>"\t\n\r\x00-\x08\x0b\x0c\x0e-\x1f\x{fffe}\x{ffff}]')
    THEN replace(replace(replace(replace(replace(replace(replace(xml_chars(coalesce(s, '')),
        '&', '&amp;'), '<', '&lt;'), '>', '&gt;'), '"', '&quot;'), chr(9), '&#9;'), chr(10), '&#10;'),
        chr(13), '&#13;')
    ELSE coalesce(s, '') END;
"""
# A start time without an offset is UTC (as records write it); the XSD wants UTC without a zone.
_START = (r"strftime(timezone('UTC', min(TRY_CAST(CASE WHEN regexp_matches(started_at, '(Z|[+-]\d\d:?\d\d)$')"
          r" THEN started_at ELSE started_at || 'Z' END AS TIMESTAMPTZ))), '%Y-%m-%dT%H:%M:%S')")
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
_LOOPBACK = frozenset({"", "localhost", "127.0.0.1", "::1", "[::1]"})


def _text(value: str) -> str:
    return _NOT_XML.sub("", value)


UnitKey = tuple[str, str, str, str, str, int]
"""A unit: (run, lane, device serial, task, instance, repeat), as `shown` and the records name it."""
_UNIT_COLS = "run, lane, device, task_id, instance, repeat"


@dataclass(frozen=True)
class _Miss:
    """An attempt that did not pass: an earlier try of a unit, or a repeat of its task × phone that failed."""

    error: bool
    """An infrastructure error (Surefire's *Error elements); else the agent failed it (*Failure)."""
    type: str
    """Typed as a testcase's own failure or error."""
    message: str
    """Which attempt or repeat, and the first failing check or reason."""
    trace: str
    """Every failing check and reason, one a line (Surefire's `<stackTrace>`)."""


def _xml(value: str) -> str:
    """Escaped as `xattr` escapes: valid in an attribute and in text alike, and the testcase stays on one line."""
    return escape(_text(value), {'"': "&quot;", "\t": "&#9;", "\n": "&#10;", "\r": "&#13;"})


def _elements(tag: str, misses: list[_Miss]) -> str:
    listed = misses[:RERUNS_LISTED]
    out = []
    for i, miss in enumerate(listed):
        trace = miss.trace or miss.message
        if i == len(listed) - 1 and len(misses) > len(listed):
            trace += f"\n… {len(misses) - len(listed)} more not listed"
        out.append(f'<{tag} type="{_xml(miss.type)}" message="{_xml(miss.message)}">'
                   f"<stackTrace>{_xml(trace)}</stackTrace></{tag}>")
    return "".join(out)


class _Scrub:
    """Serials in reasons replaced by the phone's label, as `shown` replaces them (reports never show serials)."""

    def __init__(self, labels: dict[str, str]) -> None:
        self.pairs = [(s, lab) for s, lab in sorted(labels.items(), key=lambda kv: -len(kv[0])) if s and s != lab]

    def __call__(self, text: str) -> str:
        for serial, label in self.pairs:
            text = text.replace(serial, label)
        return text


def _miss(scrub: _Scrub, what: str, outcome: str, category: str | None, checks: str | None,
          reasons: list[str] | None) -> _Miss:
    """An attempt that did not pass, typed and explained as its testcase would be."""
    w = why(checks, [scrub(r) for r in reasons or []])
    error = outcome == "error"
    kind = (("infrastructure" if category in (None, "", "infrastructure") else f"infrastructure.{category}")
            if error else category or "fail")
    return _Miss(error=error, type=kind, message=f"{what}: {w.message or outcome}", trace=w.body)


def _earlier(agg: Aggregation, scrub: _Scrub, last: dict[UnitKey, int]) -> dict[UnitKey, dict[int, _Miss]]:
    """The earlier attempts that did not pass (by attempt number) of each unit shown at a later attempt: their own
    records (an attempt written twice is its later line), else the tries a sweep journaled on the final record."""
    con = agg.con
    con.execute(f"CREATE OR REPLACE TEMP TABLE junit_retried AS SELECT {_UNIT_COLS}, attempt AS last FROM shown"
                " WHERE attempt > 1")
    rows = con.execute(
        f"SELECT {_UNIT_COLS}, attempt, outcome, failure_category, CAST(failing_checks AS VARCHAR), reasons"
        f" FROM (SELECT r.*, {INITIAL_SQL} AS ok FROM rec r) r JOIN junit_retried s USING ({_UNIT_COLS})"
        " WHERE r.attempt < s.last AND r.outcome <> 'skipped' AND NOT r.ok"
        f" QUALIFY row_number() OVER (PARTITION BY {_UNIT_COLS}, r.attempt ORDER BY r.pos DESC) = 1"
    ).fetchall()
    out: dict[UnitKey, dict[int, _Miss]] = {}
    for run, lane, device, task, instance, repeat, attempt, outcome, category, checks, reasons in rows:
        out.setdefault((run, lane, device, task, instance, repeat), {})[attempt] = _miss(
            scrub, f"attempt {attempt}", outcome, category, checks, reasons)
    for key, tries in _journaled_tries(agg, last).items():
        for number, phone, reason in tries:
            # A try with its own record is that record (which says more). The phone is named as the sweep
            # named it (already its label, never scrubbed again).
            out.setdefault(key, {}).setdefault(number, _Miss(
                error=True, type="infrastructure", message=f"attempt {number} on {phone}: {scrub(reason)}",
                trace=scrub(reason)))
    return out


def _journaled_tries(agg: Aggregation, last: dict[UnitKey, int]) -> dict[UnitKey, list[tuple[int, str, str]]]:
    """(try, phone, reason) of the infrastructure failures a sweep retried, from each retried unit's final
    record (`extra.tries`, which the report columns do not read): only lines naming tries are parsed."""
    out: dict[UnitKey, list[tuple[int, str, str]]] = {}
    for run_dir in agg.run_dirs:
        try:
            handle = (run_dir / RECORDS_FILE).open("rb")
        except OSError:
            continue  # the reports name a missing records file
        with handle:
            for line in handle:
                if b'"tries"' not in line:
                    continue
                try:
                    data = json.loads(line)
                except (ValueError, RecursionError):
                    continue  # a damaged line: the reports skip and name it
                key = _unit_of(data)
                attempt = data.get("attempt") if isinstance(data, dict) else None
                tries = _dig(data, "extra", "tries")
                if key is None or not isinstance(attempt, int) or last.get(key) != attempt or not isinstance(
                        tries, list):
                    continue
                # The later line of an attempt written twice wins, as in the reports.
                out[key] = [
                    (t["try"], str(t.get("phone") or "?"), str(t.get("reason") or "infrastructure error"))
                    for t in tries
                    if isinstance(t, dict) and isinstance(t.get("try"), int) and t["try"] < attempt
                    and t.get("kind") == "infra"
                ]
    return out


def _unit_of(data: object) -> UnitKey | None:
    """The unit a record line names (defaults as the record model has them), or None when it names none."""
    if not isinstance(data, dict):
        return None
    run, lane, device, task = (data.get(k) for k in ("run", "lane", "device", "task_id"))
    instance, repeat = data.get("instance") or "", data.get("repeat", 1)
    if (isinstance(run, str) and isinstance(lane, str) and isinstance(device, str) and isinstance(task, str)
            and isinstance(instance, str) and isinstance(repeat, int)):
        return run, lane, device, task, instance, repeat
    return None


def _disagreeing(agg: Aggregation, scrub: _Scrub) -> dict[UnitKey, list[_Miss]]:
    """Passing repeats of each task × phone whose judged repeats disagree, with the failing repeats."""
    judged = "outcome NOT IN ('error', 'skipped')"
    group = "run, lane, device, task_id, instance"
    rows = agg.con.execute(
        f"SELECT {_UNIT_COLS}, final IS NOT FALSE, failure_category, CAST(failing_checks AS VARCHAR), reasons"
        f" FROM shown WHERE {judged} AND ({group}) IN (SELECT {group} FROM shown WHERE {judged} GROUP BY ALL"
        "  HAVING bool_or(final IS NOT FALSE) AND bool_or(final IS FALSE))"
        f" ORDER BY {_UNIT_COLS}"
    ).fetchall()
    passing: dict[tuple[str, ...], list[UnitKey]] = {}
    failing: dict[tuple[str, ...], list[_Miss]] = {}
    for run, lane, device, task, instance, repeat, passed, category, checks, reasons in rows:
        where = (run, lane, device, task, instance)
        if passed:
            passing.setdefault(where, []).append((run, lane, device, task, instance, repeat))
        else:
            failing.setdefault(where, []).append(_miss(scrub, f"repeat {repeat}", "failed", category, checks,
                                                       reasons))
    return {unit: failing[where] for where, units in passing.items() for unit in units}


def _reruns(agg: Aggregation) -> dict[UnitKey, tuple[str, str]]:
    """Per unit with earlier attempts or disagreeing repeats: the Surefire elements written before its own
    failure or error element, and after it (or alone, for a pass); units with none are left out."""
    scrub = _Scrub(agg.labels)
    shown: dict[UnitKey, tuple[str, bool]] = {}
    last: dict[UnitKey, int] = {}
    for *key, attempt, outcome, passed in agg.con.execute(
            f"SELECT {_UNIT_COLS}, attempt, outcome, final IS NOT FALSE FROM shown WHERE attempt > 1").fetchall():
        unit: UnitKey = tuple(key)
        last[unit], shown[unit] = attempt, (outcome, passed)
    earlier = _earlier(agg, scrub, last) if last else {}
    repeats = _disagreeing(agg, scrub) if agg.data.repeats else {}
    out: dict[UnitKey, tuple[str, str]] = {}
    for unit in sorted(earlier.keys() | repeats.keys()):
        outcome, passed = shown.get(unit, ("succeeded", True))  # a unit only in `repeats` passed
        misses = [m for _, m in sorted(earlier.get(unit, {}).items())]
        failures, errors = [m for m in misses if not m.error], [m for m in misses if m.error]
        if outcome == "skipped":
            continue
        # Surefire's order within a testcase: failure, rerunFailure, flakyFailure, skipped, error, rerunError,
        # flakyError.
        if outcome == "error":
            before, after = _elements("rerunFailure", failures), _elements("rerunError", errors)
        elif not passed:
            before, after = "", _elements("rerunFailure", failures) + _elements("rerunError", errors)
        else:
            before, after = "", _elements("flakyFailure", failures + repeats.get(unit, [])) + _elements(
                "flakyError", errors)
        if before or after:
            out[unit] = (before, after)
    return out


@dataclass(frozen=True)
class _Suite:
    """One run × device × lane: its counts, time, earliest start (UTC, no zone) and execution kinds."""

    run: str
    serial: str
    lane: str
    tests: int
    skipped: int
    errors: int
    failures: int
    seconds: float
    timestamp: str | None
    execution: str
    first: int
    """`pos` of the suite's first unit in report order (its start tag rides on that unit's line)."""
    last: int
    """`pos` of its last unit (its end tag rides on that line)."""


def _suites(agg: Aggregation) -> list[_Suite]:
    rows = agg.con.execute(
        "SELECT run, device, lane, count(*), count(*) FILTER (WHERE outcome = 'skipped'),"
        " count(*) FILTER (WHERE outcome = 'error'),"
        " count(*) FILTER (WHERE outcome NOT IN ('skipped', 'error') AND NOT final),"
        f" coalesce(fsum(total_ms), 0) / 1000.0, {_START}, string_agg(DISTINCT execution, ',' ORDER BY execution),"
        " min(pos), max(pos) FROM shown GROUP BY run, device, lane ORDER BY run, device, lane"
    ).fetchall()
    return [
        _Suite(run=run, serial=serial, lane=lane, tests=tests, skipped=skipped, errors=errors, failures=failures,
               seconds=seconds, execution=execution or "", first=first, last=last,
               # A year the schema's dateTime cannot hold (0, or beyond 9999) is no known start.
               timestamp=stamp if stamp and _TIMESTAMP.fullmatch(stamp) and stamp[:4] != "0000" else None)
        for run, serial, lane, tests, skipped, errors, failures, seconds, stamp, execution, first, last in rows
    ]


def _dig(value: object, *keys: str) -> object:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


class _Manifests:
    """What the runs' manifests say about suites: adb hosts, phone and agent models, code fingerprints."""

    def __init__(self, run_dirs: list[Path]) -> None:
        self.by_run: dict[str, dict[str, object]] = {}
        for run_dir in run_dirs:
            try:
                data = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
            except (OSError, ValueError, RecursionError):
                continue  # the runs table reports a missing or broken manifest
            if isinstance(data, dict):
                run = data.get("run_id")
                self.by_run[run if isinstance(run, str) else run_dir.name] = data

    def _phone(self, run: str, serial: str) -> dict[str, object]:
        phones = _dig(self.by_run.get(run), "phones")
        return next((p for p in phones if isinstance(p, dict) and p.get("serial") == serial), {}) if isinstance(
            phones, list) else {}

    def _lane_detail(self, run: str, lane: str) -> object:
        lanes = _dig(self.by_run.get(run), "lanes")
        return next((_dig(e, "detail") for e in lanes if _dig(e, "lane") == lane), None) if isinstance(
            lanes, list) else None

    def hostname(self, suite: _Suite) -> str:
        """The phone's adb host; the controller (which the manifest does not name) is `localhost`."""
        server = self._phone(suite.run, suite.serial).get("adb_server")
        host = _text(server.rpartition(":")[0] if isinstance(server, str) else "").strip()
        return "localhost" if host in _LOOPBACK or host.startswith("127.") else "".join(host.split())

    def properties(self, suite: _Suite, label: str) -> list[tuple[str, str]]:
        """(name, value) pairs of the suite's `<properties>`; unknown ones are left out."""
        data = self.by_run.get(suite.run)
        detail = self._lane_detail(suite.run, suite.lane)
        android = suite.lane == "android"
        phone = self._phone(suite.run, suite.serial) if android else {}
        facts: list[tuple[str, object]] = [
            ("run", suite.run), ("phone" if android else "device", label),
            # Where the phone is: its serial and the adb server that reached it (the name says which phone).
            ("serial", suite.serial if android else None), ("adb_server", phone.get("adb_server")),
            ("phone_model", phone.get("model")),
            ("lane", suite.lane),
            # The agent's model where the run recorded the one it used (a flag, the web lane's choice).
            ("model", _dig(detail, "model") or _dig(detail, "request", "host", "model")),
            *((f"code.{key}", _dig(data, "code", key)) for key in ("git_commit", "diff_sha256", "package_version")),
            ("execution", suite.execution),
        ]
        return [(name, _text(value)) for name, value in facts if isinstance(value, str) and value]


def _case_line(prefix: str) -> str:
    """SQL over `r` (the report rows) for a unit's whole `<testcase>` element, indented, on one line. A failure
    is typed by its failure category, an infrastructure error as `infrastructure[.category]`; a skip has no type."""
    message = "xattr(coalesce(nullif(r.why_message, ''), nullif(r.reason, ''), r.outcome))"
    # The failure's (or error's) text: every failing check and every reason, one a line (`farm.report.why`).
    body = "CASE WHEN r.why_body = '' THEN '/>' ELSE concat('>', xattr(r.why_body), '</', kind, '>') END"
    # Surefire's rerun elements (`_reruns`, already escaped), before and after the unit's own element.
    before, after = "coalesce(r.reruns_before, '')", "coalesce(r.reruns_after, '')"
    return f"""concat('    <testcase classname="',
  xattr({prefix} || '.' || coalesce(nullif(r.category, ''), 'task')), '" name="', xattr(r.unit), '"',
  CASE WHEN r.seconds = '' THEN '' ELSE concat(' time="', r.seconds, '"') END,
  CASE
    WHEN r.outcome = 'skipped' THEN concat('><skipped message="', {message}, '"/></testcase>')
    WHEN r.outcome = 'error' THEN concat('>', {before}, '<error type="', CASE WHEN coalesce(r.failure_category, '')
      IN ('', 'infrastructure') THEN 'infrastructure' ELSE 'infrastructure.' || xattr(r.failure_category) END,
      '" message="', {message}, '"', {body.replace("kind", "'error'")}, {after}, '</testcase>')
    WHEN NOT r.final_bool THEN concat('><failure type="', xattr(coalesce(nullif(r.failure_category, ''), 'fail')),
      '" message="', {message}, '"', {body.replace("kind", "'failure'")}, {after}, '</testcase>')
    WHEN r.reruns_after IS NOT NULL THEN concat('>', r.reruns_after, '</testcase>')
    ELSE '/>' END)"""


def _units(agg: Aggregation, reruns: bool) -> str:
    """The report rows (`_rows`) with each unit's Surefire rerun elements (NULL when it has none): joined from
    `junit_reruns` when some unit has them; else NULL columns, so a filtered scan keeps storage order."""
    if not reruns:
        return f"SELECT *, NULL::VARCHAR AS reruns_before, NULL::VARCHAR AS reruns_after FROM ({_rows(agg)})"
    return (f"SELECT u.*, x.before AS reruns_before, x.after AS reruns_after FROM ({_rows(agg)}) u"
            " LEFT JOIN junit_reruns x ON x.run = u.run AND x.lane = u.lane AND x.serial = u.serial"
            " AND x.task_id = u.task_id AND x.instance = u.instance AND x.repeat = u.repeat")


@dataclass
class _Pieces:
    """The document's and each suite's start and end, written by the SAX writer (the units' lines go between)."""

    head: str
    tail: str
    suite_heads: list[str]
    suite_feet: list[str]
    prefixes: list[str]
    """Class names of each suite's units start with this (lane and phone), so they are unique per both."""


def _pieces(agg: Aggregation, suites: list[_Suite]) -> _Pieces:
    facts = _Manifests(agg.run_dirs)
    buffer = io.StringIO()
    # Empty elements written whole (`<a></a>`): no start tag is left pending between two pieces.
    xml = XMLGenerator(buffer, encoding="utf-8", short_empty_elements=False)
    # Any mapping does for the attributes (the standard library iterates `.items()`); typeshed asks for the
    # AttributesImpl wrapper.
    start: Callable[[str, Mapping[str, str]], None] = xml.startElement  # type: ignore[assignment]

    def take() -> str:
        text = buffer.getvalue().strip("\n")
        buffer.seek(0)
        buffer.truncate()
        return text

    def element(indent: str, name: str, attrs: dict[str, str]) -> None:
        xml.ignorableWhitespace(indent)
        start(name, attrs)

    def end(indent: str, name: str) -> None:
        xml.ignorableWhitespace(indent)
        xml.endElement(name)

    o = agg.data.overall
    xml.startDocument()
    element("", "testsuites", {
        "name": _text(f"{', '.join(agg.data.runs)}: {headline_text(o)}"), "tests": str(o.planned),
        "failures": str(o.attempted - o.errors - o.passed), "errors": str(o.errors), "skipped": str(o.skipped),
        "time": f"{sum(s.seconds for s in suites):.3f}",
    })
    pieces = _Pieces(take(), "", [], [], [])
    for i, suite in enumerate(suites):
        label = _text(agg.labels.get(suite.serial, suite.serial))
        # A phone's class names come from its stable name alone, so they stay the same when other phones join or
        # leave; its dots (an address in a serial) would split the class path CI servers show.
        prefix = f"{suite.lane}.{label.replace('.', '_') if suite.lane == 'android' else label}"
        attrs = {
            "name": f"{_text(suite.run)} {label}", "tests": str(suite.tests), "failures": str(suite.failures),
            "errors": str(suite.errors), "skipped": str(suite.skipped), "time": f"{suite.seconds:.3f}",
        }
        if suite.timestamp is not None:
            attrs["timestamp"] = suite.timestamp
        attrs |= {"hostname": facts.hostname(suite), "id": str(i), "package": prefix}
        element("\n  ", "testsuite", attrs)
        element("\n    ", "properties", {})
        for name, value in facts.properties(suite, label):
            element("\n      ", "property", {"name": name, "value": value})
            xml.endElement("property")
        end("\n    ", "properties")
        pieces.suite_heads.append(take())
        # Ant writes both streams; the schema CI servers validate against requires them.
        for stream in ("system-out", "system-err"):
            element("\n    ", stream, {})
            xml.endElement(stream)
        end("\n  ", "testsuite")
        pieces.suite_feet.append(take())
        pieces.prefixes.append(prefix)
    end("\n", "testsuites")
    xml.endDocument()
    pieces.tail = take()
    return pieces


def _scanned(agg: Aggregation, suites: list[_Suite], p: _Pieces) -> str:
    """Rows are stored in (run, task, serial) order, so each suite's filtered scan is in report order and UNION ALL
    keeps the suites in sequence: the file is written without a sort. A suite's start and end ride on its first
    and last unit's line."""
    parts = []
    for i, s in enumerate(suites):
        before = (p.head + "\n" if i == 0 else "") + p.suite_heads[i] + "\n"
        after = "\n" + p.suite_feet[i] + ("\n" + p.tail if i == len(suites) - 1 else "")
        where = f"r.run = {sql_str(s.run)} AND r.serial = {sql_str(s.serial)} AND r.lane = {sql_str(s.lane)}"
        parts.append(
            f"SELECT concat(CASE WHEN r.pos = {int(s.first)} THEN {sql_str(before)} ELSE '' END,"
            f" {_case_line(sql_str(p.prefixes[i]))},"
            f" CASE WHEN r.pos = {int(s.last)} THEN {sql_str(after)} ELSE '' END) AS line"
            f" FROM ({_units(agg, False)}) r WHERE {where}"
        )
    return " UNION ALL ".join(parts)


def _sorted(agg: Aggregation, suites: list[_Suite], p: _Pieces, reruns: bool = False) -> str:
    """Every unit's line, sorted by suite, between its suite's start and end."""
    agg.con.execute("CREATE OR REPLACE TEMP TABLE junit_suites (i INTEGER, run VARCHAR, serial VARCHAR, lane VARCHAR,"
                    " prefix VARCHAR, head VARCHAR, foot VARCHAR)")
    agg.con.executemany("INSERT INTO junit_suites VALUES (?, ?, ?, ?, ?, ?, ?)", [
        (i, s.run, s.serial, s.lane, p.prefixes[i], p.suite_heads[i], p.suite_feet[i]) for i, s in enumerate(suites)
    ])
    # Within a suite, `pos` is unit order when the rows come from one sorted source.
    within = "r.pos" if agg.ordered else "struct_pack(t := r.task_id, i := r.instance, r := r.repeat, l := r.lane)"
    return f"""
        SELECT line FROM (
          SELECT 0 AS zone, 0 AS i, 0 AS part, NULL AS k, {sql_str(p.head)} AS line
          UNION ALL SELECT 1, i, 0, NULL, head FROM junit_suites
          UNION ALL SELECT 1, j.i, 1, {within}, {_case_line("j.prefix")}
            FROM ({_units(agg, reruns)}) r JOIN junit_suites j USING (run, serial, lane)
          UNION ALL SELECT 1, i, 2, NULL, foot FROM junit_suites
          UNION ALL SELECT 2, 0, 0, NULL, {sql_str(p.tail)}
        ) ORDER BY zone, i, part, k
    """


def write_junit(agg: Aggregation, path: Path) -> None:
    """junit.xml: one testsuite per run × phone, one testcase per unit; failures typed by their failure category,
    infrastructure errors and skips with their reasons.

    The root carries the headline: its name in words, and tests (planned), skipped, errors and failures
    (attempted − errors − passed) as attributes. The document and suite elements are written by the standard
    library's SAX writer; the units' lines, escaped by `xattr`, are written by DuckDB straight to the file.
    Units retried or repeated with differing verdicts carry Surefire's rerun elements (module docstring).
    """
    agg.con.execute(_SETUP + _XML_CHARS)
    suites = _suites(agg)
    p = _pieces(agg, suites)
    if not suites:
        create_new_text(path, f"{p.head}\n{p.tail}\n", what="report")
        return
    reruns = _reruns(agg)
    if reruns:
        agg.con.execute("CREATE OR REPLACE TEMP TABLE junit_reruns (run VARCHAR, lane VARCHAR, serial VARCHAR,"
                        " task_id VARCHAR, instance VARCHAR, repeat BIGINT, before VARCHAR, after VARCHAR)")
        agg.con.executemany("INSERT INTO junit_reruns VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [
            (*unit, before or None, after or None) for unit, (before, after) in reruns.items()])
    # A join would not keep storage order: units with rerun elements take the sorted path.
    select = (_scanned(agg, suites, p) if agg.scan_ordered and len(suites) <= SCAN_SUITES and not reruns
              else _sorted(agg, suites, p, bool(reruns)))
    _copy_new(agg, select, path, "FORMAT csv, HEADER false, QUOTE '', ESCAPE '', DELIMITER '\\x01'")


def render_junit(agg: Aggregation) -> str:
    """junit.xml as text (see `write_junit`)."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "junit.xml"
        write_junit(agg, path)
        return path.read_text(encoding="utf-8")
