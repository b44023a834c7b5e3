"""The run report with the web lane, and with a desktop batch attached (and that batch's own HTML page), as a
reader sees them: opened in real Chromium at 1400 px and 480 px, screenshots saved, the lane sections present with
the backends named, nothing wider than the viewport outside the `.scroll` wrappers, and not one network request."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from farm.desktop.attach import attach_batch
from farm.report.build import build
from tests.helpers.desktop import recorded_batch
from tests.helpers.lane_plugins import lane_plugins
from tests.helpers.web import smoke_run

__all__ = ["lane_plugins"]

WIDTHS = [1400, 480]
# Elements that stick out of the viewport, except inside a `.scroll` wrapper (which scrolls on its own).
_OVERFLOWING = """() => [...document.body.querySelectorAll('*')]
  .filter(e => !(e.parentElement && e.parentElement.closest('.scroll')))
  .filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)
  .map(e => e.tagName.toLowerCase() + (e.className && e.className.baseVal === undefined ? '.' + e.className : ''))"""
# The section under the h2 that starts with `title`, up to the next h2: its text and how many charts it has.
_SECTION = """(title) => {
  const start = [...document.querySelectorAll('h2')].find(h => h.textContent.startsWith(title));
  if (!start) return null;
  let text = start.textContent, charts = 0, node = start.nextElementSibling;
  while (node && node.tagName !== 'H2') {
    text += '\\n' + node.textContent;
    charts += node.tagName.toLowerCase() === 'svg' ? 1 : node.querySelectorAll('svg').length;
    node = node.nextElementSibling;
  }
  return {text, charts};
}"""


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """report.html of a paired web run and of a run holding an attached desktop batch, and the batch's own page."""
    root = tmp_path_factory.mktemp("screens")
    web = smoke_run(root / "runs", "w1")
    desktop, _ = attach_batch(root / "runs", "d1", recorded_batch(root))
    out: dict[str, Path] = {}
    for name, run_dir in (("web", web), ("desktop", desktop)):
        build([run_dir], out_dir=root / f"out-{name}")
        out[name] = root / f"out-{name}" / "report.html"
    out["desktop-page"] = desktop / "desktop" / "batch-002.report.html"
    return out


def _open(browser: Browser, report: Path, width: int, shot: Path) -> tuple[Page, list[str]]:
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(report.as_uri())
    page.screenshot(path=str(shot), full_page=True)
    return page, requests


@pytest.mark.parametrize("width", WIDTHS)
def test_the_web_section_names_both_backends_and_fits(
    chromium_browser: Browser, reports: dict[str, Path], tmp_path: Path, width: int
) -> None:
    shot = tmp_path / f"web-{width}.png"
    page, requests = _open(chromium_browser, reports["web"], width, shot)
    section = page.evaluate(_SECTION, "Web lane")
    assert section is not None and "playwright" in section["text"] and "android-chrome" in section["text"]
    assert "Pairs (A = playwright, B = android-chrome)" in section["text"]
    assert section["charts"] == 2
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert page.evaluate(_OVERFLOWING) == []
    assert requests == [reports["web"].as_uri()]
    assert shot.read_bytes().startswith(b"\x89PNG")
    page.context.close()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("which", ["desktop", "desktop-page"])
def test_the_desktop_section_shows_its_batch_and_fits(
    chromium_browser: Browser, reports: dict[str, Path], tmp_path: Path, width: int, which: str
) -> None:
    shot = tmp_path / f"{which}-{width}.png"
    page, requests = _open(chromium_browser, reports[which], width, shot)
    section = page.evaluate(_SECTION, "Desktop batch")
    assert section is not None and "阶段性结果 (interim)" in section["text"] and "Not succeeded" in section["text"]
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert page.evaluate(_OVERFLOWING) == []
    assert requests == [reports[which].as_uri()]
    assert shot.read_bytes().startswith(b"\x89PNG")
    page.context.close()


def test_the_fit_check_catches_a_wide_table_outside_a_scroll_wrapper(chromium_browser: Browser, tmp_path: Path) -> None:
    # What must not pass: the same check on a page whose wide table is not wrapped.
    cells = "".join(f"<td>column-{i}-wide-cell</td>" for i in range(30))
    page_file = tmp_path / "wide.html"
    page_file.write_text(f"<!DOCTYPE html><body><div class='scroll' style='overflow-x:auto'><table><tr>{cells}</tr>"
                         f"</table></div><table id='bare'><tr>{cells}</tr></table></body>", encoding="utf-8")
    page, _ = _open(chromium_browser, page_file, 480, tmp_path / "wide.png")
    assert "table" in page.evaluate(_OVERFLOWING)
    assert not page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.context.close()
