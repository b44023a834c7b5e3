"""The report leads with what changed and what broke; breakdowns next; skips and notes last; nothing empty."""

from __future__ import annotations

import re
from pathlib import Path

from farm.report.build import build
from tests.helpers.records import record, write_run


def _headings(md: str) -> list[str]:
    return [re.sub(r" \(\d+\).*", "", h) for h in re.findall(r"^## (.+)$", md, re.MULTILINE)]


def test_failures_come_right_after_the_headline_and_skips_last(tmp_path: Path) -> None:
    recs = [record("ok", run="r"), record("bad", run="r", passed=False, failure_category="route"),
            record("skip", run="r", outcome="skipped", passed=False, reasons=["capability missing: shop"])]
    run_dir = write_run(tmp_path, "r", recs, [("SER1", "Pixel 8")])
    md = build([run_dir]).paths[0].read_text(encoding="utf-8")
    heads = _headings(md)
    assert heads[:3] == ["Headline", "Not passed", "Failure categories"]
    assert heads[-1] == "Skipped" and heads.index("Not passed") < heads.index("By category")
    # Sections with nothing in them are left out, not shown empty.
    for empty in ("Phone and host disagree", "人工改判", "Markers to clean up", "Phones left out", "Run notes",
                  "交给用户:login", "Paired comparison", "Retried after infrastructure failures"):
        assert empty not in heads, empty


def test_a_failure_links_to_its_run_record_from_where_the_report_is(tmp_path: Path) -> None:
    recs = [record("bad", run="r", device="SER1", passed=False)]
    run_dir = write_run(tmp_path, "r", recs, [("SER1", "Pixel 8")])
    evidence = run_dir / str(recs[0].evidence)
    evidence.mkdir(parents=True)
    md_path, html_path = build([run_dir]).paths[:2]
    md = md_path.read_text(encoding="utf-8")
    (href,) = re.findall(r"\[run record\]\(([^)]+)\)", md)
    assert (md_path.parent / href).resolve() == evidence.resolve()
    # The task's row in the by-task list links the phone to the same run record.
    by_task = md.split("## Not passed (1)", 1)[1].split("\n## ", 1)[0]
    assert re.search(rf"\| \[[^\]]+\]\({re.escape(href)}\) \|", by_task), by_task
    # report.html: from the by-task list and from the unit's own row, both to the one run record.
    (href,) = set(re.findall(r'<a href="([^"]+)">run record</a>', html_path.read_text(encoding="utf-8")))
    assert (html_path.parent / href).resolve() == evidence.resolve()


def test_an_evidence_path_that_climbs_out_is_not_linked(tmp_path: Path) -> None:
    recs = [record("bad", run="r", passed=False, evidence="../../etc"), record("odd", run="r", passed=False,
                                                                             evidence="a/(b)/run")]
    run_dir = write_run(tmp_path, "r", recs, [("SER1", "Pixel 8")])
    md = build([run_dir]).paths[0].read_text(encoding="utf-8")
    assert "[run record]" not in md


def test_a_comparison_leads_with_the_difference(tmp_path: Path) -> None:
    a = write_run(tmp_path, "ra", [record(t, run="ra", passed=p) for t, p in (("x", 1), ("y", 0))])
    b = write_run(tmp_path, "rb", [record(t, run="rb", passed=p) for t, p in (("x", 1), ("y", 1))])
    md = build([a, b]).paths[0].read_text(encoding="utf-8")
    heads = _headings(md)
    assert heads[:2] == ["Headline", "Paired comparison: ra (A) vs rb (B)"]
    section = md.split("## Paired comparison", 1)[1]
    assert section.index("Difference B − A") < section.index("| units |")
