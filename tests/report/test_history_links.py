"""history.md and history.html link each night's report and each unit's run record, relative to where they are
written, percent-encoded and escaped."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path
from urllib.parse import unquote

from farm.report.history import default_out_dir, render_history_html, render_history_markdown, write_history
from farm.report.history_data import History, build_history, load_history
from tests.helpers.history_nights import mem_night, passes
from tests.helpers.nights import night_records, write_night

HOSTILE = '<img src=x onerror=alert(1)>"|]'


def _runs(runs: Path) -> History:
    """Two nights with reports; t fails on G1 on the newest."""
    for day in (1, 2):
        write_night(runs, f"n{day}", night_records(f"n{day}", {("t", "G1"): day == 1, ("u", "P1"): True}), day=day)
        (runs / f"n{day}" / "report.html").write_text("<html></html>", encoding="utf-8")
    return load_history(runs, label="nightly")


def _hrefs(html: str) -> list[str]:
    return [unescape(h) for h in re.findall(r'href="([^"]*)"', html)]


def _hostile(tmp_path: Path, *, task: str = "t", reason: str = "failed", report_dir: str = "n1") -> History:
    night = mem_night("n1", passes(task, 1, of=2), run_dir=tmp_path / report_dir, has_report=True,
                      reasons=[reason])
    return build_history([night], runs_dir=str(tmp_path))


def test_the_night_rows_link_their_reports_from_the_labels_history_folder(tmp_path: Path) -> None:
    h = _runs(tmp_path)
    md, html = write_history(h, default_out_dir(tmp_path, "nightly", "n2"), own=True)
    assert "| [n1](../../n1/report.html) | 2026-12-01T03:00:00.000000Z | finished |" in md.read_text(encoding="utf-8")
    assert '<td><a href="../../n2/report.html">n2</a></td>' in html.read_text(encoding="utf-8")


def test_every_link_leads_to_an_existing_report_or_the_run_record_from_an_out_folder(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    h = _runs(runs)
    out = tmp_path / "elsewhere" / "deep"
    _md, html = write_history(h, out)
    hrefs = _hrefs(html.read_text(encoding="utf-8"))
    assert "../../runs/n1/report.html" in hrefs
    targets = {(out / unquote(href)).resolve() for href in hrefs}
    assert targets == {(runs / "n1" / "report.html").resolve(), (runs / "n2" / "report.html").resolve(),
                       *((runs / n / "android" / p / t / "run").resolve()
                         for n in ("n1", "n2") for p, t in (("G1", "t"), ("P1", "u")))}


def test_the_grid_cell_opens_a_unit_of_its_night_and_links_each_failed_units_run_record(tmp_path: Path) -> None:
    md = render_history_markdown(_runs(tmp_path))
    assert ('| t | android | read/system | flaky, regressed | [1/1](n1/android/G1/t/run "n1: a unit of the task")'
            ' | [0/1](n2/android/G1/t/run "n2: its first unit that did not pass")'
            ' [✗](n2/android/G1/t/run "Galaxy S24 · G1 · repeat 1: failed") |') in md


def test_a_cell_whose_units_name_no_run_record_opens_the_nights_report(tmp_path: Path) -> None:
    for day in (1, 2):
        write_night(tmp_path, f"n{day}", night_records(f"n{day}", {("t", "G1"): True}, evidence=None), day=day)
        (tmp_path / f"n{day}" / "report.html").write_text("<html></html>", encoding="utf-8")
    md = render_history_markdown(load_history(tmp_path, label="nightly"))
    assert "| t | android | read/system |  | [1/1](n1/report.html) | [1/1](n2/report.html) |" in md


def test_a_night_without_a_report_is_not_linked(tmp_path: Path) -> None:
    h = _runs(tmp_path)
    (tmp_path / "n1" / "report.html").unlink()
    md = render_history_markdown(load_history(tmp_path, label="nightly"))
    assert "| n1 | 2026-12-01" in md and "[n2](n2/report.html)" in md
    assert h.nights[0].report == "n1/report.html"


def test_a_link_target_with_spaces_and_quotes_is_percent_encoded(tmp_path: Path) -> None:
    h = _hostile(tmp_path, report_dir='we"ird dir #1')
    html, md = render_history_html(h), render_history_markdown(h)
    assert '<a href="we%22ird%20dir%20%231/report.html">n1</a>' in html
    assert '"we%22ird%20dir%20%231/android/S2/t/run"' in html
    assert "[n1](we%22ird%20dir%20%231/report.html)" in md
    assert 'we"ird' not in html and 'we"ird' not in md


def test_a_link_target_never_becomes_a_scheme(tmp_path: Path) -> None:
    h = _hostile(tmp_path)
    night = h.nights[0].model_copy(update={"report": "javascript:alert(1)"})
    html = render_history_html(h.model_copy(update={"nights": [night]}))
    assert "javascript:" not in html and 'href="javascript%3Aalert%281%29"' in html


def test_a_hostile_task_id_and_reason_are_escaped_in_the_html(tmp_path: Path) -> None:
    html = render_history_html(_hostile(tmp_path, task=HOSTILE, reason=HOSTILE))
    assert "<img" not in html
    assert "<td>&lt;img src=x onerror=alert(1)&gt;&quot;|]</td>" in html
    assert 'title="Pixel 8 · S2 · repeat 1: &lt;img src=x onerror=alert(1)&gt;&quot;|]"' in html


def test_a_hostile_task_id_and_reason_are_inert_in_the_markdown(tmp_path: Path) -> None:
    md = render_history_markdown(_hostile(tmp_path, task=HOSTILE, reason=HOSTILE))
    assert "<img" not in md
    row = next(ln for ln in md.splitlines() if "[1/2]" in ln)
    assert row.startswith('| &lt;img src=x onerror=alert(1)&gt;"\\|\\] | android |')
    assert len(re.findall(r"(?<!\\)\|", row)) == 6  # task, lane, category, flags, n1: five cells
    assert row.endswith(' "Pixel 8 · S2 · repeat 1: &lt;img src=x onerror=alert(1)&gt;\\"\\|\\]") |')


def test_a_long_reason_is_cut_in_the_tooltip(tmp_path: Path) -> None:
    html = render_history_html(_hostile(tmp_path, reason="x" * 500))
    (title,) = (t for t in re.findall(r'title="([^"]*)"', html) if "x" * 20 in t)
    assert title.endswith("x…") and len(title) < 200
