"""The harness side of the extension bridge: a WebSocket server on 127.0.0.1 that the extension's
service worker connects to.

Requests are `{id, method, params}`, replies `{id, ok, result | error}`. The first message of a
connection must be the hello `{hello: true, token, boot}` carrying this bridge's token; anything
else is closed. An MV3 service worker can be stopped at any time: its connection closes, the calls
in flight on it fail at once with `BridgeError` (never a hang), and the next call wakes the worker
and waits for a new hello before it sends. Every wait is bounded.
"""

from __future__ import annotations

import hmac
import itertools
import json
import secrets
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.server import Server, ServerConnection, serve
from websockets.typing import Origin

from farm.errors import FarmError

HELLO_TIMEOUT_S = 15.0
"""How long a new browser has to connect and say hello."""
RECONNECT_TIMEOUT_S = 10.0
"""How long a stopped service worker has to come back after it was woken."""
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""Largest reply accepted (a full-page JPEG or a very long snapshot)."""


class BridgeError(Exception):
    """A call did not complete: the worker stopped, did not come back, or did not answer in time."""


class ExtensionError(Exception):
    """The extension ran the call and reports it failed (stale ref, unknown key…)."""


class Bridge:
    """One loopback WebSocket server for one browser's extension."""

    def __init__(self, origin: str | None = None, *, reconnect_timeout_s: float = RECONNECT_TIMEOUT_S) -> None:
        # `origin`: the extension's `chrome-extension://<id>`; a web page cannot claim it.
        self.token = secrets.token_urlsafe(24)
        self.reconnect_timeout_s = reconnect_timeout_s
        self.hellos = 0
        self.boot: str | None = None
        self._origin = origin
        self._ids = itertools.count(1)
        self._cond = threading.Condition()
        self._conn: ServerConnection | None = None
        self._pending: dict[int, tuple[Future[Any], ServerConnection]] = {}
        self._server: Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The listening port (after `start`)."""
        assert self._server is not None
        return int(self._server.socket.getsockname()[1])

    def start(self) -> Bridge:
        """Listen on 127.0.0.1 on a free port."""
        self._server = serve(
            self._handle, "127.0.0.1", 0, origins=[Origin(self._origin)] if self._origin else None,
            ping_interval=None, max_size=MAX_MESSAGE_BYTES, compression=None, open_timeout=5,
        )
        self._thread = threading.Thread(target=self._server.serve_forever, name="extension-bridge", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop listening, close the connection and fail whatever is still waiting."""
        if self._server is not None:
            self._server.shutdown()
            self._server = None
        with self._cond:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        self._fail_all(None, "the bridge was closed")
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    @property
    def connected(self) -> bool:
        """Whether a service worker is connected now."""
        with self._cond:
            return self._conn is not None

    def wait_hello(self, timeout_s: float = HELLO_TIMEOUT_S, *, after: int = 0) -> None:
        """Wait until more than `after` hellos have arrived and a worker is connected (FarmError when none
        does within `timeout_s`)."""
        with self._cond:
            ok = self._cond.wait_for(lambda: self.hellos > after and self._conn is not None, timeout=timeout_s)
        if not ok:
            raise FarmError(
                f"extension bridge 127.0.0.1:{self.port}: no hello from the extension's service worker "
                f"within {timeout_s:g} s",
                hint="check that Chromium loads unpacked extensions (--load-extension) and that nothing blocks "
                     "loopback connections",
            )

    def call(self, method: str, params: dict[str, Any], *, timeout_s: float,
             wake: Callable[[], None] | None = None) -> Any:
        """Send one request and wait for its result; BridgeError on transport failure, ExtensionError when
        the extension reports an error."""
        conn = self._connection(wake)
        call_id = next(self._ids)
        future: Future[Any] = Future()
        with self._cond:
            self._pending[call_id] = (future, conn)
        try:
            try:
                conn.send(json.dumps({"id": call_id, "method": method, "params": params}))
            except ConnectionClosed:
                raise BridgeError(f"the extension's service worker stopped before {method} was sent; "
                                  "retry the call") from None
            try:
                return future.result(timeout=timeout_s)
            except FutureTimeout:
                raise BridgeError(f"no reply from the extension to {method} within {timeout_s:g} s") from None
        finally:
            with self._cond:
                self._pending.pop(call_id, None)

    def _connection(self, wake: Callable[[], None] | None) -> ServerConnection:
        with self._cond:
            conn, seen = self._conn, self.hellos
        if conn is not None:
            return conn
        if wake is not None:
            wake()
        try:
            self.wait_hello(self.reconnect_timeout_s, after=seen)
        except FarmError:
            raise BridgeError(f"the extension's service worker is stopped and did not reconnect within "
                              f"{self.reconnect_timeout_s:g} s") from None
        with self._cond:
            if self._conn is None:
                raise BridgeError("the extension's service worker disconnected again right after its hello")
            return self._conn

    # -- server thread -------------------------------------------------------------------------

    def _handle(self, conn: ServerConnection) -> None:
        try:
            hello = json.loads(conn.recv(timeout=HELLO_TIMEOUT_S))
        except (TimeoutError, ValueError, ConnectionClosed):
            conn.close(1008, "hello expected")
            return
        token = hello.get("token") if isinstance(hello, dict) else None
        if not (isinstance(token, str) and hello.get("hello") is True and hmac.compare_digest(token, self.token)):
            conn.close(1008, "bad hello")
            return
        with self._cond:
            old, self._conn = self._conn, conn
            self.boot = str(hello.get("boot"))
            self.hellos += 1
            self._cond.notify_all()
        if old is not None:
            old.close()
        try:
            for message in conn:
                self._resolve(message)
        except ConnectionClosed:
            pass
        finally:
            with self._cond:
                if self._conn is conn:
                    self._conn = None
            self._fail_all(conn, "the extension's service worker stopped while the call was running "
                                 "(connection closed); the call may not have completed")

    def _resolve(self, message: str | bytes) -> None:
        try:
            reply = json.loads(message)
            call_id = int(reply["id"])
        except (ValueError, KeyError, TypeError):
            return
        with self._cond:
            entry = self._pending.get(call_id)
        if entry is None or entry[0].done():
            return
        if reply.get("ok") is True:
            entry[0].set_result(reply.get("result"))
        else:
            entry[0].set_exception(ExtensionError(str(reply.get("error") or "unknown extension error")))

    def _fail_all(self, conn: ServerConnection | None, why: str) -> None:
        with self._cond:
            failing = [f for f, c in self._pending.values() if conn is None or c is conn]
        for future in failing:
            if not future.done():
                try:
                    future.set_exception(BridgeError(why))
                except Exception:  # noqa: BLE001 - resolved concurrently by a late reply
                    pass
