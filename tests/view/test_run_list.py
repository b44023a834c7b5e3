"""The run list's columns, its filters and order (index page and /api/runs alike), and two runs picked for a
comparison."""

from __future__ import annotations

from html import unescape
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from farm import manifest as mf
from farm.report.headline import headline
from farm.view.app import create_app
from tests.helpers.records import record, write_run
from tests.view.builders import make_wide_run, wide_records


@pytest.fixture
def farm(tmp_path: Path) -> tuple[TestClient, Path]:
    """Three runs: two nightly ones (Dec 1 and Dec 2, 30 and 20 units, host executor) and an unlabelled one of Nov
    20 that was interrupted."""
    runs, tasks = tmp_path / "runs", tmp_path / "tasks"
    make_wide_run(runs, tasks, 30, run="night-1", created_at="2026-12-01T03:00:00Z")
    make_wide_run(runs, tasks, 20, run="night-2", created_at="2026-12-02T03:00:00Z")
    dev = write_run(runs, "dev", [record("a", run="dev"), record("b", run="dev", passed=False)])

    def interrupted(m: mf.Manifest) -> None:
        m.created_at, m.status = "2026-11-20T10:00:00Z", "interrupted"

    mf.update(dev, interrupted)
    return TestClient(create_app(runs), base_url="http://127.0.0.1"), runs


def _names(client: TestClient, query: str = "") -> list[str]:
    return [row["run"] for row in client.get(f"/api/runs{query}").json()]


def test_each_row_has_label_date_lanes_executor_policy_split_phones_headline_and_status(
    farm: tuple[TestClient, Path],
) -> None:
    client, _ = farm
    row = next(r for r in client.get("/api/runs").json() if r["run"] == "night-1")
    assert (row["label"], row["created_at"], row["lanes"], row["executor"], row["policy"], row["model"],
            row["split"], row["status"]) == ("nightly", "2026-12-01T03:00:00Z", ["android"], "host", "model",
                                             "gpt-test", "tune", "finished")
    assert [p["phone"] for p in row["phones"]] == ["Galaxy S23 · SER3", "Pixel 7 · SER1", "Pixel 8 · SER2"]
    expected = headline(wide_records(30, run="night-1"))
    assert row["headline"] == expected.model_dump(mode="json")
    html = unescape(client.get("/").text)
    for cell in ("nightly", "2026-12-01 03:00:00", "android", "host", "model / gpt-test", "tune", "3</span>: ",
                 "Pixel 8 · SER2", f"{expected.rate * 100:.1f}%",  # type: ignore[operator]
                 f"95% CI {expected.low * 100:.1f}% – {expected.high * 100:.1f}%",  # type: ignore[operator]
                 "finished", "interrupted"):
        assert cell in html, cell


def test_newest_first_and_sortable_by_label_run_and_rate(farm: tuple[TestClient, Path]) -> None:
    client, _ = farm
    assert _names(client) == ["night-2", "night-1", "dev"]
    assert _names(client, "?order=asc") == ["dev", "night-1", "night-2"]
    assert _names(client, "?sort=run&order=asc") == ["dev", "night-1", "night-2"]
    assert _names(client, "?sort=label&order=asc") == ["night-1", "night-2", "dev"]  # no label: last either way
    rates = [r["headline"]["rate"] for r in client.get("/api/runs?sort=rate").json()]
    assert rates == sorted(rates, reverse=True)
    html = client.get("/?sort=label&order=asc").text
    assert 'href="?sort=label"' in html  # its heading now turns the order round


@pytest.mark.parametrize(("query", "runs"), [
    ("?label=night", ["night-2", "night-1"]),
    ("?label=NIGHTLY", ["night-2", "night-1"]),
    ("?since=2026-12-02", ["night-2"]),
    ("?until=2026-12-01", ["night-1", "dev"]),
    ("?since=2026-11-21&until=2026-12-01", ["night-1"]),
    ("?status=interrupted", ["dev"]),
    ("?label=weekly", []),
    ("?since=not-a-day&sort=nonsense", ["night-2", "night-1", "dev"]),
])
def test_filters_by_label_date_and_status(farm: tuple[TestClient, Path], query: str, runs: list[str]) -> None:
    client, _ = farm
    assert _names(client, query) == runs
    html = client.get(f"/{query}").text
    assert [r for r in ("night-1", "night-2", "dev") if f'href="/runs/{r}/"' in html] == sorted(
        runs, key=["night-1", "night-2", "dev"].index)


def test_two_runs_picked_open_side_by_side_and_link_their_paired_comparison(farm: tuple[TestClient, Path]) -> None:
    client, runs = farm
    html = client.get("/").text
    assert '<form method="get" action="/compare">' in html
    assert 'name="a" value="night-1"' in html and 'name="b" value="night-2"' in html
    page = client.get("/compare?a=night-1&b=night-2")
    assert page.status_code == 200
    text = unescape(page.text)
    assert 'href="/runs/night-1/"' in text and 'href="/runs/night-2/"' in text
    assert "farm report night-1 night-2" in text and "Their setups are alike" in text
    written = runs / "night-2" / "reports" / "20261202-090000-vs-night-1" / "report.html"
    written.parent.mkdir(parents=True)
    written.write_text("<p>paired</p>", encoding="utf-8")
    text = client.get("/compare?a=night-1&b=night-2").text
    link = "/runs/night-2/reports/20261202-090000-vs-night-1/report.html"
    assert f'href="{link}"' in text and "farm report night-1 night-2" not in text
    assert client.get(link).headers["content-type"] == "text/html; charset=utf-8"
    assert "A and B differ in" in unescape(client.get("/compare?a=dev&b=night-1").text)


def test_a_comparison_needs_two_runs_that_exist(farm: tuple[TestClient, Path]) -> None:
    client, _ = farm
    assert client.get("/compare?a=night-1").status_code == 400
    assert client.get("/compare?a=night-1&b=nothing").status_code == 404
    assert client.get("/compare?a=..&b=night-1").status_code == 403
