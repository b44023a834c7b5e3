"""The `playwright` backend: Playwright for Python driving the machine's Chromium, a fresh
isolated browser context per run."""

from __future__ import annotations

from playwright.sync_api import Browser

from farm.errors import FarmError
from web_bench.browser import driver
from web_bench.browser.chromium import CHROMIUM_ARGS, find_chromium
from web_bench.browser.contract import LOCALE, TIMEZONE, VIEWPORT, BackendName
from web_bench.browser.page_tools import PageSession


class PlaywrightBackend:
    """Launches one headless Chromium; every session is a new context (own cookies and storage)."""

    name: BackendName = "playwright"

    def __init__(self, chromium: str | None = None, *, browser: Browser | None = None) -> None:
        # An injected browser (shared by a test module) is not closed by this backend.
        self._owned = False
        self._browser = browser
        self._chromium = None if browser else find_chromium(chromium)

    @property
    def browser(self) -> Browser:
        """The browser, launched on first use."""
        if self._browser is None:
            playwright = driver.acquire()
            try:
                self._browser = playwright.chromium.launch(
                    executable_path=self._chromium, args=CHROMIUM_ARGS, headless=True
                )
                self._owned = True
            except Exception as exc:
                driver.release()
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise FarmError(f"{self._chromium}: Chromium failed to launch: {first}") from None
        return self._browser

    def new_session(self) -> PageSession:
        """A new context and page."""
        context = self.browser.new_context(viewport=VIEWPORT, locale=LOCALE, timezone_id=TIMEZONE)  # type: ignore[arg-type]
        return PageSession(self.name, context.new_page(), context.close)

    def close(self) -> None:
        """Close the browser and Playwright if this backend launched them."""
        if self._owned:
            try:
                if self._browser is not None:
                    self._browser.close()
            finally:
                driver.release()
                self._owned = False
                self._browser = None
