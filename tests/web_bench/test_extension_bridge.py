"""The extension bridge: it survives the MV3 service worker being stopped (reconnect after a wake,
in-flight calls failed at once), never waits unbounded, and accepts only its own extension."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Origin

from farm.errors import FarmError
from tests.helpers.web import extension_browser, stop_extension_worker
from web_bench.browser.bridge import Bridge, BridgeError, ExtensionError
from web_bench.browser.contract import ToolResult
from web_bench.browser.extension_backend import ExtensionSession
from web_bench.paired.site.server import SiteClient, SiteServer

ORIGIN = "chrome-extension://abcdefghijklmnopabcdefghijklmnop"


@pytest.fixture(scope="module")
def extension_session() -> Iterator[ExtensionSession]:
    """One Chromium with the extension for the module."""
    with extension_browser() as session:
        yield session


def _navigate(session: ExtensionSession, site: SiteServer) -> str:
    created = SiteClient(site.base_url).new_session("order_lookup", 1)
    result = session.call("browser_navigate", {"url": site.base_url + created.start_path})
    assert not result.is_error, result.text
    return result.text


def test_next_call_works_after_the_worker_is_stopped(extension_session: ExtensionSession, site: SiteServer) -> None:
    page = _navigate(extension_session, site)
    bridge = extension_session.bridge
    hellos, boot = bridge.hellos, bridge.boot
    stop_extension_worker(extension_session)
    deadline = time.monotonic() + 5
    while bridge.connected and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not bridge.connected
    again = extension_session.call("browser_snapshot", {})
    assert not again.is_error, again.text
    assert bridge.hellos == hellos + 1 and bridge.boot != boot
    # The page and its refs live in the page, not in the worker: they are the same after the restart.
    assert again.text == page
    # The new worker finds the debugger its predecessor attached.
    shot = extension_session.call("browser_take_screenshot", {})
    assert not shot.is_error and shot.image_jpeg is not None, shot.text


def test_in_flight_call_fails_promptly_when_the_worker_stops(
    extension_session: ExtensionSession, site: SiteServer
) -> None:
    _navigate(extension_session, site)
    results: list[ToolResult] = []
    waiting = threading.Thread(
        target=lambda: results.append(extension_session.call("browser_wait_for", {"time": 25})), daemon=True
    )
    started = time.monotonic()
    waiting.start()
    time.sleep(0.5)
    stop_extension_worker(extension_session)
    waiting.join(timeout=5)
    assert not waiting.is_alive(), "the in-flight call hung after the worker stopped"
    assert time.monotonic() - started < 5
    (result,) = results
    assert result.is_error and "service worker stopped" in result.text
    after = extension_session.call("browser_snapshot", {})
    assert not after.is_error, after.text


def test_no_extension_connecting_is_a_clear_farm_error_in_bounded_time() -> None:
    bridge = Bridge(ORIGIN).start()
    try:
        started = time.monotonic()
        with pytest.raises(FarmError, match="no hello from the extension"):
            bridge.wait_hello(0.5)
        assert time.monotonic() - started < 2
    finally:
        bridge.close()


def test_call_without_a_worker_fails_in_bounded_time() -> None:
    bridge = Bridge(ORIGIN, reconnect_timeout_s=0.3).start()
    woken: list[bool] = []
    try:
        started = time.monotonic()
        with pytest.raises(BridgeError, match="did not reconnect within 0.3 s"):
            bridge.call("browser_snapshot", {}, timeout_s=30, wake=lambda: woken.append(True))
        assert woken == [True] and time.monotonic() - started < 2
    finally:
        bridge.close()


def _client(bridge: Bridge, origin: str = ORIGIN) -> ClientConnection:
    return connect(f"ws://127.0.0.1:{bridge.port}/", origin=Origin(origin), open_timeout=5)


def _hello(ws: ClientConnection, token: str) -> None:
    ws.send(json.dumps({"hello": True, "token": token, "boot": "b1"}))


def test_replies_are_matched_by_id_not_by_order() -> None:
    bridge = Bridge(ORIGIN).start()
    try:
        with _client(bridge) as ws:
            _hello(ws, bridge.token)
            bridge.wait_hello(5)
            out: dict[str, object] = {}

            def ask(method: str) -> None:
                try:
                    out[method] = bridge.call(method, {}, timeout_s=5)
                except ExtensionError as exc:
                    out[method] = f"error: {exc}"

            threads = [threading.Thread(target=ask, args=(m,)) for m in ("first", "second")]
            for t in threads:
                t.start()
            requests = [json.loads(ws.recv(timeout=5)) for _ in threads]
            by_method = {r["method"]: r["id"] for r in requests}
            ws.send(json.dumps({"id": by_method["second"], "ok": False, "error": "stale ref"}))
            ws.send(json.dumps({"id": by_method["first"], "ok": True, "result": {"n": 1}}))
            for t in threads:
                t.join(timeout=5)
        assert out == {"first": {"n": 1}, "second": "error: stale ref"}
    finally:
        bridge.close()


def test_a_client_with_a_wrong_token_is_refused() -> None:
    bridge = Bridge(ORIGIN).start()
    try:
        with _client(bridge) as ws, pytest.raises(ConnectionClosed):
            _hello(ws, "not-the-token")
            ws.recv(timeout=5)
        assert bridge.hellos == 0 and not bridge.connected
    finally:
        bridge.close()


def test_a_web_page_origin_is_refused_even_with_the_token() -> None:
    bridge = Bridge(ORIGIN).start()
    try:
        with pytest.raises(InvalidStatus), _client(bridge, origin="http://127.0.0.1:8000") as ws:
            _hello(ws, bridge.token)
        assert bridge.hellos == 0
    finally:
        bridge.close()
