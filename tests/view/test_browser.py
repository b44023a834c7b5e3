"""The viewer in real Chromium, on a real host-executor run of the virtual phone: the run list, the run's page and
its report, a failed unit's trajectory stepped through, at 1400 px and 480 px, offline; on a synthetic run of
250 units: the run list, the run page filtered to failures through its form, a unit opened; and on three nights of
one label: failures of one category, a word of a goal searched, a unit stepped through with ← →, its tap drawn on
its screenshot, two runs side by side with their divergence, the nights matrix followed to a unit; and with script
off, a cell of the run page's task × phone grid followed to its unit and a collapsed failure group opened and
followed."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Page

from farm.android.options import AgentOptions, HostSettings
from farm.sweep.dev_run import run, run_request
from farm.view.server import ViewServer
from host_agent.scripted import DEFAULT_SCRIPTS
from tests.view.builders import WIDE, make_wide_run, wide_verdict
from tests.view.story import GOAL, SHOT, TAP, make_nights

RUN = "r-view"
WRONG_MULTIPLY = """steps:
  - launch: {capability: calculator}
  - tap: "1"
  - tap: "2"
  - tap: "3"
  - tap: "×"
  - tap: "4"
  - tap: "5"
  - tap: "6"
  - tap: "="
  - answer: "123×456 = 56086"
"""


def _host_run(sim: Any, tmp_path: Path) -> Path:
    """`farm run --executor host --policy scripted` on the calculator tasks: multiply answers wrong (a failure),
    divide passes, make-call has no script (skipped)."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "calculator-multiply.yaml").write_text(WRONG_MULTIPLY, encoding="utf-8")
    shutil.copy(DEFAULT_SCRIPTS / "calculator-divide.yaml", scripts)
    req = run_request(agent=AgentOptions(split="tune", set_prefix="calculator-"), serials=[sim.serial],
                      executor="host", host=HostSettings(policy="scripted", scripts_dir=scripts),
                      runs_dir=tmp_path / "runs", show_progress=False, run_id=RUN)
    result = run(req)
    verdicts = {r.task_id: (r.outcome, r.passed) for r in result.phones[0].records}
    assert verdicts["calculator-multiply"] == ("failed", False) and verdicts["calculator-divide"] == ("succeeded", True)
    assert (result.run_dir / "report.html").is_file()
    return tmp_path / "runs"


def _fits(page: Page, what: str) -> None:
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], f"{what}: {width[0]} px wide in a {width[1]} px viewport"


def _walk(browser: Browser, base: str, width: int, shots: Path) -> None:
    context = browser.new_context(viewport={"width": width, "height": 900})
    requested: list[str] = []
    try:
        page = context.new_page()
        page.on("request", lambda request: requested.append(request.url))
        page.goto(base)
        page.get_by_role("link", name=RUN, exact=True).click()
        page.wait_for_url(f"{base}runs/{RUN}/")
        _fits(page, f"run page at {width} px")
        page.get_by_role("link", name="report.html", exact=True).first.click()
        page.wait_for_url(f"{base}runs/{RUN}/report.html")
        page.screenshot(path=str(shots / f"report-{width}.png"), full_page=True)
        page.goto(base)
        assert "%" in page.locator("table.runs").inner_text()
        _fits(page, f"run list at {width} px")
        page.screenshot(path=str(shots / f"runs-{width}.png"), full_page=True)
        # The report's evidence link of the failed unit is relative to the report; the viewer opens the trajectory.
        page.goto(f"{base}runs/{RUN}/report.html")
        page.locator('a[href*="calculator-multiply"]').first.click()
        page.wait_for_url("**/units/calculator-multiply.*")
        assert page.locator("h1").inner_text().startswith("calculator-multiply")
        assert page.locator("h1 .badge").inner_text() == "fail"
        steps = page.locator("section.step").count()
        assert steps == 10
        page.goto(page.url.split("#")[0] + "#step-1")
        for n in range(1, steps + 1):
            section = page.locator(f"#step-{n}")
            section.scroll_into_view_if_needed()
            page.wait_for_function(f"() => {{ const i = document.querySelector('#step-{n} .shot img');"
                                   " return i !== null && i.complete && i.naturalWidth > 0; }")
            screen = section.locator("pre.obs")
            assert screen.is_visible() and "[1]" in screen.inner_text()
            if n == 1:
                assert '"Calculator"' in screen.inner_text()
                page.screenshot(path=str(shots / f"unit-step1-{width}.png"))
            if n < steps:
                section.locator("a[rel=next]").click()
                page.wait_for_url(f"**#step-{n + 1}")
        assert "56086" in page.locator("#step-10 pre.call").inner_text()
        checks = page.locator("table.checks").inner_text()
        assert "answer_regex" in checks and "no" in checks
        _fits(page, f"unit page at {width} px")
        page.screenshot(path=str(shots / f"unit-{width}.png"), full_page=True)
        page.goto(f"{base}runs/{RUN}/units/")
        _fits(page, f"units at {width} px")
    finally:
        context.close()
    foreign = [url for url in requested if not url.startswith(base)]
    assert requested and foreign == [], foreign


def test_the_viewer_in_chromium_opens_a_failed_unit_and_steps_through_it(
    virtual_phone: Any, chromium_browser: Browser, tmp_path: Path
) -> None:
    runs = _host_run(virtual_phone, tmp_path)
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with ViewServer(runs, port=0) as server:
        for width in (1400, 480):
            _walk(chromium_browser, server.url, width, shots)
    assert sorted(p.name for p in shots.iterdir()) == sorted(
        f"{kind}-{w}.png" for kind in ("report", "runs", "unit-step1", "unit") for w in (1400, 480))


def test_in_chromium_the_run_list_leads_to_a_run_filtered_to_failures_and_one_unit(
    chromium_browser: Browser, tmp_path: Path
) -> None:
    runs, tasks = tmp_path / "runs", tmp_path / "tasks"
    make_wide_run(runs, tasks, 250)
    requested: list[str] = []
    with ViewServer(runs, port=0, tasks_dir=tasks) as server:
        base = server.url
        context = chromium_browser.new_context(viewport={"width": 480, "height": 900})
        try:
            page = context.new_page()
            page.on("request", lambda request: requested.append(request.url))
            page.goto(base)
            assert "nightly" in page.locator("table.runs").inner_text()
            page.get_by_role("link", name=WIDE, exact=True).click()
            page.wait_for_url(f"{base}runs/{WIDE}/")
            assert "Units 1–100 of 250" in page.locator("p.shown").inner_text()
            page.locator("select[name=verdict]").select_option("fail")
            page.get_by_role("button", name="Filter").click()
            page.wait_for_url("**verdict=fail**")
            failed = sum(wide_verdict(i)[0] == "failed" for i in range(250))
            assert f"of {failed} matching" in page.locator("p.shown").inner_text()
            badges = page.locator("table.units .badge").all_inner_texts()
            assert badges and set(badges) == {"fail"}
            _fits(page, "the filtered run page at 480 px")
            first = page.locator("table.units td a").first
            task = first.inner_text()
            first.click()
            page.wait_for_url(f"**/runs/{WIDE}/units/{task}.*")
            assert page.locator("h1").inner_text() == f"{task} fail"
            assert "answer_regex" in page.locator("table.checks").inner_text()
        finally:
            context.close()
    foreign = [url for url in requested if not url.startswith(base)]
    assert requested and foreign == [], foreign


def test_in_chromium_a_team_reads_its_nights_from_a_run_to_a_unit_side_by_side_and_the_matrix(
    chromium_browser: Browser, tmp_path: Path
) -> None:
    runs, tasks = tmp_path / "runs", tmp_path / "tasks"
    make_nights(runs, tasks)
    requested: list[str] = []
    with ViewServer(runs, port=0, tasks_dir=tasks) as server:
        base = server.url
        context = chromium_browser.new_context(viewport={"width": 1280, "height": 900})
        try:
            page = context.new_page()
            page.on("request", lambda request: requested.append(request.url))
            page.goto(base)
            page.get_by_role("link", name="n3", exact=True).click()
            page.wait_for_url(f"{base}runs/n3/")
            # Failures of one category.
            page.locator("select[name=verdict]").select_option("fail")
            page.locator("select[name=category]").select_option("read")
            page.get_by_role("button", name="Filter").click()
            page.wait_for_url("**verdict=fail**")
            rows = page.locator("table.units tr").all_inner_texts()[1:]
            assert len(rows) == 1 and rows[0].startswith("calc-mult") and "\tread\t" in rows[0]
            # A word of a goal (records do not hold goals: the task set does).
            page.goto(f"{base}runs/n3/")
            page.locator("input[name=q]").fill("multiply")
            page.get_by_role("button", name="Filter").click()
            page.wait_for_url("**q=multiply**")
            tasks_shown = {t.split("\t")[0] for t in page.locator("table.units tr").all_inner_texts()[1:]}
            assert tasks_shown == {"calc-mult", "calc-mult (try 2)"}  # both phones; notes-new's goal lacks the word
            page.get_by_role("link", name="calc-mult").first.click()
            page.wait_for_url("**/runs/n3/units/calc-mult.*")
            assert page.locator("p.goal").inner_text() == GOAL
            # Step through with the keyboard.
            page.keyboard.press("ArrowRight")
            page.wait_for_url("**#step-1")
            page.keyboard.press("ArrowRight")
            page.wait_for_url("**#step-2")
            page.keyboard.press("ArrowRight")
            page.keyboard.press("ArrowLeft")
            page.wait_for_url("**#step-2")
            assert page.evaluate("document.querySelector('section.step:target').id") == "step-2"
            # The tap, drawn where it landed on the screenshot.
            image = page.locator("#step-2 .shot img")
            page.wait_for_function("() => { const i = document.querySelector('#step-2 .shot img');"
                                   " return i !== null && i.complete && i.naturalWidth > 0; }")
            ring = page.locator("#step-2 svg.mark-tap circle.ring")
            assert ring.is_visible()
            box, spot = image.bounding_box(), ring.bounding_box()
            assert box is not None and spot is not None
            cx, cy = spot["x"] + spot["width"] / 2, spot["y"] + spot["height"] / 2
            assert abs((cx - box["x"]) / box["width"] - TAP[0] / SHOT[0]) < 0.02
            assert abs((cy - box["y"]) / box["height"] - TAP[1] / SHOT[1]) < 0.02
            # Two runs side by side, from the run list.
            page.goto(base)
            page.get_by_label("n2 as A").check()
            page.get_by_label("n3 as B").check()
            page.get_by_role("button", name="Units of A and B side by side").click()
            page.wait_for_url("**/side?**")
            page.get_by_role("link", name="side by side").first.click()
            page.wait_for_url("**ub=calc-mult.G1.a2**")
            assert page.locator("section.pair.diverge").get_attribute("id") == "row-3"
            for _ in range(3):
                page.keyboard.press("ArrowRight")
            page.wait_for_url("**#row-3")
            assert "first divergence" in page.locator("#row-3 .head").inner_text()
            # The nights matrix, and a cell followed to its unit.
            page.get_by_role("link", name="nights", exact=True).click()
            page.get_by_role("link", name="nightly", exact=True).click()
            page.wait_for_url("**/nights?label=nightly")
            cell = page.locator("table.matrix.tasks tr", has_text="calc-mult").locator("td.c-mixed a")
            cell.click()
            page.wait_for_url(f"{base}runs/n3/units/calc-mult.G1.a2")
            assert page.locator("h1").inner_text() == "calc-mult fail"
        finally:
            context.close()
    foreign = [url for url in requested if not url.startswith(base)]
    assert requested and foreign == [], foreign


def test_in_chromium_without_script_a_grid_cell_opens_its_unit_and_a_failure_group_opens(
    chromium_browser: Browser, tmp_path: Path
) -> None:
    runs, tasks = tmp_path / "runs", tmp_path / "tasks"
    make_wide_run(runs, tasks, 250)
    requested: list[str] = []
    with ViewServer(runs, port=0, tasks_dir=tasks) as server:
        base = server.url
        # Script off: the grid's links and the groups' <details> are plain HTML.
        context = chromium_browser.new_context(viewport={"width": 480, "height": 900}, java_script_enabled=False)
        try:
            page = context.new_page()
            page.on("request", lambda request: requested.append(request.url))
            page.goto(f"{base}runs/{WIDE}/")
            _fits(page, "the run page with its grid at 480 px")
            row = page.locator("table.matrix.grid tr", has_text="task-000")
            cell = row.locator("td.c-fail a")
            assert cell.inner_text() == "0/1"
            cell.click()
            page.wait_for_url(f"{base}runs/{WIDE}/units/task-000.SER1.a1")
            assert page.locator("h1").inner_text() == "task-000 fail"
            page.go_back()
            page.wait_for_url(f"{base}runs/{WIDE}/")
            group = page.locator("details.group").first
            first = group.locator("li a").first
            assert group.get_attribute("open") is None and not first.is_visible()
            assert "answer_regex" in group.locator("summary").inner_text()
            group.locator("summary").click()
            assert group.get_attribute("open") is not None and first.is_visible()
            task = first.inner_text()
            first.click()
            page.wait_for_url(f"**/runs/{WIDE}/units/{task}.*")
            assert page.locator("h1").inner_text() == f"{task} fail"
            assert "answer_regex" in page.locator("table.checks").inner_text()
        finally:
            context.close()
    foreign = [url for url in requested if not url.startswith(base)]
    assert requested and foreign == [], foreign
