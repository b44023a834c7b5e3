"""The unit page: the task as the run ran it, each check beside the task's words for it and the evidence marked,
the phone's versions, tries as tabs, the same task's other units one click (or a side by side) away."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from farm import manifest as mf
from farm.results.record import CheckResult
from farm.view.app import create_app
from farm.view.unit_page import check_rows
from farm.view.unit_task import CheckSpec, task_view
from tests.view.story import GOAL, TAP, TASKS, make_nights

UNIT = "/runs/n3/units/calc-mult.G1.a2"


@pytest.fixture
def story(tmp_path: Path) -> tuple[TestClient, Path]:
    make_nights(tmp_path / "runs", tmp_path / "tasks")
    app = create_app(tmp_path / "runs", tasks_dir=tmp_path / "tasks")
    return TestClient(app, base_url="http://127.0.0.1", follow_redirects=False), tmp_path


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_unit_page_shows_the_task_the_phone_and_every_check_beside_what_the_task_asks(
    story: tuple[TestClient, Path],
) -> None:
    client, _ = story
    page = client.get(UNIT)
    assert page.status_code == 200
    text = _text(page.text)
    assert f'<p class="goal">{GOAL}</p>' in page.text
    assert "expects succeeded , got failed (ended: answer)" in text and "tune pool" in text
    assert "com.android.calculator2 : version 8.4 (84)" in text
    assert "Android 14, agent app 0.9.1" in text and "G1 on 10.0.0.9:5037" in text
    checks = re.search(r'<table class="checks">.*?</table>', page.text, re.S)
    assert checks is not None
    rows = [_text(r).strip() for r in re.findall(r"<tr>(.*?)</tr>", checks.group(0), re.S)[1:]]
    assert rows == ["answer_regex {&#34;pattern&#34;: &#34;56,?088&#34;} no looked for 56,?088; answer said The "
                    "product is 56,086", "answer_grounded {} yes 1 item seen on screen: 56,088"]


def test_what_the_checks_look_for_is_marked_in_each_screen_and_the_tap_is_drawn(
    story: tuple[TestClient, Path],
) -> None:
    client, _ = story
    page = client.get(UNIT).text
    screens = re.findall(r'<pre class="obs">(.*?)</pre>', page, re.S)
    assert len(screens) == 4 and all('<mark title="answer_regex">56,088</mark>' in s for s in screens)
    assert '<pre class="answer"><mark title="answer_grounded">56,086</mark>' not in page  # the answer's own text
    assert 'The product is <mark title="answer_grounded">56,086</mark>' in page
    marks = re.findall(r'<svg class="mark mark-tap".*?</svg>', page, re.S)
    assert len(marks) == 1 and f'cx="{TAP[0]}.0"' in marks[0] and f'cy="{TAP[1]}.0"' in marks[0]
    assert page.count("data-nav-step") == 4 and '<script src="/static/viewer.js" defer></script>' in page


def test_tries_are_tabs_and_the_same_task_elsewhere_is_a_link_and_a_side_by_side(
    story: tuple[TestClient, Path],
) -> None:
    client, _ = story
    page = client.get(UNIT).text
    tabs = re.search(r'<nav class="tabs".*?</nav>', page, re.S)
    assert tabs is not None
    assert re.findall(r'href="([^"]+)"', tabs.group(0)) == ["/runs/n3/units/calc-mult.G1.a1",
                                                             "/runs/n3/units/calc-mult.G1.a2"]
    assert 'href="/runs/n3/units/calc-mult.G1.a2" aria-current="page"' in tabs.group(0)
    assert "try 1 <span class=\"badge v-error\">error</span>" in tabs.group(0)
    assert 'href="/runs/n3/units/calc-mult.P1.a1">Pixel 8 · P1</a>' in page
    assert ('href="/side?a=n3&amp;ua=calc-mult.G1.a2&amp;b=n3&amp;ub=calc-mult.P1.a1"' in page)
    assert 'href="/side?a=n3&amp;ua=calc-mult.G1.a1&amp;b=n3&amp;ub=calc-mult.G1.a2"' in page
    # A unit tried once has no tabs.
    assert '<nav class="tabs"' not in client.get("/runs/n3/units/calc-mult.P1.a1").text


def test_the_raw_files_are_one_click_away_and_the_folder_lists_instead_of_reopening_the_unit(
    story: tuple[TestClient, Path],
) -> None:
    client, _ = story
    folder = "/runs/n3/android/G1/calc-mult/run/"
    assert f'href="{folder}?list"' in client.get(UNIT).text
    assert client.get(folder).headers["location"] == UNIT
    listing = client.get(f"{folder}?list")
    assert listing.status_code == 200 and "steps.jsonl" in listing.text and "shot-1.png" in listing.text
    steps = client.get(f"{folder}steps.jsonl")
    assert steps.headers["content-type"].startswith("text/plain") and '"tool":"answer"' in steps.text.replace(" ", "")


def test_a_task_file_changed_since_the_run_is_named_and_its_new_words_are_not_shown(
    story: tuple[TestClient, Path],
) -> None:
    client, tmp = story
    path = tmp / "tasks" / "read" / "calc-mult.json"
    path.write_text(json.dumps({**TASKS["calc-mult"], "goal": "<script>alert(1)</script> new words"}),
                    encoding="utf-8")
    page = client.get(UNIT).text
    assert "not in the task set as the run ran it" in page
    assert "new words" not in page and GOAL not in page and '<p class="goal">' not in page
    # Without the task, the answer's values are still marked where the agent saw them.
    assert '<mark title="answer_grounded">56,088</mark>' not in page
    assert 'The product is <mark title="answer_grounded">56,086</mark>' in page


def test_a_hostile_goal_and_note_are_escaped(story: tuple[TestClient, Path]) -> None:
    client, tmp = story
    # A run whose task set is another copy, with the hostile words the run recorded.
    hostile = {**TASKS["notes-new"], "goal": '<img src=x onerror="alert(1)">', "note": "</dd><script>x()</script>"}
    data = json.dumps(hostile).encode()
    (tmp / "tasks" / "write" / "notes-new.json").write_bytes(data)
    def change(m: mf.Manifest) -> None:
        m.tasks = [t if t.id != "notes-new" else mf.TaskEntry(id=t.id, sha256=hashlib.sha256(data).hexdigest())
                   for t in m.tasks]

    mf.update(tmp / "runs" / "n1", change)
    page = client.get("/runs/n1/units/notes-new.P1.a1").text
    assert '<p class="goal">&lt;img src=x onerror=&#34;alert(1)&#34;&gt;</p>' in page
    assert "<script>x()" not in page and "&lt;script&gt;x()&lt;/script&gt;" in page


def test_checks_pair_with_the_tasks_by_type_in_order_and_either_side_alone_keeps_a_row() -> None:
    specs = [CheckSpec(type="answer_regex", spec="{}"), CheckSpec(type="state", spec='{"op": "equals"}')]
    results = [CheckResult(type="state", passed=True, detail="s"), CheckResult(type="judge", passed=None)]
    rows = check_rows(specs, results)
    assert [(r.type, r.spec, r.result.detail if r.result else None) for r in rows] == [
        ("answer_regex", "{}", None), ("state", '{"op": "equals"}', "s"), ("judge", None, "")]


def test_an_app_named_by_capability_says_what_it_stands_for_and_that_its_package_is_not_recorded(
    story: tuple[TestClient, Path],
) -> None:
    client, _ = story
    text = _text(client.get("/runs/n1/units/notes-new.P1.a1").text)
    assert re.search(r"\{app:notes\} \(.+\) : the package used is not recorded", text)


@pytest.mark.parametrize("task_id", ["*", "../calc-mult", "read/calc-mult", "[a-z]*"])
def test_a_task_id_that_names_no_file_is_not_looked_for(story: tuple[TestClient, Path], task_id: str) -> None:
    _, tmp = story
    manifest = mf.load(tmp / "runs" / "n1")
    manifest.tasks.append(mf.TaskEntry(id=task_id, sha256=manifest.tasks[0].sha256))
    view = task_view(tmp / "runs", manifest, task_id, tmp / "tasks", None, None)
    assert not view.found and view.goal is None and "not a task file's name" in view.note
