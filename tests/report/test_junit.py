"""junit.xml: valid against the Ant/Jenkins JUnit schema for every kind of run, with totals, per-suite start time,
host and properties, class names per lane and phone, typed failures; streamed, never overwriting."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from farm import manifest as mf
from farm.errors import FarmError
from farm.report import junit
from farm.report.aggregate import aggregate
from farm.report.headline import headline_text
from farm.report.junit import render_junit, write_junit
from farm.report.why import ITEM_CHARS, MESSAGE_CHARS
from farm.results.record import RunMetrics
from tests.helpers.records import record, write_run

XSD = Path(__file__).resolve().parents[2] / "fixtures" / "junit" / "junit.xsd"
PHONES = [("SER-A", "Pixel 8"), ("SER-B", "Pixel 8")]
HOSTILE = "bad \x01\x07\x1b byte \ufffe\uffff ]]> <x> & \"q\" 'a' 中文失败原因"


@cache
def _schema() -> Any:
    import xmlschema

    return xmlschema.XMLSchema(str(XSD))


def _errors(text: str, tmp_path: Path) -> list[str]:
    path = tmp_path / "checked.xml"
    path.write_text(text, encoding="utf-8")
    return [str(e.reason) for e in _schema().iter_errors(str(path))]


def _junit(run_dirs: list[Path]) -> tuple[str, ET.Element]:
    text = render_junit(aggregate(run_dirs))
    return text, ET.fromstring(text)


def _normal_run(tmp_path: Path, run: str = "r1") -> Path:
    recs = [
        record("a", run=run, device="SER-A", metrics=RunMetrics(total_ms=1500), started_at="2026-12-01T03:00:05Z"),
        record("b", run=run, device="SER-A", passed=False, failure_category="route", reasons=["wrong screen"],
               started_at="2026-12-01T11:00:00+08:00"),
        record("c", run=run, device="SER-A", passed=False, outcome="error", reasons=["adb: device offline"],
               failure_category="infrastructure", category="write"),
        record("d", run=run, device="SER-B", passed=False, outcome="skipped", reasons=["no calculator app"]),
        record("e", run=run, device="SER-B", passed=False, outcome="takeover", takeover_kind="login"),
        record("h", run=run, device="SER-B", partition="holdout"),
    ]
    return write_run(tmp_path, run, recs, PHONES)


def _suite(root: ET.Element, name: str) -> ET.Element:
    found = [s for s in root.findall("testsuite") if s.get("name") == name]
    assert len(found) == 1, [s.get("name") for s in root.findall("testsuite")]
    return found[0]


def _properties(suite: ET.Element) -> dict[str, str]:
    return {p.get("name") or "": p.get("value") or "" for p in suite.iter("property")}


def test_a_run_is_valid_junit_with_the_headline_totals(tmp_path: Path) -> None:
    run_dir = _normal_run(tmp_path)
    agg = aggregate([run_dir])
    text = render_junit(agg)
    assert _errors(text, tmp_path) == []
    root = ET.fromstring(text)
    o = agg.data.overall
    assert {k: root.get(k) for k in ("tests", "failures", "errors", "skipped", "time")} == {
        "tests": "5", "failures": "2", "errors": "1", "skipped": "1", "time": "1.500"}
    assert (o.planned, o.skipped, o.errors, o.attempted - o.errors - o.passed) == (5, 1, 1, 2)
    assert root.get("name") == f"r1: {headline_text(o)}"
    assert [(s.get("name"), s.get("id"), s.get("tests")) for s in root.findall("testsuite")] == [
        ("r1 Pixel 8 · SER-A", "0", "3"), ("r1 Pixel 8 · SER-B", "1", "2")]


def test_a_comparison_has_one_valid_suite_per_run_and_phone(tmp_path: Path) -> None:
    text, root = _junit([_normal_run(tmp_path, "ra"), _normal_run(tmp_path, "rb")])
    assert _errors(text, tmp_path) == []
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [
        "ra Pixel 8 · SER-A", "ra Pixel 8 · SER-B", "rb Pixel 8 · SER-A", "rb Pixel 8 · SER-B"]
    assert [_properties(s)["run"] for s in suites] == ["ra", "ra", "rb", "rb"]
    assert [s.get("id") for s in suites] == ["0", "1", "2", "3"]
    assert root.get("tests") == "10" and (root.get("name") or "").startswith("ra, rb: ")


def test_an_empty_run_is_valid_junit_with_zero_totals(tmp_path: Path) -> None:
    text, root = _junit([write_run(tmp_path, "empty", [], PHONES)])
    assert _errors(text, tmp_path) == []
    assert root.findall("testsuite") == []
    assert {k: root.get(k) for k in ("tests", "failures", "errors", "skipped", "time")} == {
        "tests": "0", "failures": "0", "errors": "0", "skipped": "0", "time": "0.000"}


def test_hostile_text_stays_valid_and_reads_back_cleaned_and_shortened(tmp_path: Path) -> None:
    long_reason = "长" * 5000 + "x" * 5000  # 10 000 characters
    recs = [
        record("t]]>\x02\"'中", run="r", device="SER-A", passed=False, reasons=[HOSTILE],
               failure_category="route\x00]]>", category="read/\x0bsystem"),
        record("long", run="r", device="SER-A", passed=False, outcome="error", reasons=[long_reason]),
        record("skip", run="r", device="SER-A", passed=False, outcome="skipped", reasons=["\x1f" + HOSTILE]),
    ]
    run_dir = write_run(tmp_path, "r", recs, [("SER-A", 'Pixel\x01 "8" <&> ]]>')])
    text, root = _junit([run_dir])
    assert _errors(text, tmp_path) == []
    clean = "bad  byte  ]]> <x> & \"q\" 'a' 中文失败原因"
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert set(cases) == {"t]]>\"'中", "long", "skip"}
    bad = cases["t]]>\"'中"]
    assert bad.get("classname") == 'android.Pixel "8" <&> ]]> · SER-A.read/system'
    failure = bad.find("failure")
    assert failure is not None and failure.get("message") == clean and failure.get("type") == "route]]>"
    error = cases["long"].find("error")
    # Cut to a bounded message that says it was cut; the text holds it (also bounded), never the whole reason.
    assert error is not None and error.get("message") == long_reason[:MESSAGE_CHARS - 1] + "…"
    assert error.text == long_reason[:ITEM_CHARS - 1] + "…"
    skipped = cases["skip"].find("skipped")
    assert skipped is not None and skipped.get("message") == clean
    assert len(text.encode("utf-8")) < 5000  # the 10 kB reason is not copied whole


def test_the_schema_refuses_what_a_ci_server_would_refuse(tmp_path: Path) -> None:
    good = render_junit(aggregate([_normal_run(tmp_path)]))
    assert _errors(good, tmp_path) == []
    broken = {
        "timestamp with a zone": good.replace('timestamp="2026-12-01T03:00:00"', 'timestamp="2026-12-01T03:00:00Z"'),
        "no hostname": good.replace(' hostname="localhost"', "", 1),
        "failure without a type": good.replace('<failure type="route" ', "<failure "),
        "count that is no number": good.replace('tests="3"', 'tests="three"', 1),
        "no properties": good.replace("<properties>", "<nothing>", 1).replace("</properties>", "</nothing>", 1),
    }
    for what, text in broken.items():
        assert text != good, what
        assert _errors(text, tmp_path), what


def test_a_suite_carries_start_time_host_and_properties_with_the_serial_and_adb_server(tmp_path: Path) -> None:
    run_dir = _normal_run(tmp_path)

    def change(m: mf.Manifest) -> None:
        m.phones[0].adb_server = "farm-host-2.lan:5037"
        m.phones[1].adb_server = "127.0.0.1:5037"
        m.code = mf.CodeFingerprint(git_commit="a" * 40, diff_sha256="b" * 64, package_version="9.9")
        m.lanes = [mf.LaneEntry(lane="android", detail={"executor": "host", "request": {"host": {"model": "m\x00-1"}}})]

    mf.update(run_dir, change)
    text, root = _junit([run_dir])
    assert _errors(text, tmp_path) == []
    first, second = _suite(root, "r1 Pixel 8 · SER-A"), _suite(root, "r1 Pixel 8 · SER-B")
    # 11:00+08:00 is 03:00Z, earlier than 03:00:05Z; records without a start do not count.
    assert (first.get("timestamp"), first.get("hostname")) == ("2026-12-01T03:00:00", "farm-host-2.lan")
    assert (second.get("timestamp"), second.get("hostname")) == (None, "localhost")
    assert _properties(first) == {
        "run": "r1", "phone": "Pixel 8 · SER-A", "serial": "SER-A", "adb_server": "farm-host-2.lan:5037",
        "phone_model": "Pixel 8", "lane": "android", "model": "m-1",
        "code.git_commit": "a" * 40, "code.diff_sha256": "b" * 64, "code.package_version": "9.9",
        "execution": "simulated",
    }
    assert (_properties(second)["serial"], _properties(second)["adb_server"]) == ("SER-B", "127.0.0.1:5037")


def test_class_names_are_unique_per_lane_and_phone(tmp_path: Path) -> None:
    recs = [record("t", run="r", device=s) for s, _ in PHONES]
    recs.append(record("t", run="r", lane="web", device="playwright", category="web"))
    text, root = _junit([write_run(tmp_path, "r", recs, PHONES)])
    assert _errors(text, tmp_path) == []
    assert sorted(c.get("classname") or "" for c in root.iter("testcase")) == [
        "android.Pixel 8 · SER-A.read/system", "android.Pixel 8 · SER-B.read/system", "web.playwright.web"]
    web = _suite(root, "r playwright")
    assert _properties(web)["device"] == "playwright" and "phone" not in _properties(web)


def test_failures_are_typed_by_failure_category_errors_as_infrastructure(tmp_path: Path) -> None:
    recs = [
        record("f1", run="r", passed=False, failure_category="perception"),
        record("f2", run="r", passed=False),
        record("e1", run="r", passed=False, outcome="error", failure_category="infrastructure"),
        record("e2", run="r", passed=False, outcome="error", failure_category="watchdog"),
        record("e3", run="r", passed=False, outcome="error"),
        record("s1", run="r", passed=False, outcome="skipped"),
        record("ok", run="r"),
    ]
    text, root = _junit([write_run(tmp_path, "r", recs, [("SER1", "Pixel 8")])])
    assert _errors(text, tmp_path) == []
    seen = {}
    for case in root.iter("testcase"):
        child = next(iter(case), None)
        seen[case.get("name")] = None if child is None else (child.tag, child.get("type"), child.get("message"))
    assert seen == {
        "f1": ("failure", "perception", "failed"), "f2": ("failure", "fail", "failed"),
        "e1": ("error", "infrastructure", "error"), "e2": ("error", "infrastructure.watchdog", "error"),
        "e3": ("error", "infrastructure", "error"), "s1": ("skipped", None, "skipped"), "ok": None,
    }


def test_unknown_durations_and_starts_are_left_out_not_written_as_zero(tmp_path: Path) -> None:
    recs = [record("a", run="r", metrics=RunMetrics(total_ms=250)), record("b", run="r")]
    text, root = _junit([write_run(tmp_path, "r", recs, [("SER1", "Pixel 8")])])
    assert _errors(text, tmp_path) == []
    assert {c.get("name"): c.get("time") for c in root.iter("testcase")} == {"a": "0.250", "b": None}
    suite = _suite(root, "r Pixel 8 · SER1")
    assert suite.get("timestamp") is None and suite.get("time") == "0.250"


def test_the_sorted_path_for_many_suites_writes_the_same_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recs = [record(f"t{i:02d}", run="r", device=PHONES[i % 2][0], passed=i % 3 > 0) for i in range(25)]
    run_dir = write_run(tmp_path, "r", recs, PHONES)
    scanned = render_junit(aggregate([run_dir]))
    monkeypatch.setattr(junit, "SCAN_SUITES", 0)
    assert render_junit(aggregate([run_dir])) == scanned
    assert _errors(scanned, tmp_path) == [] and scanned.count("<testcase ") == 25


def test_an_existing_junit_xml_is_never_replaced(tmp_path: Path) -> None:
    agg = aggregate([_normal_run(tmp_path)])
    out = tmp_path / "out"
    out.mkdir()
    (out / "junit.xml").write_text("mine", encoding="utf-8")
    with pytest.raises(FarmError, match="already exists"):
        write_junit(agg, out / "junit.xml")
    assert (out / "junit.xml").read_text(encoding="utf-8") == "mine"
    assert [p.name for p in out.iterdir()] == ["junit.xml"]


def test_a_write_that_fails_halfway_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recs = [record(f"t{i:02d}", run="r", device=PHONES[0][0]) for i in range(25)]
    agg = aggregate([write_run(tmp_path, "r", recs, PHONES)])
    line = junit._case_line
    # The 20th unit's line cannot be made: the copy stops after writing part of the file.
    monkeypatch.setattr(junit, "_case_line", lambda prefix: f"CASE WHEN r.task_id = 't19' THEN error('disk full')"
                                                            f" ELSE {line(prefix)} END")
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(Exception, match="disk full"):
        write_junit(agg, out / "junit.xml")
    assert list(out.iterdir()) == []


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=60))
def test_the_sql_attribute_escaping_reads_back_as_the_library_writes_it(text: str) -> None:
    from xml.sax.saxutils import quoteattr

    import duckdb

    con = duckdb.connect()
    con.execute(junit._XML_CHARS)
    escaped = con.execute("SELECT xattr(?)", [text]).fetchone()[0]
    cleaned = junit._NOT_XML.sub("", text)
    # What the parser reads back is the text less what XML cannot hold, as from the library's own escaping.
    ours = ET.fromstring(f'<a v="{escaped}"/>').get("v")
    theirs = ET.fromstring(f"<a v={quoteattr(cleaned)}/>").get("v")
    assert ours == theirs == cleaned
