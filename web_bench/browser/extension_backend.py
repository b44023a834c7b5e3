"""The `extension` backend: the `browser_*` tools done by a Manifest V3 extension inside Chromium
(web_bench/extension/), reached over the loopback WebSocket bridge.

Every session is its own Chromium with a fresh profile and a fresh copy of the extension whose
config.js names this session's bridge port and token. Playwright only launches the browser (an
unpacked extension needs a persistent context) and wakes a stopped service worker over CDP; every
tool call goes through the bridge to the extension, never through Playwright's page API.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from playwright.sync_api import BrowserContext, CDPSession
from playwright.sync_api import Error as PlaywrightError
from pydantic import JsonValue

from farm.errors import FarmError
from web_bench.browser import driver
from web_bench.browser.bridge import HELLO_TIMEOUT_S, Bridge, BridgeError, ExtensionError
from web_bench.browser.chromium import CHROMIUM_ARGS, find_chromium
from web_bench.browser.contract import (
    ACTION_TIMEOUT_MS,
    LOCALE,
    NAVIGATION_TIMEOUT_MS,
    SETTLE_BUDGET_MS,
    TIMEZONE,
    VIEWPORT,
    WAIT_FOR_MAX_S,
    BackendName,
    ToolResult,
    parse_args,
)

EXTENSION_DIR = Path(__file__).resolve().parent.parent / "extension"
"""The extension as it is in git (copied per launch, never modified)."""
_MARGIN_S = 5.0


def extension_id(manifest_dir: Path = EXTENSION_DIR) -> str:
    """The id Chromium gives the extension: fixed by the manifest `key` (sha256 of the public key,
    first 32 hex digits spelled a–p)."""
    key = json.loads((manifest_dir / "manifest.json").read_text(encoding="utf-8"))["key"]
    digest = hashlib.sha256(base64.b64decode(key)).hexdigest()[:32]
    return "".join(chr(ord("a") + int(c, 16)) for c in digest)


def call_timeout_s(name: str) -> float:
    """How long one call may take end to end before the bridge gives up on it."""
    settle = SETTLE_BUDGET_MS / 1000 + NAVIGATION_TIMEOUT_MS / 1000
    if name == "browser_wait_for":
        return 2 * WAIT_FOR_MAX_S + _MARGIN_S
    if name in ("browser_navigate", "browser_navigate_back"):
        return NAVIGATION_TIMEOUT_MS / 1000 + settle + _MARGIN_S
    if name in ("browser_snapshot", "browser_take_screenshot"):
        return ACTION_TIMEOUT_MS / 1000 + _MARGIN_S
    return ACTION_TIMEOUT_MS / 1000 + settle + _MARGIN_S


def snapshot_text(result: Mapping[str, JsonValue]) -> str:
    """URL, title and the extension's snapshot tree, framed like every backend's snapshot."""
    note = f"{result['note']}\n\n" if result.get("note") else ""
    return (f"{note}- Page URL: {result.get('url', '')}\n- Page Title: {result.get('title', '')}\n"
            f"- Page Snapshot:\n```yaml\n{result.get('tree', '')}\n```")


class ExtensionSession:
    """A `BrowserSession`: one Chromium with the extension, one tab, one bridge."""

    backend: BackendName = "extension"

    def __init__(self, context: BrowserContext, bridge: Bridge, workdir: Path, ext_id: str) -> None:
        self.context = context
        self.bridge = bridge
        self.extension_id = ext_id
        self._workdir = workdir
        self._cdp: CDPSession | None = None

    def call(self, name: str, arguments: Mapping[str, JsonValue]) -> ToolResult:
        """Execute one tool in the extension; every failure is an error result the model can read."""
        try:
            args = parse_args(name, arguments)
        except ValueError as exc:
            return ToolResult(text=f"Error: {exc}", is_error=True)
        params = args.model_dump(exclude_none=True)
        try:
            result = self.bridge.call(name, params, timeout_s=call_timeout_s(name), wake=self.wake)
        except (BridgeError, ExtensionError) as exc:
            return ToolResult(text=f"Error: {name}: {exc}", is_error=True)
        if not isinstance(result, dict):
            return ToolResult(text=f"Error: {name}: the extension sent no result", is_error=True)
        if name == "browser_take_screenshot":
            image = base64.b64decode(str(result.get("jpegBase64", "")))
            return ToolResult(text=f"Screenshot of {result.get('url', '')} ({len(image)} bytes, JPEG).",
                              image_jpeg=image)
        return ToolResult(text=snapshot_text(result))

    def wake(self) -> None:
        """Start the extension's stopped service worker (its start connects to the bridge again)."""
        try:
            if self._cdp is None:
                page = self.context.pages[0] if self.context.pages else self.context.new_page()
                self._cdp = self.context.new_cdp_session(page)
                self._cdp.send("ServiceWorker.enable")
            self._cdp.send("ServiceWorker.startWorker", {"scopeURL": f"chrome-extension://{self.extension_id}/"})
        except PlaywrightError:
            # The bridge's bounded wait for a hello reports it; the extension's alarm may still reconnect.
            self._cdp = None

    def close(self) -> None:
        """Close the browser, the bridge and the session's profile and extension copy."""
        try:
            try:
                self.context.close()
            finally:
                driver.release()
                self.bridge.close()
        finally:
            shutil.rmtree(self._workdir, ignore_errors=True)


class ExtensionBackend:
    """Sessions are separate Chromium processes with a fresh profile each (isolated runs)."""

    name: BackendName = "extension"

    def __init__(self, chromium: str | None = None) -> None:
        self._chromium = find_chromium(chromium)
        self.extension_id = extension_id()

    def new_session(self) -> ExtensionSession:
        """Launch Chromium with a fresh profile and this session's copy of the extension; wait for its hello."""
        bridge = Bridge(origin=f"chrome-extension://{self.extension_id}").start()
        workdir = Path(tempfile.mkdtemp(prefix="farm-extension-"))
        try:
            ext = workdir / "extension"
            shutil.copytree(EXTENSION_DIR, ext, ignore=shutil.ignore_patterns("README.md"))
            config = {"port": bridge.port, "token": bridge.token}
            (ext / "config.js").write_text(f"self.FARM_BRIDGE = {json.dumps(config)};\n", encoding="utf-8")
            context = self._launch(workdir / "profile", ext)
        except BaseException:
            bridge.close()
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        session = ExtensionSession(context, bridge, workdir, self.extension_id)
        try:
            bridge.wait_hello(HELLO_TIMEOUT_S)
        except BaseException:
            session.close()
            raise
        return session

    def _launch(self, profile: Path, ext: Path) -> BrowserContext:
        playwright = driver.acquire()
        try:
            # headless=True is Chromium's new headless mode (plain --headless), which runs extensions.
            return playwright.chromium.launch_persistent_context(
                str(profile), executable_path=self._chromium, headless=True,
                args=[*CHROMIUM_ARGS, f"--disable-extensions-except={ext}", f"--load-extension={ext}"],
                viewport=VIEWPORT, locale=LOCALE, timezone_id=TIMEZONE,  # type: ignore[arg-type]
            )
        except Exception as exc:
            driver.release()
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise FarmError(f"{self._chromium}: Chromium with the extension failed to launch: {first}") from None

    def close(self) -> None:
        """Nothing is shared between sessions."""
