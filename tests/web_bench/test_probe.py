"""`farm web probe` as a library call, and `farm web serve`, on both backends."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable

import httpx
import pytest

from farm.sim.profile import default_profile
from web_bench.browser.chromium import DebuggableChromium
from web_bench.paired.backend_probe import probe


def test_probe_both_backends_through_a_virtual_phone(
    virtual_farm: Callable[..., list[object]], devtools_chromium: DebuggableChromium
) -> None:
    profile = default_profile()
    profile.chrome_devtools = devtools_chromium.endpoint
    (phone,) = virtual_farm(1, profile=profile)
    results = probe(["playwright", "android-chrome"], serial=phone.serial)  # type: ignore[attr-defined]
    assert [(r.backend, r.ok) for r in results] == [("playwright", True), ("android-chrome", True)], results


def test_probe_reports_a_phone_without_chrome(virtual_farm: Callable[..., list[object]]) -> None:
    (phone,) = virtual_farm(1)
    (result,) = probe(["android-chrome"], serial=phone.serial)  # type: ignore[attr-defined]
    assert not result.ok
    assert "DevTools" in result.detail or "CDP" in result.detail


@pytest.mark.parametrize("fixed", [False, True], ids=["any-port", "fixed-port"])
def test_serve_answers_on_loopback(fixed: bool) -> None:
    from farm.sim.launcher import free_port

    port = free_port() if fixed else 0
    proc = subprocess.Popen(
        [sys.executable, "-c", "from farm.cli import main; main()", "web", "serve", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("task site on http://127.0.0.1:"), line
        url = line.split()[3]
        assert not fixed or url == f"http://127.0.0.1:{port}"
        assert "Web bench task site" in httpx.get(url + "/", timeout=10).text
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)
    # Interrupted is a normal end: no traceback, and nothing serves the port any more.
    assert "Traceback" not in (proc.stderr.read() if proc.stderr else "")
