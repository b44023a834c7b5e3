"""The `android-chrome` backend: Chrome on a phone, reached through adb.

`adb forward tcp:<free> localabstract:chrome_devtools_remote` exposes Chrome's DevTools socket on
the host, Playwright connects over CDP, and `adb reverse tcp:<site> tcp:<site>` lets the phone open
the task site at the same 127.0.0.1 URL. On the virtual phone the DevTools socket is bridged to a
local Chromium started with remote debugging, so the same code path runs in CI.
"""

from __future__ import annotations

import os
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

import adbutils
import httpx
from playwright.sync_api import Browser, BrowserContext
from playwright.sync_api import Error as PlaywrightError

from farm.errors import FarmError
from web_bench.browser import driver
from web_bench.browser.contract import LOCALE, TIMEZONE, VIEWPORT, BackendName
from web_bench.browser.page_tools import PageSession

DEVTOOLS_SOCKET = "localabstract:chrome_devtools_remote"
NO_PHONE_HINT = "or run android-chrome on a simulated phone with --virtual-phone, or use --backends playwright"
"""How to go on without a phone, on every error that says a phone or its Chrome is not there."""
PHONE_CHROME_HINT = f"open Chrome on the phone and enable USB debugging, {NO_PHONE_HINT}"
"""The fix when a real phone's Chrome does not answer."""
Isolation = Literal["browser-context", "site-data-cleared"]
"""How a session is kept apart from the runs before it: its own CDP browser context (an incognito-like
profile, disposed when the session closes), or — when Chrome refuses to create one — the phone's default
profile with everything stored for the task site's origin cleared first."""


def pick_device(serial: str | None, adb_port: int | None = None) -> adbutils.AdbDevice:
    """The phone to use: `serial`, else the only connected one (FarmError otherwise)."""
    port = adb_port or int(os.environ.get("ANDROID_ADB_SERVER_PORT", "5037"))
    client = adbutils.AdbClient(host="127.0.0.1", port=port)
    try:
        devices = [d for d in client.device_list() if d.serial]
    except (adbutils.AdbError, OSError) as exc:
        raise FarmError(f"adb server 127.0.0.1:{port}: not reachable ({exc})",
                        hint=f"start it with `adb start-server` or set ANDROID_ADB_SERVER_PORT, "
                             f"{NO_PHONE_HINT}") from None
    if serial is not None:
        for device in devices:
            if device.serial == serial:
                return device
        raise FarmError(f"{serial}: no such phone on adb server 127.0.0.1:{port}",
                        hint=f"check `adb devices` and --device, {NO_PHONE_HINT}")
    if len(devices) != 1:
        found = ", ".join(d.serial or "?" for d in devices) or "none"
        fix = "pass --device SERIAL to choose one" if devices else "connect a phone with USB debugging on"
        raise FarmError(f"android-chrome: need exactly one phone, found {found}", hint=f"{fix}, {NO_PHONE_HINT}")
    return devices[0]


def devtools_ws_url(local_port: int, serial: str = "", *, hint: str = PHONE_CHROME_HINT) -> str:
    """The browser WebSocket URL behind a forwarded DevTools port, pointed at the forward (FarmError with
    `hint` when nothing answers there)."""
    try:
        response = httpx.get(f"http://127.0.0.1:{local_port}/json/version", timeout=10.0)
        response.raise_for_status()
        ws = str(response.json()["webSocketDebuggerUrl"])
    except (httpx.HTTPError, KeyError, ValueError) as exc:
        where = f"{serial}: " if serial else ""
        raise FarmError(
            f"{where}Chrome DevTools not answering on 127.0.0.1:{local_port} ({DEVTOOLS_SOCKET}): {exc}", hint=hint
        ) from None
    # Chrome names whatever host it thinks it has; the forward is the only way in.
    parts = urlsplit(ws)
    return urlunsplit(("ws", f"127.0.0.1:{local_port}", parts.path, parts.query, ""))


class AndroidChromeBackend:
    """Each session is a tab in a browser context of its own (`Target.createBrowserContext`, disposed on
    close), so cookies, storage and cache never carry from one run to the next and the phone owner's
    profile is not touched. A Chrome that refuses new contexts gets the site origin's data cleared in its
    default profile instead (`isolation` says which). Closing disconnects and removes the forwards; Chrome
    itself keeps running."""

    name: BackendName = "android-chrome"

    def __init__(
        self, site_port: int, serial: str | None = None, *, adb_port: int | None = None,
        chrome_hint: str = PHONE_CHROME_HINT, browser_contexts: bool = True,
    ) -> None:
        self.device = pick_device(serial, adb_port)
        self.chrome_hint = chrome_hint
        self.serial = self.device.serial or ""
        self.site_port = site_port
        self.local_port = 0
        self.browser_contexts = browser_contexts
        """False (or after Chrome refused one) = sessions share the default profile, site data cleared."""
        self.isolation: Isolation | None = None
        """How the last session was isolated."""
        self._driver = False
        self._browser: Browser | None = None

    @property
    def browser(self) -> Browser:
        """Connect on first use: reverse the site port, forward DevTools, connect over CDP."""
        if self._browser is None:
            try:
                self.device.reverse(f"tcp:{self.site_port}", f"tcp:{self.site_port}")
                self.local_port = self.device.forward_port(DEVTOOLS_SOCKET)
            except (adbutils.AdbError, OSError) as exc:
                raise FarmError(f"{self.serial}: adb forward/reverse failed ({exc})") from None
            endpoint = devtools_ws_url(self.local_port, self.serial, hint=self.chrome_hint)
            playwright = driver.acquire()
            self._driver = True
            try:
                self._browser = playwright.chromium.connect_over_cdp(endpoint, timeout=30000)
            except Exception as exc:
                driver.release()
                self._driver = False
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise FarmError(f"{self.serial}: cannot connect to Chrome over CDP: {first}",
                                hint=self.chrome_hint) from None
        return self._browser

    def connect(self) -> None:
        """Connect now rather than on the first session, so a missing Chrome is refused before any run."""
        _ = self.browser

    def new_session(self) -> PageSession:
        """A new tab in a fresh browser context, sized and localised like the playwright backend."""
        context, owned = self._fresh_context()
        try:
            page = context.new_page()
            page.set_viewport_size(VIEWPORT)  # type: ignore[arg-type]
            cdp = context.new_cdp_session(page)
            cdp.send("Emulation.setLocaleOverride", {"locale": LOCALE})
            cdp.send("Emulation.setTimezoneOverride", {"timezoneId": TIMEZONE})
            if not owned:
                # Only the task site's data: the default context is the phone owner's profile. (Storage
                # clearing answers "Internal error" on the browser target; the page's target does it.)
                context.clear_cookies(domain="127.0.0.1")
                for host in ("127.0.0.1", "localhost"):
                    cdp.send("Storage.clearDataForOrigin",
                             {"origin": f"http://{host}:{self.site_port}", "storageTypes": "all"})
        except BaseException:
            if owned:
                context.close()
            raise
        # Closing an owned context disposes it (Target.disposeBrowserContext) with everything the run stored.
        return PageSession(self.name, page, context.close if owned else page.close)

    def _fresh_context(self) -> tuple[BrowserContext, bool]:
        """(context, whether this session owns it): a new browser context, else the default one cleaned."""
        browser = self.browser
        if self.browser_contexts:
            try:
                context = browser.new_context()
                self.isolation = "browser-context"
                return context, True
            except PlaywrightError:
                # Some Chrome builds answer Target.createBrowserContext with "Not supported".
                self.browser_contexts = False
        self.isolation = "site-data-cleared"
        return (browser.contexts[0] if browser.contexts else browser.new_context()), False

    def close(self) -> None:
        """Disconnect and remove the forwards this backend made."""
        if self._browser is not None:
            try:
                self._browser.close()
            finally:
                self._browser = None
        if self._driver:
            driver.release()
            self._driver = False
        for undo in (lambda: self.device.forward_remove(f"tcp:{self.local_port}", raise_non_found=False),
                     lambda: self.device.reverse_remove(f"tcp:{self.site_port}")):
            try:
                if self.local_port:
                    undo()
            except (adbutils.AdbError, OSError):
                pass
