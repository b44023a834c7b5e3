"""Finding and launching the machine's Chromium (never a downloaded browser)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import httpx

from farm.errors import FarmError

DEFAULT_CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def find_chromium(path: str | None = None) -> str:
    """The Chromium executable to use: `path`, `$FARM_CHROMIUM`, or /usr/bin/chromium."""
    candidate = path or os.environ.get("FARM_CHROMIUM") or DEFAULT_CHROMIUM
    resolved = shutil.which(candidate) if not os.path.isabs(candidate) else candidate
    if not resolved or not os.path.isfile(resolved) or not os.access(resolved, os.X_OK):
        raise FarmError(
            f"{candidate}: no Chromium executable there",
            hint="install the Debian package `chromium` or pass --chromium PATH",
        )
    return resolved


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class DebuggableChromium:
    """A headless Chromium with `--remote-debugging-port` on loopback (what Chrome on a phone exposes
    through `chrome_devtools_remote`); used as the browser behind a virtual phone."""

    def __init__(self, chromium: str | None = None) -> None:
        self.executable = find_chromium(chromium)
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._profile: tempfile.TemporaryDirectory[str] | None = None

    @property
    def endpoint(self) -> str:
        """`127.0.0.1:<port>` (the form PhoneProfile.chrome_devtools takes)."""
        return f"127.0.0.1:{self.port}"

    def start(self) -> DebuggableChromium:
        """Launch and wait until the DevTools HTTP endpoint answers."""
        self._profile = tempfile.TemporaryDirectory(prefix="farm-chromium-", ignore_cleanup_errors=True)
        self.port = _free_port()
        argv = [
            self.executable, *CHROMIUM_ARGS, "--headless=new", f"--remote-debugging-port={self.port}",
            "--remote-debugging-address=127.0.0.1", f"--user-data-dir={self._profile.name}", "about:blank",
        ]
        # Own process group, so stopping also ends Chromium's helper processes (and only those).
        self._proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                break
            try:
                if httpx.get(f"http://{self.endpoint}/json/version", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise FarmError(f"{self.executable}: Chromium with remote debugging did not start")

    def stop(self) -> None:
        """Terminate the browser and remove its profile."""
        if self._proc is not None:
            self._signal_group(signal.SIGTERM)
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                self._proc.wait(timeout=10)
            self._proc = None
        if self._profile is not None:
            self._profile.cleanup()
            self._profile = None

    def _signal_group(self, sig: signal.Signals) -> None:
        assert self._proc is not None
        try:
            os.killpg(self._proc.pid, sig)
        except ProcessLookupError:
            pass

    def __enter__(self) -> DebuggableChromium:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

