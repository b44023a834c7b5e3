"""One Playwright driver per process, shared by every backend: the sync API refuses to start a
second driver while one is running in the same thread."""

from __future__ import annotations

import threading

from playwright.sync_api import Playwright, sync_playwright

_lock = threading.Lock()
_driver: Playwright | None = None
_users = 0


def acquire() -> Playwright:
    """The shared driver, started on first use; pair every call with `release()`."""
    global _driver, _users
    with _lock:
        if _driver is None:
            _driver = sync_playwright().start()
        _users += 1
        return _driver


def release() -> None:
    """Drop one use; the last one stops the driver."""
    global _driver, _users
    with _lock:
        _users = max(0, _users - 1)
        if _users == 0 and _driver is not None:
            _driver.stop()
            _driver = None
