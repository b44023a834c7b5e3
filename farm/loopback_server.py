"""An ASGI app served by uvicorn in a daemon thread on one loopback socket (the task site, the viewer).

The socket is bound here, before uvicorn starts, so a port in use is a one-line FarmError naming it and the port
actually bound (with port 0, any free one) is known before the first request.
"""

from __future__ import annotations

import errno
import socket
import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from farm.errors import FarmError

if TYPE_CHECKING:
    import uvicorn

START_TIMEOUT_S = 15.0
"""Longest wait for the server to answer after its thread starts."""


class LoopbackServer:
    """Subclasses give `what` (for messages), `thread_name` and `app()`; a context manager."""

    what = "server"
    thread_name = "farm-server"

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self._requested_port = port
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    def app(self) -> Any:
        """The ASGI application to serve."""
        raise NotImplementedError

    def _bind(self) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self._requested_port))
        except OSError as exc:
            sock.close()
            why = "port in use" if exc.errno == errno.EADDRINUSE else f"cannot listen ({exc.strerror})"
            raise FarmError(f"{self.host}:{self._requested_port}: {why}",
                            hint="pass another --port (0 picks a free one)") from None
        return sock

    def start(self) -> Self:
        """Bind and serve; returns once the server answers."""
        import uvicorn

        sock = self._bind()
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app(), log_level="warning", access_log=False, lifespan="off")
        self._server = server = uvicorn.Server(config)
        self._thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=self.thread_name,
                                        daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                self.stop()
                raise FarmError(f"{self.host}:{self.port}: the {self.what} did not start")
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

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
