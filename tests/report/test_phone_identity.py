"""One name per phone on every surface: report.md/html, junit.xml and history name a phone alike, show its serial
and adb server, and keep its name (and its JUnit class names) whatever other phones a run had."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from farm import manifest as mf
from farm.report.aggregate import aggregate
from farm.report.history import render_history_markdown
from farm.report.history_data import load_history
from farm.report.writers import write_reports
from tests.helpers.records import record, write_run

PHONE = "127.0.0.1:45949"
SERVER = "127.0.0.1:5037"
NIGHTLY = [(f"127.0.0.1:{port}", "Pixel 7") for port in (41001, 41002, 41003, 41004, 41005)] + [(PHONE, "Pixel 7")]


def _run(runs: Path, run_id: str, phones: list[tuple[str, str]], **kw: object) -> Path:
    recs = [record("calc", run=run_id, device=serial, passed=i % 2 == 0) for i, (serial, _m) in enumerate(phones)]
    run_dir: Path = write_run(runs, run_id, recs, phones, servers={s: SERVER for s, _m in phones}, **kw)
    write_reports(aggregate([run_dir]), run_dir)
    return run_dir


def _junit_suite(run_dir: Path, serial: str) -> tuple[str, set[str]]:
    """The phone's name as junit.xml gives it (property `phone`) and its units' class names."""
    root = ET.parse(run_dir / "junit.xml").getroot()
    for suite in root.iter("testsuite"):
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        if props.get("serial") == serial:
            assert props["adb_server"] == SERVER
            return props["phone"] or "", {c.get("classname") or "" for c in suite.iter("testcase")}
    raise AssertionError(f"no suite for {serial}")


def _table_name(markdown: str, serial: str) -> str:
    """The name in the phones table's row for `serial` (| name | serial | adb server | model |)."""
    rows = [cells for line in markdown.splitlines()
            if len(cells := [c.strip() for c in line.strip().strip("|").split("|")]) == 4 and cells[1] == serial]
    assert len(rows) == 1, rows
    assert rows[0][2] == SERVER
    return rows[0][0]


def test_the_same_phone_has_the_same_name_and_class_names_in_runs_with_other_phones(tmp_path: Path) -> None:
    nightly = _run(tmp_path, "nightly", NIGHTLY)
    alone = _run(tmp_path, "alone", [(PHONE, "Pixel 7")])
    names = [_table_name((d / "report.md").read_text(encoding="utf-8"), PHONE) for d in (nightly, alone)]
    assert names == ["Pixel 7 · 45949", "Pixel 7 · 45949"]
    (name_a, classes_a), (name_b, classes_b) = _junit_suite(nightly, PHONE), _junit_suite(alone, PHONE)
    assert name_a == name_b == "Pixel 7 · 45949"
    assert classes_a == classes_b == {"android.Pixel 7 · 45949.read/system"}
    # Five other phones of the same model: six different names.
    assert len({r.key for r in aggregate([nightly]).data.by_device}) == 6


def test_report_md_junit_and_history_name_a_phone_alike_with_its_serial_and_server(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for day, (run_id, phones) in enumerate((("n1", NIGHTLY), ("n2", [(PHONE, "Pixel 7")])), start=1):
        run_dir = _run(runs, run_id, phones)
        mf.update(run_dir, lambda m, day=day: setattr(m, "created_at", f"2026-12-0{day}T03:00:00Z"))
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    history = render_history_markdown(load_history(runs))
    junit_name, _classes = _junit_suite(run_dir, PHONE)
    assert _table_name(md, PHONE) == junit_name == _table_name(history, PHONE) == "Pixel 7 · 45949"
    assert re.search(rf"<td>Pixel 7 · 45949</td><td[^>]*>{re.escape(PHONE)}</td><td>{SERVER}</td>", html)


def test_a_farm_yaml_label_names_the_phone_in_the_reports(tmp_path: Path) -> None:
    # Recorded at discovery (the run's manifest has the name) …
    named = _run(tmp_path, "named", [(PHONE, "Pixel 7")], names={PHONE: "Bench A"})
    # … or, for a run recorded before names were, from the farm.yaml the manifest kept.
    old = write_run(tmp_path, "old", [record("calc", run="old", device=PHONE)], [(PHONE, "Pixel 7")])
    mf.update(old, lambda m: m.config.update({"phone_labels": {PHONE: "Bench A"}}))
    for run_dir in (named, old):
        data = aggregate([run_dir]).data
        assert [r.key for r in data.by_device] == ["Bench A"]
        assert [(p.name, p.serial) for p in data.phones] == [("Bench A", PHONE)]
    assert _junit_suite(named, PHONE)[0] == "Bench A"
