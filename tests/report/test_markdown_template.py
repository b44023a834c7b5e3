"""report.md is rendered from templates/report.md.j2: every table is well formed (one cell count per table, what
ever the data holds), the time split is a table with its shares, and sections are separated by one blank line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from farm.report.aggregate import aggregate
from farm.report.lanes import LaneSection, SectionTable
from farm.report.markdown import TEMPLATES, render_markdown
from farm.report.model import ReportData
from farm.results.record import DeviceVerdict, Record, RunMetrics
from tests.helpers.records import busy_records, record, write_run

ODD = "a | b\\| c\n新的一行 `x` [y](z)"
PHONES = [("SER1", "Pixel | 8"), ("SER2", "红米 Note 13")]


def _rich(tmp_path: Path) -> ReportData:
    def recs(run: str, flip: int) -> list[Record]:
        return [
            *busy_records(run, ["SER1", "SER2"], ["计算器-加法", "t|2", "t3"], flip=flip),
            record("odd", run=run, device="SER1", passed=False, reasons=[ODD], failure_category="route|x",
                   device_verdict=DeviceVerdict(outcome="succeeded", passed=True), attempt=2, markers=[ODD]),
            record("login", run=run, device="SER2", passed=False, outcome="takeover", takeover_kind="login",
                   reasons=[ODD], metrics=RunMetrics(model_ms=5, total_ms=9)),
        ]

    a = write_run(tmp_path, "ra", recs("ra", 0), PHONES)
    b = write_run(tmp_path, "rb", recs("rb", 2), PHONES)
    d = aggregate([a, b]).data
    d.notes, d.notes_total, d.warnings = [ODD], 2, [ODD]
    d.lane_sections = [LaneSection(lane="desktop", run="rb", title=ODD, notes=[ODD],
                                   tables=[SectionTable(title=ODD, header=["a|b", "n"], rows=[[ODD, "1"]],
                                                        numeric=[1])])]
    return d


def _tables(md: str) -> list[list[str]]:
    """Blocks of consecutive table lines."""
    blocks: list[list[str]] = []
    previous = False
    for line in md.splitlines():
        row = line.startswith("|")
        if row and not previous:
            blocks.append([])
        if row:
            blocks[-1].append(line)
        previous = row
    return blocks


def _cells(line: str) -> int:
    """Cells of a table line: pipes not escaped by a backslash (an escaped backslash escapes nothing)."""
    return len(re.findall(r"(?<!\\)\|", line.replace("\\\\", ""))) - 1


def test_every_table_has_one_cell_count_whatever_the_data_holds(tmp_path: Path) -> None:
    md = render_markdown(_rich(tmp_path))
    tables = _tables(md)
    assert len(tables) >= 20
    for table in tables:
        assert len({_cells(line) for line in table}) == 1, "\n".join(table)
        assert re.fullmatch(r"\|(:?-+:?\|)+", table[1]), table[1]
    # A table is never glued to the paragraph above it.
    for line, following in zip(md.splitlines(), md.splitlines()[1:], strict=False):
        if following.startswith("|") and line and not line.startswith("|"):
            pytest.fail(f"no blank line before a table: {line!r}")


def test_sections_are_separated_by_exactly_one_blank_line(tmp_path: Path) -> None:
    md = render_markdown(_rich(tmp_path))
    assert "\n\n\n" not in md and md.endswith("\n") and not md.endswith("\n\n")
    for heading in re.finditer(r"^#+ .*$", md, re.MULTILINE):
        start = heading.start()
        assert start == 0 or md[start - 2:start] == "\n\n", heading.group(0)


def test_time_split_is_a_five_column_table_whose_shares_add_up(tmp_path: Path) -> None:
    md = render_markdown(_rich(tmp_path))
    block = md.split("Time split (ms):\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert block[0] == "| part | total | known | unknown | share |"
    rows = [line.strip("|").split(" | ") for line in block[2:]]
    assert [r[0].strip() for r in rows] == ["model_ms", "screen_read_ms", "action_ms", "other_ms"]
    assert all(len(r) == 5 for r in rows)
    assert sum(float(r[4].strip(" %")) for r in rows) == pytest.approx(100, abs=0.2)


def test_report_md_is_what_the_template_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from farm.report import markdown

    edited = tmp_path / "templates"
    edited.mkdir()
    text = (TEMPLATES / "report.md.j2").read_text(encoding="utf-8")
    (edited / "report.md.j2").write_text(text.replace("## Tokens and cost", "## Tokens and cost, edited"),
                                         encoding="utf-8")
    monkeypatch.setattr(markdown, "TEMPLATES", edited)
    md = render_markdown(_rich(tmp_path))
    assert "## Tokens and cost, edited" in md and "{{" not in md and "{%" not in md
