"""The task × phone grid and the per-phone timeline: verdicts per cell, non-passes first, caps that say what they
left out, times from the records, merged slices on a busy phone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from farm.report import glance
from farm.report.aggregate import aggregate
from farm.report.markdown import render_markdown
from farm.report.writers import render_html
from tests.helpers.records import busy_records, record, write_run

PHONES = [("SER-B", "Pixel 8"), ("SER-A", "Pixel 8"), ("SER-C", "Galaxy")]


def _grid_run(tmp_path: Path) -> Path:
    recs = [
        record("ok", run="r", device="SER-A"), record("ok", run="r", device="SER-B"),
        record("bad", run="r", device="SER-A", passed=False), record("bad", run="r", device="SER-B"),
        record("gone", run="r", device="SER-B", outcome="skipped", passed=False),
        record("boom", run="r", device="SER-C", outcome="error", passed=False),
        record("fine", run="r", device="SER-C"),
    ]
    return write_run(tmp_path, "r", recs, PHONES)


def test_grid_cells_are_the_final_verdicts_per_phone_label(tmp_path: Path) -> None:
    g = aggregate([_grid_run(tmp_path)]).data.grid
    assert g is not None
    assert g.phones == ["Galaxy · SER-C", "Pixel 8 · SER-A", "Pixel 8 · SER-B"]  # stable names, sorted
    cells = {r.unit: r.cells for r in g.rows}
    assert cells == {
        "bad": [None, "fail", "pass"], "boom": ["error", None, None], "gone": [None, None, "skip"],
        "fine": ["pass", None, None], "ok": [None, "pass", "pass"],
    }
    # Units that did not pass somewhere come first; a unit that passed everywhere never does.
    assert [r.unit for r in g.rows] == ["bad", "boom", "gone", "fine", "ok"]
    assert (g.units_total, g.units_not_passed, g.phones_left_out) == (5, 3, 0)


def test_grid_in_markdown_and_html_has_a_symbol_and_a_legend_not_only_a_colour(tmp_path: Path) -> None:
    d = aggregate([_grid_run(tmp_path)]).data
    md = render_markdown(d)
    section = md.split("## Task × phone grid", 1)[1].split("\n## ", 1)[0]
    assert "| task | Galaxy · SER-C | Pixel 8 · SER-A | Pixel 8 · SER-B |" in section
    assert "| bad |  | ✗ | ✓ |" in section and "| boom | ! |  |  |" in section and "| gone |  |  | ⊘ |" in section
    assert "✓ pass · ✗ fail · ⊘ skipped · ! infrastructure error" in section
    html = render_html(d)
    assert '<td class="v v-fail" title="fail">✗</td>' in html
    assert '<td class="v v-error" title="infrastructure error">!</td>' in html


def test_grid_is_capped_to_the_rows_with_non_passes_first_and_says_how_many_are_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(glance, "GRID_ROWS", 2)
    d = aggregate([_grid_run(tmp_path)]).data
    assert d.grid is not None and [r.unit for r in d.grid.rows] == ["bad", "boom"]
    assert "… 3 more units not shown; scores.csv has every unit." in render_markdown(d)
    monkeypatch.setattr(glance, "GRID_ROWS", 3)
    d = aggregate([_grid_run(tmp_path / "b")]).data
    assert "… 2 more units not shown (all passed)" in render_markdown(d)


def test_grid_keeps_the_phones_with_the_most_non_passes_when_there_are_too_many(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(glance, "GRID_PHONES", 2)
    recs = [record(t, run="r", device=s, passed=(s, t) != ("SER-A", "x") and s != "SER-C")
            for s in ("SER-A", "SER-B", "SER-C") for t in ("x", "y")]
    d = aggregate([write_run(tmp_path, "r", recs, PHONES)]).data
    assert d.grid is not None
    assert (d.grid.phones, d.grid.phones_left_out) == (["Galaxy · SER-C", "Pixel 8 · SER-A"], 1)
    assert "… 1 more phones not shown" in render_markdown(d)


def test_a_comparison_shows_the_grid_of_the_second_run(tmp_path: Path) -> None:
    a = write_run(tmp_path, "ra", [record("x", run="ra", passed=False)], [("SER1", "Pixel 8")])
    b = write_run(tmp_path, "rb", [record("x", run="rb")], [("SER1", "Pixel 8")])
    d = aggregate([a, b]).data
    assert d.grid is not None and d.grid.run == "rb" and d.grid.rows[0].cells == ["pass"]
    assert "## Task × phone grid — rb (B)" in render_markdown(d)


def test_timeline_places_units_from_their_start_and_end_times(tmp_path: Path) -> None:
    recs = [
        record("a", run="r", device="SER-A", started_at="2026-12-01T03:00:00Z", ended_at="2026-12-01T03:00:10Z"),
        # An offset is honoured; a time without one is UTC.
        record("b", run="r", device="SER-A", passed=False, started_at="2026-12-01T05:00:20+02:00",
               ended_at="2026-12-01T03:00:30"),
        record("c", run="r", device="SER-B", outcome="error", passed=False, started_at="2026-12-01T03:00:05Z",
               ended_at="2026-12-01T03:00:06Z"),
        record("untimed", run="r", device="SER-B"),
        record("backwards", run="r", device="SER-B", started_at="2026-12-01T03:00:09Z",
               ended_at="2026-12-01T03:00:08Z"),
        record("not-a-time", run="r", device="SER-B", started_at="yesterday", ended_at="2026-12-01T03:00:08Z"),
        record("skip", run="r", device="SER-B", outcome="skipped", passed=False),
    ]
    t = aggregate([write_run(tmp_path, "r", recs, PHONES)]).data.timeline
    assert t is not None
    assert (t.start, t.span_s, t.untimed) == ("2026-12-01T03:00:00Z", 30.0, 3)
    lanes = {lane.phone: [(b.label, b.start, b.end, b.verdict) for b in lane.bars] for lane in t.lanes}
    assert lanes == {"Pixel 8 · SER-A": [("a", 0.0, 10.0, "pass"), ("b", 20.0, 30.0, "fail")],
                     "Pixel 8 · SER-B": [("c", 5.0, 6.0, "error")]}


def test_no_times_no_timeline_section(tmp_path: Path) -> None:
    d = aggregate([write_run(tmp_path, "r", [record("a", run="r")], PHONES)]).data
    assert d.timeline is None
    assert "## Timeline" not in render_markdown(d) and "<h2>Timeline" not in render_html(d)


def test_a_busy_phone_has_its_units_merged_into_capped_slices_that_say_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(glance, "TIMELINE_BARS", 4)
    tasks = [f"t{i:02d}" for i in range(30)]
    recs = busy_records("r", ["SER-A"], tasks) + busy_records("r", ["SER-B"], tasks[:3])
    d = aggregate([write_run(tmp_path, "r", recs, PHONES)]).data
    t = d.timeline
    assert t is not None and t.merged
    busy, calm = t.lanes
    assert len(busy.bars) <= 4 and sum(b.units for b in busy.bars) == busy.units == 28  # 2 of 30 skipped
    assert all(b.label == "" for b in busy.bars if b.units > 1)
    # A slice shows its worst verdict: one that holds a failure is never drawn as a pass.
    assert all(b.verdict != "pass" for b in busy.bars if b.not_passed)
    assert [b.label for b in calm.bars] == ["t00", "t01", "t02"] and calm.units == 3
    html = render_html(d)
    assert "merged into 4 time slices" in html
    svg = re.search(r"<h2>Timeline</h2>.*?(<svg.*?</svg>)", html, re.S)
    assert svg is not None and svg.group(1).count("<rect") == 2 + len(busy.bars) + len(calm.bars)
