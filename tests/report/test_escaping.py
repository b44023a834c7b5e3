"""Phone-written text in the reports is shown as text: no spreadsheet formula in scores.csv, no table break,
link, image or HTML in report.md, no markup in report.html, no invalid XML in junit.xml."""

from __future__ import annotations

import csv
import html
import json
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markupsafe import escape

from farm.report.aggregate import Aggregation, aggregate
from farm.report.charts import VERDICT_SYMBOLS
from farm.report.junit import render_junit
from farm.report.markdown import md_text, render_markdown
from farm.report.writers import render_html, write_csv
from farm.results.store import RECORDS_FILE
from tests.helpers.html import HtmlTables
from tests.helpers.records import record, write_run
from tests.helpers.shared_data import shared_data

FORMULAS = ['=HYPERLINK("http://x","y")', "+1+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1", "＝1+1"]

LINK = "[click me](http://evil.example/phish)"
IMAGE = "![](http://evil.example/pixel.png)"
SCRIPT = "<script>alert(1)</script>"
PIPES = "a | b || c \\| d"
NEWLINES = "first\n| fake | row |\n\n# heading"


def _rendered(markdown: str) -> str:
    """report.md as a GitHub-like renderer shows it: tables, strike-through, raw HTML passed through."""
    return MarkdownIt("commonmark").enable("table").enable("strikethrough").render(markdown)


def _tables(markdown: str) -> HtmlTables:
    parser = HtmlTables()
    parser.feed(_rendered(markdown))
    return parser


def _row(tables: HtmlTables, first: str) -> list[str]:
    """The row whose first cell is `first`; for the Not passed table (category, failure category, task, phone,
    outcome, reason, failing checks, evidence) the row of task `first`, as task, phone, outcome, failure category,
    reason."""
    failure = next((r for r in tables.rows if len(r) == 8 and r[2] == first), None)
    if failure is not None:
        return [failure[2], failure[3], failure[4], failure[1], failure[5]]
    return next(r for r in tables.rows if r and r[0] == first and not _grid_row(r))


def _grid_row(row: list[str]) -> bool:
    """A row of the task × phone grid: a unit name, then only verdict symbols or blanks."""
    return all(cell in {"", *VERDICT_SYMBOLS.values()} for cell in row[1:])


def _aggregate(tmp_path: Path, records: list[Any], phones: list[tuple[str, str]] | None = None) -> Aggregation:
    return aggregate([write_run(tmp_path, "r", records, phones or [("SER1", "Pixel 8")])])


def _csv_rows(agg: Aggregation) -> list[dict[str, str]]:
    with tempfile.TemporaryDirectory() as d:
        write_csv(agg, Path(d) / "scores.csv")
        # newline="": a CR inside a quoted cell is the cell's own, not a line end to translate.
        with (Path(d) / "scores.csv").open(encoding="utf-8-sig", newline="") as fh:
            return list(csv.DictReader(fh))


def test_csv_text_cells_that_a_spreadsheet_would_run_start_with_a_quote(tmp_path: Path) -> None:
    recs = [record(f"t{i}", run="r", passed=False, failure_category=text, reasons=[text]) for i, text in
            enumerate(FORMULAS)]
    rows = _csv_rows(_aggregate(tmp_path, recs))
    # The reason column collapses whitespace, so a leading tab or CR leaves `=1` behind: neutralised all the same.
    assert [(r["failure_category"], r["reason"]) for r in rows] == [
        ("'" + t, "'" + " ".join(t.split())) for t in FORMULAS]


def test_csv_formula_in_a_task_id_device_label_and_category_is_neutralised(tmp_path: Path) -> None:
    recs = [record("=1+2", run="r", device="SER1", category="@SUM(A1)", instance="-2+3")]
    rows = _csv_rows(_aggregate(tmp_path, recs, [("SER1", '=HYPERLINK("http://x","y")')]))
    assert (rows[0]["task_id"], rows[0]["category"], rows[0]["instance"]) == ("'=1+2", "'@SUM(A1)", "'-2+3")
    assert rows[0]["device"] == "'=HYPERLINK(\"http://x\",\"y\") · SER1"


def test_csv_text_that_is_not_a_formula_is_written_as_it_is(tmp_path: Path) -> None:
    recs = [record("calc-multiply", run="r", passed=False, reasons=["answer lacks 56088 (=, +, - inside)"])]
    row = _csv_rows(_aggregate(tmp_path, recs))[0]
    assert (row["task_id"], row["reason"], row["final_verdict"]) == (
        "calc-multiply", "answer lacks 56088 (=, +, - inside)", "fail")


def test_a_line_out_of_the_record_bounds_is_skipped_and_named_not_written_as_a_negative_cell(tmp_path: Path) -> None:
    # The record model refuses a negative duration; a line written around it is a damaged line for the
    # reports too, so no negative number (nor a cell to neutralise) comes of it.
    run_dir = write_run(tmp_path, "r", [record("t1", run="r", repeat=3)], [("SER1", "Pixel 8")])
    line = json.loads(record("t2", run="r").model_dump_json())
    line["metrics"]["total_ms"] = -1500.0
    with (run_dir / RECORDS_FILE).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(line) + "\n")
    agg = aggregate([run_dir])
    assert [(r["task_id"], r["repeat"], r["seconds"]) for r in _csv_rows(agg)] == [("t1", "3", "")]
    assert any("records.jsonl" in w and ":2" in w for w in agg.data.warnings), agg.data.warnings


def test_csv_rows_sort_by_the_value_not_by_the_neutralised_cell(tmp_path: Path) -> None:
    agg = _aggregate(tmp_path, [record(t, run="r") for t in ("b", "=a", "0c")])
    agg.ordered = agg.scan_ordered = False  # the sorting writer, as with several runs or relabelled phones
    junit = [c.get("name") for c in ET.fromstring(render_junit(agg)).iter("testcase")]
    assert junit == ["0c", "=a", "b"]
    assert [r["task_id"] for r in _csv_rows(agg)] == ["0c", "'=a", "b"]


def test_markdown_cells_keep_pipes_and_newlines_inside_the_cell(tmp_path: Path) -> None:
    recs = [record("t|1", run="r", passed=False, failure_category="route|x", reasons=[PIPES]),
            record("t2", run="r", passed=False, reasons=[NEWLINES])]
    md = render_markdown(_aggregate(tmp_path, recs).data)
    tables = _tables(md)
    assert _row(tables, "t|1") == ["t|1", "Pixel 8 · SER1", "failed", "route|x", PIPES]
    assert _row(tables, "t2")[-1] == " ".join(NEWLINES.split())
    assert _rendered(md).count("<h1>") == 1  # the report's title; the reason's "# heading" stayed in its cell


def test_markdown_shows_links_images_and_html_as_text(tmp_path: Path) -> None:
    recs = [record("t1", run="r", passed=False, reasons=[LINK]), record("t2", run="r", passed=False, reasons=[IMAGE]),
            record("t3", run="r", outcome="skipped", reasons=[SCRIPT]),
            record("t4", run="r", markers=["AF-<b>bold</b>", "AF-~~gone~~"], category="**loud**")]
    md = render_markdown(_aggregate(tmp_path, recs, [("SER1", "<img src=x onerror=alert(1)>")]).data)
    tables = _tables(md)
    assert tables.tags.isdisjoint({"a", "img", "script", "b"}) and tables.cell_tags == set()
    label = "<img src=x onerror=alert(1)> · SER1"
    assert _row(tables, "t1") == ["t1", label, "failed", "", LINK]
    assert _row(tables, "t2")[-1] == IMAGE
    assert _row(tables, "t3") == ["t3", label, SCRIPT]
    assert [label, "t4", "AF-<b>bold</b>, AF-~~gone~~"] in tables.rows
    assert _row(tables, "**loud**")[0] == "**loud**"


def test_markdown_escapes_cannot_be_undone_by_backslashes_in_the_data(tmp_path: Path) -> None:
    recs = [record("t1", run="r", passed=False, reasons=["\\|\\[x\\](http://evil.example)\\<i>\\"])]
    tables = _tables(render_markdown(_aggregate(tmp_path, recs).data))
    assert tables.tags.isdisjoint({"a", "i"}) and tables.cell_tags == set()
    assert _row(tables, "t1")[-1] == "\\|\\[x\\](http://evil.example)\\<i>\\"


def test_markdown_drops_terminal_controls_and_direction_overrides(tmp_path: Path) -> None:
    recs = [record("t1", run="r", passed=False, reasons=["red\x1b[31m text\u202eesrever\x00"])]
    md = render_markdown(_aggregate(tmp_path, recs).data)
    assert "\x1b" not in md and "\u202e" not in md and "\x00" not in md
    assert _row(_tables(md), "t1")[-1] == "red\ufffd[31m text\ufffdesrever\ufffd"


def test_markdown_warnings_and_notes_from_the_data_are_escaped(tmp_path: Path) -> None:
    agg = _aggregate(tmp_path, [record("t1", run="r", passed=False, end_reason="timeout")])
    agg.data.warnings = [f"phone said {IMAGE}"]
    agg.data.unfinished_runs = [SCRIPT]
    rendered = _rendered(render_markdown(agg.data))
    assert "<img" not in rendered and "<script" not in rendered
    assert html.escape(f"phone said {IMAGE}", quote=False) in rendered
    assert f"Not finished: {html.escape(SCRIPT, quote=False)}" in rendered


@settings(derandomize=True, max_examples=400, database=None, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=40))
def test_any_text_in_a_markdown_cell_renders_as_exactly_that_text(text: str) -> None:
    row = f"| head | next |\n|---|---|\n| {md_text(text)} | end |\n"
    parser = HtmlTables()
    parser.feed(_rendered(row))
    shown = " ".join(text.split())
    shown = "".join("\ufffd" if c < " " or "\x7f" <= c <= "\x9f" or c in "\u202a\u202b\u202c\u202d\u202e"
                    "\u2066\u2067\u2068\u2069" else c for c in shown)
    assert parser.rows[1:] == [[shown, "end"]]
    assert parser.cell_tags == set() and parser.tags == {"table", "thead", "tbody", "tr", "th", "td"}


def test_html_report_escapes_phone_text(tmp_path: Path) -> None:
    recs = [record("t1", run="r", passed=False, reasons=[SCRIPT], failure_category="<b>x</b>")]
    page = render_html(_aggregate(tmp_path, recs, [("SER1", '"><img src=x>')]).data)
    assert "<script>alert" not in page and "<img src=x>" not in page and "<b>x</b>" not in page
    assert escape(SCRIPT) in page and escape('"><img src=x> · SER1') in page


def test_junit_stays_well_formed_xml_with_controls_and_quotes_in_a_device_label(tmp_path: Path) -> None:
    recs = [record("t1", run="r", passed=False, reasons=["bad \x01 byte \ufffe <x> & \"q\""])]
    root = ET.fromstring(render_junit(_aggregate(tmp_path, recs, [("SER1", 'Pixel\x01 "8" <&>')])))
    suite = root.find("testsuite")
    assert suite is not None and suite.get("name") == 'r Pixel "8" <&> · SER1'
    failure = root.find(".//failure")
    assert failure is not None and failure.get("message") == 'bad  byte  <x> & "q"'


def test_real_instrumentation_and_web_answers_show_as_written(tmp_path: Path) -> None:
    # Real text with angle brackets: a JUnit assumption from an instrumentation capture, and WebVoyager's
    # reference answers, whose `<Ingredients>` a Markdown renderer would otherwise swallow as a tag.
    capture = shared_data("instrument", "adam_log_1.input").read_text(encoding="utf-8")
    stack = next(line.split("stack=", 1)[1] for line in capture.splitlines() if "AssumptionViolated" in line)
    answers = json.loads(shared_data("webvoyager", "reference_answer.json").read_text(encoding="utf-8"))
    texts = [stack, *(a["ans"] for a in answers["Allrecipes"]["answers"] if "<" in a["ans"])][:6]
    recs = [record(f"t{i}", run="r", passed=False, reasons=[t]) for i, t in enumerate(texts)]
    agg = _aggregate(tmp_path, recs)
    tables = _tables(render_markdown(agg.data))
    assert [_row(tables, f"t{i}")[-1] for i in range(len(texts))] == [" ".join(t.split()) for t in texts]
    page = render_html(agg.data)
    assert all(escape(t) in page for t in texts)
