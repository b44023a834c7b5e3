"""A lane's section renders in both reports after the rate tables and before tokens and cost: its heading,
notes, tables (every cell escaped), charts (HTML only, as markup) and links (relative to the report)."""

from __future__ import annotations

from pathlib import Path

from markdown_it import MarkdownIt

from farm.report.aggregate import aggregate
from farm.report.lanes import LaneSection, SectionTable
from farm.report.markdown import render_markdown
from farm.report.model import ReportData
from farm.report.writers import render_html
from tests.helpers.html import HtmlTables
from tests.helpers.records import record, write_run

SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">'
       '<rect id="lane-chart" width="5" height="5"/></svg>')
HOSTILE = "a | b\n| x | y |\n<script>alert(1)</script> [link](http://evil.example)"


def _section(**kw: object) -> LaneSection:
    fields: dict[str, object] = {
        "lane": "web", "run": "r", "title": "Web backends: playwright vs extension",
        "notes": ["Paired by task and seed; P90 only from 10 successes."],
        "tables": [SectionTable(title="Paired results", header=["backend", "success", "median ms"],
                                rows=[["playwright", "9/10", "1200"], ["extension", HOSTILE, "1500"]],
                                numeric=[2])],
        "svg": [SVG], "links": ["web/report.md", "../../etc/passwd"],
    }
    fields.update(kw)
    return LaneSection.model_validate(fields)


def _data(tmp_path: Path, *sections: LaneSection) -> ReportData:
    d = aggregate([write_run(tmp_path, "r", [record("x", run="r")], [("SER1", "Pixel 8")])]).data
    d.lane_sections = list(sections)
    d.run_paths = {"r": "runs/r"}
    return d


def test_the_section_sits_after_the_rate_tables_and_before_tokens(tmp_path: Path) -> None:
    d = _data(tmp_path, _section())
    md = render_markdown(d)
    title = "## Web backends: playwright vs extension"
    assert md.index("## 运行小结") < md.index(title) < md.index("## Tokens and cost")
    html = render_html(d)
    assert html.index("<h2>By phone</h2>") < html.index("<h2>Web backends") < html.index("<h2>Tokens and cost</h2>")


def test_markdown_cells_stay_in_their_cell_and_show_as_text(tmp_path: Path) -> None:
    md = render_markdown(_data(tmp_path, _section()))
    section = md.split("## Web backends", 1)[1].split("\n## ", 1)[0]
    parser = HtmlTables()
    parser.feed(MarkdownIt("commonmark").enable("table").render(section))
    assert parser.rows == [["backend", "success", "median ms"], ["playwright", "9/10", "1200"],
                           ["extension", " ".join(HOSTILE.split()), "1500"]]
    assert "script" not in parser.tags and "|---|---|---:|" in section
    assert "Paired by task and seed; P90 only from 10 successes." in section
    assert "Charts: in report.html." in section and "<svg" not in section


def test_html_cells_are_escaped_and_charts_are_inlined_as_markup(tmp_path: Path) -> None:
    html = render_html(_data(tmp_path, _section()))
    assert SVG in html
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert '<td class="n">1500</td>' in html


def test_links_resolve_from_the_report_and_a_path_out_of_the_run_is_not_linked(tmp_path: Path) -> None:
    d = _data(tmp_path, _section())
    md = render_markdown(d)
    assert "- [web/report.md](runs/r/web/report.md)" in md
    assert "](runs/r/../../etc/passwd)" not in md and "- ../../etc/passwd" in md
    html = render_html(d)
    assert '<a href="runs/r/web/report.md">web/report.md</a>' in html and 'href="runs/r/../../' not in html


def test_a_row_of_the_wrong_length_still_makes_a_table(tmp_path: Path) -> None:
    table = SectionTable(header=["a", "b"], rows=[["1"], ["1", "2", "3"]])
    md = render_markdown(_data(tmp_path, _section(tables=[table], svg=[], links=[])))
    section = md.split("## Web backends", 1)[1].split("\n## ", 1)[0]
    assert "| 1 |  |\n| 1 | 2 |\n" in section and "Charts" not in section


def test_sections_of_two_runs_are_labelled_with_their_run(tmp_path: Path) -> None:
    a = write_run(tmp_path, "ra", [record("x", run="ra")], [("SER1", "Pixel 8")])
    b = write_run(tmp_path, "rb", [record("x", run="rb")], [("SER1", "Pixel 8")])
    d = aggregate([a, b]).data
    d.lane_sections = [_section(run="ra", title="Desktop batches", svg=[], links=[]),
                       _section(run="rb", title="Desktop batches", svg=[], links=[])]
    md = render_markdown(d)
    assert md.index("## Desktop batches — ra (A)") < md.index("## Desktop batches — rb (B)")
