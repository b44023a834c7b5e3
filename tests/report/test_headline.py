"""The headline — planned, skipped, attempted, errors, passed, rate with Wilson CI — the same in every output."""

from __future__ import annotations

import csv
import io
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest

from farm.report.aggregate import aggregate
from farm.report.headline import headline, headline_text
from farm.report.writers import write_reports
from farm.results.record import Record
from farm.results.stats import wilson
from tests.helpers.records import record, write_run

PHONES = [("SER1", "Pixel 8"), ("SER2", "Pixel 8")]


def _host_run() -> list[Record]:
    """20 tasks on one phone: 3 had no script (skipped), 1 infrastructure error, 12 passed, 4 failed."""
    recs = [record(f"t{i:02d}", run="r", device="SER1", outcome="skipped", passed=False,
                   reasons=["scripted policy: no script for this task"]) for i in range(3)]
    recs.append(record("t03", run="r", device="SER1", outcome="error", passed=False, reasons=["adb: device gone"]))
    recs += [record(f"t{i:02d}", run="r", device="SER1", passed=i < 16) for i in range(4, 20)]
    return recs


def _mixed() -> list[Record]:
    """Both phones, with a retried error, a login hand-over and a skip."""
    return [
        *_host_run(),
        record("a", run="r", device="SER2", outcome="error", passed=False, attempt=1),
        record("a", run="r", device="SER2", passed=True, attempt=2),
        record("l", run="r", device="SER2", outcome="takeover", takeover_kind="login", passed=True),
        record("s", run="r", device="SER2", outcome="skipped", passed=False, reasons=["no calculator"]),
    ]


def test_skipped_units_are_planned_but_not_attempted(tmp_path: Path) -> None:
    o = aggregate([write_run(tmp_path, "r", _host_run(), PHONES)]).data.overall
    assert (o.planned, o.skipped, o.attempted, o.errors, o.passed) == (20, 3, 17, 1, 12)
    assert (o.low, o.high) == pytest.approx((wilson(12, 17).low, wilson(12, 17).high))


def test_headline_text_labels_every_number() -> None:
    text = headline_text(headline(_host_run()))
    r = wilson(12, 17)
    assert text == (
        "planned 20 · skipped 3 · attempted 17 · errors 1 · passed 12"
        f" (70.6%, 95% CI {r.low * 100:.1f}%–{r.high * 100:.1f}%)"
    )


def test_headline_of_nothing_attempted_gives_no_rate() -> None:
    skips = [record("x", outcome="skipped", passed=False)]
    assert headline_text(headline(skips)) == (
        "planned 1 · skipped 1 · attempted 0 · errors 0 · passed 0 (nothing attempted)"
    )


def test_the_per_phone_summary_equals_the_report_by_phone(tmp_path: Path) -> None:
    recs = _mixed()
    d = aggregate([write_run(tmp_path, "r", recs, PHONES)]).data
    for serial, label in (("SER1", "Pixel 8 · SER1"), ("SER2", "Pixel 8 · SER2")):
        mine = headline([r for r in recs if r.device == serial], label)
        assert mine == next(row for row in d.by_device if row.key == label)
    assert headline(recs) == d.overall


def test_report_md_and_html_show_the_headline(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, "r", _host_run(), PHONES)
    write_reports(aggregate([run_dir]), run_dir)
    text = headline_text(headline(_host_run()))
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    assert f"## Headline\n\n{text}\n" in md
    assert f'<p class="headline">{text}</p>' in (run_dir / "report.html").read_text(encoding="utf-8")


def test_scores_csv_verdicts_count_to_the_headline(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, "r", _mixed(), PHONES)
    agg = aggregate([run_dir])
    write_reports(agg, run_dir)
    rows = list(csv.DictReader(io.StringIO((run_dir / "scores.csv").read_text(encoding="utf-8-sig"))))
    final = Counter(r["final_verdict"] for r in rows)
    o = agg.data.overall
    assert (len(rows), final["skipped"], final["error"], final["pass"]) == (o.planned, o.skipped, o.errors, o.passed)
    assert final["fail"] == o.attempted - o.errors - o.passed
    assert {r["initial_verdict"] for r in rows if r["outcome"] == "skipped"} == {"skipped"}


def test_junit_counts_are_the_headline(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, "r", _mixed(), PHONES)
    agg = aggregate([run_dir])
    write_reports(agg, run_dir)
    root = ET.parse(run_dir / "junit.xml").getroot()
    o = agg.data.overall
    attrs = {k: int(root.get(k) or -1) for k in ("tests", "skipped", "errors", "failures")}
    assert attrs == {"tests": o.planned, "skipped": o.skipped, "errors": o.errors,
                     "failures": o.attempted - o.errors - o.passed}
    assert root.get("name") == f"r: {headline_text(o)}"
    assert len(root.findall(".//skipped")) == o.skipped and len(root.findall(".//error")) == o.errors
    suites = root.findall("testsuite")
    assert sum(int(s.get("tests") or 0) for s in suites) == o.planned


def test_the_progress_bar_counts_with_the_summary_labels() -> None:
    from farm.android.progress import PhoneProgress

    bar = PhoneProgress(None, "Pixel 8 #1", 4, skipped=1)
    for rec in (record("a"), record("b", passed=False), record("c", outcome="error", passed=False),
                record("d", outcome="skipped", passed=False)):
        bar.recorded(rec)
    assert bar.counts() == "passed 1 · failed 1 · skipped 2 · errors 1"
    assert bar.done == 5


def test_disagreement_text_counts_units_where_phone_and_host_differ() -> None:
    from farm.report.headline import disagreement_text
    from farm.results.record import DeviceVerdict

    said = DeviceVerdict(outcome="succeeded", passed=True)
    recs = [record("a", passed=False).model_copy(update={"device_verdict": said}),
            record("b", passed=True).model_copy(update={"device_verdict": said}),
            record("c", passed=False)]
    assert disagreement_text(recs) == " · phone and host disagree on 1 (phone said passed on 1)"
    assert disagreement_text(recs[1:]) == ""


def test_an_unfinished_run_says_so_under_the_headline(tmp_path: Path) -> None:
    from farm import manifest as mf
    from farm.report.markdown import render_markdown
    from tests.helpers.records import write_run

    run_dir = write_run(tmp_path, "r", [record("a", run="r")])
    mf.update(run_dir, lambda m: setattr(m, "status", "interrupted"))
    md = render_markdown(aggregate([run_dir]).data)
    head = md.split("## Headline", 1)[1].split("\n## ", 1)[0]
    assert "Not finished: r (interrupted)" in head
    mf.update(run_dir, lambda m: setattr(m, "status", "finished"))
    assert "Not finished" not in render_markdown(aggregate([run_dir]).data)
