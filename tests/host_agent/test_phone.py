import threading
from typing import Any

import pytest

from host_agent.phone import Phone, PhoneError


class _StalledLink:
    """A uiautomator2 stand-in whose dump never returns (a stalled USB link), released at teardown."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def dump_hierarchy(self) -> str:
        self.release.wait(30)
        return "<hierarchy/>"

    def click(self, x: int, y: int) -> None:
        raise AssertionError("must not be reached")


def test_a_call_that_never_returns_is_a_phone_error_and_the_phone_stays_unusable() -> None:
    link = _StalledLink()
    phone = Phone(link, call_timeout_s=0.2)
    try:
        with pytest.raises(PhoneError, match="dump_hierarchy got no answer"):
            phone.read()
        with pytest.raises(PhoneError, match="unusable"):
            phone.tap(1, 2)
    finally:
        link.release.set()


def test_errors_of_the_device_library_become_phone_errors() -> None:
    class _Gone:
        def click(self, x: int, y: int) -> None:
            raise ConnectionResetError("device offline")

    with pytest.raises(PhoneError, match="click: ConnectionResetError: device offline"):
        Phone(_Gone()).tap(1, 2)


def test_uiautomator2_sockets_to_the_phone_have_nagle_off(virtual_phone: Any) -> None:
    import socket

    import adbutils

    from tests.helpers.host import host_phone

    phone = host_phone(virtual_phone)
    try:
        dev = phone.u2.adb_device  # the device uiautomator2 opens its HTTP connections through
        sock = dev.create_connection(adbutils.Network.TCP, 9008)
        try:
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        finally:
            sock.close()
        assert dev.serial == virtual_phone.serial and phone.read().package
    finally:
        phone.close()


@pytest.mark.parametrize("dump", ["<hierarchy><node text='a'", "<hierarchy><node text='a' /></node></hierarchy>"])
def test_a_dump_the_harness_cannot_read_is_a_phone_error_not_a_crash(dump: str) -> None:
    class _Damaged:
        app_current = staticmethod(lambda: {"package": "p", "activity": "a"})

        def dump_hierarchy(self) -> str:
            return dump

    with pytest.raises(PhoneError, match="unreadable hierarchy dump"):
        Phone(_Damaged()).read()
