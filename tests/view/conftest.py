"""Fixtures of the viewer tests: one headless Chromium per module, the machine's own (never downloaded)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser

from web_bench.browser import driver
from web_bench.browser.chromium import CHROMIUM_ARGS, find_chromium


@pytest.fixture(scope="module")
def chromium_browser() -> Iterator[Browser]:
    """The system Chromium through Playwright's shared driver, for the whole module."""
    playwright = driver.acquire()
    try:
        browser = playwright.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()
    finally:
        driver.release()
