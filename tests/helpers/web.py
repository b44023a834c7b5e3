"""Builders and fixtures of the web lane tests: one site and one Chromium per test module, a fresh
context (or phone tab) per run, and `WebRun` lines for report fixtures."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
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
from web_bench.browser.playwright_backend import PlaywrightBackend
from web_bench.results import Timings, Validation, WebRun
from web_bench.site.server import SiteServer

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
    """A real scripted smoke run of the web lane through the `farm` entry point, both backends paired
    (android-chrome on a virtual phone); returns the run directory."""
    result = subprocess.run(
        [sys.executable, "-c", "from farm.cli import main; main()", "web", "run", "--smoke", "--policy", "scripted",
         "--virtual-phone", "--tasks", tasks, "--run-id", run_id, "--runs-dir", str(runs_dir)],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert result.returncode == 0, result.stderr
    return runs_dir / run_id
