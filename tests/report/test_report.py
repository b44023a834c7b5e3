"""Report numbers from records: rates, skips, holdout hiding, null sums, labels, comparison."""

from __future__ import annotations

import csv
import html
import io
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from farm.report.aggregate import aggregate
from farm.report.writers import write_reports
from farm.results.record import RunMetrics, Tokens
from farm.results.stats import wilson
from tests.helpers.records import record, write_run


def _run(tmp_path: Path) -> Path:
    recs = [
        record("a", device="SER-A", passed=True, category="read/system",
               metrics=RunMetrics(first_feedback_ms=100, round_trips=2, model_ms=50, total_ms=1000),
               tokens=Tokens(input_new=10, output=5), cost_usd=0.5),
        record("b", device="SER-A", passed=False, category="read/system", failure_category="route",
               answer="SECRET FULL ANSWER TEXT", metrics=RunMetrics(first_feedback_ms=300, round_trips=4)),
        record("c", device="SER-A", passed=False, outcome="error", category="write", reasons=["watchdog"],
               failure_category="infrastructure"),
        record("d", device="SER-A", passed=False, outcome="skipped", category="write",
               reasons=["capability calculator missing"]),
        record("h", device="SER-A", passed=True, partition="holdout", category="write"),
        record("a", device="SER-B", passed=True, category="read/system", cost_usd=None,
               metrics=RunMetrics(first_feedback_ms=200)),
        record("l", device="SER-B", passed=True, outcome="takeover", takeover_kind="login",
               category="read/shopping", reasons=["login wall"]),
        record("w", device="SER-B", passed=True, category="write", markers=["AF-run-w"]),
    ]
    return write_run(tmp_path, "r1", recs, [("SER-A", "Pixel 8"), ("SER-B", "Pixel 8")])


def test_rates_skips_and_holdout(tmp_path: Path) -> None:
    agg = aggregate([_run(tmp_path)])
    d = agg.data
    # attempted: a,b,c (A) + a,l,w (B) = 6; passed: a, a, w = 3 (login takeover is not success).
    assert (d.overall.attempted, d.overall.passed, d.overall.errors) == (6, 3, 1)
    assert d.overall.low == pytest.approx(wilson(3, 6).low)
    cats = {r.key: (r.attempted, r.passed) for r in d.by_category}
    assert cats == {"read/system": (3, 2), "write": (2, 1), "read/shopping": (1, 0)}
    assert d.hidden_holdout_tasks == 1 and d.skipped_total == 1
    assert d.skipped[0].reason == "capability calculator missing"
    assert [s.task_id for s in d.login_handover] == ["l"]
    assert {r.key for r in d.by_device} == {"Pixel 8 · SER-A", "Pixel 8 · SER-B"}
    assert d.markers[0].markers == ["AF-run-w"]


def test_the_reports_name_hidden_holdout_tasks_only_when_there_are_some(tmp_path: Path) -> None:
    from farm.report.markdown import render_markdown
    from farm.report.writers import render_html

    hidden = aggregate([_run(tmp_path)]).data
    assert "1 holdout tasks (1 attempts) not shown" in render_markdown(hidden)
    assert "1 holdout tasks (1 attempts) not shown" in render_html(hidden)
    none = aggregate([write_run(tmp_path, "r2", [record("a", run="r2", device="SER-A")], [("SER-A", "Pixel 8")])]).data
    assert "holdout" not in render_markdown(none).lower() and "holdout pool" not in render_html(none).lower()


def test_holdout_shown_on_request(tmp_path: Path) -> None:
    d = aggregate([_run(tmp_path)], include_holdout=True).data
    assert d.overall.attempted == 7 and d.hidden_holdout_tasks == 0


def test_null_costs_are_counted_as_unknown_not_zero(tmp_path: Path) -> None:
    d = aggregate([_run(tmp_path)]).data
    assert d.cost.total == 0.5 and d.cost.known == 1 and d.cost.unknown == 5
    by = {t.name: t for t in d.tokens}
    assert by["cache_read"].total is None and by["cache_read"].unknown == 6
    ff = next(s for s in d.timing if s.name == "first_feedback_ms")
    assert (ff.n, ff.median, ff.p90) == (3, 200.0, 300.0)


def test_reports_hide_answers_and_are_consistent(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    paths = write_reports(aggregate([run_dir]), run_dir)
    assert [p.name for p in paths] == ["report.md", "report.html", "junit.xml", "scores.csv"]
    for p in paths:
        assert "SECRET FULL ANSWER" not in p.read_text(encoding="utf-8")
    html = (run_dir / "report.html").read_text()
    assert "<svg" in html and "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    raw = (run_dir / "scores.csv").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    rows = list(csv.DictReader(io.StringIO(raw.decode("utf-8-sig"))))
    assert len(rows) == 7  # holdout hidden
    suites = ET.parse(run_dir / "junit.xml").getroot()
    cases = suites.findall(".//testcase")
    assert len(cases) == 7
    assert len(suites.findall(".//skipped")) == 1 and len(suites.findall(".//error")) == 1
    assert len(suites.findall(".//failure")) == 2  # b, and the login takeover


def test_reports_are_never_overwritten(tmp_path: Path) -> None:
    from farm.errors import FarmError

    run_dir = _run(tmp_path)
    write_reports(aggregate([run_dir]), run_dir)
    with pytest.raises(FarmError, match="already exists"):
        write_reports(aggregate([run_dir]), run_dir)


def test_paired_comparison_counts_common_units(tmp_path: Path) -> None:
    a = write_run(tmp_path, "ra", [record(t, run="ra", passed=p) for t, p in (("x", 1), ("y", 0), ("z", 0))])
    b = write_run(tmp_path, "rb", [record(t, run="rb", passed=p) for t, p in (("x", 1), ("y", 1), ("q", 1))])
    c = aggregate([a, b]).data.comparison
    assert c is not None
    assert (c.units, c.both, c.only_a, c.only_b, c.neither) == (2, 1, 0, 1, 0)
    assert c.mcnemar_p == 1.0 and c.diff == pytest.approx(0.5)


def test_later_attempt_replaces_earlier_one(tmp_path: Path) -> None:
    run = write_run(tmp_path, "r", [record("x", passed=False, outcome="error"), record("x", passed=True, attempt=2)])
    d = aggregate([run]).data
    assert (d.overall.attempted, d.overall.passed) == (1, 1)


def test_serials_quoted_in_reasons_are_replaced_by_labels(tmp_path: Path) -> None:
    recs = [record("e", run="r", device="R58M1ZZ9Q", passed=False, outcome="error",
                   reasons=["adb error: device 'R58M1ZZ9Q' not found"])]
    run_dir = write_run(tmp_path, "r", recs, [("R58M1ZZ9Q", "Pixel 8")])
    write_reports(aggregate([run_dir]), run_dir)
    for name in ("report.md", "report.html", "scores.csv"):
        text = (run_dir / name).read_text(encoding="utf-8")
        # Where a link points (the run record's directory is named after the phone) and the phones table (where
        # each phone is) name the serial; a reason names the phone.
        text = html.unescape(re.sub(r"\]\([^)]*\)|href=\"[^\"]*\"", "", text))
        assert "device 'Pixel 8 · 1ZZ9Q' not found" in text
        assert text.count("R58M1ZZ9Q") == (1 if name != "scores.csv" else 0)
