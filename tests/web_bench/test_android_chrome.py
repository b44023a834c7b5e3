"""android-chrome sessions on the virtual phone are isolated like the other backends': what one run stores
(cookies, localStorage) is gone in the next, each session's browser context is disposed when it closes, and a
Chrome that cannot create contexts still gets the site's data cleared."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.web import BackendFactory
from web_bench.browser.android_chrome import AndroidChromeBackend
from web_bench.browser.contract import TIMEZONE, VIEWPORT
from web_bench.browser.page_tools import PageSession
from web_bench.paired.site.server import SiteServer

_STORE = "() => { document.cookie = 'leak=1; max-age=3600; path=/'; localStorage.setItem('leak', '1'); }"
_READ = "() => [document.cookie, localStorage.getItem('leak')]"
_VIEW = "() => [innerWidth, innerHeight, Intl.DateTimeFormat().resolvedOptions().timeZone]"


@pytest.fixture
def phone_chrome(make_backend: BackendFactory) -> Iterator[AndroidChromeBackend]:
    backend = make_backend("android-chrome")
    assert isinstance(backend, AndroidChromeBackend)
    contexts = backend.browser_contexts
    yield backend
    backend.browser_contexts = contexts


def _stored_then_read(backend: AndroidChromeBackend, site: SiteServer) -> tuple[list[object], list[object]]:
    """Store a cookie and a localStorage item in one session; read both back in it and in the next one."""
    first = backend.new_session()
    assert isinstance(first, PageSession)
    try:
        first.page.goto(site.base_url + "/")
        first.page.evaluate(_STORE)
        same_run = first.page.evaluate(_READ)
    finally:
        first.close()
    second = backend.new_session()
    assert isinstance(second, PageSession)
    try:
        second.page.goto(site.base_url + "/")
        next_run = second.page.evaluate(_READ)
    finally:
        second.close()
    return same_run, next_run


def test_cookies_and_local_storage_do_not_reach_the_next_run(
    phone_chrome: AndroidChromeBackend, site: SiteServer,
) -> None:
    same_run, next_run = _stored_then_read(phone_chrome, site)
    assert same_run == ["leak=1", "1"]  # the probe works: the run itself sees what it stored
    assert next_run == ["", None]
    assert phone_chrome.isolation == "browser-context"


def test_each_session_disposes_its_browser_context(phone_chrome: AndroidChromeBackend) -> None:
    cdp = phone_chrome.browser.new_browser_cdp_session()
    try:
        before = set(cdp.send("Target.getBrowserContexts")["browserContextIds"])
        session = phone_chrome.new_session()
        during = set(cdp.send("Target.getBrowserContexts")["browserContextIds"])
        session.close()
        after = set(cdp.send("Target.getBrowserContexts")["browserContextIds"])
    finally:
        cdp.detach()
    assert len(during - before) == 1
    assert after == before


def test_without_browser_contexts_the_sites_data_is_still_cleared(
    phone_chrome: AndroidChromeBackend, site: SiteServer,
) -> None:
    phone_chrome.browser_contexts = False
    same_run, next_run = _stored_then_read(phone_chrome, site)
    assert same_run == ["leak=1", "1"]
    assert next_run == ["", None]
    assert phone_chrome.isolation == "site-data-cleared"


def test_each_session_has_the_contract_viewport_and_time_zone(
    phone_chrome: AndroidChromeBackend, site: SiteServer,
) -> None:
    session = phone_chrome.new_session()
    assert isinstance(session, PageSession)
    try:
        session.page.goto(site.base_url + "/")
        seen = session.page.evaluate(_VIEW)
    finally:
        session.close()
    assert seen == [VIEWPORT["width"], VIEWPORT["height"], TIMEZONE]
