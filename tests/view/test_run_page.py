"""The run page: its headline, report files and a units table filtered, searched and paged on the server, every row
linking to a unit page that opens; hostile record text stays text."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from farm.report.build import build
from farm.report.headline import headline, headline_text, read_headline
from farm.results.record import CheckResult
from farm.results.store import RECORDS_FILE, append_records
from farm.view.app import create_app
from farm.view.unit_index import build_index
from farm.view.unit_lookup import find_unit
from farm.view.unit_query import UnitQuery
from farm.view.units import load_units
from tests.helpers.records import record, write_run
from tests.view.builders import (
    ANSWER_WORD,
    CHECK_WORD,
    GOAL_WORD,
    WIDE,
    make_wide_run,
    wide_records,
    wide_verdict,
)

N = 250
ROW = re.compile(r'<tr class="v-row-(\w+)"><td><a href="([^"]+)">([^<]*)</a>')


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> tuple[TestClient, Path]:
    root = tmp_path_factory.mktemp("wide")
    run_dir = make_wide_run(root / "runs", root / "tasks", N)
    return TestClient(create_app(root / "runs", tasks_dir=root / "tasks"), base_url="http://127.0.0.1"), run_dir


def _rows(html: str) -> list[tuple[str, str, str]]:
    """(verdict, unit URL, task id) of each row of the units table."""
    return [(v, unescape(href), unescape(task)) for v, href, task in ROW.findall(html)]


def _expected(keep: object = None) -> list[int]:
    return [i for i in range(N) if keep is None or keep(i)]  # type: ignore[operator]


def test_the_run_page_leads_with_the_headline_counted_as_the_reports_count_it(wide: tuple[TestClient, Path]) -> None:
    client, _ = wide
    page = client.get(f"/runs/{WIDE}/")
    assert page.status_code == 200
    # No report yet: the headline is counted from the records by the headline's own rules, and says so.
    assert headline_text(headline(wide_records(N))) in unescape(page.text)
    assert "No report yet: counted from the records" in page.text and f"farm report {WIDE}" in page.text
    for fact in ("nightly", "2026-12-01 03:00:00", "executor host", "policy model", "model gpt-test", "split tune",
                 "Pixel 8 · SER2", "finished"):
        assert fact in unescape(page.text), fact


def test_the_headline_is_the_current_reports_and_its_files_are_one_click_away(tmp_path: Path) -> None:
    run_dir = make_wide_run(tmp_path / "runs", tmp_path / "tasks", 40)
    build([run_dir])
    client = TestClient(create_app(tmp_path / "runs"), base_url="http://127.0.0.1")
    page = unescape(client.get(f"/runs/{WIDE}/").text)
    written = read_headline(run_dir)
    assert written is not None and written.text in page and "The headline of the run's current report." in page
    for name in ("report.html", "report.md", "junit.xml", "scores.csv", "headline.json"):
        assert f'href="/runs/{WIDE}/{name}"' in page, name
        assert client.get(f"/runs/{WIDE}/{name}").status_code == 200, name
    assert "No report.html yet" not in page


def test_failures_come_first_and_every_row_links_to_a_unit_page_that_opens(wide: tuple[TestClient, Path]) -> None:
    client, _ = wide
    seen: list[tuple[str, str, str]] = []
    for n in (1, 2, 3):
        seen += _rows(client.get(f"/runs/{WIDE}/?page={n}").text)
    assert len(seen) == N and len({url for _, url, _ in seen}) == N
    ranks = [("fail", "error", "pass", "skipped").index(v) for v, _, _ in seen]
    assert ranks == sorted(ranks)
    for verdict, url, task in seen:
        unit = client.get(url)
        assert unit.status_code == 200, url
        assert f"<h1>{task} <span class=\"badge v-{verdict}\">{verdict}</span></h1>" in unit.text, url


def test_page_two_of_a_250_unit_run_holds_units_101_to_200(wide: tuple[TestClient, Path]) -> None:
    client, _ = wide
    first, second = (client.get(f"/runs/{WIDE}/?page={n}").text for n in (1, 2))
    rows = _rows(second)
    assert len(rows) == 100 and not {r[1] for r in rows} & {r[1] for r in _rows(first)}
    assert "Units 101–200 of 250, page 2 of 3" in second
    assert 'href="?page=3#units" rel="next"' in second and 'href="?#units" rel="first"' in second
    last = client.get(f"/runs/{WIDE}/?page=99&per=200").text  # past the end: the last page
    assert len(_rows(last)) == 50 and "page 2 of 2" in last


@pytest.mark.parametrize(("query", "keep"), [
    ("verdict=fail", lambda i: wide_verdict(i)[0] == "failed"),
    ("outcome=error", lambda i: wide_verdict(i)[0] == "error"),
    ("category=write", lambda i: i % 3 == 1),
    ("phone=Galaxy+S23+%C2%B7+SER3", lambda i: i % 3 == 2),
    ("verdict=pass&category=web", lambda i: wide_verdict(i)[1] and i % 3 == 2),
])
def test_filters_by_verdict_outcome_category_and_phone(wide: tuple[TestClient, Path], query: str,
                                                       keep: object) -> None:
    client, _ = wide
    html = client.get(f"/runs/{WIDE}/?{query}&per=500").text
    tasks = sorted(task for _, _, task in _rows(html))
    assert tasks == [f"task-{i:03d}" for i in _expected(keep)], query
    assert f"of {len(tasks)} matching" in html


@pytest.mark.parametrize(("words", "task"), [
    (GOAL_WORD.upper(), "task-007"),  # the goal, from the task set (any case)
    (ANSWER_WORD, "task-012"),  # the answer
    (f"looked {CHECK_WORD}", "task-025"),  # the check's detail; every word must be found
    ("task-042", "task-042"),  # the task id
])
def test_search_finds_a_word_of_the_goal_the_answer_the_checks_or_the_task_id(wide: tuple[TestClient, Path],
                                                                             words: str, task: str) -> None:
    client, _ = wide
    html = client.get(f"/runs/{WIDE}/", params={"q": words}).text
    assert [t for _, _, t in _rows(html)] == [task]


def test_a_goal_is_searched_only_while_its_task_file_is_the_one_the_run_ran(tmp_path: Path) -> None:
    run_dir = make_wide_run(tmp_path / "runs", tmp_path / "tasks", 12)
    edited = tmp_path / "tasks" / "read/system" / "task-006.json"
    edited.write_text('{"id": "task-006", "goal": "a goal written after the run"}', encoding="utf-8")
    index = build_index(tmp_path / "runs", run_dir, tmp_path / "tasks")
    assert index.page(UnitQuery(q=GOAL_WORD)).matching == 1
    assert index.page(UnitQuery(q="after the run")).matching == 0


def test_keys_are_the_unit_pages_keys_when_two_attempts_would_share_one(tmp_path: Path) -> None:
    recs = [record("a", run="r", device="127.0.0.1:5555"), record("a", run="r", device="127.0.0.1_5555"),
            record("b", run="r", outcome="error", passed=False), record("b", run="r", attempt=2),
            record("ü/x", run="r", instance="3", repeat=2, passed=False)]
    run_dir = Path(write_run(tmp_path, "r", recs))
    index = build_index(tmp_path, run_dir)
    keys = {u.key for u in index.page(UnitQuery(tries="all")).rows}
    assert keys == {u.key for u in load_units(run_dir).units} and len(keys) == 5
    assert index.page(UnitQuery()).matching == 4  # the earlier try of b is left out unless asked for
    assert index.headline() == headline(recs)


def test_a_unit_found_through_the_index_is_the_one_every_record_read_in_python_gives(tmp_path: Path) -> None:
    odd = 'a "quoted" \\ back/slashed ünïcode id'
    recs = [record("a", run="r", device="127.0.0.1:5555"), record("a", run="r", device="127.0.0.1_5555"),
            record("b", run="r", outcome="error", passed=False), record("b", run="r", attempt=2),
            record(odd, run="r", instance="3", repeat=2, passed=False, answer="first"),
            record("c", run="r", device="SER2", answer="written once")]
    run_dir = Path(write_run(tmp_path, "r", recs, phones=[("SER1", "Pixel 7")]))
    # The attempt of `odd` written again (a superseding line): the later line wins, in both readers.
    append_records(run_dir / RECORDS_FILE, [recs[4].model_copy(update={"answer": "second"})])
    expected = {u.key: u for u in load_units(run_dir).units}
    assert len(expected) == 6
    for key, unit in expected.items():
        assert find_unit(tmp_path, run_dir, key) == unit, key
    assert expected[next(k for k in expected if k.startswith("a_quoted"))].record.answer == "second"
    assert find_unit(tmp_path, run_dir, "nobody.a1") is None


HOSTILE_ID = '<img src=x onerror="alert(1)">'
HOSTILE_ANSWER = '[click](javascript:alert(2)) **bold** <script>alert(3)</script>'


def test_hostile_task_ids_answers_and_checks_stay_text_and_their_unit_pages_open(tmp_path: Path) -> None:
    recs = [record(HOSTILE_ID, run="r", passed=False, answer=HOSTILE_ANSWER,
                   checks=[CheckResult(type="<b>regex</b>", passed=False, detail="<script>alert(4)</script>")])]
    write_run(tmp_path, "r", recs, phones=[("SER1", "<i>Pixel</i>")])
    client = TestClient(create_app(tmp_path), base_url="http://127.0.0.1")
    for url in ("/runs/r/", "/runs/r/?q=javascript", "/runs/r/?q=%3Cscript%3E"):
        html = client.get(url).text
        assert "<script>" not in html and "<img src=x" not in html and "<b>regex" not in html, url
        assert "&lt;script&gt;alert(4)&lt;/script&gt;" in html and "&lt;b&gt;regex&lt;/b&gt;" in html, url
        ((verdict, href, task),) = _rows(html)
        assert (verdict, task) == ("fail", HOSTILE_ID)
        unit = client.get(href)
        assert unit.status_code == 200 and "<script>" not in unit.text and "<img src=x" not in unit.text
    assert 'value="&lt;script&gt;"' in client.get("/runs/r/?q=%3Cscript%3E").text  # the search box keeps it as text


def test_a_run_where_everything_passed_lists_its_units_with_links(tmp_path: Path) -> None:
    write_run(tmp_path, "green", [record(f"t{i}", run="green") for i in range(3)])
    client = TestClient(create_app(tmp_path), base_url="http://127.0.0.1")
    rows = _rows(client.get("/runs/green/").text)
    assert [(v, t) for v, _, t in rows] == [("pass", "t0"), ("pass", "t1"), ("pass", "t2")]
    assert all(client.get(url).status_code == 200 for _, url, _ in rows)


def test_odd_parameters_read_as_defaults_and_a_run_without_records_says_so(tmp_path: Path) -> None:
    write_run(tmp_path, "r", [record("a", run="r")])
    write_run(tmp_path, "empty", [])
    client = TestClient(create_app(tmp_path), base_url="http://127.0.0.1")
    odd = client.get("/runs/r/?page=-3&per=7&verdict=nope&tries=x&page=1e9")
    assert odd.status_code == 200 and len(_rows(odd.text)) == 1
    assert "No records yet" in client.get("/runs/empty/").text or "No units." in client.get("/runs/empty/").text
