"""Where the phone's own verdict and the host's differ, and why attempts that did not pass ended."""

from __future__ import annotations

from pathlib import Path

from farm.report.aggregate import aggregate
from farm.report.markdown import render_markdown
from farm.report.writers import render_html
from farm.results.record import DeviceVerdict, Record
from tests.helpers.records import record, write_run


def _recs() -> list[Record]:
    phone_pass = DeviceVerdict(outcome="succeeded", passed=True)
    phone_fail = DeviceVerdict(outcome="failed", passed=False, failure_category="route")
    return [
        record("said-pass", run="r", device="S1", passed=False, reasons=["answer lacks 56088"],
               device_verdict=phone_pass, end_reason="answer"),
        record("said-fail", run="r", device="S1", passed=True, device_verdict=phone_fail, end_reason="answer"),
        record("agree", run="r", device="S1", passed=True, device_verdict=phone_pass, end_reason="answer"),
        record("host-only", run="r", device="S1", passed=False, end_reason="max_steps"),
        record("budget", run="r", device="S1", passed=False, end_reason="max_steps"),
        record("slow", run="r", device="S1", passed=False, end_reason="timeout"),
        record("quiet", run="r", device="S1", passed=False),
        record("skip", run="r", device="S1", outcome="skipped", passed=False),
    ]


def test_phone_and_host_disagreements_are_listed(tmp_path: Path) -> None:
    d = aggregate([write_run(tmp_path, "r", _recs(), [("S1", "Pixel 8")])]).data
    rows = [(x.task_id, x.device, x.phone_outcome, x.phone_passed, x.host_outcome, x.host_passed, x.reason)
            for x in d.disagreements]
    assert rows == [
        ("said-fail", "Pixel 8 · S1", "failed", False, "succeeded", True, ""),
        ("said-pass", "Pixel 8 · S1", "succeeded", True, "failed", False, "answer lacks 56088"),
    ]
    assert d.disagreements_total == 2


def test_disagreements_show_in_markdown_and_html(tmp_path: Path) -> None:
    d = aggregate([write_run(tmp_path, "r", _recs(), [("S1", "Pixel 8")])]).data
    md = render_markdown(d)
    assert "Phone and host disagree on 2 attempts (listed below)." in md.split("## Overall")[0]
    assert "## Phone and host disagree (2)" in md
    assert "| said-pass | Pixel 8 · S1 | succeeded / pass | failed / fail | answer lacks 56088 |" in md
    assert "| agree |" not in md.split("## Phone and host disagree")[1].split("\n## ")[0]
    html = render_html(d)
    assert '<td>succeeded / pass</td><td>failed / fail</td><td class="long">answer lacks 56088</td>' in html


def test_no_disagreement_section_rows_without_device_verdicts(tmp_path: Path) -> None:
    d = aggregate([write_run(tmp_path, "r", [record("x", run="r", passed=False)])]).data
    assert (d.disagreements, d.disagreements_total) == ([], 0)
    assert "Phone and host disagree on" not in render_markdown(d)


def test_end_reasons_of_attempts_that_did_not_pass_are_counted(tmp_path: Path) -> None:
    d = aggregate([write_run(tmp_path, "r", _recs(), [("S1", "Pixel 8")])]).data
    assert [(c.key, c.count) for c in d.end_reasons] == [("max_steps", 2), ("answer", 1), ("timeout", 1)]
    assert d.end_reason_unrecorded == 1
    head = render_markdown(d).split("## Overall")[0]
    assert "Not passed, ended by: max_steps 2, answer 1, timeout 1, not recorded 1." in head


def test_units_that_needed_more_than_one_try_are_listed(tmp_path: Path) -> None:
    from farm.report.aggregate import aggregate
    from farm.report.markdown import render_markdown
    from tests.helpers.records import record, write_run

    recs = [record("a", run="r", attempt=2), record("b", run="r"), record("c", run="r", attempt=3, passed=False)]
    data = aggregate([write_run(tmp_path, "r", recs)]).data
    assert data.retried_total == 2 and [(r.task_id, r.attempt) for r in data.retried] == [("a", 2), ("c", 3)]
    md = render_markdown(data)
    assert "## Retried after infrastructure failures (2)" in md and "| c | device · SER1 | 3 | failed |" in md
