"""The run page's task × phone grid (every cell a link: to its unit, or to the units table filtered to its units)
and its failures grouped by failing check, end reason or category (each group collapsible, its units one click
away); both plain HTML, paged and capped on the server, and hostile text stays text."""

from __future__ import annotations

import re
from collections import Counter
from html import unescape
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from farm.results.record import CheckResult
from farm.view import failure_groups, run_grid
from farm.view.app import create_app
from farm.view.unit_query import UnitQuery
from tests.helpers.records import record, write_run
from tests.view.builders import WIDE, WIDE_CATEGORIES, WIDE_PHONES, make_wide_run, wide_verdict

N = 250
ROW = re.compile(r'<tr class="v-row-(\w+)"><td><a href="([^"]+)">([^<]*)</a>')
PHONE_1, PHONE_2 = "Pixel 7 · SER1", "Pixel 8 · SER2"


def _grid(html: str) -> tuple[list[str], list[tuple[str, list[tuple[str, str, str | None]]]]]:
    """The grid's phone columns and, per row, its task and each cell's (colour, text, link)."""
    table = re.search(r'<table class="matrix grid">(.*?)</table>', html, re.S)
    assert table is not None
    rows = re.findall(r"<tr>(.*?)</tr>", table.group(1), re.S)
    phones = [unescape(p) for p in re.findall(r'<th class="col">([^<]*)</th>', rows[0])]
    out = []
    for row in rows[1:]:
        task = re.search(r'<th class="row">([^<]*?) <span', row)
        assert task is not None
        cells = []
        for klass, errs, body in re.findall(r'<td class="c-(\w+)( errs)?">(.*?)</td>', row, re.S):
            link = re.search(r'<a href="([^"]+)"[^>]*>([^<]*)</a>', body)
            assert bool(errs) == bool(link and re.search(r" e\d+$", link.group(2))), body  # errors: framed
            cells.append((klass, unescape(link.group(2)) if link else "", unescape(link.group(1)) if link else None))
        out.append((unescape(task.group(1)), cells))
    return phones, out


def _table(html: str) -> list[tuple[str, str, str]]:
    return [(v, unescape(href), unescape(task)) for v, href, task in ROW.findall(html)]


@pytest.fixture
def small(tmp_path: Path) -> TestClient:
    """gamma fails on SER1 and errs on SER2; alpha passes and fails on SER1 (two repeats), passes on SER2; beta's
    error on SER1 was tried again and passed, SER2 skipped it; delta passes on SER1 only."""
    recs = [
        record("alpha", run="r", device="SER1", repeat=1), record("alpha", run="r", device="SER1", repeat=2,
                                                                  passed=False),
        record("alpha", run="r", device="SER2"),
        record("beta", run="r", device="SER1", outcome="error", passed=False),
        record("beta", run="r", device="SER1", attempt=2), record("beta", run="r", device="SER2", outcome="skipped",
                                                                  passed=False),
        record("gamma", run="r", device="SER1", passed=False, end_reason="answer",
               checks=[CheckResult(type="answer_regex", passed=False, detail="looked for 7")]),
        record("gamma", run="r", device="SER2", outcome="error", passed=False, end_reason="timeout",
               reasons=["the phone stopped answering"]),
        record("delta", run="r", device="SER1"),
    ]
    write_run(tmp_path, "r", recs, phones=[("SER1", "Pixel 7"), ("SER2", "Pixel 8")])
    return TestClient(create_app(tmp_path), base_url="http://127.0.0.1")


def test_every_cell_is_coloured_counted_and_links_its_unit_or_the_table_of_its_units(small: TestClient) -> None:
    page = small.get("/runs/r/")
    phones, rows = _grid(page.text)
    assert phones == [PHONE_1, PHONE_2]
    several = "?phone=Pixel+7+%C2%B7+SER1&task=alpha#units"
    assert rows == [
        ("gamma", [("fail", "0/1", "/runs/r/units/gamma.SER1.a1"), ("error", "– e1", "/runs/r/units/gamma.SER2.a1")]),
        ("alpha", [("mixed", "1/2", several), ("pass", "1/1", "/runs/r/units/alpha.SER2.a1")]),
        ("beta", [("pass", "1/1", "/runs/r/units/beta.SER1.a2"), ("skipped", "–", "/runs/r/units/beta.SER2.a1")]),
        ("delta", [("pass", "1/1", "/runs/r/units/delta.SER1.a1"), ("none", "", None)]),
    ]
    assert "Tasks 1–4 of 4: the 2 with failures or errors first" in page.text
    for _, cells in rows:
        for _, _, link in cells:
            if link is not None and link.startswith("/runs/"):
                task = link.split("/")[-1].split(".")[0]
                unit = small.get(link)
                assert unit.status_code == 200 and f"<h1>{task} " in unit.text, link
    # The cell of two units: the table lists exactly those two (the latest tries of alpha on SER1).
    listed = _table(small.get(f"/runs/r/{several}").text)
    assert sorted((v, t) for v, _, t in listed) == [("fail", "alpha"), ("pass", "alpha")]
    assert {href for _, href, _ in listed} == {"/runs/r/units/alpha.SER1.a1", "/runs/r/units/alpha.SER1.r2.a1"}


def test_the_grid_pages_its_tasks_failures_first_and_keeps_the_tables_filters(tmp_path: Path) -> None:
    make_wide_run(tmp_path / "runs", tmp_path / "tasks", N)
    client = TestClient(create_app(tmp_path / "runs"), base_url="http://127.0.0.1")
    bad = [f"task-{i:03d}" for i in range(N) if wide_verdict(i)[0] in ("failed", "error")]
    good = [f"task-{i:03d}" for i in range(N) if wide_verdict(i)[0] not in ("failed", "error")]
    shown: list[str] = []
    for n in range(1, 6):
        html = client.get(f"/runs/{WIDE}/?verdict=fail&gpage={n}").text
        phones, rows = _grid(html)
        assert phones == sorted(f"{m} · {s}" for s, m in WIDE_PHONES) and len(rows) == 50
        shown += [task for task, _ in rows]
        assert f"grid page {n} of 5" in html
        # The units table keeps its filter while the grid pages, and its form keeps the grid's page.
        assert {v for v, _, _ in _table(html)} == {"fail"}
        if n > 1:
            assert f'<input type="hidden" name="gpage" value="{n}">' in html
    assert shown == bad + good  # each group by id
    assert f"the {len(bad)} with failures or errors first" in client.get(f"/runs/{WIDE}/").text
    past = client.get(f"/runs/{WIDE}/?gpage=99").text
    assert "grid page 5 of 5" in past and [t for t, _ in _grid(past)[1]] == good[-50:]
    assert 'href="?verdict=fail&amp;gpage=3#grid">next tasks' in client.get(f"/runs/{WIDE}/?verdict=fail&gpage=2").text


def test_a_run_of_more_phones_than_the_grid_shows_keeps_those_with_most_failures_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_wide_run(tmp_path / "runs", tmp_path / "tasks", N)
    monkeypatch.setattr(run_grid, "GRID_PHONES", 2)
    bad = Counter(WIDE_PHONES[i % 3] for i in range(N) if wide_verdict(i)[0] in ("failed", "error"))
    kept = sorted(f"{m} · {s}" for (s, m), _ in sorted(bad.items(), key=lambda kv: -kv[1])[:2])
    html = TestClient(create_app(tmp_path / "runs"), base_url="http://127.0.0.1").get(f"/runs/{WIDE}/").text
    assert _grid(html)[0] == kept
    assert "1 phone with the fewest failures and errors not shown" in unescape(html)


def _groups(html: str) -> list[tuple[str, str, int, list[str], str, bool]]:
    """(verdict, value, count, unit links, link to the table, open) of each failure group."""
    out = []
    for attrs, body in re.findall(r'<details class="group"([^>]*)>(.*?)</details>', html, re.S):
        head = re.search(r'<span class="badge v-(\w+)">\w+</span> (?:<code>(.*?)</code>|<em>(.*?)</em>) — '
                         r"<strong>(\d+)</strong>", body)
        assert head is not None, body
        units = [unescape(u) for u in re.findall(r'<li><a href="([^"]+)">', body)]
        table = re.search(r'<a class="group-all" href="([^"]+)">', body)
        assert table is not None
        value = unescape(head.group(2)) if head.group(2) is not None else "-"
        out.append((head.group(1), value, int(head.group(4)), units, unescape(table.group(1)), " open" in attrs))
    return out


@pytest.mark.parametrize("by", ["check", "end", "category"])
def test_failures_are_grouped_and_each_group_leads_to_exactly_its_units(tmp_path: Path, by: str) -> None:
    make_wide_run(tmp_path / "runs", tmp_path / "tasks", N)
    client = TestClient(create_app(tmp_path / "runs"), base_url="http://127.0.0.1")

    def value(i: int) -> str:
        outcome = wide_verdict(i)[0]
        if by == "check":
            return "answer_regex" if outcome == "failed" else "-"
        return ("answer" if outcome == "failed" else "error") if by == "end" else WIDE_CATEGORIES[i % 3]

    expected = Counter(("fail" if wide_verdict(i)[0] == "failed" else "error", value(i)) for i in range(N)
                       if wide_verdict(i)[0] in ("failed", "error"))
    html = client.get(f"/runs/{WIDE}/?group={by}").text
    groups = _groups(html)
    assert {(v, g): n for v, g, n, *_ in groups} == dict(expected)
    assert [n for _, _, n, *_ in groups] == sorted(expected.values(), reverse=True)
    for verdict, g, count, units, table, is_open in groups:
        assert not is_open  # collapsed until a reader opens it; no script needed
        assert len(units) == min(count, failure_groups.GROUP_UNITS)
        members = {f"task-{i:03d}" for i in range(N) if wide_verdict(i)[0] in ("failed", "error")
                   and ("fail" if wide_verdict(i)[0] == "failed" else "error") == verdict and value(i) == g}
        for href in units:
            unit = client.get(href)
            assert unit.status_code == 200 and href.split("/")[-1].split(".")[0] in members
        listed = client.get(f"/runs/{WIDE}/{table.split('#')[0]}&per=500").text
        assert {t for _, _, t in _table(listed)} == members and f"of {count} matching" in listed


def test_more_groups_than_are_shown_are_counted_and_a_run_without_failures_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_wide_run(tmp_path / "runs", tmp_path / "tasks", N)
    monkeypatch.setattr(failure_groups, "MAX_GROUPS", 2)
    html = TestClient(create_app(tmp_path / "runs"), base_url="http://127.0.0.1").get(
        f"/runs/{WIDE}/?group=category").text
    shown = _groups(html)
    errors_total = sum(wide_verdict(i)[0] == "error" for i in range(N))
    failed_total = sum(wide_verdict(i)[0] == "failed" for i in range(N))
    hidden = errors_total + failed_total - sum(n for _, _, n, *_ in shown)
    assert len(shown) == 2 and hidden > 0
    assert f"4 smaller groups ({hidden} units) not shown" in html
    write_run(tmp_path / "runs", "green", [record("t1", run="green")])
    green = TestClient(create_app(tmp_path / "runs"), base_url="http://127.0.0.1").get("/runs/green/").text
    assert "No latest try failed or ended in an error." in green and "<details" not in green


HOSTILE = '<script>alert("x")</script>'


def test_hostile_check_types_and_categories_stay_text_and_still_filter(tmp_path: Path) -> None:
    recs = [record("t1", run="r", passed=False, category=HOSTILE,
                   checks=[CheckResult(type=HOSTILE, passed=False, detail="<img src=x onerror=alert(1)>")]),
            record("t2", run="r", passed=False, category="", checks=[])]
    write_run(tmp_path, "r", recs, phones=[("SER1", '<b>Pixel</b>')])
    client = TestClient(create_app(tmp_path), base_url="http://127.0.0.1")
    for by in ("check", "category"):
        html = client.get(f"/runs/r/?group={by}").text
        assert "<script>" not in html and "<img src=x" not in html and "<b>Pixel" not in html
        groups = {g: table for _, g, _, _, table, _ in _groups(html)}
        assert set(groups) == {HOSTILE, "-"}
        for g, table in groups.items():
            rows = _table(client.get(f"/runs/r/{table}").text)
            assert [t for _, _, t in rows] == (["t1"] if g == HOSTILE else ["t2"]), (by, g)


def test_view_only_parameters_keep_the_tables_page_and_filters_send_it_back() -> None:
    q = UnitQuery(verdict="fail", page=3)
    assert q.link(gpage=2) == "?verdict=fail&page=3&gpage=2"
    assert q.link(group="end") == "?verdict=fail&page=3&group=end"
    assert q.link(task="a b") == "?verdict=fail&task=a+b"
    parsed = UnitQuery.parse({"gpage": "-4", "group": "<x>", "check": "-", "end": "timeout", "task": " t "})
    assert (parsed.gpage, parsed.group, parsed.check, parsed.end, parsed.task) == (1, "check", "-", "timeout", "t")
    assert parsed.where() == ("latest AND task_id = ? AND coalesce(check_type, '') = '' AND end_reason = ?",
                              ["t", "timeout"])
