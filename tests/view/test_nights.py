"""The nights page: a task × night matrix whose cells link to the unit a reader wants first, flaky and regressed
tasks on top, each phone's and host's health night by night; read again when a night is added."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path
from urllib.parse import urljoin

import pytest
from fastapi.testclient import TestClient

from farm import manifest as mf
from farm.report.history import default_out_dir, write_history
from farm.report.history_data import load_history
from farm.view.app import create_app
from farm.view.nights import colour
from tests.helpers.nights import night_records, write_night
from tests.view.story import make_nights


@pytest.fixture
def story(tmp_path: Path) -> tuple[TestClient, Path]:
    make_nights(tmp_path / "runs", tmp_path / "tasks")
    app = create_app(tmp_path / "runs", tasks_dir=tmp_path / "tasks")
    return TestClient(app, base_url="http://127.0.0.1"), tmp_path / "runs"


def _matrix(html: str, klass: str) -> list[list[str]]:
    table = re.search(rf'<table class="matrix {klass}">(.*?)</table>', html, re.S)
    assert table is not None
    return [[re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", table.group(1), re.S)]


def test_each_cell_is_coloured_and_links_the_tasks_first_failure_of_that_night(
    story: tuple[TestClient, Path],
) -> None:
    client, _ = story
    page = client.get("/nights?label=nightly")
    assert page.status_code == 200
    assert _matrix(page.text, "tasks") == [
        ["task", "flags", "n1", "n2", "n3"],
        ["calc-mult read", "flaky regressed", "2/2", "2/2", "1/2"],
        ["notes-new write", "flaky", "2/2", "1/2", "2/2"],
    ]
    cells = re.findall(r'<td class="c-(\w+)"><a href="([^"]+)"', page.text)
    assert cells == [("pass", "/runs/n1/units/calc-mult.P1.a1"), ("pass", "/runs/n2/units/calc-mult.P1.a1"),
                     ("mixed", "/runs/n3/units/calc-mult.G1.a2"),  # the failure, not the error before it
                     ("pass", "/runs/n1/units/notes-new.P1.a1"), ("mixed", "/runs/n2/units/notes-new.P1.a1"),
                     ("pass", "/runs/n3/units/notes-new.P1.a1")]
    for _, href in cells:
        assert client.get(href).status_code == 200, href


def test_phones_and_hosts_health_night_by_night_with_a_phone_left_out(story: tuple[TestClient, Path]) -> None:
    client, runs = story

    def leave_out(m: mf.Manifest) -> None:
        m.phones[0].status, m.phones[0].reason = "left_out", "battery at 3 %"

    mf.update(runs / "n3", leave_out)  # P1, though its units stay recorded: the manifest has the last word
    page = client.get("/nights?label=nightly").text
    assert _matrix(page, "health")[:3] == [
        ["phone", "n1", "n2", "n3"],
        ["Galaxy S24 · G1 G1 on 10.0.0.9:5037", "2/2", "2/2", "1/2"],
        ["Pixel 8 · P1 P1 on 10.0.0.5:5037", "2/2", "1/2", "left out"],
    ]
    assert '<td class="c-left_out" title="battery at 3 %">left out</td>' in page
    hosts = re.findall(r'<table class="matrix health">', page)
    assert len(hosts) == 2
    host_rows = re.findall(r'<tr><th class="row" title="1 phone">(10\.0\.0\.\d) ', page)
    assert host_rows == ["10.0.0.5", "10.0.0.9"]


def test_a_new_night_is_read_on_the_next_request(story: tuple[TestClient, Path]) -> None:
    client, runs = story
    assert "n4" not in client.get("/nights?label=nightly").text
    write_night(runs, "n4", night_records("n4", {("calc-mult", "P1"): False}), day=4,
                phones=[("P1", "Pixel 8")])
    rows = _matrix(client.get("/nights?label=nightly").text, "tasks")
    assert rows[0] == ["task", "flags", "n1", "n2", "n3", "n4"] and rows[1][-1] == "0/1"


def test_the_labels_are_listed_and_an_unknown_label_says_so(story: tuple[TestClient, Path]) -> None:
    client, _ = story
    index = client.get("/nights").text
    assert '<a href="/nights?label=nightly">nightly</a> <span class="note">(3 runs)</span>' in index
    missing = client.get("/nights?label=%3Cscript%3E")
    assert missing.status_code == 404 and "no runs labelled &#39;&lt;script&gt;&#39;" in missing.text


@pytest.mark.parametrize(("counts", "expected"), [
    ((2, 2, 0, 0), "pass"), ((0, 2, 0, 0), "fail"), ((1, 2, 0, 0), "mixed"), ((0, 0, 1, 0), "error"),
    ((0, 0, 0, 1), "skipped"), ((0, 0, 0, 0), "none"), ((1, 1, 3, 2), "pass"),
])
def test_a_cells_colour(counts: tuple[int, int, int, int], expected: str) -> None:
    assert colour(*counts) == expected


def test_history_html_served_by_the_viewer_opens_the_same_units_through_its_relative_links(
    story: tuple[TestClient, Path],
) -> None:
    client, runs = story
    assert "No history.html for these nights yet" in client.get("/nights?label=nightly").text
    h = load_history(runs, label="nightly")
    write_history(h, default_out_dir(runs, "nightly", "n3"), own=True)
    page = client.get("/nights?label=nightly").text
    url = "/runs/history/nightly-n3/history.html"
    assert f'<a href="{url}">history.html</a>' in page
    served = client.get(url)
    assert served.headers["content-type"].startswith("text/html") and "script-src" not in served.headers[
        "content-security-policy"]
    cell = re.search(r'<a href="([^"]+)" title="n3: its first unit that did not pass">1/2</a>', served.text)
    assert cell is not None
    target = urljoin(f"http://127.0.0.1{url}", unescape(cell.group(1)))
    opened = client.get(target, follow_redirects=False)
    assert (opened.status_code, opened.headers["location"]) == (303, "/runs/n3/units/calc-mult.G1.a2")
    # The same file elsewhere is text, never a page.
    (runs / "n1" / "android" / "history.html").write_text("<h1>x</h1>", encoding="utf-8")
    assert client.get("/runs/n1/android/history.html").headers["content-type"].startswith("text/plain")


def test_cells_and_phone_health_read_without_the_unit_pages_reader_agree_with_it(tmp_path: Path) -> None:
    """The nights page keys a night's units without looking at their run records on disk; its links are still the
    unit pages' keys when two devices' keys collide, an attempt was written twice and a unit was tried again."""
    from farm.results.record import Record
    from farm.results.store import RECORDS_FILE, append_records
    from farm.view.units import load_units
    from tests.helpers.records import record

    recs: list[Record] = [record("t", run="n1", device="127.0.0.1:5555", passed=True),
                          record("t", run="n1", device="127.0.0.1_5555", passed=False),
                          record("u", run="n1", device="P1", outcome="error", passed=False),
                          record("u", run="n1", device="P1", attempt=2, passed=False)]
    run_dir = write_night(tmp_path, "n1", recs, day=1, phones=[("P1", "Pixel 8")])
    append_records(run_dir / RECORDS_FILE, [recs[0].model_copy(update={"passed": False, "outcome": "failed"})])
    client = TestClient(create_app(tmp_path), base_url="http://127.0.0.1")
    page = client.get("/nights?label=nightly").text
    links = dict(re.findall(r'<a href="/runs/n1/units/([^"]+)" title="(\w+) on n1">', page))
    units = {u.key: u for u in load_units(run_dir).units}
    # t: both devices' units failed (the first line was superseded); the first of them in file order opens.
    first_t = next(u for u in units.values() if u.record.task_id == "t" and u.verdict == "fail")
    assert links == {first_t.key: "t", "u.P1.a2": "u"}
    assert client.get(f"/runs/n1/units/{first_t.key}").status_code == 200
    # Each phone by the name the unit pages give it (a phone only the records name: `device · <short serial>`).
    names = {u.record.device: u.phone.phone for u in units.values()}
    assert _matrix(page, "health")[1:] == [[f"{names[d]} {d} on ?", "0/1"] for d in
                                           sorted(names, key=lambda d: (names[d], d))]
