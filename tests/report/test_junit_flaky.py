"""junit.xml: Surefire's flakyFailure / flakyError / rerunFailure / rerunError for units retried or repeated with
differing verdicts, valid against Surefire's testcase schema, the rest still the Ant schema, totals unchanged."""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from farm.report import junit
from farm.report.aggregate import aggregate
from farm.report.junit import render_junit
from farm.results.record import Record, RunMetrics
from tests.helpers.records import record, write_run

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "junit"
PHONES = [("SER-A", "Pixel 8"), ("SER-B", "Pixel 8")]
RERUN_TAGS = ("flakyFailure", "flakyError", "rerunFailure", "rerunError")
HOSTILE = "bad \x01\x07 byte \ufffe ]]> <x> & \"q\" 'a'\n中文失败原因"


@cache
def _schema(name: str) -> Any:
    import xmlschema

    return xmlschema.XMLSchema(str(FIXTURES / name))


def _rec(task: str, **kw: Any) -> Record:
    kw.setdefault("run", "r")
    kw.setdefault("device", "SER-A")
    # Surefire's schema requires a testcase's time: every unit here has a duration.
    kw.setdefault("metrics", RunMetrics(total_ms=1000))
    return record(task, **kw)


def _checked(run_dir: Path) -> ET.Element:
    """junit.xml of the run: every testcase valid against Surefire's testcase schema, and the document, less the
    rerun elements, valid against the Ant schema as before."""
    text = render_junit(aggregate([run_dir]))
    root = ET.fromstring(text)
    surefire = _schema("surefire-testcase-3.0.xsd")
    for case in root.iter("testcase"):
        errors = [str(e.reason) for e in surefire.iter_errors(ET.tostring(case, encoding="unicode"))]
        assert errors == [], (ET.tostring(case, encoding="unicode"), errors)
    ant = copy.deepcopy(root)
    for case in ant.iter("testcase"):
        for child in [c for c in case if c.tag in RERUN_TAGS]:
            case.remove(child)
    assert [str(e.reason) for e in _schema("junit.xsd").iter_errors(ET.tostring(ant, encoding="unicode"))] == []
    return root


def _cases(root: ET.Element) -> dict[str, list[tuple[str, str | None, str | None, str | None]]]:
    """Unit name → its children as (tag, type, message, stackTrace)."""
    return {case.get("name") or "": [(c.tag, c.get("type"), c.get("message"), c.findtext("stackTrace"))
                                     for c in case] for case in root.iter("testcase")}


def test_retries_become_flaky_or_rerun_elements_by_the_units_final_verdict(tmp_path: Path) -> None:
    recs = [
        # error, then passed: flaky (an infrastructure error)
        _rec("e-then-pass", outcome="error", passed=False, reasons=["adb: device SER-A offline"], attempt=1),
        _rec("e-then-pass", attempt=2),
        # failed (a pulled run's own retry), then passed: flaky (a failure, typed by its category)
        _rec("f-then-pass", passed=False, failure_category="route", reasons=["wrong screen"], attempt=1),
        _rec("f-then-pass", attempt=2),
        # failed every time: the failure, then one rerunFailure per earlier attempt
        _rec("always-fails", passed=False, failure_category="route", reasons=["first"], attempt=1),
        _rec("always-fails", passed=False, failure_category="perception", reasons=["second"], attempt=2),
        _rec("always-fails", passed=False, failure_category="route", reasons=["third"], attempt=3),
        # a failure, then an error: the rerunFailure goes before the error (Surefire's order), the rerunError after
        _rec("ends-in-error", passed=False, failure_category="route", reasons=["wrong app"], attempt=1),
        _rec("ends-in-error", outcome="error", passed=False, reasons=["adb gone"], attempt=2),
        _rec("ends-in-error", outcome="error", passed=False, reasons=["adb gone again"], attempt=3),
        _rec("steady", passed=True),
    ]
    root = _checked(write_run(tmp_path, "r", recs, PHONES))
    cases = _cases(root)
    assert cases["e-then-pass"] == [
        ("flakyError", "infrastructure", "attempt 1: adb: device Pixel 8 · SER-A offline",
         "adb: device Pixel 8 · SER-A offline")]
    assert cases["f-then-pass"] == [("flakyFailure", "route", "attempt 1: wrong screen", "wrong screen")]
    assert cases["always-fails"] == [
        ("failure", "route", "third", None),
        ("rerunFailure", "route", "attempt 1: first", "first"),
        ("rerunFailure", "perception", "attempt 2: second", "second")]
    assert cases["ends-in-error"] == [
        ("rerunFailure", "route", "attempt 1: wrong app", "wrong app"),
        ("error", "infrastructure", "adb gone again", None),
        ("rerunError", "infrastructure", "attempt 2: adb gone", "adb gone")]
    assert cases["steady"] == []
    # Totals count units, as the headline: 5 units, 1 failed, 1 error; retries add nothing.
    assert {k: root.get(k) for k in ("tests", "failures", "errors", "skipped")} == {
        "tests": "5", "failures": "1", "errors": "1", "skipped": "0"}
    assert root.find("testsuite").get("tests") == "5"  # type: ignore[union-attr]


def test_the_tries_a_sweep_journaled_on_the_final_record_are_flaky_errors(tmp_path: Path) -> None:
    tries = [{"try": 1, "phone": "Pixel 8 · SER-B", "kind": "infra", "reason": "instrumentation crashed"},
             {"try": 2, "phone": "Pixel 8 · SER-B", "kind": "interrupted", "reason": "sweep stopped"},
             {"try": 3, "phone": "Pixel 8 · SER-A", "kind": "infra", "reason": "adb: closed"},
             {"try": 4, "phone": "Pixel 8 · SER-A", "kind": "ran", "reason": ""}]
    recs = [
        _rec("moved", attempt=4, extra={"unit": "u1", "tries": tries}),
        _rec("moved-and-failed", attempt=2, passed=False, failure_category="route", reasons=["no"],
             extra={"unit": "u2", "tries": tries[:1] + [{"try": 2, "phone": "x", "kind": "ran", "reason": ""}]}),
    ]
    root = _checked(write_run(tmp_path, "r", recs, PHONES))
    cases = _cases(root)
    # A try stopped with the controller was no attempt of the unit; the try that ran is the testcase itself.
    assert cases["moved"] == [
        ("flakyError", "infrastructure", "attempt 1 on Pixel 8 · SER-B: instrumentation crashed",
         "instrumentation crashed"),
        ("flakyError", "infrastructure", "attempt 3 on Pixel 8 · SER-A: adb: closed", "adb: closed")]
    assert cases["moved-and-failed"] == [
        ("failure", "route", "no", None),
        ("rerunError", "infrastructure", "attempt 1 on Pixel 8 · SER-B: instrumentation crashed",
         "instrumentation crashed")]


def test_an_earlier_attempts_own_record_wins_over_its_journaled_try(tmp_path: Path) -> None:
    recs = [
        _rec("resumed", outcome="error", passed=False, reasons=["never ran: phone quarantined"], attempt=1),
        _rec("resumed", attempt=2, extra={"unit": "u", "tries": [
            {"try": 1, "phone": "P", "kind": "infra", "reason": "short"},
            {"try": 2, "phone": "P", "kind": "ran", "reason": ""}]}),
    ]
    cases = _cases(_checked(write_run(tmp_path, "r", recs, PHONES)))
    assert cases["resumed"] == [("flakyError", "infrastructure", "attempt 1: never ran: phone quarantined",
                                 "never ran: phone quarantined")]


def test_repeats_that_disagree_make_each_passing_repeat_flaky(tmp_path: Path) -> None:
    recs = [
        _rec("t", repeat=1),
        _rec("t", repeat=2, passed=False, failure_category="route", reasons=["wrong screen"]),
        _rec("t", repeat=3),
        # An infrastructure error is never judged: it makes no repeat flaky.
        _rec("u", repeat=1),
        _rec("u", repeat=2, outcome="error", passed=False, reasons=["adb gone"]),
        # The other phone's repeats agree.
        _rec("t", device="SER-B", repeat=1, passed=False, reasons=["x"]),
        _rec("t", device="SER-B", repeat=2, passed=False, reasons=["y"]),
    ]
    root = _checked(write_run(tmp_path, "r", recs, PHONES))
    by_suite = {s.get("name"): _cases(s) for s in root.findall("testsuite")}
    a, b = by_suite["r Pixel 8 · SER-A"], by_suite["r Pixel 8 · SER-B"]
    flaky = [("flakyFailure", "route", "repeat 2: wrong screen", "wrong screen")]
    assert a["t [repeat 1]"] == a["t [repeat 3]"] == flaky
    assert a["t [repeat 2]"] == [("failure", "route", "wrong screen", None)]
    assert a["u [repeat 1]"] == [] and [c[0] for c in a["u [repeat 2]"]] == ["error"]
    assert all(tag == "failure" for children in b.values() for tag, *_ in children)
    # Repeats are measurements: every one is a testcase in the totals.
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("7", "3", "1")


def test_reruns_are_bounded_and_say_how_many_more(tmp_path: Path) -> None:
    n = junit.RERUNS_LISTED + 5
    recs = [_rec("t", repeat=1)] + [
        _rec("t", repeat=i, passed=False, reasons=[f"miss {i}"]) for i in range(2, n + 2)]
    cases = _cases(_checked(write_run(tmp_path, "r", recs, PHONES)))
    flaky = cases["t [repeat 1]"]
    assert len(flaky) == junit.RERUNS_LISTED
    assert flaky[-1][3] == f"miss {junit.RERUNS_LISTED + 1}\n… 5 more not listed"


def test_hostile_reasons_stay_valid_in_rerun_elements(tmp_path: Path) -> None:
    recs = [_rec("h", passed=False, reasons=[HOSTILE], failure_category="a\x00<b>&\"", attempt=1),
            _rec("h", attempt=2)]
    cases = _cases(_checked(write_run(tmp_path, "r", recs, PHONES)))
    [(tag, kind, message, trace)] = cases["h"]
    clean = "bad  byte  ]]> <x> & \"q\" 'a' 中文失败原因"
    assert (tag, kind, message, trace) == ("flakyFailure", "a<b>&\"", f"attempt 1: {clean}", clean)


def test_the_surefire_schema_refuses_what_surefire_would(tmp_path: Path) -> None:
    good = ('<testcase name="t" time="1.000"><failure type="route" message="m"/>'
            '<rerunFailure type="route" message="m"><stackTrace>s</stackTrace></rerunFailure></testcase>')
    surefire = _schema("surefire-testcase-3.0.xsd")
    assert list(surefire.iter_errors(good)) == []
    broken = {
        "rerun before its failure": '<testcase name="t" time="1"><rerunFailure type="x"><stackTrace>s</stackTrace>'
                                    '</rerunFailure><failure type="route"/></testcase>',
        "no stackTrace": '<testcase name="t" time="1"><flakyFailure type="x" message="m"/></testcase>',
        "no type": '<testcase name="t" time="1"><flakyError message="m"><stackTrace>s</stackTrace></flakyError>'
                   '</testcase>',
        "flakyError before flakyFailure": '<testcase name="t" time="1"><flakyError type="x"><stackTrace>s'
                                          '</stackTrace></flakyError><flakyFailure type="x"><stackTrace>s'
                                          '</stackTrace></flakyFailure></testcase>',
    }
    for what, text in broken.items():
        assert list(surefire.iter_errors(text)), what


@pytest.mark.parametrize("scan_suites", [0, 32])
def test_a_run_without_retries_is_written_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    scan_suites: int) -> None:
    monkeypatch.setattr(junit, "SCAN_SUITES", scan_suites)
    recs = [_rec(f"t{i}", device=PHONES[i % 2][0], passed=i % 3 > 0) for i in range(8)]
    text = render_junit(aggregate([write_run(tmp_path, "r", recs, PHONES)]))
    assert not any(tag in text for tag in RERUN_TAGS)
    _checked(tmp_path / "r")
