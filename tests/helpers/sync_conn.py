"""A stand-in for adbutils' connection object around one end of a socket pair: what a SyncSession asks of it."""

from __future__ import annotations

import socket


class SyncConn:
    """Accepts the `sync:` service request and hands the session its socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.conn = sock

    def send_command(self, command: str) -> None:
        assert command == "sync:"

    def check_okay(self) -> None:
        pass

    def close(self) -> None:
        self.conn.close()
