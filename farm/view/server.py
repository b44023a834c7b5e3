"""Serving the viewer: uvicorn in a thread on a loopback address, never anything else.

The viewer shows phones' screens and whatever the agents read; it has no login, so it is reachable from
this machine only, and pages asked for under another host name are refused (see `create_app`).
"""

from __future__ import annotations

import errno
import ipaddress
import socket
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from farm.errors import FarmError

if TYPE_CHECKING:
    import uvicorn

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8780
"""`farm view`'s port unless `--port` says otherwise (the task site of `farm web serve` uses 8765)."""


def check_host(host: str) -> str:
    """`host` when it is an IPv4 loopback address (or `localhost`, taken as 127.0.0.1); else a FarmError."""
    if host == "localhost":
        return DEFAULT_HOST
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is None or address.version != 4 or not address.is_loopback:
        raise FarmError(f"--host {host}: the viewer serves this machine only",
                        hint="pass a loopback address such as 127.0.0.1 (or leave --host out)")
    return host


def check_port(port: int) -> int:
    """`port` when it is a TCP port (0 = any free one); else a FarmError."""
    if not 0 <= port <= 65535:
        raise FarmError(f"--port {port}: not a TCP port", hint="pass 0…65535 (0 picks a free port)")
    return port


class ViewServer:
    """The viewer of `runs_dir` on `host:port` (0 = any free port), in a daemon thread; a context manager."""

    def __init__(self, runs_dir: Path, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> None:
        self.runs_dir = runs_dir
        self.host = check_host(host)
        self._requested_port = check_port(port)
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def url(self) -> str:
        """`http://<host>:<port>/`."""
        return f"http://{self.host}:{self.port}/"

    def _bind(self) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self._requested_port))
        except OSError as exc:
            sock.close()
            if exc.errno == errno.EADDRINUSE:
                raise FarmError(f"{self.host}:{self._requested_port}: port in use",
                                hint="pass another --port (0 picks a free one)") from None
            raise FarmError(f"{self.host}:{self._requested_port}: cannot listen ({exc.strerror})",
                            hint="pass another --port (0 picks a free one)") from None
        return sock

    def start(self) -> ViewServer:
        """Bind and serve; returns once the viewer answers."""
        import uvicorn

        from farm.view.app import create_app

        sock = self._bind()
        self.port = sock.getsockname()[1]
        hosts = tuple(dict.fromkeys((self.host, "127.0.0.1", "localhost")))
        config = uvicorn.Config(create_app(self.runs_dir, hosts=hosts), log_level="warning", access_log=False,
                                lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, name="farm-view",
                                        daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                self.stop()
                raise FarmError(f"{self.url}: the viewer did not start")
            time.sleep(0.01)
        return self

    def wait(self) -> None:
        """Block until the server stops (Ctrl-C raises KeyboardInterrupt here)."""
        while self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout=0.5)

    def stop(self) -> None:
        """Stop serving and wait for the thread."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = None
        self._thread = None

    def __enter__(self) -> ViewServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
