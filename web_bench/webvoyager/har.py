"""An attempt's browser and where its pages come from: the network, the stand-in sites, or a HAR file.

Record: the browser context writes every request and response (bodies embedded) to a HAR file when it
closes; responses served by stand-in routing are recorded too. Replay: `route_from_har` answers from the
file; a request the recording does not hold is aborted (it fails visibly in the page), counted, and reported
to a listener so the trace shows it. Loopback requests pass in both modes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from playwright.sync_api import Browser, BrowserContext, Page, Route
from playwright.sync_api import Error as PlaywrightError

from farm.errors import FarmError
from web_bench.browser import driver
from web_bench.browser.chromium import CHROMIUM_ARGS, find_chromium
from web_bench.browser.contract import LOCALE, TIMEZONE, VIEWPORT
from web_bench.browser.page_tools import PageSession
from web_bench.webvoyager.guard import GuardedSession, GuardListener
from web_bench.webvoyager.standin import LOOPBACK_HOSTS, StandIn

HarMode = Literal["live", "record", "replay"]
SCREENSHOT_TIMEOUT_MS = 10_000
"""Longest wait for the final screenshot."""
DEFAULT_HAR_NAME = "har/recording.har"
"""Where an attempt records when no path is given (relative to the attempt directory)."""


def har_urls(path: Path) -> list[str]:
    """Request URLs of a HAR file, in order (FarmError when it is not one)."""
    try:
        log = json.loads(path.read_text(encoding="utf-8"))["log"]
        return [str(entry["request"]["url"]) for entry in log["entries"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise FarmError(f"{path}: not a readable HAR file ({type(exc).__name__})",
                        hint="record one with har_mode=record, or pass the right --har path") from None


class HarReplay:
    """Serves a context from a recording; requests not in it are aborted and counted as misses."""

    def __init__(self, path: Path, *, on_miss: Callable[[str], None] | None = None) -> None:
        har_urls(path)  # refuse a missing or broken file before the browser starts
        self.path = path
        self.on_miss = on_miss
        self.misses = 0
        """Requests the recording did not hold."""

    def attach(self, context: BrowserContext) -> None:
        """Route `context` to the recording."""
        # Registered first, so it runs last: only for what route_from_har passed on (not found).
        context.route("**/*", self._not_recorded)
        context.route_from_har(str(self.path), not_found="fallback")

    def _not_recorded(self, route: Route) -> None:
        url = route.request.url
        if (urlsplit(url).hostname or "") in LOOPBACK_HOSTS:
            route.fallback()
            return
        self.misses += 1
        if self.on_miss is not None:
            self.on_miss(url)
        route.abort("failed")


class AttemptBrowser:
    """An attempt's own Chromium process, context and page, with the access guard and the page source."""

    def __init__(self, browser: Browser, context: BrowserContext, guard: GuardedSession, har_file: Path | None,
                 replay: HarReplay | None) -> None:
        self.browser = browser
        self.context = context
        self.guard = guard
        self.har_file = har_file
        """The recording written (record) or read (replay)."""
        self._replay = replay

    @property
    def page(self) -> Page:
        """The attempt's page."""
        return self.guard.inner.page

    @property
    def har_misses(self) -> int:
        """Requests the replayed recording did not hold."""
        return self._replay.misses if self._replay is not None else 0

    def screenshot(self) -> bytes:
        """PNG of the current page (raises when the page is gone)."""
        return self.page.screenshot(type="png", timeout=SCREENSHOT_TIMEOUT_MS)

    def close(self) -> None:
        """Close the context (this writes a recording), the browser and this process's use of the driver."""
        try:
            for step in (self.context.close, self.browser.close):
                try:
                    step()
                except PlaywrightError:
                    pass  # already gone (crash, SIGTERM to the process group)
        finally:
            driver.release()


def open_browser(
    *,
    chromium: str | None,
    headed: bool,
    har_mode: HarMode,
    har_file: Path | None,
    stand_in: Path | None,
    on_guard: GuardListener,
    on_network: Callable[[Literal["har_miss", "offline_block"], str], None],
) -> AttemptBrowser:
    """Launch a Chromium of its own (fresh profile), one context and page, routed to the page source.

    Raises FarmError when the browser cannot start or a page source is unusable.
    """
    executable = find_chromium(chromium)
    source = StandIn(stand_in, on_block=lambda url: on_network("offline_block", url)) if stand_in else None
    replay = HarReplay(har_file, on_miss=lambda url: on_network("har_miss", url)) \
        if har_mode == "replay" and har_file is not None else None
    playwright = driver.acquire()
    try:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=not headed)
    except PlaywrightError as exc:
        driver.release()
        raise FarmError(f"{executable}: Chromium failed to launch: {_first_line(exc)}") from None
    try:
        recording = har_file if har_mode == "record" else None
        if recording is not None:
            recording.parent.mkdir(parents=True, exist_ok=True)
        # The recording (bodies embedded) is written when the context closes.
        context = browser.new_context(
            viewport=VIEWPORT, locale=LOCALE, timezone_id=TIMEZONE,  # type: ignore[arg-type]
            record_har_path=str(recording) if recording else None, record_har_content="embed" if recording else None,
        )
        if source is not None:
            source.attach(context)
        if replay is not None:
            replay.attach(context)
        page = context.new_page()
    except PlaywrightError as exc:
        try:
            browser.close()
        finally:
            driver.release()
        raise FarmError(f"{executable}: could not open a browser context: {_first_line(exc)}") from None
    session = PageSession("playwright", page, on_close=lambda: None)
    return AttemptBrowser(browser, context, GuardedSession(session, on_event=on_guard), har_file, replay)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
