"""Connections to the phone without idle waits: Nagle off on every socket, no sleep on close.

adbutils, as installed, costs every phone call two things the wire does not: a closing connection sleeps
10 ms after its half-close, and a device named by serial asks the adb server its version (one more
connection, one more sleep) before opening each transport. uiautomator2 opens one transport per JSON-RPC
call and adbutils one per shell command, so each read of the screen paid ~20 ms of waiting. And
http.client writes a request's headers and body in two sends: with Nagle on, the body waits for the
delayed ACK of the headers (~40 ms per call).

`fast_device` gives the same device on a client whose connections have TCP_NODELAY, close without the
sleep and learn the server version once. The host agent's uiautomator2 and shell calls and the pull's
sync streams open their sockets through it, so they go without those waits. The protocol is unchanged.
"""

from __future__ import annotations

import socket
import threading
from typing import TYPE_CHECKING, Any, cast

import adbutils
from adbutils._adb import AdbConnection

if TYPE_CHECKING:
    from adbutils import AdbDevice


def no_delay(sock: socket.socket) -> socket.socket:
    """Turn Nagle off on a TCP socket (a unix socket has no such option and is left alone)."""
    if sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class _FastConnection(AdbConnection):
    """A connection to the adb server with Nagle off that closes at once."""

    def _create_socket(self) -> socket.socket:
        return no_delay(super()._create_socket())

    def close(self) -> None:
        # adbutils sleeps 10 ms between the half-close and the close "so the shutdown is processed"; the
        # half-close is queued before the close in any case (the kernel sends FIN, then the socket goes).
        sock = cast("socket.socket | None", getattr(self, "_AdbConnection__conn"))  # noqa: B009 - its private slot
        if sock is None:
            return
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        sock.close()
        self._AdbConnection__conn = None


class _FastClient(adbutils.AdbClient):
    """An adb client whose connections are `_FastConnection`s and which asks the server version once."""

    def __init__(self, host: str, port: int, socket_timeout: float | None) -> None:
        super().__init__(host=host, port=port, socket_timeout=socket_timeout)
        self._timeout = socket_timeout
        self._version: int | None = None
        self._version_lock = threading.Lock()

    def make_connection(self, timeout: float | None = None) -> AdbConnection:
        conn = _FastConnection(self.host, self.port)
        timeout = timeout or self._timeout
        if timeout:
            conn.conn.settimeout(timeout)
        return conn

    def server_version(self) -> int:
        # Asked before every transport a serial opens; one adb server keeps its version while it runs.
        with self._version_lock:
            if self._version is None:
                self._version = int(super().server_version())
            return self._version


class _FastDevice(adbutils.AdbDevice):
    """The device on a `_FastClient`; the sockets it opens to phone ports have Nagle off too."""

    def create_connection(self, network: Any, address: int | str) -> socket.socket:
        return no_delay(super().create_connection(network, address))


def fast_device(adb_device: AdbDevice) -> AdbDevice:
    """The same device (serial, transport, adb server) with every connection fast, as the module says."""
    if isinstance(adb_device, _FastDevice):
        return adb_device
    client = adb_device._client
    # adbutils keeps the client's timeout and the transport in private fields and offers no copy; these are
    # its constructors' own arguments.
    timeout = getattr(client, "_BaseClient__socket_timeout", None)
    fast = _FastClient(client.host, client.port, timeout)
    return _FastDevice(fast, serial=adb_device.serial, transport_id=getattr(adb_device, "_transport_id", None))
