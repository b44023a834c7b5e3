"""The viewer's routes through FastAPI's TestClient: pages, report links, and every refusal of a path."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from farm import manifest as mf
from farm.view.app import create_app
from tests.view.builders import EVIDENCE, JPEG, RUN, host_step, make_run, write_lines

SECRET = "the secret outside the run"
HOSTILE = '<img src=x onerror="alert(1)"><script>alert(2)</script>'


@pytest.fixture
def site(tmp_path: Path) -> tuple[TestClient, Path]:
    runs = tmp_path / "runs"
    run_dir = make_run(runs)
    mf.update(run_dir, lambda m: setattr(m, "label", HOSTILE))
    (tmp_path / "secret.txt").write_text(SECRET, encoding="utf-8")
    (tmp_path / "outdir").mkdir()
    (tmp_path / "outdir" / "secret.txt").write_text(SECRET, encoding="utf-8")
    os.symlink(tmp_path / "secret.txt", run_dir / "android" / "SER1" / "leak.txt")
    os.symlink(tmp_path / "outdir", run_dir / "android" / "SER1" / "outdir")
    os.symlink(tmp_path / "outdir", runs / "linked")
    (run_dir / EVIDENCE / "shot-aa.jpg").write_bytes(JPEG)
    (run_dir / "android" / "SER1" / "page.html").write_text(HOSTILE, encoding="utf-8")
    (run_dir / "android" / "SER1" / "report.html").write_text(HOSTILE, encoding="utf-8")
    write_lines(run_dir / EVIDENCE / "steps.jsonl", [
        host_step(1, f'[1] TextView "{HOSTILE}"', screenshot="shot-aa.jpg", message=HOSTILE),
    ])
    return TestClient(create_app(runs), base_url="http://127.0.0.1", follow_redirects=False), run_dir


def _report(run_dir: Path) -> None:
    # The links report.html writes (farm/report/markdown.py evidence_href): relative to the report.
    (run_dir / "report.html").write_text(
        f'<!DOCTYPE html><p><a href="{EVIDENCE}">run record</a> <a href="android/SER1/units/calc.SER1.try1">try</a>',
        encoding="utf-8")


def test_the_run_list_shows_the_run_and_escapes_what_the_manifest_says(site: tuple[TestClient, Path]) -> None:
    client, _ = site
    page = client.get("/")
    assert page.status_code == 200 and f'href="/runs/{RUN}/"' in page.text
    assert "<script>alert" not in page.text and "&lt;script&gt;alert(2)&lt;/script&gt;" in page.text
    assert "0.0%" in page.text and "Pixel 7" in page.text


def test_a_run_without_a_report_says_how_to_make_one(site: tuple[TestClient, Path]) -> None:
    client, _ = site
    assert client.get(f"/runs/{RUN}").headers["location"] == f"/runs/{RUN}/"
    page = client.get(f"/runs/{RUN}/")
    assert page.status_code == 200 and f"farm report {RUN}" in page.text


def test_the_report_is_served_and_its_evidence_links_open_the_trajectory(site: tuple[TestClient, Path]) -> None:
    client, run_dir = site
    _report(run_dir)
    assert f'href="/runs/{RUN}/report.html"' in client.get(f"/runs/{RUN}/").text  # one click from the run page
    page = client.get(f"/runs/{RUN}/report.html")
    assert page.headers["content-type"].startswith("text/html") and "run record" in page.text
    unit = f"/runs/{RUN}/units/calc.SER1.a1"
    for link in (EVIDENCE, "android/SER1/units/calc.SER1.try1", f"{EVIDENCE}/"):
        # The browser resolves the report's relative link against /runs/<run>/, where report.html is.
        answer = client.get(f"/runs/{RUN}/{link}")
        assert (answer.status_code, answer.headers["location"]) == (303, unit), link


def test_the_unit_page_escapes_phone_and_model_text_and_links_its_screenshot(site: tuple[TestClient, Path]) -> None:
    client, _ = site
    page = client.get(f"/runs/{RUN}/units/calc.SER1.a1")
    assert page.status_code == 200
    assert "<script>alert" not in page.text and "<img src=x" not in page.text
    assert page.text.count("&lt;script&gt;alert(2)&lt;/script&gt;") == 2  # the screen and the model's message
    shot = f"/runs/{RUN}/{EVIDENCE}/shot-aa.jpg"
    assert f'src="{shot}"' in page.text and "looked for 56088; answer said 56086" in page.text
    image = client.get(shot)
    assert (image.status_code, image.headers["content-type"], image.content) == (200, "image/jpeg", JPEG)


def test_no_page_carries_an_inline_script_and_every_answer_forbids_loading_from_elsewhere(
    site: tuple[TestClient, Path],
) -> None:
    client, run_dir = site
    _report(run_dir)
    pages = ("/", f"/runs/{RUN}/", f"/runs/{RUN}/units/", f"/runs/{RUN}/units/calc.SER1.a1", f"/runs/{RUN}/android/",
             f"/runs/{RUN}/?verdict=fail&q=56086", f"/compare?a={RUN}&b={RUN}", "/nights",
             f"/side?a={RUN}&b={RUN}", f"/side?a={RUN}&ua=calc.SER1.a1&b={RUN}&ub=calc.SER1.a1")
    for url in pages:
        answer = client.get(url)
        assert answer.status_code == 200, url
        scripts = re.findall(r"<script[^>]*>", answer.text, re.IGNORECASE)
        assert set(scripts) <= {'<script src="/static/viewer.js" defer>'}, (url, scripts)
        csp = answer.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp and "unsafe-inline'; f" in csp, url
        assert answer.headers["x-content-type-options"] == "nosniff", url
    # A run's own files (its report too) may run no script at all.
    for url in (f"/runs/{RUN}/report.html", f"/runs/{RUN}/{EVIDENCE}/steps.jsonl"):
        csp = client.get(url).headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src" not in csp, url
    script = client.get("/static/viewer.js")
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
    assert "ArrowRight" in script.text


@pytest.mark.parametrize("path", [
    f"/runs/{RUN}/..%2F..%2Fsecret.txt",
    f"/runs/{RUN}/android/%2e%2e/%2e%2e/%2e%2e/secret.txt",
    f"/runs/{RUN}//etc/passwd",
    f"/runs/{RUN}/android%5C..%5C..%5Csecret.txt",
    f"/runs/{RUN}/android/SER1/leak.txt",
    f"/runs/{RUN}/android/SER1/outdir/secret.txt",
    f"/runs/{RUN}/android/SER1/outdir/",
    f"/runs/{RUN}/android%00/x",
    "/runs/%2e%2e/secret.txt",
    "/runs/linked/secret.txt",
    "/runs/linked/",
    "/runs/linked/units/x",
])
def test_paths_leaving_the_run_are_refused(site: tuple[TestClient, Path], path: str) -> None:
    client, _ = site
    answer = client.get(path)
    assert answer.status_code == 403, (path, answer.status_code)
    assert SECRET not in answer.text


def test_a_missing_file_or_unit_is_not_found(site: tuple[TestClient, Path]) -> None:
    client, _ = site
    assert client.get(f"/runs/{RUN}/android/nothing.txt").status_code == 404
    assert client.get(f"/runs/{RUN}/units/nobody.a1").status_code == 404
    assert client.get("/runs/no-such-run/").status_code == 404


def test_phone_written_html_is_served_as_text_never_as_a_page(site: tuple[TestClient, Path]) -> None:
    client, _ = site
    types = {name: client.get(f"/runs/{RUN}/android/SER1/{name}").headers["content-type"]
             for name in ("page.html", "report.html")}
    assert types == {"page.html": "application/octet-stream", "report.html": "text/plain; charset=utf-8"}


def test_a_request_for_another_host_name_is_refused(site: tuple[TestClient, Path]) -> None:
    client, _ = site
    assert client.get("/", headers={"host": "attacker.example"}).status_code == 400


def test_a_report_in_a_reports_subdirectory_is_a_page_and_its_links_reach_the_run(
    site: tuple[TestClient, Path],
) -> None:
    client, run_dir = site
    (run_dir / "reports" / "20261201-000000").mkdir(parents=True)
    # A later report of the run: run_paths gives the run directory as `../..` relative to it.
    (run_dir / "reports" / "20261201-000000" / "report.html").write_text(
        f'<a href="../../{EVIDENCE}">run record</a>', encoding="utf-8")
    page = client.get(f"/runs/{RUN}/reports/20261201-000000/report.html")
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert client.get(f"/runs/{RUN}/{EVIDENCE}").headers["location"] == f"/runs/{RUN}/units/calc.SER1.a1"


def test_a_directory_above_the_run_records_lists_its_units_and_files(site: tuple[TestClient, Path]) -> None:
    client, _ = site
    page = client.get(f"/runs/{RUN}/android/")
    assert page.status_code == 200
    assert f'href="/runs/{RUN}/units/calc.SER1.a1"' in page.text and f'href="/runs/{RUN}/android/SER1/"' in page.text


NAME = "Pixel 7 ·4599"
SERVER = "127.0.0.1:5037"
UNIT = f"/runs/{RUN}/units/calc.SER1.a1"
PHONE_PAGES = ("/", f"/runs/{RUN}/", f"/runs/{RUN}/units/", UNIT, f"/runs/{RUN}/android/SER1/units/")
"""Every page that shows a phone: the run list, the run page (no report yet), the units, a unit, a directory."""


def _named(tmp_path: Path, name: str) -> TestClient:
    """The viewer of a run whose manifest recorded phone SER1 as `name` on SERVER."""
    runs = tmp_path / "runs"
    make_run(runs, phone_name=name, adb_server=SERVER)
    return TestClient(create_app(runs), base_url="http://127.0.0.1", follow_redirects=False)


def test_every_page_shows_a_phone_by_its_stable_name_with_its_serial_and_adb_server(tmp_path: Path) -> None:
    client = _named(tmp_path, NAME)
    for url in PHONE_PAGES:
        page = client.get(url)
        assert page.status_code == 200, url
        assert NAME in page.text and f"SER1 on {SERVER}" in page.text, url
    assert f"<title>calc on {NAME} — {RUN} — farm view</title>" in client.get(UNIT).text


def test_the_json_carries_each_phones_stable_name_beside_its_serial(tmp_path: Path) -> None:
    client = _named(tmp_path, NAME)
    (row,) = client.get("/api/runs").json()
    assert (row["run"], row["phones"]) == (RUN, [{"phone": NAME, "device": "SER1", "adb_server": SERVER}])
    body = client.get(f"/api/runs/{RUN}/units").json()
    (unit,) = body["units"]
    assert (unit["device"], unit["phone"], unit["adb_server"], unit["url"], unit["verdict"]) == (
        "SER1", NAME, SERVER, UNIT, "fail")


def test_a_hostile_phone_name_stays_text_on_every_page(tmp_path: Path) -> None:
    client = _named(tmp_path, HOSTILE)
    for url in PHONE_PAGES:
        page = client.get(url)
        assert "<script>alert" not in page.text and "<img src=x" not in page.text, url
        assert "&lt;script&gt;alert(2)&lt;/script&gt;" in page.text, url
    answer = client.get(f"/api/runs/{RUN}/units")
    assert answer.headers["content-type"] == "application/json"
    assert answer.json()["units"][0]["phone"] == HOSTILE


def test_the_units_json_of_a_missing_run_is_not_found(tmp_path: Path) -> None:
    client = _named(tmp_path, NAME)
    answer = client.get("/api/runs/no-such-run/units")
    assert answer.status_code == 404 and answer.json()["error"].startswith("no-such-run: no such run under")
