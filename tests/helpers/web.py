"""Builders and fixtures of the web lane tests: one site and one Chromium per test module, a fresh
context (or phone tab) per run, and `WebRun` lines for report fixtures."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser

from farm.results.record import Tokens
from farm.sim.launcher import SimFarm
from farm.sim.profile import default_profile
from tests.helpers.phones import private_adb_port
from web_bench.browser import driver
from web_bench.browser.android_chrome import AndroidChromeBackend
from web_bench.browser.chromium import CHROMIUM_ARGS, DebuggableChromium, find_chromium
from web_bench.browser.contract import BackendName, BrowserBackend
from web_bench.browser.extension_backend import ExtensionBackend, ExtensionSession
from web_bench.browser.playwright_backend import PlaywrightBackend
from web_bench.paired.results import Timings, Validation, WebRun
from web_bench.paired.site.server import SiteServer

BackendFactory = Callable[[BackendName], BrowserBackend]


@pytest.fixture(scope="module")
def site() -> Iterator[SiteServer]:
    """The task site on a free loopback port, for the whole module."""
    with SiteServer() as server:
        yield server


@pytest.fixture(scope="module")
def chromium_browser() -> Iterator[Browser]:
    """One headless Chromium per module (runs get fresh contexts from it)."""
    playwright = driver.acquire()
    try:
        browser = playwright.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()
    finally:
        driver.release()


@pytest.fixture(scope="module")
def devtools_chromium() -> Iterator[DebuggableChromium]:
    """A Chromium with remote debugging: the browser behind the virtual phone's Chrome socket."""
    with DebuggableChromium() as chromium:
        yield chromium


@pytest.fixture(scope="module")
def make_backend(
    request: pytest.FixtureRequest, site: SiteServer, chromium_browser: Browser
) -> Iterator[BackendFactory]:
    """Factory: `make_backend("playwright")` or `make_backend("android-chrome")` — one backend of each
    per module; android-chrome is a virtual phone whose Chrome socket is bridged to the module's
    debuggable Chromium (sessions are fresh contexts or fresh tabs)."""
    opened: dict[str, BrowserBackend] = {}
    farms: list[SimFarm] = []

    def make(name: BackendName) -> BrowserBackend:
        if name in opened:
            return opened[name]
        backend: BrowserBackend
        if name == "playwright":
            backend = PlaywrightBackend(browser=chromium_browser)
        else:
            chromium: DebuggableChromium = request.getfixturevalue("devtools_chromium")
            profile = default_profile()
            profile.chrome_devtools = chromium.endpoint
            farm = SimFarm(private_adb_port(request.config))
            farms.append(farm)
            phone = farm.add(1, profile=profile)[0]
            backend = AndroidChromeBackend(site.port, phone.serial, adb_port=phone.adb_port)
        opened[name] = backend
        return backend

    yield make
    for backend in opened.values():
        backend.close()
    for farm in farms:
        farm.stop()


@contextmanager
def extension_browser() -> Iterator[ExtensionSession]:
    """One Chromium with the extension (a test module shares it; each test opens its own site session)."""
    session = ExtensionBackend().new_session()
    try:
        yield session
    finally:
        session.close()


@contextmanager
def static_pages(pages: dict[str, str]) -> Iterator[str]:
    """Serve `pages` (path → HTML) on a free 127.0.0.1 port; yields the base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            body = pages.get(self.path.split("?", 1)[0])
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write((body or "not found").encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def stop_extension_worker(session: ExtensionSession) -> None:
    """Stop the extension's service worker the way Chromium does when it idles (Target.closeTarget over
    the browser's CDP connection); its bridge connection closes at once."""
    browser = session.context.browser
    assert browser is not None
    cdp = browser.new_browser_cdp_session()
    try:
        targets = cdp.send("Target.getTargets")["targetInfos"]
        worker = next(t for t in targets if t["type"] == "service_worker"
                      and t["url"].startswith(f"chrome-extension://{session.extension_id}/"))
        assert cdp.send("Target.closeTarget", {"targetId": worker["targetId"]})["success"]
    finally:
        cdp.detach()


def web_run(**fields: Any) -> WebRun:
    """A results line with defaults; override any field (snake_case names)."""
    base: dict[str, Any] = {
        "benchmark_suite_version": 2, "run_id": "fixture", "task": "order_lookup", "seed": 1, "trial": 1,
        "backend": "playwright", "order_in_pair": 1, "first_backend": "playwright", "policy": "scripted",
        "success": True, "status": "completed", "timeout_ms": 1000,
        "validation": Validation(passed=True, state_ok=True, answer_ok=True, detail="fixture"),
        "timings": Timings(completion_ms=100.0), "tokens": Tokens(),
        "started_at": "2026-01-01T00:00:00Z", "ended_at": "2026-01-01T00:00:01Z",
    }
    base.update(fields)
    if "pair_id" not in base:
        base["pair_id"] = f"{base['task']}:{base['seed']}:{base['trial']}"
    return WebRun(**base)


def smoke_run(runs_dir: Path, run_id: str, tasks: str = "order_lookup,inventory_filter") -> Path:
    """A real scripted smoke run of the web lane through the `farm` entry point, playwright paired with
    android-chrome (on a virtual phone); returns the run directory."""
    result = subprocess.run(
        [sys.executable, "-c", "from farm.cli import main; main()", "web", "run", "--smoke", "--policy", "scripted",
         "--virtual-phone", "--backends", "playwright,android-chrome", "--tasks", tasks, "--run-id", run_id,
         "--runs-dir", str(runs_dir)],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert result.returncode == 0, result.stderr
    return runs_dir / run_id
