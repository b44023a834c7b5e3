"""An instrument run's unit page in real Chromium: `farm run` (instrument executor, the `sim` profile) on a virtual
phone named by its serial, whose agent app writes screenshots, tool calls and screen text; the viewer on a loopback
port shows each step's screenshot (loaded), the call with its arguments, the screen text, the tap drawn on the
image, and the app's final.json evidence beside the harness's own look. Then the pulled tree is damaged the ways
an app's can be: a screenshot file gone, a step without one, a hostile argument, a tap outside the image."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page

from farm.android.options import AgentOptions
from farm.results.record import Record
from farm.results.store import read_records
from farm.sim.profile import default_profile
from farm.sweep.dev_run import run, run_request
from farm.view.server import ViewServer
from farm.view.tap_marks import ImageSize, image_size
from farm.view.units import unit_key
from tests.helpers.app_tasks import ALARM_ASK, CALC_ADD
from tests.helpers.records import write_tasks

RUN = "r-app"
TASKS: list[tuple[str, dict[str, Any]]] = [
    CALC_ADD,
    ALARM_ASK,
]
HOSTILE = '</pre><script>document.title="pwned"</script><img src=x onerror="document.title=\'pwned\'">'
OUTSIDE = {"x": 5000, "y": 200}


@pytest.fixture
def app_run(virtual_farm: Any, tmp_path: Path) -> tuple[Path, dict[str, Record]]:
    """`farm run` of TASKS with the instrument executor on one virtual phone, named by its serial."""
    profile = default_profile()
    profile.agent.pass_rate = 1.0
    profile.agent.time_scale = 100_000
    phone = virtual_farm(1, profile=profile)[0]
    result = run(run_request(agent=AgentOptions(split="tune"), serials=[phone.serial], executor="instrument",
                             profile="sim", tasks_dir=write_tasks(tmp_path / "tasks", TASKS),
                             runs_dir=tmp_path / "runs", show_progress=False, run_id=RUN, idle_timeout_s=60))
    records = {r.task_id: r for r in read_records(result.run_dir / "records.jsonl")}
    assert sorted(records) == ["alarm-ask", "calc-add"]
    assert all(r.executor == "instrument" and r.passed and r.evidence for r in records.values())
    return result.run_dir, records


def _steps(run_dir: Path, rec: Record) -> list[dict[str, Any]]:
    path = run_dir / str(rec.evidence) / "steps.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write_steps(run_dir: Path, rec: Record, steps: list[dict[str, Any]]) -> None:
    path = run_dir / str(rec.evidence) / "steps.jsonl"
    path.write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in steps), encoding="utf-8")


def _open(page: Page, base: str, rec: Record) -> None:
    page.goto(f"{base}runs/{RUN}/units/{unit_key(rec)}")
    assert page.locator("h1").inner_text().startswith(rec.task_id)


def _loaded(page: Page, n: int) -> None:
    """Step n's screenshot is visible and its image really decoded (lazy images load once scrolled to)."""
    img = page.locator(f"#step-{n} .shot img")
    img.scroll_into_view_if_needed()
    page.wait_for_function(f"() => {{ const i = document.querySelector('#step-{n} .shot img');"
                           " return i !== null && i.complete && i.naturalWidth > 0; }")
    assert img.is_visible()


def _boxes(page: Page, n: int) -> dict[str, Any]:
    """The step's image box, its mark's box, and the centre of the mark's dot, in page pixels."""
    return page.evaluate("""n => {
        const r = e => { if (!e) return null; const b = e.getBoundingClientRect();
                         return {left: b.left, top: b.top, width: b.width, height: b.height}; };
        const s = document.querySelector(`#step-${n}`);
        return {img: r(s.querySelector('.shot img')), svg: r(s.querySelector('svg.mark')),
                dot: r(s.querySelector('svg.mark .dot'))};
    }""", n)


def _centre_fraction(boxes: dict[str, Any]) -> tuple[float, float]:
    img, dot = boxes["img"], boxes["dot"]
    cx, cy = dot["left"] + dot["width"] / 2, dot["top"] + dot["height"] / 2
    return (cx - img["left"]) / img["width"], (cy - img["top"]) / img["height"]


def _check_pristine(page: Page, base: str, run_dir: Path, rec: Record) -> None:
    """Every step of an untouched instrument unit: screenshot loaded, call with arguments, screen text, mark."""
    steps = _steps(run_dir, rec)
    _open(page, base, rec)
    assert page.locator("section.step").count() == len(steps)
    for n, step in enumerate(steps, 1):
        section = page.locator(f"#step-{n}")
        _loaded(page, n)
        action = step["action"]
        call = section.locator("pre.call")
        assert call.is_visible() and call.inner_text().startswith(action["tool"])
        for key, value in action["args"].items():
            # The arguments as JSON text: `tap {"ref": 5}`, `answer {"text": "…"}`.
            assert json.dumps({key: value}, ensure_ascii=False)[1:-1] in call.inner_text()
        screen = section.locator("pre.obs")
        assert screen.is_visible()
        assert screen.inner_text().strip() == step["observation"]["text"].strip()
        assert section.locator(".shot .none").count() == 0
        if action["tool"] == "swipe":
            # The app's swipe by direction is drawn where the host swipes for it, inside the image.
            boxes = _boxes(page, n)
            fx, fy = _centre_fraction(boxes)
            assert 0 < fx < 1 and 0 < fy < 1
        else:
            assert section.locator("svg.mark").count() == 0


def _damage(run_dir: Path, rec: Record) -> tuple[ImageSize, tuple[int, int]]:
    """Step 1 taps at x/y inside its screenshot, step 2 outside it with a hostile argument, and the last step's
    screenshot file is deleted; returns step 1's screenshot size and tap."""
    steps = _steps(run_dir, rec)
    assert len(steps) >= 3
    folder = run_dir / str(rec.evidence)
    size = image_size(folder / steps[0]["observation"]["screenshot"])
    assert size is not None
    tap = (round(size.width * 0.25), round(size.height * 0.6))
    steps[0]["action"] = {"tool": "tap", "args": {"x": tap[0], "y": tap[1]}, "message": "tap the quarter"}
    steps[1]["action"] = {"tool": "tap", "args": {**OUTSIDE, "why": HOSTILE}, "message": HOSTILE}
    last = steps[-1]["observation"]["screenshot"]
    assert sum(s["observation"]["screenshot"] == last for s in steps) == 1, "the answer screen is the last step's own"
    (folder / last).unlink()
    _write_steps(run_dir, rec, steps)
    return size, tap


def _check_damaged(page: Page, base: str, run_dir: Path, rec: Record, size: ImageSize,
                   tap: tuple[int, int]) -> None:
    steps = _steps(run_dir, rec)
    _open(page, base, rec)
    # Step 1: the tap is drawn where it landed, and the mark's SVG lies exactly on the image.
    _loaded(page, 1)
    boxes = _boxes(page, 1)
    for side in ("left", "top", "width", "height"):
        assert abs(boxes["svg"][side] - boxes["img"][side]) < 1, boxes
    fx, fy = _centre_fraction(boxes)
    assert abs(fx - tap[0] / size.width) < 0.01 and abs(fy - tap[1] / size.height) < 0.01, (fx, fy)
    assert page.locator("#step-1 .mark-label").inner_text() == f"tap at ({tap[0]}, {tap[1]})"
    assert f'tap {{"x": {tap[0]}, "y": {tap[1]}}}' == page.locator("#step-1 pre.call").inner_text()
    # Step 2: outside the image — not drawn (never clamped to the edge), and said; the hostile text is text.
    _loaded(page, 2)
    assert page.locator("#step-2 svg.mark").count() == 0
    assert page.locator("#step-2 .mark-label").inner_text() == (
        f"tap at (5000, 200) is outside the {size.width}×{size.height} screenshot, not drawn")
    call = page.locator("#step-2 pre.call").inner_text()
    assert HOSTILE.replace('"', '\\"') in call and page.locator("#step-2 pre.message").inner_text() == HOSTILE
    assert page.locator("main script").count() == 0 and page.locator('img[src="x"]').count() == 0
    assert page.title() != "pwned"
    # The last step: its screenshot file is gone — named, not a broken image; its call and screen still shown.
    n = len(steps)
    last = page.locator(f"#step-{n}")
    last.scroll_into_view_if_needed()
    assert last.locator(".shot img").count() == 0
    note = last.locator(".shot .none")
    assert note.is_visible()
    assert note.inner_text() == f"screenshot file missing: {steps[-1]['observation']['screenshot']}"
    assert last.locator("pre.call").inner_text().startswith("answer")
    assert last.locator("pre.obs").is_visible()


def _walk(browser: Browser, base: str, width: int, run_dir: Path, records: dict[str, Record],
          damaged: tuple[ImageSize, tuple[int, int]] | None, shots: Path) -> None:
    context = browser.new_context(viewport={"width": width, "height": 900})
    requested: list[str] = []
    errors: list[str] = []
    try:
        page = context.new_page()
        page.on("request", lambda request: requested.append(request.url))
        # A CSP refusal (an inline style or image the policy blocks) is a console error; a request that failed names
        # its URL. Chromium's own favicon request is the only 404 expected (the viewer serves no favicon).
        page.on("console", lambda msg: errors.append(msg.text)
                if msg.type == "error" and "status of 404" not in msg.text else None)
        page.on("response", lambda response: errors.append(f"{response.status} {response.url}")
                if response.status >= 400 and not response.url.endswith("/favicon.ico") else None)
        if damaged is None:
            _check_pristine(page, base, run_dir, records["calc-add"])
        else:
            _check_damaged(page, base, run_dir, records["calc-add"], *damaged)
        page.screenshot(path=str(shots / f"calc-add-{'damaged' if damaged else 'pristine'}-{width}.png"),
                        full_page=True)
        width_ok = page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        assert width_ok, f"the unit page is wider than {width} px"
        # The app's final.json: its answer, end and questions, and the harness's own look at the alarm app.
        alarm = records["alarm-ask"]
        _open(page, base, alarm)
        for n in range(1, len(_steps(run_dir, alarm)) + 1):
            if page.locator(f"#step-{n} .shot img").count():
                _loaded(page, n)
        evidence = page.locator("dl.evidence").inner_text()
        assert "answer" in evidence and "AF-r-app-a" in evidence and "早上7点" in evidence
        assert page.locator("h4", has_text="Fresh look at com.android.deskclock").is_visible()
        assert "AF-r-app-a" in page.locator("pre.fresh").first.inner_text()
        assert "succeeded" in page.locator("#phone-final + p + dl").inner_text()
    finally:
        context.close()
    assert requested and [u for u in requested if not u.startswith(base)] == []
    assert errors == []


def test_an_instrument_units_page_shows_each_steps_screenshot_call_screen_and_tap_in_chromium(
    app_run: tuple[Path, dict[str, Record]], chromium_browser: Browser, tmp_path: Path
) -> None:
    run_dir, records = app_run
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with ViewServer(run_dir.parent, port=0) as server:
        assert server.host == "127.0.0.1"
        for width in (1400, 480):
            _walk(chromium_browser, server.url, width, run_dir, records, None, shots)
        damaged = _damage(run_dir, records["calc-add"])
        # A step of the other unit that kept no screenshot says so.
        alarm = _steps(run_dir, records["alarm-ask"])
        alarm[1]["observation"]["screenshot"] = None
        _write_steps(run_dir, records["alarm-ask"], alarm)
        for width in (1400, 480):
            _walk(chromium_browser, server.url, width, run_dir, records, damaged, shots)
        context = chromium_browser.new_context()
        try:
            page = context.new_page()
            _open(page, server.url, records["alarm-ask"])
            assert page.locator("#step-2 .shot .none").inner_text() == "no screenshot kept"
            assert page.locator("#step-2 .shot img").count() == 0
        finally:
            context.close()
