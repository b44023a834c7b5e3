"""Run the task site in-process: uvicorn in a daemon thread, bound to 127.0.0.1 only."""

from __future__ import annotations

from typing import Any

import httpx

from farm.loopback_server import LoopbackServer
from web_bench.paired.site.app import NewSession, SessionCreated, create_app
from web_bench.paired.site.state import SessionState, SessionStore, TaskName

HOST = "127.0.0.1"


class SiteServer(LoopbackServer):
    """The task site on a loopback port (0 = any free port); a context manager."""

    what = "task site"
    thread_name = "web-bench-site"

    def __init__(self, port: int = 0) -> None:
        super().__init__(HOST, port)
        self.store = SessionStore()

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:<port>`."""
        return f"http://{HOST}:{self.port}"

    def app(self) -> Any:
        """The task site over this server's session store."""
        return create_app(self.store)

    def serve_forever(self) -> None:
        """Serve (starting first unless already started) until interrupted (for `farm web serve`)."""
        if self._thread is None:
            self.start()
        try:
            self.wait()
        finally:
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
