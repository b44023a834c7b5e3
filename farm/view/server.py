"""Serving the viewer: uvicorn in a thread on a loopback address, never anything else.

The viewer shows phones' screens and whatever the agents read; it has no login, so it is reachable from
this machine only, and pages asked for under another host name are refused (see `create_app`).
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

from farm.errors import FarmError
from farm.loopback_server import LoopbackServer

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


class ViewServer(LoopbackServer):
    """The viewer of `runs_dir` on `host:port` (0 = any free port), in a daemon thread; a context manager.
    `tasks_dir`: the task set whose goals run pages search (see `farm.view.goals`)."""

    what = "viewer"
    thread_name = "farm-view"

    def __init__(self, runs_dir: Path, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
                 tasks_dir: Path | None = None) -> None:
        super().__init__(check_host(host), check_port(port))
        self.runs_dir = runs_dir
        self.tasks_dir = tasks_dir

    @property
    def url(self) -> str:
        """`http://<host>:<port>/`."""
        return f"http://{self.host}:{self.port}/"

    def app(self) -> Any:
        """The viewer app, answering only under this server's own host names."""
        from farm.view.app import create_app

        hosts = tuple(dict.fromkeys((self.host, "127.0.0.1", "localhost")))
        return create_app(self.runs_dir, tasks_dir=self.tasks_dir, hosts=hosts)
