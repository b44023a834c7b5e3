"""Run the task site in-process: uvicorn in a daemon thread, bound to 127.0.0.1 only."""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType

import httpx
import uvicorn

from farm.errors import FarmError
from web_bench.site.app import NewSession, SessionCreated, create_app
from web_bench.site.state import SessionState, SessionStore, TaskName

HOST = "127.0.0.1"


class SiteServer:
    """The task site on a loopback port (0 = any free port); a context manager."""

    def __init__(self, port: int = 0) -> None:
        self.store = SessionStore()
        self._requested_port = port
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:<port>`."""
        return f"http://{HOST}:{self.port}"

    def start(self) -> SiteServer:
        """Bind and serve; returns once the site answers."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, self._requested_port))
        except OSError as exc:
            sock.close()
            raise FarmError(f"{HOST}:{self._requested_port}: cannot bind the task site ({exc.strerror})",
                            hint="choose another --port") from None
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(create_app(self.store), log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="web-bench-site", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise FarmError(f"{self.base_url}: the task site did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stop serving and wait for the thread."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = None
        self._thread = None

    def serve_forever(self) -> None:
        """Serve (starting first unless already started) until interrupted (for `farm web serve`)."""
        if self._thread is None:
            self.start()
        try:
            while self._thread is not None and self._thread.is_alive():
                self._thread.join(timeout=0.5)
        finally:
            self.stop()

    def __enter__(self) -> SiteServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class SiteClient:
    """HTTP client of the session and state API (validators read state only through it)."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(base_url=self.base_url, timeout=10.0)

    def new_session(self, task: TaskName, seed: int) -> SessionCreated:
        """Create a session for one run."""
        body = NewSession(task=task, seed=seed).model_dump()
        response = self._http.post("/api/sessions", json=body)
        response.raise_for_status()
        return SessionCreated.model_validate(response.json())

    def state(self, session_id: str) -> SessionState:
        """The session's current server state."""
        response = self._http.get(f"/api/sessions/{session_id}/state")
        response.raise_for_status()
        return SessionState.model_validate(response.json())

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._http.close()
