"""scores.csv and junit.xml are the same whether rows are written in storage order or sorted; lists are capped."""

from __future__ import annotations

import csv
import io
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from farm.report import aggregate as aggregate_module
from farm.report import overrides_apply
from farm.report.aggregate import aggregate
from farm.report.junit import write_junit
from farm.report.markdown import render_markdown
from farm.report.writers import write_reports
from tests.helpers.records import record, write_run

PHONES = [("SER-B", "Pixel 8"), ("SER-A", "Galaxy"), ("SER-C", "Pixel 8")]


def _run(tmp_path: Path, run: str = "r", overrides: str | None = None) -> Path:
    recs = []
    for i in range(40):
        serial = PHONES[i % 3][0]
        outcome = ["succeeded", "failed", "skipped", "error", "takeover"][i % 5]
        recs.append(record(f"t{i // 3:02d}", run=run, device=serial, passed=i % 2 == 0, outcome=outcome, answer="x",
                           takeover_kind="login" if i % 10 == 4 else None,
                           reasons=[f"reason <{i}> & \"{serial}\""] if outcome != "succeeded" else []))
    recs.append(record("t00", run=run, device="SER-B", passed=True, attempt=2))
    run_dir = write_run(tmp_path, run, recs, PHONES)
    if overrides:
        (run_dir / "overrides.yaml").write_text(overrides, encoding="utf-8")
    return run_dir


def _files(agg: aggregate_module.Aggregation, out: Path) -> dict[str, bytes]:
    write_reports(agg, out)
    return {name: (out / name).read_bytes() for name in ("junit.xml", "scores.csv")}


@pytest.mark.parametrize(("cache_min_bytes", "few"), [(0, 64), (1 << 30, 64), (0, 0)])
def test_storage_order_and_sorted_writers_give_identical_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache_min_bytes: int, few: int
) -> None:
    monkeypatch.setattr(overrides_apply, "FEW_OVERRIDES", few)
    run_dir = _run(tmp_path, overrides="- {id: t01, from: fail, to: pass, evidence: x}\n")
    fast = aggregate([run_dir], cache_min_bytes=cache_min_bytes)
    assert fast.ordered and any(o.applied for o in fast.data.overrides)
    assert fast.scan_ordered == (few > 0)
    slow = aggregate([run_dir], cache_min_bytes=cache_min_bytes)
    slow.ordered = slow.scan_ordered = False
    assert _files(fast, tmp_path / "fast") == _files(slow, tmp_path / "slow")


def test_labels_out_of_serial_order_still_sort_rows_by_label(tmp_path: Path) -> None:
    agg = aggregate([_run(tmp_path)])
    write_reports(agg, tmp_path / "out")
    rows = list(csv.DictReader(io.StringIO((tmp_path / "out" / "scores.csv").read_text(encoding="utf-8-sig"))))
    keys = [(r["run"], r["task_id"], r["device"]) for r in rows]
    assert keys == sorted(keys) and len(keys) == len(set(keys))
    suites = ET.parse(tmp_path / "out" / "junit.xml").getroot().findall("testsuite")
    for suite in suites:
        names = [c.get("name") for c in suite.findall("testcase")]
        assert names == sorted(names)
    assert sum(int(s.get("tests") or 0) for s in suites) == len(rows)


def test_many_suites_fall_back_to_a_sorted_junit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from farm.report import junit

    run_dir = _run(tmp_path)
    write_junit(aggregate([run_dir]), tmp_path / "a.xml")
    monkeypatch.setattr(junit, "SCAN_SUITES", 1)
    write_junit(aggregate([run_dir]), tmp_path / "b.xml")
    assert (tmp_path / "a.xml").read_bytes() == (tmp_path / "b.xml").read_bytes()


def test_takeover_without_a_kind_is_one_verdict_everywhere(tmp_path: Path) -> None:
    recs = [record("x", run="r", device="S1", passed=False, outcome="takeover", takeover_kind=None),
            record("y", run="r", device="S1", passed=True, outcome="takeover", takeover_kind=None)]
    run_dir = write_run(tmp_path, "r", recs, [("S1", "Pixel 8")])
    agg = aggregate([run_dir])
    d = agg.data
    assert (d.overall.attempted, d.overall.passed, d.failures_total) == (2, 1, 1)
    assert [t.task_id for t in d.failures] == ["x"]
    write_reports(agg, run_dir)
    assert len(ET.parse(run_dir / "junit.xml").getroot().findall(".//failure")) == 1
    rows = list(csv.DictReader(io.StringIO((run_dir / "scores.csv").read_text(encoding="utf-8-sig"))))
    assert {r["task_id"]: r["final_verdict"] for r in rows} == {"x": "fail", "y": "pass"}


def test_long_lists_are_capped_with_their_totals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aggregate_module, "LIST_CAP", 2)
    recs = [record(f"l{i}", run="r", device="S1", passed=False, outcome="takeover", takeover_kind="login",
                   markers=[f"AF-{i}"]) for i in range(5)]
    run_dir = write_run(tmp_path, "r", recs, [("S1", "Pixel 8")])
    d = aggregate([run_dir]).data
    assert (len(d.login_handover), d.login_handover_total, len(d.markers), d.markers_total) == (2, 5, 2, 5)
    md = render_markdown(d)
    assert "## 交给用户:login (5)" in md and "… 3 more login hand-overs not listed" in md
    assert "… 3 more attempts left markers" in md
    assert "… 3 more not listed (see scores.csv)" in md


def test_report_files_are_readable_by_others_under_the_usual_umask(tmp_path: Path) -> None:
    import os
    import stat

    from farm.report.build import build
    from tests.helpers.records import record, write_run

    run_dir = write_run(tmp_path, "r", [record("t1", run="r")], [("SER1", "Pixel 8")])
    old = os.umask(0o022)
    try:
        paths = build([run_dir]).paths
    finally:
        os.umask(old)
    assert {p.name for p in paths} == {"report.md", "report.html", "junit.xml", "scores.csv"}
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in paths} == {p.name: 0o644 for p in paths}
