"""A loopback server that answers each received chunk in upper case: the device-side socket a forward reaches."""

from __future__ import annotations

import socket
import threading


def upper_echo_server() -> tuple[socket.socket, int]:
    """The listening socket (close it when done) and its port; it serves one connection."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data.upper())

    threading.Thread(target=serve, daemon=True).start()
    return server, server.getsockname()[1]
