"""A comparison report leads with the difference: per-category A | B with paired intervals and McNemar p, the
regressed and fixed units (task × phone), and labels every per-run list with its run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from farm.report.aggregate import aggregate
from farm.report.markdown import render_markdown
from farm.report.model import ReportData
from farm.report.writers import render_html
from farm.results.record import Record
from farm.results.stats import mcnemar_exact, paired_bootstrap
from tests.helpers.records import record, write_run

PHONES = [("SER1", "Pixel 8"), ("SER2", "Galaxy")]
# (task, category, phone, passed in A, passed in B)
UNITS = [
    ("r1", "read", "SER1", True, True), ("r2", "read", "SER1", True, False), ("r3", "read", "SER2", False, True),
    ("r4", "read", "SER2", False, False), ("w1", "write", "SER1", True, False), ("w2", "write", "SER2", True, False),
    ("w3", "write", "SER1", True, True),
]


def _pair(tmp_path: Path) -> ReportData:
    def recs(run: str, side: int) -> list[Record]:
        out = [record(t, run=run, device=s, category=c, passed=bool((a, b)[side]),
                      reasons=[] if (a, b)[side] else [f"{t} failed in {run}"]) for t, c, s, a, b in UNITS]
        # Skips never pair; each run has its own.
        return [*out, record(f"skip-{run}", run=run, device="SER1", outcome="skipped", passed=False,
                             reasons=[f"not on {run}"])]

    a = write_run(tmp_path, "ra", recs("ra", 0), PHONES)
    b = write_run(tmp_path, "rb", recs("rb", 1), PHONES)
    return aggregate([a, b]).data


def test_per_category_a_and_b_have_paired_intervals_and_mcnemar_p(tmp_path: Path) -> None:
    c = _pair(tmp_path).comparison
    assert c is not None
    by = {k.key: k for k in c.by_category}
    assert set(by) == {"read", "write"}
    read, write = by["read"], by["write"]
    assert (read.units, read.passed_a, read.passed_b) == (4, 2, 2)
    assert (write.units, write.passed_a, write.passed_b) == (3, 3, 1)
    boot = paired_bootstrap([1, 1, 1], [0, 0, 1])
    assert (write.diff, write.diff_low, write.diff_high) == pytest.approx((boot.diff, boot.low, boot.high))
    assert write.mcnemar_p == pytest.approx(mcnemar_exact(2, 0))
    assert read.mcnemar_p == pytest.approx(mcnemar_exact(1, 1))


def test_regressed_and_fixed_units_are_listed_by_task_and_phone(tmp_path: Path) -> None:
    c = _pair(tmp_path).comparison
    assert c is not None
    assert [(r.task_id, r.device) for r in c.regressed] == [("r2", "Pixel 8 · SER1"), ("w1", "Pixel 8 · SER1"),
                                                           ("w2", "Galaxy · SER2")]
    assert [(r.task_id, r.device, r.verdict_a, r.verdict_b, r.outcome_a, r.outcome_b) for r in c.fixed] == [
        ("r3", "Galaxy · SER2", "failed", "passed", "failed", "succeeded")]
    assert (c.regressed_total, c.fixed_total) == (3, 1)
    # The reason shown is the failing side's.
    assert c.regressed[0].reason == "r2 failed in rb" and c.fixed[0].reason == "r3 failed in ra"
    assert (c.regressed[0].evidence_run, c.fixed[0].evidence_run) == ("rb", "ra")


def test_the_difference_comes_before_anything_else_in_both_reports(tmp_path: Path) -> None:
    d = _pair(tmp_path)
    md = render_markdown(d)
    order = ["## Paired comparison", "### By category, A | B", "### Regressed: passed in A, not in B (3)",
             "### Fixed: passed in B, not in A (1)", "## Not passed", "## Task × phone grid — rb (B)"]
    assert [md.index(h) for h in order] == sorted(md.index(h) for h in order)
    assert md.index("## Headline") < md.index("## Paired comparison")
    assert "| write | 3 | 3 | 1 | 100.0% | 33.3% | -66.7% |" in md
    html = render_html(d)
    h = [m.group(1) for m in re.finditer(r"<h[23]>([^<]+)", html)]
    assert h[:5] == ["Headline", "Paired comparison: ra (A) vs rb (B)", "By category, A | B",
                     "Regressed: passed in A, not in B (3)", "Fixed: passed in B, not in A (1)"]


def test_every_per_run_list_names_its_run(tmp_path: Path) -> None:
    d = _pair(tmp_path)
    assert d.skipped_by_run == {"ra": 1, "rb": 1}
    md = render_markdown(d)
    skipped = md.split("## Skipped (2)", 1)[1]
    assert skipped.index("### ra (A) (1)") < skipped.index("| skip-ra | Pixel 8 · SER1 | not on ra |")
    assert skipped.index("### rb (B) (1)") < skipped.index("| skip-rb | Pixel 8 · SER1 | not on rb |")
    assert skipped.index("skip-ra") < skipped.index("### rb (B)")  # each list under its own run
    failures = md.split("## Not passed", 1)[1].split("\n## ", 1)[0]
    assert "| run | category |" in failures and "| rb (B) | read | " in failures and "| ra (A) | read | " in failures
    html = render_html(d)
    assert "<h3>ra (A) (1)</h3>" in html and "<h3>rb (B) (1)</h3>" in html


def test_a_single_run_report_has_no_comparison_and_no_run_column(tmp_path: Path) -> None:
    d = aggregate([write_run(tmp_path, "r", [record("x", run="r", passed=False),
                                            record("s", run="r", outcome="skipped", passed=False)])]).data
    md = render_markdown(d)
    assert d.comparison is None and "Paired comparison" not in md and "### r" not in md
    assert "| category | failure category | task |" in md and "| run | category |" not in md
