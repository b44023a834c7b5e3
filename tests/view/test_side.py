"""Two units side by side: steps aligned by position, the first divergence marked; two runs' units paired, the
changed pairs first, runs on other phones still paired; every refusal an error page, never a crash."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from farm.view.app import create_app
from farm.view.side import align, pair_units
from farm.view.trajectory import StepView, Trajectory
from farm.view.unit_index import build_index
from tests.helpers.nights import night_records, write_night
from tests.view.builders import make_run
from tests.view.story import make_nights

SIDE = "/side?a=n2&ua=calc-mult.G1.a1&b=n3&ub=calc-mult.G1.a2"


@pytest.fixture
def story(tmp_path: Path) -> TestClient:
    make_nights(tmp_path / "runs", tmp_path / "tasks")
    return TestClient(create_app(tmp_path / "runs", tasks_dir=tmp_path / "tasks"), base_url="http://127.0.0.1")


def _traj(tmp_path: Path, *steps: tuple[str, str]) -> Trajectory:
    from farm.view.units import load_units

    unit = load_units(make_run(tmp_path / "runs", run=f"r{len(list(tmp_path.glob('runs/*')))}")).units[0]
    return Trajectory(run="r", unit=unit, steps=[StepView(number=i + 1, line=i + 1, tool=t, args=a)
                                                 for i, (t, a) in enumerate(steps)])


def test_steps_align_by_position_and_the_first_step_that_differs_is_the_divergence(tmp_path: Path) -> None:
    a = _traj(tmp_path, ("launch", "{}"), ("tap", '{"ref": 3}'), ("answer", "x"))
    b = _traj(tmp_path, ("launch", "{}"), ("tap", '{"ref": 4}'), ("answer", "x"), ("wait", ""))
    s = align(a, b)
    assert [(r.index, r.alike) for r in s.rows] == [(1, True), (2, False), (3, True), (4, False)]
    assert s.diverge == 2 and s.rows[3].a is None and s.rows[3].b is not None
    assert align(a, a).diverge is None
    shorter = align(a, _traj(tmp_path, ("launch", "{}")))
    assert shorter.diverge == 2 and shorter.rows[1].b is None


def test_the_side_by_side_page_marks_the_first_divergence_and_draws_both_taps(story: TestClient) -> None:
    page = story.get(SIDE)
    assert page.status_code == 200
    assert 'They part at <a href="#row-3">step 3</a>; steps 1–2 are alike' in page.text
    rows = re.findall(r'<section class="pair([^"]*)" id="row-(\d+)" data-nav-step>', page.text)
    assert rows == [("", "1"), ("", "2"), (" diverge", "3"), (" after", "4")]
    assert page.text.count('<svg class="mark mark-tap"') == 2  # step 2's tap on each side
    assert "Multiply 123 by 456" in page.text and "answer said The product is 56,086" in page.text


def test_two_runs_units_pair_changed_first_and_the_page_links_each_pair(story: TestClient) -> None:
    page = story.get("/side?a=n2&b=n3&changed=0")
    assert page.status_code == 200
    links = re.findall(r'href="(/side\?[^"]+)">side by side', page.text)
    assert links[:2] == ["/side?a=n2&amp;ua=calc-mult.G1.a1&amp;b=n3&amp;ub=calc-mult.G1.a2",  # passed in A only
                         "/side?a=n2&amp;ua=notes-new.P1.a1&amp;b=n3&amp;ub=notes-new.P1.a1"]  # passed in B only
    assert len(links) == 4 and "1 passed in A only, 1 passed in B only" in page.text
    changed = story.get("/side?a=n2&b=n3&q=calc")
    assert changed.text.count(">side by side</a>") == 1


def test_runs_on_other_phones_pair_in_phone_order(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    a = write_night(runs, "a", night_records("a", {("t", "P1"): True, ("t", "P2"): True}), day=1)
    b = write_night(runs, "b", night_records("b", {("t", "X1"): False, ("t", "X2"): True, ("u", "X1"): True}), day=2,
                    phones=[("X1", "Pixel 9"), ("X2", "Pixel 9")])
    ia, ib = build_index(runs, a), build_index(runs, b)
    pairs = pair_units(ia, ib)
    got = [(p.task_id, p.phone_a, p.phone_b, p.verdict_a, p.verdict_b) for p in pairs.shown]
    assert got == [("t", "Pixel 8 · P1", "Pixel 9 · X1", "pass", "fail"),
                   ("u", None, "Pixel 9 · X1", None, "pass"),
                   ("t", "Pixel 8 · P2", "Pixel 9 · X2", "pass", "pass")]
    assert (pairs.total, pairs.matching, pairs.counts) == (3, 3, [1, 1, 0])  # u: only in B, passed
    narrowed = pair_units(ia, ib, "T", changed=True)
    assert [p.task_id for p in narrowed.shown] == ["t"] and (narrowed.total, narrowed.matching) == (3, 1)
    assert [p.task_id for p in pair_units(ia, ib, limit=1).shown] == ["t"]


@pytest.mark.parametrize(("url", "status"), [
    ("/side", 400), ("/side?a=n2", 400), ("/side?a=n2&b=nope", 404), ("/side?a=..&b=n2", 403),
    ("/side?a=n2&ua=nope&b=n3&ub=calc-mult.G1.a2", 404),
    ("/side?a=n2&ua=..%2F..%2Fetc&b=n3&ub=calc-mult.G1.a2", 404),
])
def test_a_missing_or_refused_side_is_an_error_page(story: TestClient, url: str, status: int) -> None:
    answer = story.get(url)
    assert answer.status_code == status and "<h1>" in answer.text
