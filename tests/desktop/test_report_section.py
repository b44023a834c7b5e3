"""The desktop lane in reports: an attached batch shows in its run's report with the batch report's own numbers,
label and execution note; `farm desktop report --html` writes the batch alone as a page in the run report's style;
person-written text stays text."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from farm.desktop.attach import attach_batch
from farm.desktop.report import RESULT_HEADER, build_report
from farm.desktop.report_section import run_report_css
from farm.manifest import Manifest, utc_now
from farm.report.build import build
from farm.report.lanes import LaneSection, lane_sections
from farm.results.store import RunStore
from tests.helpers.desktop import HOSTILE_REASON, farm, recorded_batch
from tests.helpers.lane_plugins import lane_plugins

__all__ = ["lane_plugins"]


@pytest.fixture
def attached(tmp_path: Path) -> tuple[Path, Path]:
    """(run directory, batch) of a recorded batch attached to run r1."""
    batch = recorded_batch(tmp_path)
    run_dir, _ = attach_batch(tmp_path / "runs", "r1", batch)
    return run_dir, batch


def _desktop(run_dir: Path) -> list[LaneSection]:
    return [s for s in lane_sections([run_dir]) if s.lane == "desktop"]


def _table(section: LaneSection, title: str) -> dict[str, dict[str, str]]:
    """The section's table `title` as row name → column → cell."""
    table = next(t for t in section.tables if t.title == title)
    return {row[0]: dict(zip(table.header, row, strict=True)) for row in table.rows}


def test_an_attached_batch_shows_as_a_section_of_its_run(attached: tuple[Path, Path]) -> None:
    run_dir, _ = attached
    (section,) = _desktop(run_dir)
    assert section.run == "r1" and "batch-002" in section.title
    assert section.links == ["desktop/batch-002.report.md", "desktop/batch-002.report.json",
                             "desktop/batch-002.report.html"]
    assert all((run_dir / link).is_file() for link in section.links)


def test_the_section_numbers_are_the_batch_reports(attached: tuple[Path, Path]) -> None:
    run_dir, batch = attached
    report = build_report([batch])
    (section,) = _desktop(run_dir)
    slots = _table(section, "Slots")["overall"]
    assert (slots["planned"], slots["recorded"], slots["success"], slots["blocked"]) == (
        str(report.overall.planned), str(report.overall.recorded), str(report.overall.success),
        str(report.overall.blocked))
    assert _table(section, "Rates (0..1)")["calculator-add"]["finalSuccessRate"] == "0.5"
    assert _table(section, "Durations (ms)")["overall"]["P50 ms"] == "20000"


def test_every_column_of_the_batch_report_is_in_one_of_the_tables(attached: tuple[Path, Path]) -> None:
    (section,) = _desktop(attached[0])
    shown = {h for t in section.tables for h in t.header}
    assert set(RESULT_HEADER) <= shown


def test_an_interim_batch_is_labelled_interim_first(attached: tuple[Path, Path]) -> None:
    (section,) = _desktop(attached[0])
    assert "阶段性结果 (interim)" in section.title
    assert section.notes[0] == "阶段性结果 (interim): 2 of 12 slots recorded, 10 pending."


def test_a_controlled_batch_says_it_is_not_live(tmp_path: Path) -> None:
    run_dir, _ = attach_batch(tmp_path / "runs", "r1", recorded_batch(tmp_path, execution="controlled"))
    (section,) = _desktop(run_dir)
    assert "mode: native; execution: controlled — real apps, scripted or simulated decisions; NOT a live result" \
        in section.notes


def test_a_recorded_reason_is_kept_as_text_in_the_section(attached: tuple[Path, Path]) -> None:
    (section,) = _desktop(attached[0])
    assert _table(section, "Not succeeded")["calculator-add/2"]["reason"] == HOSTILE_REASON


def test_the_run_report_shows_the_batch_with_its_html_escaped(attached: tuple[Path, Path], tmp_path: Path) -> None:
    run_dir, _ = attached
    build([run_dir], out_dir=tmp_path / "out")
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "Desktop batch batch-002" in html and "阶段性结果 (interim)" in html
    assert "&lt;img src=x onerror=" in html
    assert "<img src=x" not in html and "<script>" not in html


def test_an_attached_run_is_finished_not_running(attached: tuple[Path, Path], tmp_path: Path) -> None:
    build([attached[0]], out_dir=tmp_path / "out")
    assert "Not finished" not in (tmp_path / "out" / "report.md").read_text(encoding="utf-8")


def test_two_batch_versions_are_two_sections_in_attach_order(tmp_path: Path) -> None:
    latest = recorded_batch(tmp_path)
    run_dir, _ = attach_batch(tmp_path / "runs", "r1", latest)
    attach_batch(tmp_path / "runs", "r1", latest.with_name("batch-001.json"))
    sections = _desktop(run_dir)
    assert [s.title.split(" (")[0] for s in sections] == ["Desktop batch batch-002", "Desktop batch batch-001"]
    assert [_table(s, "Slots")["overall"]["recorded"] for s in sections] == ["2", "1"]


def test_a_run_without_a_desktop_lane_has_no_desktop_section(tmp_path: Path) -> None:
    run_dir = RunStore.create(tmp_path / "runs", Manifest(run_id="plain", created_at=utc_now())).run_dir
    assert _desktop(run_dir) == []


def test_a_damaged_batch_report_is_named_and_the_run_report_still_written(
    attached: tuple[Path, Path], tmp_path: Path
) -> None:
    run_dir, _ = attached
    (run_dir / "desktop" / "batch-002.report.json").write_text('{"suite": 1}', encoding="utf-8")
    (section,) = _desktop(run_dir)
    assert section.tables == [] and section.notes[0].startswith("The batch report could not be read: ")
    build([run_dir], out_dir=tmp_path / "out")
    assert "could not be read" in (tmp_path / "out" / "report.html").read_text(encoding="utf-8")


def test_report_html_writes_the_batch_as_a_page_in_the_run_report_style(tmp_path: Path) -> None:
    batch = recorded_batch(tmp_path)
    out = tmp_path / "pages" / "batch.html"
    outcome = farm("desktop", "report", batch, "--html", out)
    assert outcome.code == 0, outcome.stderr
    page = out.read_text(encoding="utf-8")
    assert run_report_css() in page
    assert "<h2>Desktop batch batch-002 (desktop-v1) — 阶段性结果 (interim)</h2>" in page
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in page and "<script" not in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in page


def test_report_html_honours_the_umask(tmp_path: Path) -> None:
    batch = recorded_batch(tmp_path)
    out = tmp_path / "batch.html"
    assert farm("desktop", "report", batch, "--html", out).code == 0
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask


def test_report_html_never_overwrites(tmp_path: Path) -> None:
    batch = recorded_batch(tmp_path)
    out = tmp_path / "batch.html"
    out.write_text("keep", encoding="utf-8")
    outcome = farm("desktop", "report", batch, "--html", out)
    assert outcome.code == 2 and "already exists" in outcome.stderr
    assert out.read_text(encoding="utf-8") == "keep"


def test_report_html_keeps_the_json_on_stdout_whole(tmp_path: Path) -> None:
    batch = recorded_batch(tmp_path)
    outcome = farm("desktop", "report", batch, "--json", "--html", tmp_path / "b.html")
    assert outcome.code == 0, outcome.stderr
    assert json.loads(outcome.stdout)["overall"]["recorded"] == 2
