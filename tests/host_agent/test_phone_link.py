"""The harness's own link to the phone (kept-alive JSON-RPC, fast adb connections, focus read beside the dump)
gives exactly what uiautomator2's calls give.

The comparison runs the 20 real dumps of ../shared/data/dumps (third-party captures, read in place; see its
README.md) through the virtual phone's uiautomator2 server: each screen is read once the way the harness read it
before (uiautomator2 on a plain adbutils device, the focus asked after the dump) and once through `Phone.read`.
"""

from __future__ import annotations

import select
import socket
from typing import Any

import adbutils
import pytest
import uiautomator2
from uiautomator2.exceptions import UiObjectNotFoundError

from farm.android.adb_link import fast_device
from host_agent.observation import observe_xml
from host_agent.phone import Phone
from tests.helpers.host import host_phone
from tests.helpers.shared_data import SHARED_DATA, shared_data

DUMP_NAMES = sorted(p.name for p in (SHARED_DATA / "dumps").glob("*.xml")) or ["(no dumps)"]


def _plain(sim: Any) -> Any:
    return adbutils.AdbClient(port=sim.adb_port).device(sim.serial)


def test_every_real_dump_reads_to_the_same_observation_as_through_uiautomator2(
        virtual_phone: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(DUMP_NAMES) == 20, DUMP_NAMES
    before_u2 = uiautomator2.connect(_plain(virtual_phone))
    phone = host_phone(virtual_phone)
    try:
        for app in ("com.android.calculator2", "com.android.settings"):  # two focus answers, two activities
            phone.launch(app)
            for name in DUMP_NAMES:
                xml = shared_data("dumps", name).read_text(encoding="utf-8")
                # The phone's uiautomator2 server answers with the real capture (unicode, emoji, references…).
                monkeypatch.setattr(virtual_phone.state.ui, "hierarchy_xml", lambda style="dump", x=xml: x)
                current = before_u2.app_current()
                before = observe_xml(before_u2.dump_hierarchy(), package=current["package"],
                                     activity=current["activity"])
                after = phone.read()
                assert after.activity and after.activity == before.activity, name
                assert (after.text, after.rows, after.package) == (before.text, before.rows, before.package), name
                assert phone.dump() == xml, name
        assert phone.rpc is not None and phone.rpc.streams == 1  # every call of the run on one kept stream
    finally:
        phone.close()


def test_taps_keys_and_screenshots_through_the_kept_stream_act_as_uiautomator2s(virtual_phone: Any) -> None:
    phone = host_phone(virtual_phone)
    try:
        phone.launch("com.android.calculator2")
        for label in ("7", "+", "8"):
            key = phone.read().find(text=label)
            assert key is not None
            phone.tap(*key.center)
        assert phone.read().find(text="7+8") is not None
        phone.press("home")
        assert phone.foreground()[0] == virtual_phone.state.ui.launcher.package
        assert phone.screenshot_jpeg()[:2] == b"\xff\xd8"
    finally:
        phone.close()


def test_an_error_reply_raises_what_uiautomator2_raises(virtual_phone: Any) -> None:
    phone = host_phone(virtual_phone)
    try:
        assert phone.rpc is not None
        selector = {"text": "no such view", "mask": 1}
        with pytest.raises(UiObjectNotFoundError) as ours:
            phone.rpc.call("objInfo", [selector])
        with pytest.raises(UiObjectNotFoundError) as theirs:
            uiautomator2.connect(_plain(virtual_phone)).jsonrpc.objInfo(selector)
        assert str(ours.value) == str(theirs.value)
        assert phone.rpc.call("deviceInfo", [])["displayWidth"] == virtual_phone.profile.screen.width
    finally:
        phone.close()


def test_a_stream_the_phone_closed_or_left_idle_is_replaced_before_the_next_call(virtual_phone: Any) -> None:
    phone = host_phone(virtual_phone)
    try:
        rpc = phone.rpc
        assert rpc is not None
        phone.dump()
        opened = rpc.streams
        # The phone ends the stream (the server's keep-alive timeout): the next call opens another, no error.
        stream = rpc._stream
        assert stream is not None
        stream.sock.sendall(b"GET /ping HTTP/1.1\r\nConnection: close\r\n\r\n")
        assert select.select([stream.sock], [], [], 10)[0]  # its answer and its close are on their way
        assert phone.dump().startswith("<?xml")
        assert rpc.streams == opened + 1
        rpc.idle_s = 0.0  # every stream now counts as idle: replaced on each call
        phone.dump()
        phone.dump()
        assert rpc.streams == opened + 3
    finally:
        phone.close()


def test_a_kept_stream_dropped_under_a_request_is_read_again_for_a_read_but_never_for_an_action(
        virtual_phone: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from host_agent import u2_link
    from host_agent.phone import PhoneError

    phone = host_phone(virtual_phone)
    try:
        rpc = phone.rpc
        assert rpc is not None
        # The race the idle limit makes rare: the phone dropped the stream, and no sign of it had arrived yet.
        monkeypatch.setattr(u2_link, "_peer_spoke", lambda sock: False)

        def drop() -> None:
            assert rpc is not None and rpc._stream is not None
            dead, gone = socket.socketpair()
            gone.close()
            rpc._stream.sock.close()
            rpc._stream.sock = dead

        phone.dump()
        drop()
        opened = rpc.streams
        assert phone.dump().startswith("<?xml")  # the dump is asked again on a fresh stream
        assert rpc.streams == opened + 1
        drop()
        with pytest.raises(PhoneError, match="click: (BrokenPipe|ConnectionReset)Error"):
            phone.tap(10, 10)  # a tap that may have been done is never sent twice
    finally:
        phone.close()


def test_every_connection_the_harness_opens_to_the_phone_has_nagle_off(virtual_phone: Any) -> None:
    phone = host_phone(virtual_phone)  # starts the phone's uiautomator2 server (tcp:9008)
    phone.close()
    fast = fast_device(_plain(virtual_phone))
    assert fast_device(fast) is fast and fast.serial == virtual_phone.serial
    assert phone.u2.adb_device is phone.adb and isinstance(phone.adb, type(fast))
    conn = fast._client.make_connection()
    try:
        assert conn.conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        conn.close()
    assert conn.closed
    sock = fast.create_connection(adbutils.Network.TCP, 9008)
    try:
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        sock.close()
    assert fast.shell(["echo", "hi"]) == "hi"
    # The server version is asked once per client, not once per transport.
    version = fast._client.server_version()
    assert fast._client._version == version == _plain(virtual_phone)._client.server_version()


def test_the_focus_query_failing_beside_a_good_dump_is_a_phone_error() -> None:
    from host_agent.phone import PhoneError

    class _NoFocus:
        def dump_hierarchy(self) -> str:
            return "<hierarchy rotation='0'><node text='a' clickable='true' bounds='[0,0][1,1]'/></hierarchy>"

        def app_current(self) -> dict[str, str]:
            raise adbutils.AdbError("Couldn't get focused app")

    phone = Phone(_NoFocus())
    try:
        with pytest.raises(PhoneError, match="app_current: AdbError: Couldn't get focused app"):
            phone.read()
    finally:
        phone.close()
