"""report.html in real Chromium at 1400 px and 480 px: failures (or the difference) on the first screen, nothing
wider than the page outside a scroll box, every chart inside the viewport, no request but the file itself, and
collapsed lists printed open. Screenshots are kept in the test's tmp_path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Route

from farm.report.build import build
from tests.helpers.records import busy_records, write_run

PHONES = [(f"SER{i:02d}", "Xiaomi 红米 Note 13 Pro+ 5G" if i % 2 else "Pixel 8") for i in range(12)]
TASKS = ["计算器-加法", "短信-发送给文件传输助手", "sys-version", "x" * 90, "notes-new",
         *(f"t{i:02d}" for i in range(8))]
LONG_RUN = "nightly-2026-12-01-with-a-run-identifier-long-enough-to-overflow-a-phone-screen-on-its-own"

_MEASURE = """() => {
  const vw = window.innerWidth;
  const describe = e => e.tagName + '.' + e.className + ': ' + (e.textContent || '').slice(0, 40);
  const outside = [...document.querySelectorAll('body *')].filter(e => {
    const inScroll = e.parentElement && e.parentElement.closest('.scroll');
    const r = e.getBoundingClientRect();
    return !inScroll && r.width > 0 && (r.left < -0.5 || r.right > vw + 0.5);
  }).map(describe);
  const svgs = [...document.querySelectorAll('svg')].map(s => {
    const r = s.getBoundingClientRect();
    return {left: r.left, right: r.right, width: r.width, height: r.height};
  });
  const heads = [...document.querySelectorAll('h2, h3')].map(h => ({
    level: h.tagName, text: h.textContent.trim(), top: h.getBoundingClientRect().top + window.scrollY}));
  return {vw, scrollWidth: document.documentElement.scrollWidth, outside, svgs, heads};
}"""
_COLLAPSED = "() => [...document.querySelectorAll('details table')].map(t => t.checkVisibility())"


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A run report and a comparison report of twelve phones, CJK task ids and phone names, long ids."""
    root = tmp_path_factory.mktemp("runs")
    serials = [s for s, _ in PHONES]
    a = write_run(root, LONG_RUN, busy_records(LONG_RUN, serials, TASKS), PHONES)
    b = write_run(root, "nightly-2026-12-02", busy_records("nightly-2026-12-02", serials, TASKS, flip=3), PHONES)
    return {"run": build([a]).paths[1], "comparison": build([a, b]).paths[1]}


@pytest.fixture
def opened(chromium_browser: Browser) -> Iterator[Any]:
    """`open(path, width)` → (page, requests that were refused): everything but the file itself is aborted."""
    contexts = []

    def open_(path: Path, width: int) -> tuple[Page, list[str]]:
        context = chromium_browser.new_context(viewport={"width": width, "height": 900})
        contexts.append(context)
        refused: list[str] = []

        def route(r: Route) -> None:
            if r.request.url == path.as_uri():
                r.continue_()
            else:
                refused.append(r.request.url)
                r.abort()

        context.route("**/*", route)
        page = context.new_page()
        page.goto(path.as_uri(), wait_until="load")
        return page, refused

    yield open_
    for context in contexts:
        context.close()


@pytest.mark.parametrize("width", [1400, 480])
@pytest.mark.parametrize("kind", ["run", "comparison"])
def test_report_reads_at_this_width(reports: dict[str, Path], opened: Any, tmp_path: Path, kind: str,
                                    width: int) -> None:
    page, refused = opened(reports[kind], width)
    page.screenshot(path=str(tmp_path / f"{kind}-{width}.png"), full_page=True)
    assert (tmp_path / f"{kind}-{width}.png").stat().st_size > 0
    m = page.evaluate(_MEASURE)
    assert refused == []
    assert m["scrollWidth"] <= m["vw"], m["outside"]
    assert m["outside"] == []
    assert len(m["svgs"]) >= 3
    for svg in m["svgs"]:
        assert svg["width"] > 0 and svg["height"] > 0 and svg["left"] >= 0 and svg["right"] <= m["vw"] + 0.5, svg
    h2 = [h for h in m["heads"] if h["level"] == "H2"]
    first = h2[[h["text"] for h in h2].index("Headline") + 1]
    expected = "Not passed" if kind == "run" else "Paired comparison"
    assert first["text"].startswith(expected)
    # On the first screen, not thousands of pixels down.
    assert first["top"] < 900
    if kind == "comparison":
        texts = [h["text"] for h in m["heads"]]
        assert texts.index("By category, A | B") < [t.startswith("Regressed") for t in texts].index(True) < \
            [t.startswith("Not passed") for t in texts].index(True)


def test_collapsed_lists_are_printed_open(reports: dict[str, Path], opened: Any) -> None:
    page, _ = opened(reports["run"], 1400)
    on_screen = page.evaluate(_COLLAPSED)
    assert on_screen and not any(on_screen)  # closed on screen
    page.emulate_media(media="print")
    assert all(page.evaluate(_COLLAPSED))
