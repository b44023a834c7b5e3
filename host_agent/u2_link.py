"""The uiautomator2 JSON-RPC calls of every step (dump, tap, key) over one kept-alive HTTP connection.

uiautomator2 opens a new adb transport and a new stream to the phone's tcp:9008 for each call and closes
it after one request: three connection set-ups (client → adb server → phone) per call, on every step.
The server speaks HTTP/1.1 with keep-alive, so the calls of a step share one stream here; a stream idle
longer than `IDLE_S` (well under the server's own keep-alive timeout, NanoHTTPD's 5 s) or closed by the
phone is replaced before use, so a request never goes out on a stream the server may be dropping.

Requests, replies and errors are uiautomator2's own: the same JSON-RPC body, the same exception for
each error reply, and on a failed link or a lost UiAutomation the same recovery (restart the server,
send the call again), through uiautomator2 itself.
"""

from __future__ import annotations

import json
import select
import socket
import time
from http.client import RemoteDisconnected
from typing import TYPE_CHECKING, Any, NamedTuple

import adbutils
from uiautomator2._proto import HTTP_TIMEOUT
from uiautomator2.exceptions import (
    HTTPError,
    RPCInvalidError,
    RPCStackOverflowError,
    RPCUnknownError,
    UiAutomationNotConnectedError,
    UiObjectNotFoundError,
)

if TYPE_CHECKING:
    from adbutils import AdbDevice

IDLE_S = 2.0
"""A stream unused this long is replaced rather than reused."""
MAX_REPLY = 256 * 1024 * 1024
"""Largest reply read (a dump of a huge WebView is tens of MB; more is no screen)."""
TIMEOUT_S = float(HTTP_TIMEOUT)
"""Per-call socket timeout: uiautomator2's own for the calls it sends through `Device.jsonrpc`."""
_READS = frozenset({"dumpWindowHierarchy", "takeScreenshot", "deviceInfo"})
"""Calls that change nothing on the phone: safe to send again."""
MAX_HEAD = 64 * 1024
"""Longest status line and headers of a reply."""
# uiautomator2's request headers (no Accept-Encoding: the server's gzip leaks resources).
_REQUEST = (b"POST /jsonrpc/0 HTTP/1.1\r\nHost: localhost:9008\r\nUser-Agent: uiautomator2\r\nAccept-Encoding: \r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n")


class HttpReply(NamedTuple):
    """One HTTP reply read whole."""

    status: int
    reason: str
    body: bytes
    close: bool
    """The server closes the stream after it (`Connection: close`, or a body that ends with the stream)."""


class _Stream:
    """HTTP/1.1 over one adb stream to a phone port: a request is one send, a reply is read whole."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buf = bytearray()

    def exchange(self, request: bytes) -> HttpReply:
        self.sock.sendall(request)
        head = self._until(b"\r\n\r\n", MAX_HEAD)
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
            raise HTTPError(f"not an HTTP reply: {lines[0][:80]!r}")
        fields: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip()
        close = fields.get("connection", "").lower() == "close" or parts[0] == "HTTP/1.0"
        if "chunked" in fields.get("transfer-encoding", "").lower():
            body = self._chunked()
        elif "content-length" in fields:
            length = int(fields["content-length"]) if fields["content-length"].isdigit() else -1
            if not 0 <= length <= MAX_REPLY:
                raise HTTPError(f"reply length {fields['content-length'][:20]!r} is not in 0..{MAX_REPLY}")
            body = self._exactly(length)
        else:
            body, close = self._to_end(), True
        return HttpReply(int(parts[1]), parts[2] if len(parts) > 2 else "", body, close)

    def _fill(self) -> None:
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise RemoteDisconnected("the phone closed the stream mid-reply")
        self._buf += chunk

    def _until(self, mark: bytes, most: int) -> bytes:
        while (end := self._buf.find(mark)) < 0:
            if len(self._buf) > most:
                raise HTTPError(f"no {mark!r} in the first {most} bytes of a reply")
            self._fill()
        out = bytes(self._buf[:end])
        del self._buf[:end + len(mark)]
        return out

    def _exactly(self, n: int) -> bytes:
        while len(self._buf) < n:
            self._fill()
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def _chunked(self) -> bytes:
        body = bytearray()
        while True:
            size = self._until(b"\r\n", MAX_HEAD).split(b";", 1)[0].strip()
            try:
                n = int(size, 16)
            except ValueError:
                raise HTTPError(f"bad chunk size {size[:20]!r}") from None
            if n == 0:
                while self._until(b"\r\n", MAX_HEAD):  # trailer fields, up to the empty line
                    pass
                return bytes(body)
            if len(body) + n > MAX_REPLY:
                raise HTTPError(f"reply over {MAX_REPLY} bytes")
            body += self._exactly(n)
            self._exactly(2)

    def _to_end(self) -> bytes:
        while True:
            if len(self._buf) > MAX_REPLY:
                raise HTTPError(f"reply over {MAX_REPLY} bytes")
            try:
                self._fill()
            except ConnectionError:
                out = bytes(self._buf)
                self._buf.clear()
                return out

    def close(self) -> None:
        self.sock.close()


class RpcLink:
    """JSON-RPC to the uiautomator2 server on one phone, one stream kept open between calls.

    `server` is the uiautomator2 device: its own path restarts the phone's server and sends a call again.
    """

    def __init__(self, device: AdbDevice, server: Any, port: int = 9008, *, idle_s: float = IDLE_S,
                 timeout_s: float = TIMEOUT_S) -> None:
        self.device, self.server, self.port = device, server, port
        self.idle_s, self.timeout_s = idle_s, timeout_s
        self._stream: _Stream | None = None
        self._used = 0.0
        self._reused = False
        self.streams = 0
        """Streams opened so far (how often a call could not reuse one)."""

    def call(self, method: str, params: list[Any] | tuple[Any, ...]) -> Any:
        """The call's result; uiautomator2's exception for an error reply."""
        params = tuple(params)  # as uiautomator2's `jsonrpc.<method>(*args)` hands them on (errors quote them)
        try:
            try:
                content = self._exchange(method, params)
            except ConnectionError:
                # A kept stream the phone dropped just as the request went out: a read is asked again on a fresh
                # stream; an action is not (it may have been done), and fails as a dropped link does.
                if method not in _READS or not self._reused:
                    raise
                content = self._exchange(method, params)
            return _result(content, params)
        except (HTTPError, UiAutomationNotConnectedError):
            # uiautomator2's recovery, as its BasicUiautomatorServer.jsonrpc_call does it.
            from uiautomator2.core import _jsonrpc_call

            self.close()
            self.server.stop_uiautomator()
            self.server.start_uiautomator()
            return _jsonrpc_call(self.device, self.port, method, params, self.timeout_s, False)

    def close(self) -> None:
        """Close the kept stream (the next call opens one)."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def _exchange(self, method: str, params: tuple[Any, ...]) -> bytes:
        stream = self._ready()
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode("utf-8")
        # Headers and body in one send: the phone gets the request in one piece, whatever Nagle does.
        request = _REQUEST % len(body) + body
        try:
            reply = stream.exchange(request)
        except BaseException:
            self.close()
            raise
        if reply.close:
            self.close()
        self._used = time.monotonic()
        if reply.status != 200:
            raise HTTPError(f"HTTP request failed: {reply.status} {reply.reason}")
        return reply.body

    def _ready(self) -> _Stream:
        stream = self._stream
        if stream is not None and (time.monotonic() - self._used > self.idle_s or _peer_spoke(stream.sock)):
            self.close()
            stream = None
        self._reused = stream is not None
        if stream is None:
            try:
                sock = self.device.create_connection(adbutils.Network.TCP, self.port)
            except adbutils.AdbError as exc:  # as uiautomator2 words it: the server is then restarted
                raise HTTPError(f"Unable to connect to uiautomator2 server: {exc}") from exc
            sock.settimeout(self.timeout_s)
            stream = self._stream = _Stream(sock)
            self.streams += 1
        return stream


def _peer_spoke(sock: socket.socket | None) -> bool:
    """Whether the phone closed the stream (or sent bytes no request asked for): it must not be reused."""
    if sock is None:
        return True
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _result(content: bytes, params: Any) -> Any:
    """The `result` of a JSON-RPC reply, or the exception uiautomator2 raises for it (its core's checks)."""
    text = content.decode("utf-8", errors="ignore")
    data = json.loads(content)
    if not isinstance(data, dict):
        raise RPCInvalidError("Unknown RPC error: not a dict")
    if "error" in data:
        code = data["error"].get("code")
        message = data["error"].get("message", "")
        stacktrace = data["error"].get("data")
        if "UiAutomation not connected" in text:
            raise UiAutomationNotConnectedError("UiAutomation not connected")
        if "android.os.DeadObjectException" in message:
            raise UiAutomationNotConnectedError("android.os.DeadObjectException")
        if "android.os.DeadSystemRuntimeException" in message:
            raise UiAutomationNotConnectedError("android.os.DeadSystemRuntimeException")
        if "uiautomator.UiObjectNotFoundException" in message:
            raise UiObjectNotFoundError(code, message, params)
        if "java.lang.StackOverflowError" in message:
            raise RPCStackOverflowError(f"StackOverflowError: {message}", params,
                                        stacktrace[:1000] + "..." + stacktrace[-1000:])
        raise RPCUnknownError(f"Unknown RPC error: {code} {message}", params, stacktrace)
    if "result" not in data:
        raise RPCInvalidError("Unknown RPC error: no result field")
    return data["result"]
